package pagetoken

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/fault"
)

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 23, 7, 42, 36, 123456000, time.UTC)
	id := "6f1c2a4e-3b5d-4e7f-8a9b-0c1d2e3f4a5b"
	got, err := Decode[TimeID]("withdrawals", Encode("withdrawals", TimeID{At: at, ID: id}))
	if err != nil || !got.At.Equal(at) || got.ID != id {
		t.Fatalf("time+id: %+v %v", got, err)
	}
	seq, err := Decode[Seq]("deposits", Encode("deposits", Seq(42)))
	if err != nil || seq != 42 {
		t.Fatalf("seq: %v %v", seq, err)
	}
	if tok := Encode("deposits", Seq(42)); strings.ContainsAny(tok, "+/=") {
		t.Fatalf("token %q is not base64url without padding", tok)
	}
}

// TestRejected: anything but a token Encode gave for the same list is INVALID_ARGUMENT on
// pageToken, never a panic or a silently wrong cursor.
func TestRejected(t *testing.T) {
	t.Parallel()
	good := Encode("deposits", Seq(42))
	id := "6f1c2a4e-3b5d-4e7f-8a9b-0c1d2e3f4a5b"
	for _, c := range []struct {
		name, list, token string
		timeID            bool
	}{
		{"empty", "deposits", "", false},
		{"garbage", "deposits", "garbage!", false},
		{"not base64url", "deposits", "a+b/c==", false},
		{"old int format", "deposits", "42", false},
		{"old time|id format", "withdrawals", b64("1763883756000000|" + id), true},
		{"another list's token", "reorgs", good, false},
		{"another cursor type", "deposits", good, true},
		{"tampered: a character changed", "deposits", "X" + good[1:], false},
		{"tampered: truncated", "deposits", good[:len(good)-3], false},
		{"other version", "deposits", b64(`{"v":2,"l":"deposits","s":42}`), false},
		{"no version", "deposits", b64(`{"l":"deposits","s":42}`), false},
		{"unknown field", "deposits", b64(`{"v":1,"l":"deposits","s":42,"x":1}`), false},
		{"trailing data", "deposits", b64(`{"v":1,"l":"deposits","s":42}{}`), false},
		{"zero seq", "deposits", b64(`{"v":1,"l":"deposits","s":0}`), false},
		{"negative seq", "deposits", b64(`{"v":1,"l":"deposits","s":-5}`), false},
		{"seq with an id", "deposits", b64(`{"v":1,"l":"deposits","s":4,"i":"` + id + `"}`), false},
		{"id not a UUID", "withdrawals", b64(`{"v":1,"l":"withdrawals","t":1763883756000000,"i":"1 OR 1=1"}`), true},
		{"no time", "withdrawals", b64(`{"v":1,"l":"withdrawals","i":"` + id + `"}`), true},
		{"a JSON string", "deposits", b64(`"deposits"`), false},
		{"too long", "deposits", strings.Repeat("A", maxLen+1), false},
	} {
		var err error
		if c.timeID {
			_, err = Decode[TimeID](c.list, c.token)
		} else {
			_, err = Decode[Seq](c.list, c.token)
		}
		var fe *fault.Error
		if !fault.Is(err, fault.InvalidArgument) || !asFault(err, &fe) || fe.Field != "pageToken" {
			t.Errorf("%s: %v, want INVALID_ARGUMENT on pageToken", c.name, err)
		}
	}
}

func asFault(err error, fe **fault.Error) bool {
	e := &fault.Error{}
	ok := errors.As(err, &e)
	*fe = e
	return ok
}

// TestPosition: a feed position round-trips (its start too: Tx 0 and the nil UUID), and a
// token of another cursor type or list is Invalid.
func TestPosition(t *testing.T) {
	t.Parallel()
	for _, p := range []Position{{Tx: 0, ID: "00000000-0000-0000-0000-000000000000"}, {Tx: 1<<40 + 7, ID: "0190f3c2-1111-7222-8333-444455556666"}} {
		got, err := Decode[Position]("events", Encode("events", p))
		if err != nil || got != p {
			t.Errorf("%v round-trips to %v (%v)", p, got, err)
		}
	}
	for _, token := range []string{Encode("events", Seq(3)), Encode("deposits", Position{ID: "0190f3c2-1111-7222-8333-444455556666"}),
		Encode("events", Position{Tx: 5, ID: "not-a-uuid"})} {
		if _, err := Decode[Position]("events", token); !fault.Is(err, fault.InvalidArgument) {
			t.Errorf("Decode(%q): %v; want Invalid", token, err)
		}
	}
	if _, err := Decode[Seq]("events", Encode("events", Position{Tx: 5, ID: "0190f3c2-1111-7222-8333-444455556666"})); !fault.Is(err, fault.InvalidArgument) {
		t.Errorf("a position read as a Seq: %v; want Invalid", err)
	}
}
