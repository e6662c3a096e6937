package rpc

import (
	"errors"
	"strings"
	"unicode/utf8"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cofferhq/coffer/server/internal/fault"
)

// Validate checks a request against its protovalidate rules and reports the violations as
// INVALID_ARGUMENT naming the fields by their JSON names ("amount: must be ...").
func Validate(msg proto.Message) error {
	if err := checkText(msg.ProtoReflect(), ""); err != nil {
		return err
	}
	// protovalidate's own validator is built once, on first use, and shared.
	err := protovalidate.Validate(msg)
	if err == nil {
		return nil
	}
	var verr *protovalidate.ValidationError
	if !errors.As(err, &verr) || len(verr.Violations) == 0 {
		return fault.Wrap(err, "validate %s", msg.ProtoReflect().Descriptor().FullName())
	}
	var msgs []string
	first := ""
	for _, v := range verr.Violations {
		field := jsonPath(v)
		if first == "" {
			first = field
		}
		text := v.Proto.GetMessage()
		if unsetNumber(v) {
			text = requiredMessage
		}
		if field != "" {
			text = field + ": " + text
		}
		msgs = append(msgs, text)
	}
	return &fault.Error{Code: fault.InvalidArgument, Message: strings.Join(msgs, "; "), Field: first}
}

// requiredMessage is protovalidate's own text for a required field left empty.
const requiredMessage = "value is required"

// unsetNumber reports whether v is a rule of a number field (chainId > 0) broken by the
// field's zero value. A proto3 number without presence holds zero when it is left out, and
// on the wire zero and absent are the same thing, so the caller is told the field is
// required, as for an empty string, rather than "must be greater than 0".
func unsetNumber(v *protovalidate.Violation) bool {
	fd := v.FieldDescriptor
	if fd == nil || fd.HasPresence() || fd.IsList() || fd.IsMap() || !isNumber(fd.Kind()) {
		return false
	}
	return !v.FieldValue.IsValid() || v.FieldValue.Equal(fd.Default())
}

func isNumber(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind, protoreflect.Int64Kind,
		protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind, protoreflect.FloatKind, protoreflect.DoubleKind:
		return true
	default:
		return false
	}
}

func jsonPath(v *protovalidate.Violation) string {
	parts := make([]string, 0, len(v.Proto.GetField().GetElements()))
	for _, el := range v.Proto.GetField().GetElements() {
		parts = append(parts, lowerCamel(el.GetFieldName()))
	}
	return strings.Join(parts, ".")
}

// lowerCamel is protobuf's JSON name of a snake_case field name.
func lowerCamel(snake string) string {
	var b strings.Builder
	up := false
	for _, r := range snake {
		if r == '_' {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}

// checkText refuses text PostgreSQL cannot store: NUL characters and invalid UTF-8 (which
// binary protobuf refuses already, but REST path parameters can carry).
func checkText(m protoreflect.Message, prefix string) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := prefix + fd.JSONName()
		check := func(v protoreflect.Value) bool {
			switch fd.Kind() {
			case protoreflect.StringKind:
				if s := v.String(); !utf8.ValidString(s) {
					err = fault.Invalid(name, "must be valid UTF-8")
				} else if strings.ContainsRune(s, 0) {
					err = fault.Invalid(name, "must not contain NUL characters")
				}
			case protoreflect.MessageKind:
				err = checkText(v.Message(), name+".")
			}
			return err == nil
		}
		switch {
		case fd.IsMap():
			return true
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && check(l.Get(i)); i++ {
			}
			return err == nil
		default:
			return check(v)
		}
	})
	return err
}
