package rpc

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/depositor"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// enum maps one enum between its domain values and its proto values, both ways, from one
// table. A value the table does not name maps to the other side's zero value: UNSPECIFIED, or
// the domain's "none" ("" for the string enums).
type enum[D comparable, P ~int32] struct {
	toProto  map[D]P
	toDomain map[P]D
}

// newEnum builds an enum from its table, which must map each domain value to its own proto
// value other than UNSPECIFIED (enums_test.go checks every table against the domain's and the
// proto's lists of values).
func newEnum[D comparable, P ~int32](table map[D]P) enum[D, P] {
	e := enum[D, P]{toProto: table, toDomain: make(map[P]D, len(table))}
	for d, p := range table {
		if _, twice := e.toDomain[p]; twice || p == 0 {
			panic(fmt.Sprintf("rpc: enum table %T: %v is UNSPECIFIED or named twice", p, p))
		}
		e.toDomain[p] = d
	}
	return e
}

func (e enum[D, P]) proto(d D) P  { return e.toProto[d] }
func (e enum[D, P]) domain(p P) D { return e.toDomain[p] }

// domains maps a filter's values, leaving out those the table does not name. It is never nil:
// an empty filter is "any".
func (e enum[D, P]) domains(ps []P) []D { return mapNamed(ps, e.toDomain) }

// protos maps a list of domain values, leaving out those the table does not name.
func (e enum[D, P]) protos(ds []D) []P { return mapNamed(ds, e.toProto) }

func mapNamed[F, T comparable](in []F, table map[F]T) []T {
	out := make([]T, 0, len(in))
	for _, v := range in {
		if m, ok := table[v]; ok {
			out = append(out, m)
		}
	}
	return out
}

// byName builds an enum whose proto value names are the domain values, upper-cased, with the
// enum's prefix: DepositCredited ("CREDITED") is DEPOSIT_STATUS_CREDITED, DeliveryDead ("dead")
// EVENT_DELIVERY_STATE_DEAD. The prefix is that of the proto's UNSPECIFIED value. The domain's
// zero value ("", none) is left out: it is UNSPECIFIED. A domain value with no proto value of
// its name panics (enums_test.go builds every table).
func byName[P protoEnum, D ~string](values []D) enum[D, P] {
	desc := P(0).Descriptor().Values()
	prefix := strings.TrimSuffix(string(desc.ByNumber(0).Name()), "UNSPECIFIED")
	table := make(map[D]P, len(values))
	for _, d := range values {
		if d == "" {
			continue
		}
		name := prefix + strings.ToUpper(string(d))
		v := desc.ByName(protoreflect.Name(name))
		if v == nil {
			panic(fmt.Sprintf("rpc: enum %s has no value %s", P(0).Descriptor().Name(), name))
		}
		table[d] = P(v.Number())
	}
	return newEnum(table)
}

// protoEnum is a generated proto enum type.
type protoEnum interface {
	~int32
	Descriptor() protoreflect.EnumDescriptor
}

// The tables: one per enum. They are functions, not package variables, so that no caller can
// change a table; each is a handful of rows, cheap to build per call. Where the domain's
// values are the proto's names, the table is built from the domain's list of values.

func approvalModes() enum[domain.ApprovalMode, cofferv1.ApprovalMode] {
	return byName[cofferv1.ApprovalMode](domain.ApprovalModes())
}

func sessionKinds() enum[domain.SessionKind, cofferv1.SessionKind] {
	return byName[cofferv1.SessionKind](domain.SessionKinds())
}

func sessionStatuses() enum[domain.SessionStatus, cofferv1.SessionStatus] {
	return byName[cofferv1.SessionStatus](domain.SessionStatuses())
}

func depositStatuses() enum[domain.DepositStatus, cofferv1.DepositStatus] {
	return byName[cofferv1.DepositStatus](domain.DepositStatuses())
}

// ReorgOpen (no resolution yet) is the zero value on both sides.
func reorgResolutions() enum[domain.ReorgResolution, cofferv1.ReorgResolution] {
	return byName[cofferv1.ReorgResolution](domain.ReorgResolutions())
}

func withdrawalStatuses() enum[domain.WithdrawalStatus, cofferv1.WithdrawalStatus] {
	return byName[cofferv1.WithdrawalStatus](domain.WithdrawalStatuses())
}

func withdrawalTypes() enum[string, cofferv1.WithdrawalType] {
	return byName[cofferv1.WithdrawalType](withdrawal.Types())
}

// "" (not held) is UNSPECIFIED.
func heldReasons() enum[withdrawal.HeldReason, cofferv1.HeldReason] {
	return byName[cofferv1.HeldReason](withdrawal.HeldReasons())
}

// The operator's decision (WithdrawalService.DecideWithdrawal).
func operatorDecisions() enum[withdrawal.Action, cofferv1.Decision] {
	return newEnum(map[withdrawal.Action]cofferv1.Decision{
		withdrawal.OperatorApprove: cofferv1.Decision_DECISION_APPROVE,
		withdrawal.OperatorReject:  cofferv1.Decision_DECISION_REJECT,
	})
}

// An admin's override of the operator's decision (AdminService.OverrideDecision).
func adminDecisions() enum[withdrawal.Action, cofferv1.Decision] {
	return newEnum(map[withdrawal.Action]cofferv1.Decision{
		withdrawal.AdminApprove: cofferv1.Decision_DECISION_APPROVE,
		withdrawal.AdminDeny:    cofferv1.Decision_DECISION_REJECT,
	})
}

// What an admin may ask for in the panel; the other actions (the operator's, the
// system's) have no AdminWithdrawalAction.
func adminActions() enum[withdrawal.Action, cofferv1.AdminWithdrawalAction] {
	return newEnum(map[withdrawal.Action]cofferv1.AdminWithdrawalAction{
		withdrawal.AdminProcess:  cofferv1.AdminWithdrawalAction_ADMIN_WITHDRAWAL_ACTION_PROCESS,
		withdrawal.AdminComplete: cofferv1.AdminWithdrawalAction_ADMIN_WITHDRAWAL_ACTION_COMPLETE,
		withdrawal.AdminReject:   cofferv1.AdminWithdrawalAction_ADMIN_WITHDRAWAL_ACTION_REJECT,
		withdrawal.AdminApprove:  cofferv1.AdminWithdrawalAction_ADMIN_WITHDRAWAL_ACTION_OVERRIDE_APPROVE,
		withdrawal.AdminDeny:     cofferv1.AdminWithdrawalAction_ADMIN_WITHDRAWAL_ACTION_OVERRIDE_REJECT,
	})
}

func webhookEventTypes() enum[domain.EventType, cofferv1.WebhookEventType] {
	return byName[cofferv1.WebhookEventType](domain.EventTypes())
}

func emailChanges() enum[depositor.EmailChange, cofferv1.EmailChange] {
	return byName[cofferv1.EmailChange](depositor.EmailChanges())
}

func deliveryStates() enum[domain.DeliveryState, cofferv1.EventDeliveryState] {
	return byName[cofferv1.EventDeliveryState](domain.DeliveryStates())
}
