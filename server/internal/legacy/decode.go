package legacy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

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

func decodeJSON(body []byte, msg proto.Message, excluded ...string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return fault.New(fault.InvalidArgument, "request body must be a JSON object")
		}
		return fault.New(fault.InvalidArgument, "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if fields == nil {
		return fault.New(fault.InvalidArgument, "request body must be a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.InvalidArgument, "malformed JSON: unexpected data after the object")
	}
	desc := msg.ProtoReflect().Descriptor()
	clean := make(map[string]any, len(fields))
	for name, raw := range fields {
		fd := desc.Fields().ByJSONName(name)
		if fd == nil || contains(excluded, name) {
			return fault.Invalid(name, "unknown field")
		}
		v, err := checkValue(fd, raw)
		if err != nil {
			return fault.Invalid(name, "%s", err)
		}
		if v != nil {
			clean[name] = v
		}
	}
	normalized, _ := json.Marshal(clean)
	if err := protojson.Unmarshal(normalized, msg); err != nil {
		return fault.New(fault.InvalidArgument, "invalid request: %v", err)
	}
	return nil
}

// checkValue checks a JSON value against a field's kind and returns it in the form protojson
// accepts; nil for a JSON null (absent).
func checkValue(fd protoreflect.FieldDescriptor, raw json.RawMessage) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, nil
	}
	if fd.IsList() || fd.IsMap() || fd.Kind() == protoreflect.MessageKind {
		return v, nil // no legacy endpoint takes these; protojson checks them
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		if _, ok := v.(string); !ok {
			return nil, errors.New("must be a string")
		}
	case protoreflect.BoolKind:
		if _, ok := v.(bool); !ok {
			return nil, errors.New("must be true or false")
		}
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind, protoreflect.Sint64Kind,
		protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind,
		protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		n, ok := v.(json.Number)
		if !ok {
			return nil, errors.New("must be a number")
		}
		if _, err := n.Int64(); err != nil {
			return nil, errors.New("must be an integer")
		}
	case protoreflect.EnumKind:
		s, ok := v.(string)
		if !ok {
			return nil, errors.New("must be a string")
		}
		name, ok := enumValue(fd.Enum(), s)
		if !ok {
			return nil, errors.New("must be one of " + strings.Join(enumNames(fd.Enum()), ", "))
		}
		return name, nil
	}
	return v, nil
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
