package legacy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

// decodeBody reads a JSON request body into msg, the operation's protobuf request. Field
// names are the protobuf JSON names (camelCase), checked strictly: unknown fields, fields
// bound from the path (excluded), and values of the wrong JSON type are refused by name.
// Enum fields take the spec's short names ("APPROVE") as well as the protobuf names.
// optional allows an empty body.
func decodeBody(r *http.Request, msg proto.Message, optional bool, excluded ...string) error {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, rpc.MaxRequestBytes))
	if err != nil {
		return bodyReadError(err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return fault.New(fault.InvalidArgument, "request body is empty: send a JSON object")
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return fault.New(fault.UnsupportedMediaType, "Content-Type must be application/json")
	}
	return decodeJSON(body, msg, excluded...)
}

// bodyReadError is the answer to a request body that could not be read: too large, too slow
// (the read timeout), or broken off.
func bodyReadError(err error) error {
	if tooBig, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return fault.New(fault.PayloadTooLarge, "request body exceeds %d bytes", tooBig.Limit)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fault.New(fault.RequestTimeout, "the request body did not arrive in time")
	}
	return fault.New(fault.InvalidArgument, "cannot read request body: %v", err)
}

// decodeJSON reads a JSON object into msg in one pass, setting each field as it is read. Fields
// are checked in document order, so the first problem reported is the same on every call; a
// field given twice is refused; a malformed body is reported as malformed whatever its fields.
func decodeJSON(body []byte, msg proto.Message, excluded ...string) error {
	if !utf8.Valid(body) {
		return fault.New(fault.InvalidArgument, "request body is not valid UTF-8")
	}
	err := decodeObject(body, msg.ProtoReflect(), excluded)
	if err != nil && fault.As(err).Field != "" && !json.Valid(body) {
		err = syntaxError(body)
	}
	if err != nil {
		proto.Reset(msg)
	}
	return err
}

func decodeObject(body []byte, m protoreflect.Message, excluded []string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil {
		return syntaxError(body)
	} else if tok != json.Delim('{') {
		return fault.New(fault.InvalidArgument, "request body must be a JSON object")
	}
	fields := m.Descriptor().Fields()
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(body)
		}
		name, ok := tok.(string) // object keys are always strings
		if !ok {
			return syntaxError(body)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return syntaxError(body)
		}
		if seen[name] {
			return fault.Invalid(name, "given more than once")
		}
		seen[name] = true
		fd := fields.ByJSONName(name)
		if fd == nil || slices.Contains(excluded, name) {
			return fault.Invalid(name, "unknown field")
		}
		if err := assign(m, fd, v); err != nil {
			return fault.Invalid(name, "%s", err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return syntaxError(body)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.InvalidArgument, "malformed JSON: unexpected data after the object")
	}
	return nil
}

// syntaxError describes what is wrong with a body that is not one JSON object.
func syntaxError(body []byte) error {
	var v any
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&v); err != nil {
		return fault.New(fault.InvalidArgument, "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, ok := v.(map[string]any); !ok {
		return fault.New(fault.InvalidArgument, "request body must be a JSON object")
	}
	return fault.New(fault.InvalidArgument, "malformed JSON: unexpected data after the object")
}

// assign checks a JSON value against a field's kind and sets it; JSON null leaves the field
// absent. Enum fields take the spec's short names ("APPROVE") as well as protobuf names.
func assign(m protoreflect.Message, fd protoreflect.FieldDescriptor, v any) error {
	if v == nil {
		return nil
	}
	if fd.IsList() || fd.IsMap() || fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		return errors.New("is not accepted on this endpoint")
	}
	integer := func() (int64, error) {
		n, ok := v.(json.Number)
		if !ok {
			return 0, errors.New("must be a number")
		}
		i, err := n.Int64()
		if err != nil {
			return 0, errors.New("must be an integer")
		}
		return i, nil
	}
	var value protoreflect.Value
	switch fd.Kind() {
	case protoreflect.StringKind:
		s, ok := v.(string)
		if !ok {
			return errors.New("must be a string")
		}
		value = protoreflect.ValueOfString(s)
	case protoreflect.BoolKind:
		b, ok := v.(bool)
		if !ok {
			return errors.New("must be true or false")
		}
		value = protoreflect.ValueOfBool(b)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		i, err := integer()
		if err != nil {
			return err
		}
		value = protoreflect.ValueOfInt64(i)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		i, err := integer()
		if err != nil {
			return err
		}
		if i < math.MinInt32 || i > math.MaxInt32 {
			return errors.New("is out of range")
		}
		value = protoreflect.ValueOfInt32(int32(i))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		i, err := integer()
		if err != nil {
			return err
		}
		if i < 0 {
			return errors.New("is out of range")
		}
		if fd.Kind() == protoreflect.Uint64Kind || fd.Kind() == protoreflect.Fixed64Kind {
			value = protoreflect.ValueOfUint64(uint64(i))
			break
		}
		if i > math.MaxUint32 {
			return errors.New("is out of range")
		}
		value = protoreflect.ValueOfUint32(uint32(i))
	case protoreflect.EnumKind:
		s, ok := v.(string)
		if !ok {
			return errors.New("must be a string")
		}
		ev := enumValue(fd.Enum(), s)
		if ev == nil {
			if msg := enumSubsetRule(fd); msg != "" {
				return errors.New(msg)
			}
			return errors.New("must be one of " + strings.Join(enumNames(fd.Enum()), ", "))
		}
		value = protoreflect.ValueOfEnum(ev.Number())
	default:
		return errors.New("is not accepted on this endpoint")
	}
	m.Set(fd, value)
	return nil
}

// enumPrefix is the prefix protobuf style puts on an enum's values: DECISION_ for Decision.
func enumPrefix(e protoreflect.EnumDescriptor) string {
	var b strings.Builder
	for i, r := range string(e.Name()) {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String()) + "_"
}

func enumValue(e protoreflect.EnumDescriptor, s string) protoreflect.EnumValueDescriptor {
	for _, name := range []string{s, enumPrefix(e) + s} {
		if v := e.Values().ByName(protoreflect.Name(name)); v != nil && v.Number() != 0 {
			return v
		}
	}
	return nil
}

// enumSubsetRule is the message of fd's protovalidate rule that takes only some of its enum's
// values ("this in [...]"), or "". An unknown name then gets that rule's message rather than
// the whole enum, which would offer values the field refuses (PATCH …/status takes 3 of 7).
func enumSubsetRule(fd protoreflect.FieldDescriptor) string {
	var msg string
	fd.Options().ProtoReflect().Range(func(ext protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if ext.FullName() != "buf.validate.field" || ext.Kind() != protoreflect.MessageKind {
			return true
		}
		rules := v.Message()
		cel := rules.Descriptor().Fields().ByName("cel")
		if cel == nil || !cel.IsList() {
			return false
		}
		list := rules.Get(cel).List()
		for i := range list.Len() {
			rule := list.Get(i).Message()
			fields := rule.Descriptor().Fields()
			expr, text := fields.ByName("expression"), fields.ByName("message")
			if expr != nil && text != nil && strings.HasPrefix(rule.Get(expr).String(), "this in [") {
				msg = rule.Get(text).String()
				break
			}
		}
		return false
	})
	return msg
}

func enumNames(e protoreflect.EnumDescriptor) []string {
	var out []string
	for i := 1; i < e.Values().Len(); i++ {
		out = append(out, strings.TrimPrefix(string(e.Values().Get(i).Name()), enumPrefix(e)))
	}
	return out
}

// shortEnum is the spec's name of an enum value: PENDING for WITHDRAWAL_STATUS_PENDING.
func shortEnum(v protoreflect.Enum) string {
	d := v.Descriptor().Values().ByNumber(v.Number())
	if d == nil || v.Number() == 0 {
		return ""
	}
	return strings.TrimPrefix(string(d.Name()), enumPrefix(v.Descriptor()))
}
