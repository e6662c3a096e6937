package rpc

import (
	"context"
	"strings"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/testwebhook"
	"github.com/cofferhq/coffer/server/internal/tracing"
)

// SessionServer implements coffer.v1.SessionService.
type SessionServer struct {
	Sessions     *session.Service
	Operators    *operator.Service
	TestWebhooks *testwebhook.Service
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

func (s *SessionServer) open(ctx context.Context, kind domain.SessionKind, req sessionRequest) (session.Opened, error) {
	op, err := callerOperator(ctx)
	if err != nil {
		return session.Opened{}, err
	}
	return s.Sessions.Open(ctx, op, kind, sessionInput(req))
}

// openByKey is open for the holder of an operator key, authenticated in the statement that
// opens the session (session.OpenByKey); session.ErrNotByKey when it opened nothing, and the
// caller then authenticates and calls the general path, which gives the answer.
func (s *SessionServer) openByKey(ctx context.Context, key string, kind domain.SessionKind, req sessionRequest) (session.Opened, error) {
	if !strings.HasPrefix(key, operator.KeyPrefix) {
		return session.Opened{}, session.ErrNotByKey
	}
	o, operatorID, err := s.Sessions.OpenByKey(ctx, secret.Digest(key), kind, sessionInput(req))
	if err == nil {
		tracing.SetOperator(ctx, operatorID) // as authenticating would (the access log's operator_id)
	}
	return o, err
}

func sessionInput(req sessionRequest) session.Input {
	return session.Input{
		ExternalUserID:    req.GetExternalUserId(),
		Lang:              req.GetLang(),
		FiatCurrency:      req.GetPlatformFiatCurrency(),
		UserBalance:       req.GetUserBalance(),
		Amount:            req.GetAmount(),
		Email:             req.GetEmail(),
		OperatorReference: req.GetOperatorReference(),
	}
}

// depositSession and withdrawSession answer an opened session (or the error opening it) as
// the two Create calls and their byKey variants do.
func depositSession(o session.Opened, err error) (*cofferv1.CreateDepositSessionResponse, error) {
	if err != nil {
		return nil, err
	}
	return &cofferv1.CreateDepositSessionResponse{Url: o.URL, SessionRef: o.Session.SessionRef, Sid: o.Session.ID,
		ExpiresAt: ts(o.Session.ExpiresAt), Existing: o.Existing}, nil
}

func withdrawSession(o session.Opened, err error) (*cofferv1.CreateWithdrawSessionResponse, error) {
	if err != nil {
		return nil, err
	}
	return &cofferv1.CreateWithdrawSessionResponse{Url: o.URL, SessionRef: o.Session.SessionRef, Sid: o.Session.ID,
		ExpiresAt: ts(o.Session.ExpiresAt), Existing: o.Existing}, nil
}

// CreateDepositSessionByKey is CreateDepositSession for the holder of an operator key,
// checked in the statement that opens the session: one round trip instead of two. Its answer
// is CreateDepositSession's; session.ErrNotByKey when it opened nothing (a refused key, an
// inactive operator, invalid input, an operatorReference): then authenticate and call
// CreateDepositSession for the answer.
func (s *SessionServer) CreateDepositSessionByKey(ctx context.Context, key string, req *cofferv1.CreateDepositSessionRequest) (*cofferv1.CreateDepositSessionResponse, error) {
	return depositSession(s.openByKey(ctx, key, session.Deposit, req))
}

// CreateWithdrawSessionByKey is CreateDepositSessionByKey for CreateWithdrawSession.
func (s *SessionServer) CreateWithdrawSessionByKey(ctx context.Context, key string, req *cofferv1.CreateWithdrawSessionRequest) (*cofferv1.CreateWithdrawSessionResponse, error) {
	return withdrawSession(s.openByKey(ctx, key, session.Withdraw, req))
}

// CreateDepositSession opens a deposit session.
func (s *SessionServer) CreateDepositSession(ctx context.Context, req *cofferv1.CreateDepositSessionRequest) (*cofferv1.CreateDepositSessionResponse, error) {
	return depositSession(s.open(ctx, session.Deposit, req))
}

// CreateWithdrawSession opens a withdraw session.
func (s *SessionServer) CreateWithdrawSession(ctx context.Context, req *cofferv1.CreateWithdrawSessionRequest) (*cofferv1.CreateWithdrawSessionResponse, error) {
	return withdrawSession(s.open(ctx, session.Withdraw, req))
}

// SendTestWebhook sends a signed test webhook for a session of the caller or a sub-operator.
func (s *SessionServer) SendTestWebhook(ctx context.Context, req *cofferv1.SendTestWebhookRequest) (*cofferv1.SendTestWebhookResponse, error) {
	op, scope, err := callerReach(ctx, auth.SubOperators(s.Operators))
	if err != nil {
		return nil, err
	}
	sent, err := s.TestWebhooks.Send(ctx, op.ID, scope, req.GetSid(), testwebhook.Overrides{
		Amount: req.Amount, Currency: req.Currency, ChainID: req.ChainId, Address: req.Address})
	if err != nil {
		return nil, err
	}
	return &cofferv1.SendTestWebhookResponse{Delivered: sent.Result.Acked, Status: httpStatus(sent.Result.Status), Event: sent.Event}, nil
}

// httpStatus is a webhook receiver's HTTP status as the API answers it. net/http only accepts
// three-digit status codes (0 when there was no response), so it fits an int32.
func httpStatus(code int) int32 {
	return int32(code) //nolint:gosec // G115: three digits at most (net/http refuses any other status line)
}
