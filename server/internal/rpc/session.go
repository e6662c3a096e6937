package rpc

import (
	"context"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/session"
)

// SessionServer implements coffer.v1.SessionService.
type SessionServer struct {
	Sessions  *session.Service
	Operators *operator.Service
}

// sessionRequest is what the deposit and withdraw session requests have in common.
type sessionRequest interface {
	GetExternalUserId() string
	GetLang() string
	GetPlatformFiatCurrency() string
	GetUserBalance() string
	GetAmount() string
	GetEmail() string
	GetOperatorReference() string
}

func (s *SessionServer) open(ctx context.Context, kind string, req sessionRequest) (session.Opened, error) {
	op, err := callerOperator(ctx)
	if err != nil {
		return session.Opened{}, err
	}
	return s.Sessions.Open(ctx, op, kind, session.Input{
		ExternalUserID:    req.GetExternalUserId(),
		Lang:              req.GetLang(),
		FiatCurrency:      req.GetPlatformFiatCurrency(),
		UserBalance:       req.GetUserBalance(),
		Amount:            req.GetAmount(),
		Email:             req.GetEmail(),
		OperatorReference: req.GetOperatorReference(),
	})
}

// CreateDepositSession opens a deposit session.
func (s *SessionServer) CreateDepositSession(ctx context.Context, req *cofferv1.CreateDepositSessionRequest) (*cofferv1.CreateDepositSessionResponse, error) {
	o, err := s.open(ctx, session.Deposit, req)
	if err != nil {
		return nil, err
	}
	return &cofferv1.CreateDepositSessionResponse{Url: o.URL, SessionRef: o.Session.SessionRef, Sid: o.Session.ID,
		ExpiresAt: ts(o.Session.ExpiresAt), Existing: o.Existing}, nil
}

// CreateWithdrawSession opens a withdraw session.
func (s *SessionServer) CreateWithdrawSession(ctx context.Context, req *cofferv1.CreateWithdrawSessionRequest) (*cofferv1.CreateWithdrawSessionResponse, error) {
	o, err := s.open(ctx, session.Withdraw, req)
	if err != nil {
		return nil, err
	}
	return &cofferv1.CreateWithdrawSessionResponse{Url: o.URL, SessionRef: o.Session.SessionRef, Sid: o.Session.ID,
		ExpiresAt: ts(o.Session.ExpiresAt), Existing: o.Existing}, nil
}

// SendTestWebhook is delivered by the deposits milestone (signed webhooks).
func (s *SessionServer) SendTestWebhook(ctx context.Context, req *cofferv1.SendTestWebhookRequest) (*cofferv1.SendTestWebhookResponse, error) {
	op, err := callerOperator(ctx)
	if err != nil {
		return nil, err
	}
	tree, err := s.Operators.Tree(ctx, op.ID)
	if err != nil {
		return nil, err
	}
	if _, err := s.Sessions.ForOperators(ctx, tree, req.GetSid()); err != nil {
		return nil, err
	}
	return nil, fault.New(fault.NotImplemented, "test webhooks are not available yet")
}
