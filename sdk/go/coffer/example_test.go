package coffer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/sdk/go/coffer"
)

// An operator's server opens a deposit session for its user and sends the user to the
// widget URL. (It needs a running Coffer: `make run` serves one on localhost:8080.)
func ExampleNew() {
	c := coffer.New("http://localhost:8080", os.Getenv("COFFER_OPERATOR_KEY"),
		coffer.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}))
	res, err := c.Sessions.CreateDepositSession(context.Background(), &cofferv1.CreateDepositSessionRequest{
		ExternalUserId: "user-1", Lang: "en", PlatformFiatCurrency: "USD", UserBalance: "0", Amount: "25.00",
	})
	if err != nil {
		fmt.Println("error:", coffer.ErrorCode(err), err)
		return
	}
	fmt.Println(res.GetUrl())
}

// ErrorCode reads Coffer's code from a failed call, so an operator branches on it rather than
// on the message.
func ExampleErrorCode() {
	err := connect.NewError(connect.CodeFailedPrecondition, errors.New("session expired; create a new session"))
	if d, derr := connect.NewErrorDetail(&errdetails.ErrorInfo{Domain: "coffer.v1", Reason: "SESSION_EXPIRED"}); derr == nil {
		err.AddDetail(d)
	}
	if coffer.ErrorCode(err) == coffer.CodeSessionExpired {
		fmt.Println("open a new session")
	} else {
		fmt.Println("unexpected:", err)
	}
	fmt.Printf("%q\n", coffer.ErrorCode(errors.New("network down")))
	// Output:
	// open a new session
	// ""
}

// ErrorField names the request field an INVALID_ARGUMENT is about, in the API's spelling.
func ExampleErrorField() {
	err := connect.NewError(connect.CodeInvalidArgument, errors.New("amount must be a positive decimal"))
	if d, derr := connect.NewErrorDetail(&errdetails.ErrorInfo{Domain: coffer.ErrorDomain, Reason: "INVALID_ARGUMENT",
		Metadata: map[string]string{"field": "amount"}}); derr == nil {
		err.AddDetail(d)
	}
	if coffer.ErrorCode(err) == coffer.CodeInvalidArgument {
		fmt.Println("fix the field:", coffer.ErrorField(err))
	}
	// Output: fix the field: amount
}
