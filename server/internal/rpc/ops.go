package rpc

import (
	"context"

	"github.com/ethereum/go-ethereum/common"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/testwebhook"
	"github.com/cofferhq/coffer/server/internal/webhook"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// OpsServer implements coffer.v1.OpsService for the service team.
type OpsServer struct {
	Operators  *operator.Service
	Admins     *admin.Service
	Deposits   *deposit.Service
	Webhooks   *webhook.Service
	Funds      *funds.Ledger
	Reconciler *funds.Reconciler
	// Withdrawals serves the payout actions (pauses, transaction resolution).
	Withdrawals *withdrawal.Service
	// TestWebhooks sends the onboarding test events.
	TestWebhooks *testwebhook.Service
}

// opsActor is who acts through the ops API (the audit trails' actor).
const opsActor = domain.Actor(domain.ActorServiceTeam + ":ops-api")

// operatorProto is an operator service call's operator as the API answers it, with its key
// prefixes; err is the call's error, returned as it is.
func (s *OpsServer) operatorProto(ctx context.Context, op domain.Operator, err error) (*cofferv1.Operator, error) {
	if err != nil {
		return nil, err
	}
	prefixes, err := s.Operators.KeyPrefixes(ctx, op.ID)
	if err != nil {
		return nil, err
	}
	return operatorProto(op, prefixes), nil
}

// CreateOperator creates an operator and returns its key once.
func (s *OpsServer) CreateOperator(ctx context.Context, req *cofferv1.CreateOperatorRequest) (*cofferv1.CreateOperatorResponse, error) {
	op, key, err := s.Operators.Create(ctx, operatorSettings(req.GetSettings()))
	p, err := s.operatorProto(ctx, op, err)
	if err != nil {
		return nil, err
	}
	return &cofferv1.CreateOperatorResponse{Operator: p, OperatorKey: key}, nil
}

// UpdateOperator changes settings.
func (s *OpsServer) UpdateOperator(ctx context.Context, req *cofferv1.UpdateOperatorRequest) (*cofferv1.UpdateOperatorResponse, error) {
	op, err := s.Operators.Update(ctx, req.GetId(), operatorSettings(req.GetSettings()))
	p, err := s.operatorProto(ctx, op, err)
	if err != nil {
		return nil, err
	}
	return &cofferv1.UpdateOperatorResponse{Operator: p}, nil
}

// GetOperator returns an operator.
func (s *OpsServer) GetOperator(ctx context.Context, req *cofferv1.GetOperatorRequest) (*cofferv1.GetOperatorResponse, error) {
	op, err := s.Operators.Get(ctx, req.GetId())
	p, err := s.operatorProto(ctx, op, err)
	if err != nil {
		return nil, err
	}
	return &cofferv1.GetOperatorResponse{Operator: p}, nil
}

// ListOperators lists operators.
func (s *OpsServer) ListOperators(ctx context.Context, req *cofferv1.ListOperatorsRequest) (*cofferv1.ListOperatorsResponse, error) {
	ops, err := s.Operators.List(ctx, req.GetParentId())
	if err != nil {
		return nil, err
	}
	res := &cofferv1.ListOperatorsResponse{}
	for _, op := range ops {
		p, err := s.operatorProto(ctx, op, nil)
		if err != nil {
			return nil, err
		}
		res.Operators = append(res.Operators, p)
	}
	return res, nil
}

// RotateOperatorKey issues a new key.
func (s *OpsServer) RotateOperatorKey(ctx context.Context, req *cofferv1.RotateOperatorKeyRequest) (*cofferv1.RotateOperatorKeyResponse, error) {
	grace := operator.DefaultGrace
	if req.GracePeriod != nil {
		grace = req.GracePeriod.AsDuration()
	}
	key, exp, err := s.Operators.RotateKey(ctx, req.GetId(), grace)
	if err != nil {
		return nil, err
	}
	return &cofferv1.RotateOperatorKeyResponse{OperatorKey: key, PreviousKeyExpiresAt: ts(exp)}, nil
}

// CreateAdmin creates a panel admin.
func (s *OpsServer) CreateAdmin(ctx context.Context, req *cofferv1.CreateAdminRequest) (*cofferv1.CreateAdminResponse, error) {
	a, uri, err := s.Admins.Create(ctx, req.GetEmail(), req.GetPassword(), req.GetOperatorId(), req.GetEnableTotp())
	if err != nil {
		return nil, err
	}
	return &cofferv1.CreateAdminResponse{Admin: adminProto(a), TotpUri: uri}, nil
}

// ListDeadLetteredWebhooks lists dead-lettered webhooks of every operator (the caller's scope's:
// an admin's for AdminService.ListDeadLetters).
func (s *OpsServer) ListDeadLetteredWebhooks(ctx context.Context, req *cofferv1.ListDeadLetteredWebhooksRequest) (*cofferv1.ListDeadLetteredWebhooksResponse, error) {
	scope, err := auth.Scope(ctx, auth.OwnOperator())
	if err != nil {
		return nil, err
	}
	list, next, err := s.Webhooks.ListDead(ctx, scope, req.GetOperatorId(), int(req.GetPageSize()), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	return DeadLettersProto(list, next), nil
}

// DeadLettersProto is a page of dead letters as OpsService.ListDeadLetteredWebhooks answers it
// (and `coffer ops deadletters --json` prints it).
func DeadLettersProto(list []domain.WebhookEvent, next string) *cofferv1.ListDeadLetteredWebhooksResponse {
	return &cofferv1.ListDeadLetteredWebhooksResponse{Deliveries: protos(list, deliveryProto), NextPageToken: next}
}

// RedeliveryProto is a redelivered dead letter as OpsService.RedeliverDeadLetter answers it
// (and `coffer ops redeliver --json` prints it).
func RedeliveryProto(d domain.WebhookEvent) *cofferv1.RedeliverDeadLetterResponse {
	return &cofferv1.RedeliverDeadLetterResponse{Delivery: deliveryProto(d)}
}

// RedeliverDeadLetter queues a dead-lettered webhook again.
func (s *OpsServer) RedeliverDeadLetter(ctx context.Context, req *cofferv1.RedeliverDeadLetterRequest) (*cofferv1.RedeliverDeadLetterResponse, error) {
	scope, err := auth.Scope(ctx, auth.OwnOperator())
	if err != nil {
		return nil, err
	}
	d, err := s.Webhooks.Redeliver(ctx, scope, req.GetEventId())
	if err != nil {
		return nil, err
	}
	return RedeliveryProto(d), nil
}

// SendTestEvent sends an onboarding test event to an operator's webhookUrl.
func (s *OpsServer) SendTestEvent(ctx context.Context, req *cofferv1.SendTestEventRequest) (*cofferv1.SendTestEventResponse, error) {
	sent, err := s.TestWebhooks.SendToOperator(ctx, req.GetOperatorId(), webhookEventTypes().domain(req.GetEvent()),
		testwebhook.Overrides{Amount: req.Amount, Currency: req.Currency, ChainID: req.ChainId, Address: req.Address})
	if err != nil {
		return nil, err
	}
	return TestEventProto(sent), nil
}

// TestEventProto is an onboarding test's answer as OpsService.SendTestEvent gives it.
func TestEventProto(sent testwebhook.Onboarding) *cofferv1.SendTestEventResponse {
	r := sent.Result
	return &cofferv1.SendTestEventResponse{Event: sent.Event, EventId: sent.EventID, Delivered: r.Acked,
		Status: httpStatus(r.Status), Code: int32(sent.Code), Description: r.Description, //nolint:gosec // G115: a receiver's code is read as an int32 (webhook.exactCode)
		Failure: failure(r)}
}

// failure is why a delivery failed for another reason than the receiver's non-zero error.
func failure(r webhook.Result) string {
	if r.Err == nil {
		return ""
	}
	return r.Err.Error()
}

// ReplayMissedDeposit verifies a missed transaction and credits it.
func (s *OpsServer) ReplayMissedDeposit(ctx context.Context, req *cofferv1.ReplayMissedDepositRequest) (*cofferv1.ReplayMissedDepositResponse, error) {
	scope, err := auth.Scope(ctx, auth.OwnOperator())
	if err != nil {
		return nil, err
	}
	out, err := s.Deposits.Replay(ctx, opsCaller(ctx), scope, req.GetChainId(), common.HexToHash(req.GetTxHash()))
	if err != nil {
		return nil, err
	}
	return &cofferv1.ReplayMissedDepositResponse{Result: &cofferv1.ReplayDepositResponse{AlreadyKnown: out.AlreadyKnown,
		Deposits: protos(out.Deposits, depositProto)}}, nil
}

// DisableAdmin disables an admin and revokes its tokens.
func (s *OpsServer) DisableAdmin(ctx context.Context, req *cofferv1.DisableAdminRequest) (*cofferv1.DisableAdminResponse, error) {
	a, revoked, err := s.Admins.Disable(ctx, req.GetId(), req.GetEmail())
	if err != nil {
		return nil, err
	}
	return &cofferv1.DisableAdminResponse{Admin: adminProto(a), Active: a.Active, RevokedSessions: revoked}, nil
}

// EnableAdmin enables an admin.
func (s *OpsServer) EnableAdmin(ctx context.Context, req *cofferv1.EnableAdminRequest) (*cofferv1.EnableAdminResponse, error) {
	a, err := s.Admins.Enable(ctx, req.GetId(), req.GetEmail())
	if err != nil {
		return nil, err
	}
	return &cofferv1.EnableAdminResponse{Admin: adminProto(a), Active: a.Active}, nil
}

// RevokeAdminSessions revokes every token of an admin.
func (s *OpsServer) RevokeAdminSessions(ctx context.Context, req *cofferv1.RevokeAdminSessionsRequest) (*cofferv1.RevokeAdminSessionsResponse, error) {
	a, revoked, err := s.Admins.RevokeSessions(ctx, req.GetId(), req.GetEmail())
	if err != nil {
		return nil, err
	}
	return &cofferv1.RevokeAdminSessionsResponse{Admin: adminProto(a), Active: a.Active, RevokedSessions: revoked}, nil
}
