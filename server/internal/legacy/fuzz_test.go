package legacy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/fault"
)

// FuzzDecodeBody feeds arbitrary bytes to the REST decoder. The seed corpus is in
// testdata/fuzz/FuzzDecodeBody. Run it with:
//
//	go test ./server/internal/legacy -run XXX -fuzz FuzzDecodeBody -fuzztime 60s
func FuzzDecodeBody(f *testing.F) {
	f.Add([]byte(`{"externalUserId":"u","lang":"en","platformFiatCurrency":"USD","userBalance":"1","amount":"2"}`))
	f.Add([]byte(`{"decision":"APPROVE","reason":"ok"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkDecode(t, body, &cofferv1.CreateDepositSessionRequest{})
		checkDecode(t, body, &cofferv1.DecideWithdrawalRequest{})
		// As POST /withdraw/{id}/decision decodes it: the id comes from the path only.
		checkDecode(t, body, &cofferv1.DecideWithdrawalRequest{}, "withdrawRequestId")
	})
}

// checkDecode decodes body into msg (excluded fields refused) and checks the decoder's contract: an error is an
// INVALID_ARGUMENT *fault.Error (naming a field of the input when it names one); a success
// means the input was one JSON object of known fields, and the message holds exactly its
// values.
func checkDecode(t *testing.T, body []byte, msg proto.Message, excluded ...string) {
	t.Helper()
	name := msg.ProtoReflect().Descriptor().Name()
	err := decodeJSON(body, msg, excluded...)
	input, inputOK := parseObject(body)
	if err != nil {
		checkDecodeError(t, name, err, input)
		return
	}

	if !inputOK {
		t.Fatalf("%s: accepted a body that is not exactly one JSON object: %q", name, body)
	}
	out, err := protojson.Marshal(msg)
	if err != nil {
		t.Fatalf("%s: decoded message does not marshal: %v", name, err)
	}
	again := msg.ProtoReflect().New().Interface()
	if err := protojson.Unmarshal(out, again); err != nil || !proto.Equal(again, msg) {
		t.Fatalf("%s: protojson round trip of %s: %v", name, out, err)
	}

	m := msg.ProtoReflect()
	fields := m.Descriptor().Fields()
	for key := range input {
		if fields.ByJSONName(key) == nil || slices.Contains(excluded, key) {
			t.Fatalf("%s: accepted unknown field %q (excluded %v)", name, key, excluded)
		}
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		v, present := input[fd.JSONName()]
		present = present && v != nil
		got := m.Get(fd)
		switch fd.Kind() {
		case protoreflect.StringKind:
			want := ""
			if present {
				s, ok := v.(string)
				if !ok {
					t.Fatalf("%s: accepted %s = %#v, which is not a string", name, fd.JSONName(), v)
				}
				want = s
			}
			if got.String() != want {
				t.Fatalf("%s: %s = %q, input had %q", name, fd.JSONName(), got.String(), want)
			}
		case protoreflect.EnumKind:
			n := got.Enum()
			if !present {
				if n != 0 {
					t.Fatalf("%s: %s = %d without input", name, fd.JSONName(), n)
				}
				continue
			}
			s, ok := v.(string)
			if !ok {
				t.Fatalf("%s: accepted %s = %#v, which is not a string", name, fd.JSONName(), v)
			}
			ev := fd.Enum().Values().ByNumber(n)
			if n == 0 || ev == nil {
				t.Fatalf("%s: %s = %q decoded to %d", name, fd.JSONName(), s, n)
			}
			if full := string(ev.Name()); full != s && full != enumPrefix(fd.Enum())+s {
				t.Fatalf("%s: %s = %q decoded to %s", name, fd.JSONName(), s, full)
			}
		default:
			t.Fatalf("%s: field %s of kind %s is not covered by this fuzz target", name, fd.Name(), fd.Kind())
		}
	}
}

// checkDecodeError checks a refusal: an INVALID_ARGUMENT *fault.Error with a message, naming
// (when it names one) a field of the input.
func checkDecodeError(t *testing.T, name protoreflect.Name, err error, input map[string]any) {
	t.Helper()
	var fe *fault.Error
	if !errors.As(err, &fe) {
		t.Fatalf("%s: error %T %v is not a *fault.Error", name, err, err)
	}
	if fe.Code != fault.InvalidArgument {
		t.Fatalf("%s: error code %s, want INVALID_ARGUMENT: %v", name, fe.Code, err)
	}
	if fe.Message == "" {
		t.Fatalf("%s: error without a message", name)
	}
	if fe.Field == "" {
		return
	}
	if !strings.HasPrefix(fe.Message, fe.Field+": ") {
		t.Fatalf("%s: message %q does not start with its field %q", name, fe.Message, fe.Field)
	}
	if _, ok := input[fe.Field]; !ok {
		t.Fatalf("%s: error names field %q, which the input does not have", name, fe.Field)
	}
}

// parseObject parses body independently of the decoder: exactly one JSON object, nothing
// but whitespace after it.
func parseObject(body []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return m, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return m, false
	}
	return m, true
}

// TestDecodeJSONDeterministic: the same body must always get the same error. decodeJSON
// checks fields in Go map order, so a body with two bad fields names either one at random.
func TestDecodeJSONDeterministic(t *testing.T) {
	t.Parallel()
	body := []byte(`{"a":1,"b":2,"c":3,"amount":4}`)
	first := decodeJSON(body, &cofferv1.CreateDepositSessionRequest{}).Error()
	for range 100 {
		if got := decodeJSON(body, &cofferv1.CreateDepositSessionRequest{}).Error(); got != first {
			t.Fatalf("same body, different errors: %q and %q", first, got)
		}
	}
}

// TestDecodeJSONExamples pins a few decoder answers the REST tests cannot reach directly.
func TestDecodeJSONExamples(t *testing.T) {
	t.Parallel()
	cases := []struct {
		body, want string
	}{
		{`{"decision":"APPROVE"}`, ""},
		{`{"decision":"DECISION_REJECT","reason":"x"}`, ""},
		{`{"decision":"UNSPECIFIED"}`, "decision: must be one of APPROVE, REJECT"},
		{`{"decision":"DECISION_UNSPECIFIED"}`, "decision: must be one of APPROVE, REJECT"},
		{`{"decision":""}`, "decision: must be one of APPROVE, REJECT"},
		{`{"decision":null}`, ""},
		{`{"withdraw_request_id":"x"}`, "withdraw_request_id: unknown field"},
		{`{"decision":"APPROVE"} {}`, "malformed JSON: unexpected data after the object"},
		{`{"decision":"APPROVE"}]`, "malformed JSON: unexpected data after the object"},
		{`[{"decision":"APPROVE"}]`, "request body must be a JSON object"},
		{`null`, "request body must be a JSON object"},
		{`{"reason":"a","reason":1}`, "reason: given more than once"}, // duplicates are refused, whatever their values
	}
	for _, c := range cases {
		var msg cofferv1.DecideWithdrawalRequest
		err := decodeJSON([]byte(c.body), &msg)
		got := ""
		if err != nil {
			got = fault.As(err).Message
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.body, got, c.want)
		}
	}
}
