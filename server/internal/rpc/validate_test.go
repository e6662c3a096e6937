package rpc_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/rpc"
)

// What was seen: POST /depositor/address without chainId answered "chainId: value must be
// greater than 0", as if a number had been sent. A proto3 number left out holds zero (on the
// wire the two are the same), so every number field whose rules zero breaks is reported as
// required, as an empty string is; a wrong number sent keeps its rule's message.
func TestMissingNumberIsRequired(t *testing.T) {
	t.Parallel()
	required := 0
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		d := mt.Descriptor()
		if d.ParentFile().Package() != "coffer.v1" {
			return true
		}
		err := rpc.Validate(mt.New().Interface())
		if err == nil {
			return true
		}
		for violation := range strings.SplitSeq(fault.As(err).Message, "; ") {
			field, msg, _ := strings.Cut(violation, ": ")
			fd := d.Fields().ByJSONName(field)
			if fd == nil || fd.HasPresence() || fd.IsList() || !rpc.IsNumber(fd.Kind()) {
				continue
			}
			if msg != "value is required" {
				t.Errorf("%s without %s: %q, want it required", d.FullName(), field, violation)
				continue
			}
			required++
		}
		return true
	})
	// GetDepositAddress, QuoteWithdrawal, SubmitWithdrawal, GetDeposit, the funds, replay,
	// reorg and threshold calls: a sweep that finds none has lost its way.
	if required < 10 {
		t.Errorf("%d required number fields found, want at least 10", required)
	}
}

// A number with presence (optional) that is sent as zero was sent: it keeps its rule's message.
func TestOptionalZeroKeepsItsRule(t *testing.T) {
	t.Parallel()
	err := rpc.Validate(&cofferv1.SendTestWebhookRequest{Sid: "7a8b9c0d-1111-4222-8333-444455556666", ChainId: proto.Int64(0)})
	if got := fault.As(err).Message; got != "chainId: must be greater than 0" {
		t.Errorf("optional chainId 0: %q", got)
	}
}
