package webhook_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/sdk/go/webhook"
)

// fixture is one webhook as Coffer's server sent it (sdk/testdata/webhooks, written by
// go test ./server/internal/webhook -run CrossSDK -update). The TS SDK reads the same files.
type fixture struct {
	Key     string            `json:"key"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Now     int64             `json:"now"`
	Expect  struct {
		Valid   bool            `json:"valid"`
		Error   string          `json:"error"`
		Event   string          `json:"event"`
		Test    bool            `json:"test"`
		Message json.RawMessage `json:"message"`
	} `json:"expect"`
}

func TestServerFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "webhooks", "*.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("%d fixtures: %v", len(files), err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var f fixture
			if err := json.Unmarshal(raw, &f); err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			for k, v := range f.Headers {
				h.Set(k, v)
			}
			err = webhook.Verify(h, []byte(f.Body), []byte(f.Key), time.Unix(f.Now, 0))
			// ConstructEvent is Verify then Parse: the same verdict, the same message.
			constructed, cerr := webhook.ConstructEvent([]byte(f.Body), h, []byte(f.Key),
				webhook.WithClock(func() time.Time { return time.Unix(f.Now, 0) }))
			if (cerr == nil) != (err == nil) || (err != nil && !errors.Is(cerr, errors.Unwrap(err)) && !errors.Is(cerr, err)) {
				t.Fatalf("ConstructEvent = %v, Verify = %v", cerr, err)
			}
			if !f.Expect.Valid {
				want := map[string]error{"signature": webhook.ErrSignature, "timestamp": webhook.ErrTimestamp}[f.Expect.Error]
				if want == nil || !errors.Is(err, want) {
					t.Fatalf("Verify = %v, want a %s error", err, f.Expect.Error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			msg, err := webhook.Parse([]byte(f.Body))
			if err != nil {
				t.Fatal(err)
			}
			var want proto.Message
			switch f.Expect.Event {
			case webhook.Deposit:
				want = &cofferv1.DepositEvent{}
			case webhook.WithdrawRequest:
				want = &cofferv1.WithdrawRequestEvent{}
			case webhook.WithdrawComplete:
				want = &cofferv1.WithdrawCompleteEvent{}
			default:
				t.Fatalf("event %q", f.Expect.Event)
			}
			if err := protojson.Unmarshal(f.Expect.Message, want); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(msg, want) || !proto.Equal(constructed, want) {
				t.Fatalf("Parse:\n got %v\nwant %v\nConstructEvent: %v", msg, want, constructed)
			}
			if webhook.EventName(msg) != f.Expect.Event || webhook.IsTest(msg) != f.Expect.Test {
				t.Fatalf("event %s test %v", webhook.EventName(msg), webhook.IsTest(msg))
			}
			// operatorReference: the session's order id, or absent (sent as "null").
			wantRef := map[string]*string{"deposit_session.json": new("order-1001"),
				"withdraw_request.json": new("payout 42/β & co")}[filepath.Base(file)]
			type referenced interface{ GetOperatorReference() string }
			ref := msg.ProtoReflect().Descriptor().Fields().ByName("operator_reference")
			if ref == nil || msg.ProtoReflect().Has(ref) != (wantRef != nil) ||
				(wantRef != nil && msg.(referenced).GetOperatorReference() != *wantRef) {
				t.Fatalf("operatorReference %v, want %v", msg.ProtoReflect().Get(ref), wantRef)
			}
			// The SDK's encoder writes exactly the server's body back.
			if body, err := webhook.Encode(msg); err != nil || string(body) != f.Body {
				t.Fatalf("Encode(Parse(body)) = %s, %v", body, err)
			}
		})
	}
}
