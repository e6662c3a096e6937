package rpc

import (
	"context"
	"time"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/money"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/theme"
)

// WidgetServer implements coffer.v1.WidgetService. Every call is authenticated by its sid.
type WidgetServer struct {
	Sessions  *session.Service
	Operators *operator.Service
	Themes    *theme.Service
}

// GetSession describes the session for the widget, with its theme. It answers for expired
// and cancelled sessions too (status tells), so the widget can show the right screen.
func (s *WidgetServer) GetSession(ctx context.Context, req *cofferv1.GetSessionRequest) (*cofferv1.GetSessionResponse, error) {
	sess, err := s.Sessions.Lookup(ctx, req.GetSid())
	if err != nil {
		return nil, err
	}
	op, err := s.Operators.Get(ctx, sess.OperatorID)
	if err != nil {
		return nil, err
	}
	res := &cofferv1.GetSessionResponse{
		Sid:          sess.ID,
		Kind:         sessionKinds[sess.Kind],
		Status:       sessionStatuses[session.Status(sess, time.Now())],
		Amount:       money.Fiat(sess.Amount),
		FiatCurrency: sess.FiatCurrency,
		Lang:         sess.Lang,
		ExpiresAt:    ts(sess.ExpiresAt),
		OperatorName: op.Name,
		RedirectUrl:  op.RedirectURL,
	}
	t, ok, err := s.Themes.Resolve(ctx, op, req.GetThemeSlug())
	if err != nil {
		return nil, err
	}
	if ok {
		res.Theme = themeProto(t)
	}
	return res, nil
}

// GetDepositAddress is delivered by the deposits milestone; the session is checked first.
func (s *WidgetServer) GetDepositAddress(ctx context.Context, req *cofferv1.GetDepositAddressRequest) (*cofferv1.GetDepositAddressResponse, error) {
	if _, err := s.Sessions.ForWidget(ctx, req.GetSid(), session.Deposit); err != nil {
		return nil, err
	}
	return nil, fault.New(fault.NotImplemented, "deposit addresses are not available yet")
}

// WatchDeposits is delivered by the deposits milestone; the session is checked first.
func (s *WidgetServer) WatchDeposits(ctx context.Context, req *cofferv1.WatchDepositsRequest, _ *connect.ServerStream[cofferv1.WatchDepositsResponse]) error {
	if _, err := s.Sessions.ForWidget(ctx, req.GetSid(), session.Deposit); err != nil {
		return err
	}
	return fault.New(fault.NotImplemented, "deposit tracking is not available yet")
}

// ListSessionDeposits is delivered by the deposits milestone; the session is checked first.
func (s *WidgetServer) ListSessionDeposits(ctx context.Context, req *cofferv1.ListSessionDepositsRequest) (*cofferv1.ListSessionDepositsResponse, error) {
	if _, err := s.Sessions.ForWidget(ctx, req.GetSid(), session.Deposit); err != nil {
		return nil, err
	}
	return nil, fault.New(fault.NotImplemented, "deposit tracking is not available yet")
}

// QuoteWithdrawal is delivered by the withdrawals milestone; the session is checked first.
func (s *WidgetServer) QuoteWithdrawal(ctx context.Context, req *cofferv1.QuoteWithdrawalRequest) (*cofferv1.QuoteWithdrawalResponse, error) {
	if _, err := s.Sessions.ForWidget(ctx, req.GetSid(), session.Withdraw); err != nil {
		return nil, err
	}
	return nil, fault.New(fault.NotImplemented, "withdrawal quotes are not available yet")
}

// SubmitWithdrawal is delivered by the withdrawals milestone; the session is checked first.
func (s *WidgetServer) SubmitWithdrawal(ctx context.Context, req *cofferv1.SubmitWithdrawalRequest) (*cofferv1.SubmitWithdrawalResponse, error) {
	if _, err := s.Sessions.ForWidget(ctx, req.GetSid(), session.Withdraw); err != nil {
		return nil, err
	}
	return nil, fault.New(fault.NotImplemented, "withdrawals are not available yet")
}

// CancelSession records the user's cancel or dismiss.
func (s *WidgetServer) CancelSession(ctx context.Context, req *cofferv1.CancelSessionRequest) (*cofferv1.CancelSessionResponse, error) {
	status, err := s.Sessions.Cancel(ctx, req.GetSid())
	if err != nil {
		return nil, err
	}
	return &cofferv1.CancelSessionResponse{Status: sessionStatuses[status]}, nil
}
