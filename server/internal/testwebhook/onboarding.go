package testwebhook

import (
	"context"
	"encoding/hex"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/proto"

	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/webhook"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// onboardingAmount is the fiat amount of an onboarding test, in the operator's platform currency.
const onboardingAmount = 25

// onboardingUser is the externalUserId an onboarding test names: no operator's real user.
const onboardingUser = "coffer-onboarding-test"

// Onboarding is the answer to a service team's test: the endpoint's answer and the code
// Coffer reads from it.
type Onboarding struct {
	Sent

	EventID string
	// Code is the answer's error as Coffer reads it: 0 when delivered, the receiver's
	// non-zero error, or withdrawal.CodeUnavailable (3) when the answer failed. For
	// WITHDRAW_REQUEST it is the approval code a mode-A withdrawal would get.
	Code int
}

// SendToOperator sends one test event to an operator's webhookUrl for the service team, as
// the spec's onboarding test: no session is needed, and WITHDRAW_REQUEST may be sent too, so
// a mode-A operator can try its approval endpoint; its answer is reported, never acted on.
// The payload is made for a session that does not exist (stable per operator and event). The
// receiving endpoint's Limit per Window is shared with the operator's own test webhooks.
func (s *Service) SendToOperator(ctx context.Context, operatorID string, event domain.EventType, o Overrides) (Onboarding, error) {
	op, err := s.operator(ctx, operatorID)
	if err != nil {
		return Onboarding{}, err
	}
	msg, err := s.onboardingEvent(ctx, op, event, o)
	if err != nil {
		return Onboarding{}, err
	}
	sender := store.RateLimit{Key: "test-webhook:ops", Max: onboardingSenderLimit, Window: Window}
	receiver := store.RateLimit{Key: "test-webhook-to:" + op.ID, Max: Limit, Window: Window}
	if err := s.takePlaces(ctx, sender, receiver); err != nil {
		return Onboarding{}, err
	}
	timeout := webhook.DefaultTimeout
	if event == domain.EventWithdrawRequest {
		timeout = s.Withdrawals.SyncTimeout() // as long as a real mode-A request waits
	}
	id := uuid.NewString()
	res, err := s.Webhooks.Send(ctx, op.ID, webhook.Event{ID: id, SubjectID: onboardingSession(op, event).ID, Message: msg}, timeout)
	if err != nil {
		return Onboarding{}, err
	}
	return Onboarding{Sent: Sent{Event: string(event), Result: res}, EventID: id, Code: code(res)}, nil
}

// onboardingSenderLimit bounds the service team's tests in all: each endpoint gets Limit a
// minute, and the team may onboard several operators at once.
const onboardingSenderLimit = 60

func (s *Service) operator(ctx context.Context, id string) (domain.Operator, error) {
	if _, err := uuid.Parse(id); err != nil {
		return domain.Operator{}, fault.Invalid("operatorId", "must be a UUID")
	}
	op, err := store.New(s.Pool).GetOperator(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return domain.Operator{}, fault.New(fault.NotFound, "operator not found")
	} else if err != nil {
		return domain.Operator{}, fault.Wrap(err, "load operator")
	}
	return op, nil
}

func (s *Service) onboardingEvent(ctx context.Context, op domain.Operator, event domain.EventType, o Overrides) (proto.Message, error) {
	sess := onboardingSession(op, event)
	switch event {
	case domain.EventDeposit:
		return s.depositEvent(ctx, sess, o) // address is ignored, as on a session's test DEPOSIT
	case domain.EventWithdrawRequest:
		w, err := s.testWithdrawal(ctx, sess, o)
		if err != nil {
			return nil, err
		}
		w.CompletedAt = nil
		ev := withdrawal.RequestEvent(w, sess.SessionRef)
		ev.Test = true
		return ev, nil
	case domain.EventWithdrawComplete:
		return s.withdrawCompleteEvent(ctx, sess, o)
	default:
		return nil, fault.Invalid("event", "must be DEPOSIT, WITHDRAW_REQUEST or WITHDRAW_COMPLETE")
	}
}

// onboardingSession is the session an onboarding test's payload names. It is never stored;
// its id is stable per operator and event, so a receiver sees the same test depositId each time.
func onboardingSession(op domain.Operator, event domain.EventType) domain.Session {
	kind := domain.SessionWithdraw
	if event == domain.EventDeposit {
		kind = domain.SessionDeposit
	}
	id := uuid.NewSHA1(uuid.NameSpaceOID, []byte("coffer onboarding test session\x00"+op.ID+"\x00"+string(kind))).String()
	fiat := op.FiatCurrency
	if fiat == "" {
		fiat = "USD"
	}
	now := time.Now()
	return domain.Session{
		ID: id, OperatorID: op.ID, Kind: kind, SessionRef: "sr_" + hex.EncodeToString(sha256Bytes(id)[:16]),
		ExternalUserID: onboardingUser, Lang: "en", FiatCurrency: fiat, Amount: decimal.NewFromInt(onboardingAmount),
		CreatedAt: now, ExpiresAt: now.Add(30 * time.Minute),
	}
}

// code is the answer's error as the synchronous WITHDRAW_REQUEST reads it.
func code(res webhook.Result) int {
	switch {
	case res.Err != nil:
		return withdrawal.CodeUnavailable
	case res.Acked:
		return 0
	default:
		return res.ErrorCode
	}
}
