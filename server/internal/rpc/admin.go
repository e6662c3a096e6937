package rpc

import (
	"context"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/theme"
)

// AdminServer implements coffer.v1.AdminService.
type AdminServer struct {
	Admins *admin.Service
	Themes *theme.Service
}

// Login exchanges credentials for an admin token.
func (s *AdminServer) Login(ctx context.Context, req *cofferv1.LoginRequest) (*cofferv1.LoginResponse, error) {
	token, exp, a, err := s.Admins.Login(ctx, req.GetEmail(), req.GetPassword(), req.GetTotp())
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
	res := &cofferv1.ListThemesResponse{}
	for _, t := range themes {
		res.Themes = append(res.Themes, themeProto(t))
	}
	return res, nil
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

func notYet(what string) error {
	return fault.New(fault.NotImplemented, "%s is not available yet", what)
}

// ListWithdrawals is delivered by the withdrawals milestone.
func (s *AdminServer) ListWithdrawals(context.Context, *cofferv1.ListWithdrawalsRequest) (*cofferv1.ListWithdrawalsResponse, error) {
	return nil, notYet("Listing withdrawals")
}

// GetAdminWithdrawal is delivered by the withdrawals milestone.
func (s *AdminServer) GetAdminWithdrawal(context.Context, *cofferv1.GetAdminWithdrawalRequest) (*cofferv1.GetAdminWithdrawalResponse, error) {
	return nil, notYet("Reading a withdrawal")
}

// UpdateWithdrawalStatus is delivered by the withdrawals milestone.
func (s *AdminServer) UpdateWithdrawalStatus(context.Context, *cofferv1.UpdateWithdrawalStatusRequest) (*cofferv1.UpdateWithdrawalStatusResponse, error) {
	return nil, notYet("Changing a withdrawal's status")
}

// OverrideDecision is delivered by the withdrawals milestone.
func (s *AdminServer) OverrideDecision(context.Context, *cofferv1.OverrideDecisionRequest) (*cofferv1.OverrideDecisionResponse, error) {
	return nil, notYet("Overriding a decision")
}

// ListDeposits is delivered by the deposits milestone.
func (s *AdminServer) ListDeposits(context.Context, *cofferv1.ListDepositsRequest) (*cofferv1.ListDepositsResponse, error) {
	return nil, notYet("Listing deposits")
}

// ReplayDeposit is delivered by the deposits milestone.
func (s *AdminServer) ReplayDeposit(context.Context, *cofferv1.ReplayDepositRequest) (*cofferv1.ReplayDepositResponse, error) {
	return nil, notYet("Replaying a missed deposit")
}

// ListDeadLetters is delivered by the deposits milestone (webhook outbox).
func (s *AdminServer) ListDeadLetters(context.Context, *cofferv1.ListDeadLettersRequest) (*cofferv1.ListDeadLettersResponse, error) {
	return nil, notYet("Listing dead-lettered webhooks")
}

// RedeliverWebhook is delivered by the deposits milestone (webhook outbox).
func (s *AdminServer) RedeliverWebhook(context.Context, *cofferv1.RedeliverWebhookRequest) (*cofferv1.RedeliverWebhookResponse, error) {
	return nil, notYet("Redelivering a webhook")
}
