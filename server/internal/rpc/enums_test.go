package rpc

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/depositor"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// checkEnum checks one table whole: every domain value maps to a proto value other than
// UNSPECIFIED and back to itself, and every proto value other than UNSPECIFIED maps to one of
// the domain values and back. A value added on either side without its row fails here.
func checkEnum[D comparable, P ~int32](t *testing.T, e enum[D, P], values []D, desc protoreflect.EnumDescriptor) {
	t.Helper()
	name := string(desc.Name())
	var zero D
	for _, d := range values {
		p := e.proto(d)
		if p == 0 {
			t.Errorf("%s: %v maps to UNSPECIFIED", name, d)
			continue
		}
		if back := e.domain(p); back != d {
			t.Errorf("%s: %v -> %v -> %v", name, d, p, back)
		}
	}
	if len(e.toProto) != len(values) {
		t.Errorf("%s: the table has %d rows for %d domain values", name, len(e.toProto), len(values))
	}
	for i := range desc.Values().Len() {
		v := desc.Values().Get(i)
		p := P(v.Number())
		d := e.domain(p)
		switch {
		case p == 0 && d != zero:
			t.Errorf("%s: UNSPECIFIED maps to %v", name, d)
		case p != 0 && !slices.Contains(values, d):
			t.Errorf("%s: %s maps to %v, not one of the domain's values", name, v.Name(), d)
		case p != 0 && e.proto(d) != p:
			t.Errorf("%s: %s -> %v -> %v", name, v.Name(), d, e.proto(d))
		}
	}
}

func TestEnumTables(t *testing.T) {
	t.Parallel()
	checkEnum(t, approvalModes(), domain.ApprovalModes(), cofferv1.ApprovalMode(0).Descriptor())
	checkEnum(t, sessionKinds(), domain.SessionKinds(), cofferv1.SessionKind(0).Descriptor())
	checkEnum(t, sessionStatuses(), domain.SessionStatuses(), cofferv1.SessionStatus(0).Descriptor())
	checkEnum(t, depositStatuses(), domain.DepositStatuses(), cofferv1.DepositStatus(0).Descriptor())
	// ReorgOpen (not resolved) is the zero value: UNSPECIFIED.
	resolutions := slices.DeleteFunc(slices.Clone(domain.ReorgResolutions()), func(r domain.ReorgResolution) bool { return r == domain.ReorgOpen })
	checkEnum(t, reorgResolutions(), resolutions, cofferv1.ReorgResolution(0).Descriptor())
	checkEnum(t, withdrawalStatuses(), domain.WithdrawalStatuses(), cofferv1.WithdrawalStatus(0).Descriptor())
	checkEnum(t, pauseScopes(), domain.PauseScopes(), cofferv1.PauseScope(0).Descriptor())
	checkEnum(t, withdrawalTypes(), withdrawal.Types(), cofferv1.WithdrawalType(0).Descriptor())
	checkEnum(t, heldReasons(), withdrawal.HeldReasons(), cofferv1.HeldReason(0).Descriptor())
	checkEnum(t, operatorDecisions(), []withdrawal.Action{withdrawal.OperatorApprove, withdrawal.OperatorReject}, cofferv1.Decision(0).Descriptor())
	checkEnum(t, adminDecisions(), []withdrawal.Action{withdrawal.AdminApprove, withdrawal.AdminDeny}, cofferv1.Decision(0).Descriptor())
	checkEnum(t, webhookEventTypes(), domain.EventTypes(), cofferv1.WebhookEventType(0).Descriptor())
	checkEnum(t, emailChanges(), depositor.EmailChanges(), cofferv1.EmailChange(0).Descriptor())
	checkEnum(t, deliveryStates(), domain.DeliveryStates(), cofferv1.EventDeliveryState(0).Descriptor())

	// Every admin action of the transition table, and only those, is an AdminWithdrawalAction.
	var admins []withdrawal.Action
	for _, a := range withdrawal.Actions() {
		if strings.HasPrefix(string(a), domain.ActorAdmin+":") {
			admins = append(admins, a)
		}
	}
	checkEnum(t, adminActions(), admins, cofferv1.AdminWithdrawalAction(0).Descriptor())
}

// TestEnumFilters: a filter keeps the values the table names, in order, and is never nil (an
// empty filter means any value).
func TestEnumFilters(t *testing.T) {
	t.Parallel()
	got := withdrawalStatuses().domains([]cofferv1.WithdrawalStatus{cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_EXPIRED, 0, 99,
		cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_PENDING})
	if !slices.Equal(got, []domain.WithdrawalStatus{domain.WithdrawalExpired, domain.WithdrawalPending}) {
		t.Errorf("domains = %v", got)
	}
	if got := depositStatuses().domains(nil); got == nil || len(got) != 0 {
		t.Errorf("domains(nil) = %#v; want empty, not nil", got)
	}
	acts := adminActions().protos([]withdrawal.Action{withdrawal.PayoutConfirmed, withdrawal.AdminComplete, withdrawal.Expire, withdrawal.AdminReject})
	if !slices.Equal(acts, []cofferv1.AdminWithdrawalAction{cofferv1.AdminWithdrawalAction_ADMIN_WITHDRAWAL_ACTION_COMPLETE,
		cofferv1.AdminWithdrawalAction_ADMIN_WITHDRAWAL_ACTION_REJECT}) {
		t.Errorf("protos = %v", acts)
	}
}
