package legacy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
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
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fault.New(fault.PayloadTooLarge, "request body exceeds %d bytes", rpc.MaxRequestBytes)
	}
	if err != nil {
		return fault.New(fault.InvalidArgument, "cannot read request body: %v", err)
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

// decodeJSON reads a JSON object into msg. Fields are checked in document order, so the first
// problem reported is the same on every call; a field given twice is refused.
func decodeJSON(body []byte, msg proto.Message, excluded ...string) error {
	if !utf8.Valid(body) {
		return fault.New(fault.InvalidArgument, "request body is not valid UTF-8")
	}
	malformed := func(err error) error {
		return fault.New(fault.InvalidArgument, "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	// Syntax first, so a malformed body is reported as such whatever its fields.
	if !json.Valid(body) {
		var v any
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&v); err != nil {
			return malformed(err)
		}
		if _, ok := v.(map[string]any); !ok {
			return fault.New(fault.InvalidArgument, "request body must be a JSON object")
		}
		return fault.New(fault.InvalidArgument, "malformed JSON: unexpected data after the object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil {
		return malformed(err)
	} else if tok != json.Delim('{') {
		return fault.New(fault.InvalidArgument, "request body must be a JSON object")
	}
	desc := msg.ProtoReflect().Descriptor()
	fields := map[string]any{}
	rewritten := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return malformed(err)
		}
		name := tok.(string) // object keys are always strings
		var v any
		if err := dec.Decode(&v); err != nil {
			return malformed(err)
		}
		if _, dup := fields[name]; dup {
			return fault.Invalid(name, "given more than once")
		}
		fd := desc.Fields().ByJSONName(name)
		if fd == nil || contains(excluded, name) {
			return fault.Invalid(name, "unknown field")
		}
		enumName, err := checkValue(fd, v)
		if err != nil {
			return fault.Invalid(name, "%s", err)
		}
		fields[name] = v
		if enumName != "" {
			fields[name], rewritten = enumName, true
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return malformed(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.InvalidArgument, "malformed JSON: unexpected data after the object")
	}
	// protojson reads the body as sent unless a value had to be spelled out; bodies that
	// encoding/json reads more leniently (a lone UTF-16 surrogate) go through the same path.
	if !rewritten && protojson.Unmarshal(body, msg) == nil {
		return nil
	}
	proto.Reset(msg)
	normalized, _ := json.Marshal(fields)
	if err := protojson.Unmarshal(normalized, msg); err != nil {
		return fault.New(fault.InvalidArgument, "request body does not match %s", desc.Name())
	}
	return nil
}

// checkValue checks a JSON value against a field's kind. For an enum given by its short name
// it returns the full value name protojson needs; otherwise "".
func checkValue(fd protoreflect.FieldDescriptor, v any) (string, error) {
	if v == nil {
		return "", nil // JSON null: the field is absent
	}
	if fd.IsList() || fd.IsMap() || fd.Kind() == protoreflect.MessageKind {
		return "", nil // no legacy endpoint takes these; protojson checks them
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		if _, ok := v.(string); !ok {
			return "", errors.New("must be a string")
		}
	case protoreflect.BoolKind:
		if _, ok := v.(bool); !ok {
			return "", errors.New("must be true or false")
		}
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind,
		protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind,
		protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		n, ok := v.(json.Number)
		if !ok {
			return "", errors.New("must be a number")
		}
		if _, err := n.Int64(); err != nil {
			return "", errors.New("must be an integer")
		}
	case protoreflect.EnumKind:
		s, ok := v.(string)
		if !ok {
			return "", errors.New("must be a string")
		}
		name, ok := enumValue(fd.Enum(), s)
		if !ok {
			return "", errors.New("must be one of " + strings.Join(enumNames(fd.Enum()), ", "))
		}
		if name != s {
			return name, nil
		}
	}
	return "", nil
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

func enumValue(e protoreflect.EnumDescriptor, s string) (string, bool) {
	prefix := enumPrefix(e)
	for _, name := range []string{s, prefix + s} {
		if v := e.Values().ByName(protoreflect.Name(name)); v != nil && v.Number() != 0 {
			return name, true
		}
	}
	return "", false
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
