package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	sdk "github.com/cofferhq/coffer/sdk/go/webhook"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

var update = flag.Bool("update", false, "rewrite sdk/testdata/webhooks from the server's output")

// fixtureDir holds webhooks as this server sends them; the Go and TS SDK tests verify and
// parse each one and must reach the same verdict and the same values.
var fixtureDir = filepath.Join("..", "..", "..", "sdk", "testdata", "webhooks")

// Fixture is one file of sdk/testdata/webhooks.
type Fixture struct {
	Description string            `json:"description"`
	Key         string            `json:"key"`     // the operator key the receiver holds
	Headers     map[string]string `json:"headers"` // as received
	Body        string            `json:"body"`    // as received
	Now         int64             `json:"now"`     // the receiver's clock, Unix seconds
	Expect      FixtureExpect     `json:"expect"`
}

// FixtureExpect is the verdict: valid ones verify and parse to Message (canonical protobuf
// JSON of the event message); invalid ones fail with Error ("signature" or "timestamp").
type FixtureExpect struct {
	Valid   bool            `json:"valid"`
	Error   string          `json:"error,omitempty"`
	Event   string          `json:"event,omitempty"`
	Test    bool            `json:"test,omitempty"`
	Message json.RawMessage `json:"message,omitempty"`
}

// staticKeys signs with fixed keys, so the fixtures are the same on every -update.
type staticKeys [][]byte

func (k staticKeys) SigningKeys(context.Context, string) ([][]byte, error) { return k, nil }

func fixtureKey(n int) string {
	h := sha256.Sum256([]byte("coffer webhook fixture key " + strconv.Itoa(n)))
	return "sk_" + hex.EncodeToString(h[:])
}

// fixtures sends each case through the service (encoding, signing, HTTP) to a receiver and
// returns what it received.
func fixtures(t *testing.T) map[string]Fixture {
	t.Helper()
	rc := newReceiver(t, ok)
	pool := testdb.New(t)
	ctx := context.Background()
	opID := "3c1e5b2a-9d4f-4e6a-8b7c-0f2d4a6c8e10"
	if _, err := store.New(pool).InsertOperator(ctx, opID, domain.OperatorSettings{Name: new("Fixtures"), WebhookURL: new(rc.URL)}); err != nil {
		t.Fatal(err)
	}
	signedAt := time.Date(2026, 11, 22, 5, 38, 21, 0, time.UTC)
	client := NewClient(ClientOptions{Reach: ReachLoopback})
	newKey, oldKey := fixtureKey(1), fixtureKey(2)
	service := func(keys ...string) *Service {
		var k staticKeys
		for _, s := range keys {
			k = append(k, []byte(s))
		}
		return New(pool, k, Options{Client: client, Now: func() time.Time { return signedAt }, Jobs: jobs.NewInserter()})
	}
	one, rotating := service(newKey), service(newKey, oldKey)

	direct := depositEvent(1002)
	direct.SessionRef, direct.SessionAmount, direct.ContractAddress = nil, nil, nil
	direct.Type, direct.Amount, direct.GrossAmount, direct.FeeAmount = "NATIVE", "9979000000000000", "10000000000000000", "21000000000000"
	direct.FeeInDollar, direct.IdempotencyKey = new("0.063000"), "1337:0x8d3f2c6a1b7e4f0a9c5d2e8b3a6f1c4d7e0b9a2c5f8e1d4a7b0c3f6e9d2a5b8c:-1"
	direct.AmountInDollar, direct.AmountInLocalCurrency, direct.LocalCurrencyCode = new("29.94"), new("27.62"), "EUR"
	direct.CurrentRate, direct.Pair = "0.9226", "USD/EUR"
	withReference := depositEvent(1001)
	withReference.OperatorReference = new("order-1001")
	requestEvent := withdrawRequest()
	requestEvent.OperatorReference = new("payout 42/β & co") // a value that needs escaping
	test := depositEvent(TestDepositID("8c7d0e3f-1a2b-4c5d-9e6f-7a8b9c0d1e2f"))
	test.Test = true
	complete := &cofferv1.WithdrawCompleteEvent{WithdrawRequestId: "5f0e2c9a-7d1b-4e3f-8a6c-9b2d4f1e3a5c", SessionRef: "sr_5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b",
		ExternalUserId: "user 2 & co", Type: "DIRECT_TRANSFER", Status: "COMPLETED", Address: "0x8ba1f109551bD432803012645Ac136ddd64DBA72",
		CryptoCurrencyCode: "USDT", FiatCurrencyCode: "USD", FiatAmount: "40.00", CryptoAmountSent: new("40.000000"),
		AmountInUsd: new("40.00"), CompletedAt: confirmed}

	type send struct {
		svc  *Service
		id   string
		msg  proto.Message
		desc string
	}
	cases := map[string]send{
		"deposit_session":    {one, "0b6f3b1e-5a3c-4d2e-9f10-2c4b6d8e0a01", withReference, "DEPOSIT of a session with an operatorReference"},
		"deposit_no_session": {one, "0b6f3b1e-5a3c-4d2e-9f10-2c4b6d8e0a02", direct, "DEPOSIT of a direct native send: null session fields, operatorReference and contract"},
		"withdraw_request":   {one, "0b6f3b1e-5a3c-4d2e-9f10-2c4b6d8e0a03", requestEvent, "WITHDRAW_REQUEST: cryptoAmount is null, an operatorReference that needs escaping"},
		"withdraw_complete":  {one, "0b6f3b1e-5a3c-4d2e-9f10-2c4b6d8e0a04", complete, "WITHDRAW_COMPLETE with characters that need escaping, a session without operatorReference (null)"},
		"test_deposit":       {one, "0b6f3b1e-5a3c-4d2e-9f10-2c4b6d8e0a05", test, "a test DEPOSIT: test=true and a negative depositId"},
		"rotation":           {rotating, "0b6f3b1e-5a3c-4d2e-9f10-2c4b6d8e0a06", depositEvent(1003), "during a key rotation"},
	}
	received := map[string]request{}
	for _, name := range sortedKeys(cases) {
		c := cases[name]
		res, err := c.svc.Send(ctx, opID, Event{ID: c.id, SubjectID: name, Message: c.msg}, 0)
		if err != nil || !res.Acked {
			t.Fatalf("%s: %+v %v", name, res, err)
		}
		got := rc.got()
		received[name] = got[len(got)-1]
	}

	now := signedAt.Add(30 * time.Second).Unix()
	out := map[string]Fixture{}
	valid := func(name, key string, c send) {
		r := received[name]
		expected := onTheWire(c.msg)
		if parsed, err := sdk.Parse([]byte(r.body)); err != nil || !proto.Equal(parsed, expected) {
			t.Fatalf("%s: the body parses to %v (%v), want %v", name, parsed, err, expected)
		}
		msg, err := protojson.Marshal(expected)
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		json.Compact(&compact, msg) //nolint:errcheck // protojson's output is JSON; Compact makes it stable
		out[name] = Fixture{Description: c.desc, Key: key, Headers: headersOf(r), Body: r.body, Now: now,
			Expect: FixtureExpect{Valid: true, Event: sdk.EventName(c.msg), Test: sdk.IsTest(c.msg), Message: compact.Bytes()}}
	}
	for _, name := range []string{"deposit_session", "deposit_no_session", "withdraw_request", "withdraw_complete", "test_deposit"} {
		valid(name, newKey, cases[name])
	}
	valid("rotation", newKey, cases["rotation"])
	rot := out["rotation"]
	delete(out, "rotation")
	rot.Description = "during a key rotation, two signatures: the receiver holds the new key"
	out["rotation_new_key"] = rot
	rot.Description = "during a key rotation, two signatures: the receiver still holds the previous key"
	rot.Key = oldKey
	out["rotation_old_key"] = rot

	base := out["deposit_session"]
	tampered := base
	tampered.Description = "DEPOSIT whose amountInDollar was changed after signing"
	tampered.Body = strings.Replace(base.Body, "amountInDollar=25.00", "amountInDollar=2500.00", 1)
	tampered.Expect = FixtureExpect{Valid: false, Error: "signature"}
	out["tampered_body"] = tampered
	expired := base
	expired.Description = "DEPOSIT verified 5 minutes and 1 second after it was signed"
	expired.Now = signedAt.Add(5*time.Minute + time.Second).Unix()
	expired.Expect = FixtureExpect{Valid: false, Error: "timestamp"}
	out["expired_timestamp"] = expired
	wrong := base
	wrong.Description = "DEPOSIT verified with another operator's key"
	wrong.Key = fixtureKey(3)
	wrong.Expect = FixtureExpect{Valid: false, Error: "signature"}
	out["wrong_key"] = wrong
	return out
}

// onTheWire is the message a receiver reads: the event name set and timestamps cut to
// milliseconds.
func onTheWire(msg proto.Message) proto.Message {
	m := proto.Clone(msg)
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	r.Set(fields.ByName("event"), protoreflect.ValueOfString(sdk.EventName(msg)))
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.Kind() == protoreflect.MessageKind && r.Has(fd) {
			ts := r.Get(fd).Message().Interface().(*timestamppb.Timestamp)
			r.Set(fd, protoreflect.ValueOfMessage(timestamppb.New(ts.AsTime().Truncate(time.Millisecond)).ProtoReflect()))
		}
	}
	return m
}

func toHeader(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

func headersOf(r request) map[string]string {
	h := map[string]string{}
	for _, k := range []string{sdk.HeaderID, sdk.HeaderTimestamp, sdk.HeaderSignature, "Content-Type"} {
		h[strings.ToLower(k)] = r.header.Get(k)
	}
	return h
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func encodeFixture(f Fixture) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// The committed fixtures are exactly what this server sends (go test -run CrossSDK -update
// rewrites them), and the Go SDK reaches their verdicts.
func TestCrossSDKFixtures(t *testing.T) {
	want := fixtures(t)
	if *update {
		if err := os.MkdirAll(fixtureDir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
		for _, f := range old {
			os.Remove(f)
		}
		for name, f := range want {
			if err := os.WriteFile(filepath.Join(fixtureDir, name+".json"), encodeFixture(f), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	if len(files) != len(want) {
		t.Fatalf("%d fixture files, want %d: run go test ./server/internal/webhook -run CrossSDK -update", len(files), len(want))
	}
	for _, name := range sortedKeys(want) {
		got, err := os.ReadFile(filepath.Join(fixtureDir, name+".json"))
		if err != nil || !bytes.Equal(got, encodeFixture(want[name])) {
			t.Errorf("%s.json differs from what the server sends now: run go test ./server/internal/webhook -run CrossSDK -update", name)
		}
		f := want[name]
		err = sdk.Verify(toHeader(f.Headers), []byte(f.Body), []byte(f.Key), time.Unix(f.Now, 0))
		switch {
		case f.Expect.Valid && err != nil:
			t.Errorf("%s: %v", name, err)
		case !f.Expect.Valid && f.Expect.Error == "signature" && !errors.Is(err, sdk.ErrSignature),
			!f.Expect.Valid && f.Expect.Error == "timestamp" && !errors.Is(err, sdk.ErrTimestamp):
			t.Errorf("%s: %v, want a %s error", name, err, f.Expect.Error)
		}
	}
}
