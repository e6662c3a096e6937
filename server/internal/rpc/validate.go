package rpc

import (
	"errors"
	"strings"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"

	"github.com/cofferhq/coffer/server/internal/fault"
)

var validator, validatorErr = protovalidate.New()

// Validate checks a request against its protovalidate rules and reports the violations as
// INVALID_ARGUMENT naming the fields by their JSON names ("amount: must be ...").
func Validate(msg proto.Message) error {
	if validatorErr != nil {
		return fault.Wrap(validatorErr, "protovalidate")
	}
	err := validator.Validate(msg)
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
		if field != "" {
			text = field + ": " + text
		}
		msgs = append(msgs, text)
	}
	return &fault.Error{Code: fault.InvalidArgument, Message: strings.Join(msgs, "; "), Field: first}
}

func jsonPath(v *protovalidate.Violation) string {
	var parts []string
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
