package withdrawal

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/webhook"

	sdk "github.com/cofferhq/coffer/sdk/go/webhook"
)

// Withdrawal types.
const (
	DirectTransfer = "DIRECT_TRANSFER"
	OffRampType    = "OFF_RAMP"
)

// Types lists the withdrawal types. It is a new slice each call: a caller may not change the set.
func Types() []string { return []string{DirectTransfer, OffRampType} }

// Quote is what a withdrawal of a session pays on a network in a currency.
type Quote struct {
	Network      chain.Network
	Asset        chain.Asset
	FiatAmount   decimal.Decimal
	FiatCurrency string
	// Units is the amount paid, in the smallest unit; Sent the same in token units ("25.000000").
	Units *big.Int
	Sent  string
	// AmountInUSD is the fiat amount's USD value; Rate the price of one token in the fiat.
	AmountInUSD decimal.Decimal
	Rate        decimal.Decimal
	// CapAmount is the fiat amount in the operator's platform currency, CapCurrency (converted
	// exactly and rounded up to 18 decimals: never below its worth).
	CapAmount   decimal.Decimal
	CapCurrency string
}

// Quote prices the session's locked fiat amount in a currency on a chain, at the current rate
// (rounded down: a payout never sends more than the amount is worth).
func (s *Service) Quote(ctx context.Context, sess domain.Session, currency string, chainID int64) (Quote, error) {
	priced, err := rates.PriceAsset(ctx, s.chains.Registry, s.prices, chainID, currency, sess.FiatCurrency, "available")
	if err != nil {
		return Quote{}, err
	}
	n, asset, usd, perUSD := priced.Network, priced.Asset, priced.USD, priced.PerUSD
	units, amountUSD, err := Price(sess.Amount, sess.FiatCurrency, perUSD, usd.Value, asset)
	if err != nil {
		return Quote{}, err
	}
	q := Quote{Network: n, Asset: asset, FiatAmount: sess.Amount, FiatCurrency: sess.FiatCurrency, Units: units,
		Sent: rates.FormatUnits(units, asset.Decimals), AmountInUSD: amountUSD,
		Rate: usd.Value.Mul(perUSD), CapAmount: sess.Amount, CapCurrency: sess.FiatCurrency}
	op, err := store.New(s.pool).GetOperator(ctx, sess.OperatorID)
	if err != nil {
		return Quote{}, fault.Wrap(err, "load operator")
	}
	if platform := op.FiatCurrency; platform != "" && !strings.EqualFold(platform, sess.FiatCurrency) {
		platformPerUSD, err := s.prices.PerUSD(ctx, platform)
		if err != nil {
			return Quote{}, fault.NotAvailable(err, "rate of %s", platform)
		}
		// Exact, rounded up: a cap is never passed by an amount rounded down to it.
		q.CapAmount, q.CapCurrency = rates.ConvertFiatUp(sess.Amount, perUSD, platformPerUSD), platform
	}
	return q, nil
}

// Price is what a withdrawal of a fiat amount (perUSD units of fiatCurrency buy one USD) pays
// in asset at usdPerToken: units, rounded down (never more than the amount is worth), and the
// amount's USD value with the wire's 6 decimals. Less than the asset's smallest unit is
// INVALID_ARGUMENT naming currency. Quote and test WITHDRAW_COMPLETE events price with it.
func Price(fiat decimal.Decimal, fiatCurrency string, perUSD, usdPerToken decimal.Decimal, asset chain.Asset) (*big.Int, decimal.Decimal, error) {
	units := rates.FiatToTokenUnitsDown(fiat, perUSD, usdPerToken, asset.Decimals)
	if units.Sign() <= 0 {
		return nil, decimal.Decimal{}, fault.Invalid("currency", "%s %s is less than the smallest unit of %s", fiat, fiatCurrency, asset.Symbol)
	}
	return units, fiat.Div(perUSD).RoundBank(rates.USDDecimals), nil
}

// Submission is a user's withdrawal request from the widget.
type Submission struct {
	Address  string
	Currency string
	ChainID  int64
	Type     string // DIRECT_TRANSFER (default) or OFF_RAMP
}

// Denied is mode A's refusal: the operator answered a non-zero code (or did not answer).
// It is a WITHDRAW_DENIED fault carrying errorCode; no withdrawal exists. Codes 1–9 show the
// spec's text (the SDK's ReplyCode.Message, the one table operators reply with); any other
// code shows the operator's description.
func denied(code int, description string) error {
	msg := sdk.ReplyCode(code).Message()
	if msg == "" {
		msg = strings.TrimSpace(description)
		if msg == "" {
			msg = sdk.ReplyDeclinedByOperator.Message()
		}
	}
	e := fault.New(fault.WithdrawDenied, "%s", msg)
	e.Details = map[string]any{"errorCode": code}
	return e
}

// CodeUnavailable is the code a mode-A request gets when the operator did not answer usably
// (timeout, transport failure, non-2xx, not JSON): never an approval.
const CodeUnavailable = int(sdk.ReplyTemporarilyUnavailable)

// Submit records a user's withdrawal from an open withdraw session (the caller checked it).
// Mode A asks the operator synchronously first and creates a PENDING withdrawal only on error
// 0; mode B creates it AWAITING_APPROVAL and queues WITHDRAW_REQUEST in the outbox. Either way
// an open earlier withdrawal of the session is superseded (CANCELLED). A session whose
// withdrawal was acted on already is refused (CONFLICT), and submissions are rate-limited per
// session, before anything reaches the operator (guard.go).
func (s *Service) Submit(ctx context.Context, sess domain.Session, in Submission) (domain.Withdrawal, error) {
	if in.Type == "" {
		in.Type = DirectTransfer
	}
	q, err := s.Quote(ctx, sess, in.Currency, in.ChainID)
	if err != nil {
		return domain.Withdrawal{}, err
	}
	op, err := store.New(s.pool).GetOperator(ctx, sess.OperatorID)
	if err != nil {
		return domain.Withdrawal{}, fault.Wrap(err, "load operator")
	}
	if !op.Active {
		// No record and no webhook for an inactive operator: the user is told to come back later.
		return domain.Withdrawal{}, denied(CodeUnavailable, "")
	}
	id := uuid.NewString()
	w := domain.Withdrawal{ID: id, OperatorID: op.ID, SessionID: sess.ID, ExternalUserID: sess.ExternalUserID, Type: in.Type,
		ChainID: in.ChainID, Currency: q.Asset.Symbol, Decimals: q.Asset.Decimals, FiatCurrency: sess.FiatCurrency,
		FiatAmount: sess.Amount, CryptoAmount: decimal.NewFromBigInt(q.Units, 0), ExpiresAt: s.now().Add(s.cfg.TTL),
		AmountInUSD: decimal.NewNullDecimal(q.AmountInUSD), CapAmount: decimal.NewNullDecimal(q.CapAmount), CapCurrency: q.CapCurrency,
		OperatorReference: sess.OperatorReference}
	if !q.Asset.Native {
		w.ContractAddress = q.Asset.Contract.Hex()
	}
	switch in.Type {
	case DirectTransfer:
		dest, err := s.Destination(ctx, in.Address)
		if err != nil {
			return domain.Withdrawal{}, err
		}
		w.Address = dest.Hex()
	case OffRampType:
		if s.offramp == nil {
			return domain.Withdrawal{}, fault.Invalid("type", "off-ramp withdrawals are not available")
		}
	default:
		return domain.Withdrawal{}, fault.Invalid("type", "must be DIRECT_TRANSFER or OFF_RAMP")
	}
	if err := s.admit(ctx, sess.ID); err != nil {
		return domain.Withdrawal{}, err
	}
	synchronous := op.ApprovalMode != domain.ApprovalExternal
	if synchronous {
		// Before anything that cannot be undone or that counts: a submission the lease refuses
		// opens no provider order (the OffRamp interface has no cancel) and takes no place in
		// the session's SubmitLimit.
		release, err := s.holdSubmission(ctx, sess.ID)
		if err != nil {
			return domain.Withdrawal{}, err
		}
		defer release()
	}
	if err := s.countSubmission(ctx, sess.ID); err != nil {
		return domain.Withdrawal{}, err
	}
	if in.Type == OffRampType {
		o, err := s.offramp.Open(ctx, OffRampOrder{WithdrawalID: id, ChainID: in.ChainID, Currency: q.Asset.Symbol,
			Units: q.Units, FiatAmount: sess.Amount, FiatCurrency: sess.FiatCurrency, UserAddress: in.Address})
		if err != nil {
			return domain.Withdrawal{}, fault.NotAvailable(err, "off-ramp provider")
		}
		w.Address, w.OfframpProvider, w.OfframpRef = o.PayTo.Hex(), s.offramp.Name(), o.Ref
	}
	if !synchronous {
		w.ApprovalMode, w.Status = domain.ApprovalExternal, domain.WithdrawalAwaitingApproval
		return s.create(ctx, sess, w, true)
	}
	w.ApprovalMode, w.Status = domain.ApprovalSync, domain.WithdrawalPending
	// The request is sent before the record exists: the record is created at the time the
	// request carries (to the database's microsecond), not when the operator's answer came.
	w.CreatedAt = s.now().UTC().Truncate(time.Microsecond)
	ev := webhook.Event{ID: uuid.NewString(), SubjectID: id, Message: RequestEvent(w, sess.SessionRef)}
	res, err := s.webhooks.Send(ctx, op.ID, ev, s.cfg.SyncTimeout)
	if err != nil {
		return domain.Withdrawal{}, err
	}
	switch {
	case res.Err != nil:
		s.log.InfoContext(ctx, "withdrawal request not answered: refused as temporarily unavailable", "withdrawal", id,
			"operator_id", op.ID, "error", res.Err)
		return domain.Withdrawal{}, denied(CodeUnavailable, "")
	case !res.Acked:
		s.log.InfoContext(ctx, "withdrawal request refused by the operator", "withdrawal", id, "operator_id", op.ID,
			"code", res.ErrorCode, "description", res.Description)
		return domain.Withdrawal{}, denied(res.ErrorCode, res.Description)
	}
	return s.create(ctx, sess, w, false)
}

// create records an accepted withdrawal: it supersedes the session's open earlier ones and,
// in mode B, queues WITHDRAW_REQUEST, all in one transaction under the session's lock.
func (s *Service) create(ctx context.Context, sess domain.Session, w domain.Withdrawal, outbox bool) (domain.Withdrawal, error) {
	err := store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if err := q.LockSession(ctx, sess.ID); err != nil {
			return err
		}
		// The user may have cancelled the session while the operator was being asked: its
		// cancel cancelled the withdrawals it found, so one recorded now would stay open on a
		// cancelled session. (An expiry meanwhile does not matter: it cancels nothing.)
		if now, err := q.SessionByID(ctx, sess.ID); err != nil {
			return err
		} else if now.CancelledAt != nil {
			return fault.New(fault.SessionExpired, "session was cancelled; create a new session")
		}
		// Again under the lock, holding the session's withdrawals: an admin may have taken
		// one while the operator was being asked.
		ws, err := q.SessionWithdrawals(ctx, sess.ID, true)
		if err != nil {
			return err
		}
		if err := paidOnce(ws); err != nil {
			return err
		}
		earlier, err := q.OpenWithdrawalsOfSession(ctx, sess.ID)
		if err != nil {
			return err
		}
		for _, id := range earlier {
			if _, err := Apply(ctx, tx, domain.AllOperators(), Change{ID: id, Action: Supersede, Actor: domain.User,
				Note: "superseded by withdrawal " + w.ID}); err != nil {
				return err
			}
		}
		if w, err = q.InsertWithdrawal(ctx, w); err != nil {
			return err
		}
		if !outbox {
			return nil
		}
		return s.webhooks.Enqueue(ctx, tx, webhook.Event{OperatorID: w.OperatorID, SubjectID: w.ID,
			Message: RequestEvent(w, sess.SessionRef)})
	})
	if fault.Is(err, fault.Conflict) || fault.Is(err, fault.SessionExpired) {
		s.log.InfoContext(ctx, "submission refused: the session changed while the operator was asked", "session", sess.ID,
			"operator_id", w.OperatorID, "why", err)
		return domain.Withdrawal{}, err
	}
	if err != nil {
		return w, fault.Wrap(err, "record withdrawal")
	}
	s.log.InfoContext(ctx, "withdrawal submitted", "withdrawal", w.ID, "operator_id", w.OperatorID, "status", w.Status,
		"chain", w.ChainID, "currency", w.Currency, "amount", w.CryptoAmount)
	return w, nil
}

// Destination checks a user's destination address: well-formed, EIP-55 when mixed-case, and
// not an address whose funds would not reach the user (the zero address, a configured token
// contract, Coffer's own wallets and Sweeper, deposit addresses). Test webhooks check their
// address override with it too, so a test event carries only a destination a real one could.
func (s *Service) Destination(ctx context.Context, raw string) (common.Address, error) {
	if !common.IsHexAddress(raw) || !strings.HasPrefix(raw, "0x") {
		return common.Address{}, fault.Invalid("address", "must be a 0x-prefixed 20-byte hex address")
	}
	addr := common.HexToAddress(raw)
	hexPart := raw[2:]
	if hexPart != strings.ToLower(hexPart) && hexPart != strings.ToUpper(hexPart) && raw != addr.Hex() {
		return common.Address{}, fault.Invalid("address", "checksum mismatch (EIP-55): did you mean %s?", addr.Hex())
	}
	if addr == (common.Address{}) {
		return common.Address{}, fault.Invalid("address", "the zero address cannot receive a withdrawal")
	}
	if symbol, ok := s.tokenContract(addr); ok {
		return common.Address{}, fault.Invalid("address", "this is the %s token contract, not a wallet", symbol)
	}
	if s.serviceWallet(addr) {
		return common.Address{}, fault.Invalid("address", "this address belongs to the service; enter your own wallet")
	}
	if _, err := store.New(s.pool).DepositAddressByAddress(ctx, addr.Hex()); err == nil {
		return common.Address{}, fault.Invalid("address", "this is a deposit address of this service; enter your own wallet")
	} else if !errors.Is(err, store.ErrNotFound) {
		return common.Address{}, fault.Wrap(err, "check destination")
	}
	return addr, nil
}

// serviceWallet reports whether an address is one of Coffer's wallets or its Sweeper contract
// on any chain (the Sweeper pays out only to the bankroll and fee address: tokens sent to it
// would stay there).
func (s *Service) serviceWallet(addr common.Address) bool {
	hot, gas := s.wallet.HotWalletAddress(), s.wallet.GasTankAddress()
	if addr == hot || addr == gas {
		return true
	}
	for _, n := range s.chains.Networks() {
		if addr == n.BankrollAddress || addr == n.FeeAddress || addr == n.SweeperAddress {
			return true
		}
	}
	return false
}

// tokenContract reports whether an address is a token contract configured on any chain, and
// its symbol: a payout to a token contract (another token's than the one withdrawn, or on
// another chain, where the same address may hold one) strands the funds.
func (s *Service) tokenContract(addr common.Address) (string, bool) {
	for _, n := range s.chains.Networks() {
		for _, tok := range n.Tokens {
			if addr == tok.ContractAddress {
				return tok.Symbol, true
			}
		}
	}
	return "", false
}
