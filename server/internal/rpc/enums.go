package rpc

import (
	"fmt"

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

// The tables: one per enum. They are functions, not package variables, so that no caller can
// change a table; each is a handful of rows, cheap to build per call.

func approvalModes() enum[domain.ApprovalMode, cofferv1.ApprovalMode] {
	return newEnum(map[domain.ApprovalMode]cofferv1.ApprovalMode{
		domain.ApprovalSync:     cofferv1.ApprovalMode_APPROVAL_MODE_SYNC,
		domain.ApprovalExternal: cofferv1.ApprovalMode_APPROVAL_MODE_EXTERNAL,
	})
}

func sessionKinds() enum[domain.SessionKind, cofferv1.SessionKind] {
	return newEnum(map[domain.SessionKind]cofferv1.SessionKind{
		domain.SessionDeposit:  cofferv1.SessionKind_SESSION_KIND_DEPOSIT,
		domain.SessionWithdraw: cofferv1.SessionKind_SESSION_KIND_WITHDRAW,
	})
}

func sessionStatuses() enum[domain.SessionStatus, cofferv1.SessionStatus] {
	return newEnum(map[domain.SessionStatus]cofferv1.SessionStatus{
		domain.SessionOpen:      cofferv1.SessionStatus_SESSION_STATUS_OPEN,
		domain.SessionExpired:   cofferv1.SessionStatus_SESSION_STATUS_EXPIRED,
		domain.SessionCancelled: cofferv1.SessionStatus_SESSION_STATUS_CANCELLED,
	})
}

func depositStatuses() enum[domain.DepositStatus, cofferv1.DepositStatus] {
	return newEnum(map[domain.DepositStatus]cofferv1.DepositStatus{
		domain.DepositConfirming:   cofferv1.DepositStatus_DEPOSIT_STATUS_CONFIRMING,
		domain.DepositSweeping:     cofferv1.DepositStatus_DEPOSIT_STATUS_SWEEPING,
		domain.DepositCredited:     cofferv1.DepositStatus_DEPOSIT_STATUS_CREDITED,
		domain.DepositOrphaned:     cofferv1.DepositStatus_DEPOSIT_STATUS_ORPHANED,
		domain.DepositUnsweepable:  cofferv1.DepositStatus_DEPOSIT_STATUS_UNSWEEPABLE,
		domain.DepositBelowMinimum: cofferv1.DepositStatus_DEPOSIT_STATUS_BELOW_MINIMUM,
		domain.DepositReorged:      cofferv1.DepositStatus_DEPOSIT_STATUS_REORGED,
	})
}

// ReorgOpen (no resolution yet) is the zero value on both sides.
func reorgResolutions() enum[domain.ReorgResolution, cofferv1.ReorgResolution] {
	return newEnum(map[domain.ReorgResolution]cofferv1.ReorgResolution{
		domain.ReorgReinstate:  cofferv1.ReorgResolution_REORG_RESOLUTION_REINSTATE,
		domain.ReorgWriteOff:   cofferv1.ReorgResolution_REORG_RESOLUTION_WRITE_OFF,
		domain.ReorgReincluded: cofferv1.ReorgResolution_REORG_RESOLUTION_REINCLUDED,
	})
}

func withdrawalStatuses() enum[domain.WithdrawalStatus, cofferv1.WithdrawalStatus] {
	return newEnum(map[domain.WithdrawalStatus]cofferv1.WithdrawalStatus{
		domain.WithdrawalPending:          cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_PENDING,
		domain.WithdrawalProcessing:       cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_PROCESSING,
		domain.WithdrawalAwaitingApproval: cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_AWAITING_APPROVAL,
		domain.WithdrawalCompleted:        cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_COMPLETED,
		domain.WithdrawalRejected:         cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_REJECTED,
		domain.WithdrawalCancelled:        cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_CANCELLED,
		domain.WithdrawalExpired:          cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_EXPIRED,
	})
}

func withdrawalTypes() enum[string, cofferv1.WithdrawalType] {
	return newEnum(map[string]cofferv1.WithdrawalType{
		withdrawal.DirectTransfer: cofferv1.WithdrawalType_WITHDRAWAL_TYPE_DIRECT_TRANSFER,
		withdrawal.OffRampType:    cofferv1.WithdrawalType_WITHDRAWAL_TYPE_OFF_RAMP,
	})
}

// "" (not held) is UNSPECIFIED.
func heldReasons() enum[withdrawal.HeldReason, cofferv1.HeldReason] {
	return newEnum(map[withdrawal.HeldReason]cofferv1.HeldReason{
		withdrawal.CapExceeded:            cofferv1.HeldReason_HELD_REASON_CAP_EXCEEDED,
		withdrawal.ApprovalNotEnabled:     cofferv1.HeldReason_HELD_REASON_APPROVAL_NOT_ENABLED,
		withdrawal.OperatorInactive:       cofferv1.HeldReason_HELD_REASON_OPERATOR_INACTIVE,
		withdrawal.HeldExpired:            cofferv1.HeldReason_HELD_REASON_EXPIRED,
		withdrawal.TemporarilyUnavailable: cofferv1.HeldReason_HELD_REASON_TEMPORARILY_UNAVAILABLE,
	})
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
	return newEnum(map[domain.EventType]cofferv1.WebhookEventType{
		domain.EventDeposit:          cofferv1.WebhookEventType_WEBHOOK_EVENT_TYPE_DEPOSIT,
		domain.EventWithdrawRequest:  cofferv1.WebhookEventType_WEBHOOK_EVENT_TYPE_WITHDRAW_REQUEST,
		domain.EventWithdrawComplete: cofferv1.WebhookEventType_WEBHOOK_EVENT_TYPE_WITHDRAW_COMPLETE,
	})
}

func emailChanges() enum[depositor.EmailChange, cofferv1.EmailChange] {
	return newEnum(map[depositor.EmailChange]cofferv1.EmailChange{
		depositor.EmailSet:       cofferv1.EmailChange_EMAIL_CHANGE_SET,
		depositor.EmailUpdated:   cofferv1.EmailChange_EMAIL_CHANGE_UPDATED,
		depositor.EmailUnchanged: cofferv1.EmailChange_EMAIL_CHANGE_UNCHANGED,
	})
}
