package app_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

// TestWatchDepositsPerSessionLimit: a sid, which anyone with the widget URL holds, opens at
// most 5 deposit streams at once (each polls the database twice a second for
// up to two hours, also after the session expired); one more is RATE_LIMITED, another
// session's are not affected, and a stream closed makes room for a new one.
func TestWatchDepositsPerSessionLimit(t *testing.T) {
	t.Parallel()
	env := apptest.StartAPI(t)
	_, key := env.Operator(t, domain.OperatorSettings{})
	api := newConnectAPI(http.DefaultClient, env.URL)
	sid := func() string {
		s, err := api.CreateDepositSession(t.Context(), key, depositSessionRequest(""))
		if err != nil {
			t.Fatal(err)
		}
		return s.Sid
	}
	mine, other := sid(), sid()
	env.ExpireSession(t, mine) // following works after expiry; so does the limit
	widget := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, env.URL)
	// open opens a stream and reads its first message; cancel closes it.
	open := func(sid string) (cancel context.CancelFunc, err error) {
		ctx, cancel := context.WithCancel(t.Context())
		stream, err := widget.WatchDeposits(ctx, &cofferv1.WatchDepositsRequest{Sid: sid})
		if err == nil && !stream.Receive() {
			err = stream.Err()
		}
		if err != nil {
			cancel()
			return nil, err
		}
		return cancel, nil
	}
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for i := range rpc.WatchPerSession {
		c, err := open(mine)
		if err != nil {
			t.Fatalf("stream %d: %v", i+1, err)
		}
		cancels = append(cancels, c)
	}
	_, err := open(mine)
	wantConnectError(t, "one stream more", err, connect.CodeResourceExhausted, "RATE_LIMITED")
	c, err := open(other)
	if err != nil {
		t.Fatalf("another session's stream: %v", err)
	}
	cancels = append(cancels, c)

	cancels[0]()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := open(mine)
		if err == nil {
			cancels = append(cancels, c)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after one stream closed: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
