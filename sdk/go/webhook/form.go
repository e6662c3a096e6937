// Package webhook verifies and parses Coffer's webhooks for operators, and is the one
// definition of their wire format: Coffer's server encodes and signs with this package.
//
// A webhook is an HTTP POST whose body is application/x-www-form-urlencoded (every value a
// string, null as the literal "null") and whose headers carry a Standard Webhooks signature
// keyed with the operator key:
//
//	func handle(w http.ResponseWriter, r *http.Request) {
//		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
//		if err := webhook.Verify(r.Header, body, []byte(operatorKey), time.Now()); err != nil {
//			http.Error(w, "bad signature", http.StatusUnauthorized)
//			return
//		}
//		msg, err := webhook.Parse(body)
//		...
//		if webhook.IsTest(msg) { /* acknowledge, no side effects */ }
//		switch e := msg.(type) {
//		case *cofferv1.DepositEvent: // credit e.GetAmountInDollar(), dedupe on e.GetIdempotencyKey()
//		case *cofferv1.WithdrawRequestEvent:
//		case *cofferv1.WithdrawCompleteEvent:
//		}
//		w.Header().Set("Content-Type", "application/json")
//		w.Write([]byte(`{"error":0,"description":"ok"}`))
//	}
package webhook

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
)

// Event names: the value of the event field.
const (
	Deposit          = "DEPOSIT"
	WithdrawRequest  = "WITHDRAW_REQUEST"
	WithdrawComplete = "WITHDRAW_COMPLETE"
)

// ContentType is the media type of webhook bodies.
const ContentType = "application/x-www-form-urlencoded"

// Null is how an absent value is written on the wire.
const Null = "null"

// TimeLayout is how timestamps are written: RFC 3339 in UTC with milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// ErrUnknownEvent is returned by Parse for a body whose event field names no known event.
var ErrUnknownEvent = errors.New("webhook: unknown event")

func eventNames() map[protoreflect.FullName]string {
	return map[protoreflect.FullName]string{
		(*cofferv1.DepositEvent)(nil).ProtoReflect().Descriptor().FullName():          Deposit,
		(*cofferv1.WithdrawRequestEvent)(nil).ProtoReflect().Descriptor().FullName():  WithdrawRequest,
		(*cofferv1.WithdrawCompleteEvent)(nil).ProtoReflect().Descriptor().FullName(): WithdrawComplete,
	}
}

// newEvent returns an empty message for an event name.
func newEvent(name string) proto.Message {
	switch name {
	case Deposit:
		return &cofferv1.DepositEvent{}
	case WithdrawRequest:
		return &cofferv1.WithdrawRequestEvent{}
	case WithdrawComplete:
		return &cofferv1.WithdrawCompleteEvent{}
	}
	return nil
}

// EventName returns the event name of an event message ("DEPOSIT", ...), or "" when msg is
// not one of the three event messages.
func EventName(msg proto.Message) string {
	if msg == nil {
		return ""
	}
	return eventNames()[msg.ProtoReflect().Descriptor().FullName()]
}

// IsTest reports whether msg is a test event (test=true): the receiver acknowledges it and
// skips every real side effect.
func IsTest(msg proto.Message) bool {
	if msg == nil {
		return false
	}
	m := msg.ProtoReflect()
	fd := m.Descriptor().Fields().ByName("test")
	return fd != nil && fd.Kind() == protoreflect.BoolKind && m.Get(fd).Bool()
}

// sortedFields returns a message's fields in field-number order.
func sortedFields(md protoreflect.MessageDescriptor) []protoreflect.FieldDescriptor {
	fields := md.Fields()
	out := make([]protoreflect.FieldDescriptor, fields.Len())
	for i := range out {
		out[i] = fields.Get(i)
	}
	slices.SortFunc(out, func(a, b protoreflect.FieldDescriptor) int { return int(a.Number()) - int(b.Number()) })
	return out
}

const timestampName protoreflect.FullName = "google.protobuf.Timestamp"

// Encode renders an event message (*cofferv1.DepositEvent, *cofferv1.WithdrawRequestEvent or
// *cofferv1.WithdrawCompleteEvent) as a form body: the fields' JSON names in field-number
// order, every value a string; an unset optional field is the literal null; integers are
// decimal; timestamps are RFC 3339 UTC with milliseconds (2026-11-22T05:38:20.719Z); test is
// written, last, as true only on test events and left out otherwise. An empty event field is filled
// with the message's event name.
func Encode(msg proto.Message) ([]byte, error) {
	name := EventName(msg)
	if name == "" {
		return nil, fmt.Errorf("webhook: %T is not a webhook event message", msg)
	}
	m := msg.ProtoReflect()
	if !m.IsValid() {
		return nil, fmt.Errorf("webhook: nil %s", m.Descriptor().Name())
	}
	var b strings.Builder
	b.Grow(512)
	for _, fd := range sortedFields(m.Descriptor()) {
		key := fd.JSONName()
		var v string
		switch {
		case fd.Name() == "test":
			continue // written last, below
		case fd.Name() == "event":
			v = m.Get(fd).String()
			if v == "" {
				v = name
			} else if v != name {
				return nil, fmt.Errorf("webhook: %s has event %q, want %q", m.Descriptor().Name(), v, name)
			}
		case fd.HasPresence() && !m.Has(fd):
			v = Null
		default:
			var err error
			if v, err = formatValue(fd, m.Get(fd)); err != nil {
				return nil, err
			}
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(key))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(v))
	}
	// A test event is the production body plus this one field, whatever fields follow test's
	// number (operatorReference does).
	if fd := m.Descriptor().Fields().ByName("test"); fd != nil && m.Get(fd).Bool() {
		b.WriteString("&test=true")
	}
	return []byte(b.String()), nil
}

func formatValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) (string, error) {
	if fd.IsList() || fd.IsMap() {
		return "", fmt.Errorf("webhook: field %s: repeated fields are not supported", fd.Name())
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return v.String(), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return strconv.FormatInt(v.Int(), 10), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.FormatUint(v.Uint(), 10), nil
	case protoreflect.BoolKind:
		return strconv.FormatBool(v.Bool()), nil
	case protoreflect.MessageKind:
		if fd.Message().FullName() == timestampName {
			ts, ok := v.Message().Interface().(*timestamppb.Timestamp)
			if !ok {
				return "", fmt.Errorf("webhook: field %s: not a google.protobuf.Timestamp", fd.Name())
			}
			if err := ts.CheckValid(); err != nil {
				return "", fmt.Errorf("webhook: field %s: %w", fd.Name(), err)
			}
			return ts.AsTime().UTC().Format(TimeLayout), nil
		}
	}
	return "", fmt.Errorf("webhook: field %s: %s fields are not supported", fd.Name(), fd.Kind())
}

// Parse reads a webhook body into its typed event message (*cofferv1.DepositEvent,
// *cofferv1.WithdrawRequestEvent or *cofferv1.WithdrawCompleteEvent) chosen by the event
// field. The values "null" and "" are absent: optional fields stay unset, other fields keep
// their zero value. Unknown keys are ignored (newer servers may add fields); a key given
// twice, a malformed number or timestamp, or an unknown event is an error. Verify the
// signature first: Parse checks nothing about the sender.
func Parse(body []byte) (proto.Message, error) {
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("webhook: malformed form body: %w", err)
	}
	for k, v := range values {
		if len(v) > 1 {
			return nil, fmt.Errorf("webhook: key %q appears %d times", k, len(v))
		}
	}
	name := values.Get("event")
	msg := newEvent(name)
	if msg == nil {
		if name == "" || name == Null {
			return nil, fmt.Errorf("%w: the body has no event field", ErrUnknownEvent)
		}
		return nil, fmt.Errorf("%w %q", ErrUnknownEvent, name)
	}
	m := msg.ProtoReflect()
	for _, fd := range sortedFields(m.Descriptor()) {
		raw, ok := values[fd.JSONName()]
		if !ok || raw[0] == Null || raw[0] == "" {
			continue
		}
		v, err := parseValue(fd, raw[0])
		if err != nil {
			return nil, err
		}
		m.Set(fd, v)
	}
	return msg, nil
}

func parseValue(fd protoreflect.FieldDescriptor, s string) (protoreflect.Value, error) {
	bad := func(err error) (protoreflect.Value, error) {
		return protoreflect.Value{}, fmt.Errorf("webhook: field %s: %q: %w", fd.JSONName(), s, err)
	}
	if fd.IsList() || fd.IsMap() {
		return bad(errors.New("repeated fields are not supported"))
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(s), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return bad(errors.New("not an integer"))
		}
		return protoreflect.ValueOfInt64(n), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return bad(errors.New("not a 32-bit integer"))
		}
		return protoreflect.ValueOfInt32(int32(n)), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return bad(errors.New("not an unsigned integer"))
		}
		return protoreflect.ValueOfUint64(n), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return bad(errors.New("not an unsigned 32-bit integer"))
		}
		return protoreflect.ValueOfUint32(uint32(n)), nil
	case protoreflect.BoolKind:
		switch s {
		case "true":
			return protoreflect.ValueOfBool(true), nil
		case "false":
			return protoreflect.ValueOfBool(false), nil
		}
		return bad(errors.New("not true or false"))
	case protoreflect.MessageKind:
		if fd.Message().FullName() == timestampName {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return bad(errors.New("not an RFC 3339 timestamp"))
			}
			return protoreflect.ValueOfMessage(timestamppb.New(t).ProtoReflect()), nil
		}
	}
	return bad(fmt.Errorf("%s fields are not supported", fd.Kind()))
}
