package rpc

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/ethereum/go-ethereum/common"
	"google.golang.org/protobuf/proto"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/money"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/session"
	"github.com/cofferhq/coffer/server/internal/theme"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// WidgetServer implements coffer.v1.WidgetService. Every call is authenticated by its sid.
type WidgetServer struct {
	Sessions    *session.Service
	Operators   *operator.Service
	Themes      *theme.Service
	Deposits    *deposit.Service
	Withdrawals *withdrawal.Service
	// DevWallet: the process is `coffer dev`, which pays deposits from its faucet (/dev/pay).
	DevWallet bool

	watching streamCount // WatchDeposits streams open, by session
}

// GetSession describes the session for the widget, with its theme. It answers for expired
// and cancelled sessions too (status tells), so the widget can show the right screen.
func (s *WidgetServer) GetSession(ctx context.Context, req *cofferv1.GetSessionRequest) (*cofferv1.GetSessionResponse, error) {
	sess, err := s.Sessions.Follow(ctx, req.GetSid(), "")
	if err != nil {
		return nil, err
	}
	op, err := s.Operators.Get(ctx, sess.OperatorID)
	if err != nil {
		return nil, err
	}
	res := &cofferv1.GetSessionResponse{
		Sid:          sess.ID,
		Kind:         sessionKinds().proto(sess.Kind),
		Status:       sessionStatuses().proto(sess.StatusAt(time.Now())),
		Amount:       money.Fiat(sess.Amount),
		FiatCurrency: sess.FiatCurrency,
		Lang:         sess.Lang,
		ExpiresAt:    ts(sess.ExpiresAt),
		OperatorName: op.Name,
		RedirectUrl:  op.RedirectURL,
		DevWallet:    s.DevWallet,
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

// GetDepositAddress returns the user's deposit address and the amount to pay.
func (s *WidgetServer) GetDepositAddress(ctx context.Context, req *cofferv1.GetDepositAddressRequest) (*cofferv1.GetDepositAddressResponse, error) {
	info, err := onSession(ctx, s.Sessions, session.Deposit, req, s.Deposits.Address)
	if err != nil {
		return nil, err
	}
	res := &cofferv1.GetDepositAddressResponse{Address: info.Address.Hex(), ChainId: info.ChainID, Currency: info.Currency,
		Decimals: info.Decimals, ExpectedAmount: info.Expected, PaymentUri: info.PaymentURI, ExpiresAt: ts(info.ExpiresAt)}
	if info.ContractAddress != (common.Address{}) {
		res.ContractAddress = info.ContractAddress.Hex()
	}
	return res, nil
}

// currencyPick is a widget request for a currency on a chain, in its session.
type currencyPick interface {
	GetSid() string
	GetCurrency() string
	GetChainId() int64
}

// onSession is call for the currency and chain a widget request picked, in the request's
// session of kind (the address to pay a deposit to, the quote of a withdrawal).
func onSession[T any](ctx context.Context, sessions *session.Service, kind domain.SessionKind, req currencyPick,
	call func(context.Context, domain.Session, string, int64) (T, error)) (T, error) {
	sess, err := sessions.ForWidget(ctx, req.GetSid(), kind)
	if err != nil {
		var zero T
		return zero, err
	}
	return call(ctx, sess, req.GetCurrency(), req.GetChainId())
}

// trackedSession resolves the deposit session whose deposits the widget follows. Following is
// read-only, so it works after the session expired: a payment sent in time may confirm later.
func (s *WidgetServer) trackedSession(ctx context.Context, sid string) (string, error) {
	sess, err := s.Sessions.Follow(ctx, sid, session.Deposit)
	if err != nil {
		return "", err
	}
	return sess.ID, nil
}

func (s *WidgetServer) progress(ctx context.Context, sessionID string) ([]*cofferv1.DepositProgress, error) {
	list, err := s.Deposits.SessionProgress(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	out := make([]*cofferv1.DepositProgress, 0, len(list))
	for _, p := range list {
		out = append(out, &cofferv1.DepositProgress{DepositId: p.ID, Status: depositStatuses().proto(p.Status), ChainId: p.ChainID,
			Currency: p.Currency, Amount: rates.FormatUnits(p.GrossAmount, p.Decimals), TransactionHash: p.TxHash,
			Confirmations: p.Confirmations, RequiredConfirmations: p.Required})
	}
	return out, nil
}

// watchPoll is how often a watched session is looked at; watchLimit bounds a stream;
// WatchPerSession bounds the streams one session holds open at once in a process.
const (
	watchPoll  = 500 * time.Millisecond
	watchLimit = 2 * time.Hour
	// WatchPerSession: the widget holds one stream (a few with the widget open in several
	// tabs). Each polls the database twice a second for up to watchLimit, so a sid alone, which
	// anyone holding the widget URL has, must not open them without bound.
	WatchPerSession = 5
)

// streamCount counts the open streams of each session (the zero value is ready).
type streamCount struct {
	mu   sync.Mutex
	open map[string]int
}

// take counts one more stream of id, unless it has limit already.
func (c *streamCount) take(id string, limit int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		c.open = map[string]int{}
	}
	if c.open[id] >= limit {
		return false
	}
	c.open[id]++
	return true
}

func (c *streamCount) release(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[id]--; c.open[id] <= 0 {
		delete(c.open, id)
	}
}

// WatchDeposits streams the session's deposits whenever they change (the first message at once).
// A session has at most WatchPerSession streams open at once (RATE_LIMITED beyond; the widget
// then polls ListSessionDeposits).
func (s *WidgetServer) WatchDeposits(ctx context.Context, req *cofferv1.WatchDepositsRequest, stream *connect.ServerStream[cofferv1.WatchDepositsResponse]) error {
	sessionID, err := s.trackedSession(ctx, req.GetSid())
	if err != nil {
		return err
	}
	if !s.watching.take(sessionID, WatchPerSession) {
		e := fault.New(fault.RateLimited, "this session already has %d deposit streams open: close one, or poll ListSessionDeposits", WatchPerSession)
		e.RetryAfter = 5
		return e
	}
	defer s.watching.release(sessionID)
	ctx, cancel := context.WithTimeout(ctx, watchLimit)
	defer cancel()
	var last []byte
	tick := time.NewTicker(watchPoll)
	defer tick.Stop()
	for {
		list, err := s.progress(ctx, sessionID)
		if err != nil {
			return err
		}
		msg := &cofferv1.WatchDepositsResponse{Deposits: list}
		if b, _ := proto.Marshal(msg); last == nil || !bytes.Equal(b, last) {
			if err := stream.Send(msg); err != nil {
				return err
			}
			last = b
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// ListSessionDeposits returns the session's deposits now (the polling fallback).
func (s *WidgetServer) ListSessionDeposits(ctx context.Context, req *cofferv1.ListSessionDepositsRequest) (*cofferv1.ListSessionDepositsResponse, error) {
	sessionID, err := s.trackedSession(ctx, req.GetSid())
	if err != nil {
		return nil, err
	}
	list, err := s.progress(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	return &cofferv1.ListSessionDepositsResponse{Deposits: list}, nil
}

// QuoteWithdrawal prices the session's locked fiat amount in a token on a chain.
func (s *WidgetServer) QuoteWithdrawal(ctx context.Context, req *cofferv1.QuoteWithdrawalRequest) (*cofferv1.QuoteWithdrawalResponse, error) {
	q, err := onSession(ctx, s.Sessions, session.Withdraw, req, s.Withdrawals.Quote)
	if err != nil {
		return nil, err
	}
	return &cofferv1.QuoteWithdrawalResponse{FiatAmount: money.Fiat(q.FiatAmount), FiatCurrency: q.FiatCurrency,
		CryptoAmount: q.Sent, AmountInUsd: rates.USDString(q.AmountInUSD), Rate: q.Rate.String()}, nil
}

// SubmitWithdrawal records the user's withdrawal (mode A asks the operator first).
func (s *WidgetServer) SubmitWithdrawal(ctx context.Context, req *cofferv1.SubmitWithdrawalRequest) (*cofferv1.SubmitWithdrawalResponse, error) {
	sess, err := s.Sessions.ForWidget(ctx, req.GetSid(), session.Withdraw)
	if err != nil {
		return nil, err
	}
	w, err := s.Withdrawals.Submit(ctx, sess, withdrawal.Submission{Address: req.GetAddress(), Currency: req.GetCurrency(),
		ChainID: req.GetChainId(), Type: withdrawalTypes().domain(req.GetType())})
	if err != nil {
		return nil, err
	}
	return &cofferv1.SubmitWithdrawalResponse{WithdrawRequestId: w.ID, Status: withdrawalStatuses().proto(w.Status),
		CryptoAmountSent: withdrawal.SentAmount(w)}, nil
}

// CancelSession records the user's cancel or dismiss (with the session's open withdrawals).
func (s *WidgetServer) CancelSession(ctx context.Context, req *cofferv1.CancelSessionRequest) (*cofferv1.CancelSessionResponse, error) {
	status, err := s.Sessions.Cancel(ctx, req.GetSid())
	if err != nil {
		return nil, err
	}
	return &cofferv1.CancelSessionResponse{Status: sessionStatuses().proto(status)}, nil
}
