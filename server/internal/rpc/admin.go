package rpc

import (
	"context"
	"time"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/clientip"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/theme"
	"github.com/cofferhq/coffer/server/internal/webhook"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// AdminServer implements coffer.v1.AdminService.
type AdminServer struct {
	Admins      *admin.Service
	Themes      *theme.Service
	Deposits    *deposit.Service
	Webhooks    *webhook.Service
	Withdrawals *withdrawal.Service
	Funds       *funds.Ledger
}

// Login exchanges credentials for an admin token.
func (s *AdminServer) Login(ctx context.Context, req *cofferv1.LoginRequest) (*cofferv1.LoginResponse, error) {
	token, exp, a, err := s.Admins.Login(ctx, admin.Credentials{Email: req.GetEmail(), Password: req.GetPassword(),
		TOTP: req.GetTotp(), Client: clientip.From(ctx)})
	if err != nil {
		return nil, err
	}
	return &cofferv1.LoginResponse{Token: token, ExpiresAt: ts(exp), Admin: adminProto(a)}, nil
}

// Logout revokes the calling token.
func (s *AdminServer) Logout(ctx context.Context, _ *cofferv1.LogoutRequest) (*cofferv1.LogoutResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	return &cofferv1.LogoutResponse{}, s.Admins.Logout(ctx, a.Token)
}

// GetMe returns the calling admin.
func (s *AdminServer) GetMe(ctx context.Context, _ *cofferv1.GetMeRequest) (*cofferv1.GetMeResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	return &cofferv1.GetMeResponse{Admin: adminProto(a.Admin)}, nil
}

// ListThemes lists the themes in the admin's scope.
func (s *AdminServer) ListThemes(ctx context.Context, req *cofferv1.ListThemesRequest) (*cofferv1.ListThemesResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	themes, err := s.Themes.List(ctx, a, req.GetOperatorId())
	if err != nil {
		return nil, err
	}
	return &cofferv1.ListThemesResponse{Themes: protos(themes, themeProto)}, nil
}

// CreateTheme creates a theme.
func (s *AdminServer) CreateTheme(ctx context.Context, req *cofferv1.CreateThemeRequest) (*cofferv1.CreateThemeResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.Themes.Create(ctx, a, req.GetOperatorId(), req.GetSlug(), req.GetName(), themeStyle(req.GetStyle()))
	if err != nil {
		return nil, err
	}
	return &cofferv1.CreateThemeResponse{Theme: themeProto(t)}, nil
}

// UpdateTheme changes a theme.
func (s *AdminServer) UpdateTheme(ctx context.Context, req *cofferv1.UpdateThemeRequest) (*cofferv1.UpdateThemeResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.Themes.Update(ctx, a, req.GetId(), req.GetName(), themeStyle(req.GetStyle()))
	if err != nil {
		return nil, err
	}
	return &cofferv1.UpdateThemeResponse{Theme: themeProto(t)}, nil
}

// DeleteTheme removes a theme.
func (s *AdminServer) DeleteTheme(ctx context.Context, req *cofferv1.DeleteThemeRequest) (*cofferv1.DeleteThemeResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	return &cofferv1.DeleteThemeResponse{}, s.Themes.Delete(ctx, a, req.GetId())
}

// ListWithdrawals pages through the withdrawals in the admin's scope.
func (s *AdminServer) ListWithdrawals(ctx context.Context, req *cofferv1.ListWithdrawalsRequest) (*cofferv1.ListWithdrawalsResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	f := domain.WithdrawalFilter{OperatorIDs: oneOperator(req.GetOperatorId()), ExternalUserID: req.GetExternalUserId(),
		Statuses: withdrawalStatuses().domains(req.GetStatuses()), CreatedAfter: optionalTime(req.GetCreatedAfter()),
		CreatedBefore: optionalTime(req.GetCreatedBefore()), Limit: int(req.GetPageSize())}
	list, next, err := s.Withdrawals.List(ctx, a.Scope(), f, req.GetPageToken())
	if err != nil {
		return nil, err
	}
	return &cofferv1.ListWithdrawalsResponse{Withdrawals: protos(list, withdrawalProto), NextPageToken: next}, nil
}

// oneOperator is a panel list's operator filter: the one operator the admin picked, or nil
// (every operator of the admin's scope) when it picked none.
func oneOperator(id string) []string {
	if id == "" {
		return nil
	}
	return []string{id}
}

// GetAdminWithdrawal returns a withdrawal with its audit trail.
func (s *AdminServer) GetAdminWithdrawal(ctx context.Context, req *cofferv1.GetAdminWithdrawalRequest) (*cofferv1.GetAdminWithdrawalResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	w, trail, err := s.Withdrawals.Get(ctx, a.Scope(), req.GetWithdrawRequestId())
	if err != nil {
		return nil, err
	}
	actors := make([]domain.Actor, len(trail))
	for i, t := range trail {
		actors[i] = t.Actor
	}
	emails, err := s.Admins.ActorEmails(ctx, actors)
	if err != nil {
		return nil, err
	}
	res := &cofferv1.GetAdminWithdrawalResponse{Withdrawal: withdrawalProto(w)}
	for _, t := range trail {
		note := t.Note
		if note == "" {
			note = t.Action
		} else {
			note = t.Action + ": " + note
		}
		res.History = append(res.History, &cofferv1.WithdrawalAuditEntry{FromStatus: withdrawalStatuses().proto(t.From),
			ToStatus: withdrawalStatuses().proto(t.To), Actor: string(t.Actor), ActorDisplay: emails[t.Actor], Note: note, CreatedAt: ts(t.At)})
	}
	// The admin's among the actions the transition table allows now.
	res.AllowedActions = adminActions().protos(withdrawal.AllowedAt(w, time.Now()))
	return res, nil
}

// UpdateWithdrawalStatus is the admin two-step (PENDING → PROCESSING → COMPLETED or REJECTED).
func (s *AdminServer) UpdateWithdrawalStatus(ctx context.Context, req *cofferv1.UpdateWithdrawalStatusRequest) (*cofferv1.UpdateWithdrawalStatusResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	w, err := s.Withdrawals.AdminStatus(ctx, a.Scope(), req.GetWithdrawRequestId(), withdrawalStatuses().domain(req.GetStatus()),
		domain.AdminActor(a.ID), req.GetAdminNote())
	if err != nil {
		return nil, err
	}
	return &cofferv1.UpdateWithdrawalStatusResponse{Withdrawal: withdrawalProto(w)}, nil
}

// OverrideDecision approves or rejects a mode-B withdrawal from the panel, with the operator
// decision's checks and effects.
func (s *AdminServer) OverrideDecision(ctx context.Context, req *cofferv1.OverrideDecisionRequest) (*cofferv1.OverrideDecisionResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	d, err := s.Withdrawals.Decide(ctx, a.Scope(), req.GetWithdrawRequestId(), adminDecisions().domain(req.GetDecision()),
		domain.AdminActor(a.ID), req.GetAdminNote())
	if err != nil {
		return nil, err
	}
	return &cofferv1.OverrideDecisionResponse{WithdrawStatus: withdrawalStatuses().proto(d.Withdrawal.Status),
		SettlementTxHash: d.Withdrawal.SettlementTxHash, Held: d.Held != "", HeldReason: heldReasons().proto(d.Held)}, nil
}

// ListDeposits pages through the deposits in the admin's scope.
func (s *AdminServer) ListDeposits(ctx context.Context, req *cofferv1.ListDepositsRequest) (*cofferv1.ListDepositsResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	f := domain.DepositFilter{OperatorIDs: oneOperator(req.GetOperatorId()), ExternalUserID: req.GetExternalUserId(),
		Statuses: depositStatuses().domains(req.GetStatuses()), Limit: int(req.GetPageSize())}
	deps, next, err := s.Deposits.List(ctx, a.Scope(), f, req.GetPageToken())
	if err != nil {
		return nil, err
	}
	return &cofferv1.ListDepositsResponse{Deposits: protos(deps, depositProto), NextPageToken: next}, nil
}

// ReplayDeposit verifies a missed transaction and credits it (within the admin's scope), as
// OpsService.ReplayMissedDeposit.
func (s *AdminServer) ReplayDeposit(ctx context.Context, req *cofferv1.ReplayDepositRequest) (*cofferv1.ReplayDepositResponse, error) {
	a, err := callerAdmin(ctx)
	if err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, panelActorKey{}, domain.AdminActor(a.ID))
	res, err := s.ops().ReplayMissedDeposit(ctx, &cofferv1.ReplayMissedDepositRequest{ChainId: req.GetChainId(), TxHash: req.GetTxHash()})
	if err != nil {
		return nil, err
	}
	return res.GetResult(), nil
}

// ListDeadLetters lists dead-lettered webhooks in the admin's scope, as
// OpsService.ListDeadLetteredWebhooks.
func (s *AdminServer) ListDeadLetters(ctx context.Context, req *cofferv1.ListDeadLettersRequest) (*cofferv1.ListDeadLettersResponse, error) {
	res, err := s.ops().ListDeadLetteredWebhooks(ctx, &cofferv1.ListDeadLetteredWebhooksRequest{OperatorId: req.GetOperatorId(),
		PageSize: req.GetPageSize(), PageToken: req.GetPageToken()})
	if err != nil {
		return nil, err
	}
	return &cofferv1.ListDeadLettersResponse{Deliveries: res.GetDeliveries(), NextPageToken: res.GetNextPageToken()}, nil
}

// RedeliverWebhook queues a dead-lettered webhook of the admin's scope again, as
// OpsService.RedeliverDeadLetter.
func (s *AdminServer) RedeliverWebhook(ctx context.Context, req *cofferv1.RedeliverWebhookRequest) (*cofferv1.RedeliverWebhookResponse, error) {
	res, err := s.ops().RedeliverDeadLetter(ctx, &cofferv1.RedeliverDeadLetterRequest{EventId: req.GetEventId()})
	if err != nil {
		return nil, err
	}
	return &cofferv1.RedeliverWebhookResponse{Delivery: res.GetDelivery()}, nil
}
