// Package chaintx sends Coffer's on-chain transactions (sweeps, gas top-ups, payouts) so that
// each is sent at most once whatever crashes:
//
//   - one transaction per (purpose, ref), enforced by a unique key: a deposit is swept once and
//     a withdrawal paid once, however many times a job retries;
//   - its nonce is allocated in PostgreSQL, and the transaction is signed and stored in the same
//     database transaction, so it exists before anything is broadcast and a rolled-back
//     attempt leaves no nonce gap;
//   - a retry re-broadcasts the stored bytes; a stuck transaction is replaced by a new signed
//     attempt with the same nonce and higher fees, so at most one of them can be mined;
//   - it is settled by the receipt of whichever attempt was mined.
//
// A request carrying EIP-7702 authorizations (a batch sweep delegating deposit addresses,
// batchsweep.Build) is signed as a SetCodeTx and stored with its list; every replacement but a
// cancel carries the same list at the same nonce. Any other request is the EIP-1559
// transaction it always was.
//
// Its state table (transitions.go) is the one source of truth for every change of a
// transaction's state.
package chaintx

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Keys gives the private key of a service-controlled address.
type Keys interface {
	Key(ctx context.Context, addr common.Address) (*ecdsa.PrivateKey, error)
}

// ErrNoKeys is NoKeys' answer.
var ErrNoKeys = errors.New("chaintx: this process holds no private keys (API role): transactions are signed by workers")

// NoKeys is the key source of processes that must not sign (the API role): every request is
// refused, whatever the address.
type NoKeys struct{}

// Key implements Keys.
func (NoKeys) Key(context.Context, common.Address) (*ecdsa.PrivateKey, error) { return nil, ErrNoKeys }

// Engine creates and advances transactions.
type Engine struct {
	pool   *pgxpool.Pool
	chains map[int64]*chain.Client
	keys   Keys
	log    *slog.Logger

	// StuckAfter is how long an attempt may stay unmined before it is replaced with higher fees.
	StuckAfter time.Duration
	// RebroadcastAfter is how long after a broadcast an unmined attempt is sent again (nodes drop
	// transactions from their pools).
	RebroadcastAfter time.Duration
	// RefusedRetry is how long after the node refused an attempt for want of funds Advance
	// asks it again. Callers advance pending transactions on every scan pass: without it an
	// empty gas tank cost a broadcast and a warning per pass for each of its transactions.
	RefusedRetry time.Duration
	// Crash, when set, is called at each step of sending; tests make it stop the process there.
	Crash func(step string)
	now   func() time.Time

	refusedMu sync.Mutex
	refused   map[int64]time.Time // attempt id → when the node refused it for want of funds
}

// Steps at which Crash is called.
const (
	StepNonce     = "after-nonce"     // nonce allocated, nothing stored (the transaction rolls back)
	StepSigned    = "after-sign"      // signed, not stored (rolls back)
	StepStored    = "after-store"     // committed, not broadcast
	StepBroadcast = "after-broadcast" // broadcast, not recorded as broadcast
	StepReceipt   = "before-receipt"  // about to look for receipts
)

// New returns an engine for the given chains.
func New(pool *pgxpool.Pool, chains map[int64]*chain.Client, keys Keys, log *slog.Logger) *Engine {
	return &Engine{pool: pool, chains: chains, keys: keys, log: log,
		StuckAfter: 2 * time.Minute, RebroadcastAfter: 30 * time.Second, RefusedRetry: 5 * time.Second, now: time.Now,
		refused: map[int64]time.Time{}}
}

// Request describes a transaction to send.
type Request struct {
	ChainID int64
	From    common.Address
	To      common.Address
	Value   *big.Int
	Data    []byte
	// GasLimit 0 asks the node for an estimate (with the authorizations applied) and adds a
	// margin; a replacement keeps the gas limit of the first attempt.
	GasLimit uint64
	// Authorizations are EIP-7702 authorizations (batchsweep.Build signs them) for the
	// transaction to carry: it is signed as a SetCodeTx (type 4), and each replacement but a
	// cancel carries the same list at the same nonce (an authorization stays valid until one
	// for its address is applied). Each must be for this chain (never 0, valid on every
	// chain), signed by an address other than From, one per address. Empty means none: a
	// plain EIP-1559 transaction (a SetCodeTx with an empty list is invalid).
	Authorizations []types.SetCodeAuthorization
	// PaysOwnGas: the gas comes out of Value (a native sweep). Replacements with higher fees
	// lower the value by the extra gas, so the transaction never costs its sender more than
	// Value + GasLimit × the first fee cap.
	PaysOwnGas bool
	// Purpose and Ref identify the transaction: there is at most one per pair.
	Purpose string
	Ref     string
}

// Prepared is a request with what signing needs from the chain, fetched before the database
// transaction so no RPC call runs while rows are locked.
type Prepared struct {
	Request

	key          *ecdsa.PrivateKey
	tip, feeCap  *big.Int
	chainNonce   uint64
	chainChainID *big.Int
}

func (e *Engine) client(chainID int64) (*chain.Client, error) {
	c, ok := e.chains[chainID]
	if !ok {
		return nil, fmt.Errorf("chaintx: chain %d is not configured", chainID)
	}
	return c, nil
}

func (e *Engine) step(name string) {
	if e.Crash != nil {
		e.Crash(name)
	}
}

// Keys are the keys the engine signs with: a batch sweep signs its EIP-7702 authorizations
// with the same keys (batchsweep.Build), in the process that will sign the transaction.
func (e *Engine) Keys() Keys { return e.keys }

// FeeCap is the fee cap per gas the transaction will be signed with.
func (p Prepared) FeeCap() *big.Int { return p.feeCap }

// ErrBadAuthorization: a request's EIP-7702 authorization cannot be sent (another chain's, its
// signature unreadable, the sender's own, or a second one for an address). Nothing is stored.
var ErrBadAuthorization = errors.New("chaintx: bad EIP-7702 authorization")

// checkAuthorizations refuses authorizations the transaction must not carry, before anything
// is stored: the node would drop them silently (another chain's, a bad signature, a second
// for one address), leaving the transaction mined without the delegation it was sent for, or
// they would delegate the sender itself.
func checkAuthorizations(req Request) error {
	seen := make(map[common.Address]bool, len(req.Authorizations))
	for i, a := range req.Authorizations {
		if a.ChainID.ToBig().Cmp(big.NewInt(req.ChainID)) != 0 {
			return fmt.Errorf("%w: #%d is for chain %s, the transaction for chain %d", ErrBadAuthorization, i, a.ChainID.Dec(), req.ChainID)
		}
		authority, err := a.Authority()
		if err != nil {
			return fmt.Errorf("%w: #%d: %w", ErrBadAuthorization, i, err)
		}
		switch {
		case authority == req.From:
			return fmt.Errorf("%w: #%d is signed by the sender %s itself", ErrBadAuthorization, i, req.From.Hex())
		case seen[authority]:
			return fmt.Errorf("%w: #%d: a second authorization of %s", ErrBadAuthorization, i, authority.Hex())
		}
		seen[authority] = true
	}
	return nil
}

// CallMsg is the request as a call, for gas estimation: the node applies the authorizations
// first, so the call sees the addresses delegated.
func (r Request) CallMsg() ethereum.CallMsg {
	to := r.To
	return ethereum.CallMsg{From: r.From, To: &to, Value: r.Value, Data: r.Data, AuthorizationList: r.Authorizations}
}

// Prepare fetches fees, the sender's on-chain nonce and its key, and the gas estimate when the
// request has no gas limit. Bad authorizations are refused first (ErrBadAuthorization).
func (e *Engine) Prepare(ctx context.Context, req Request) (Prepared, error) {
	if len(req.Authorizations) == 0 {
		req.Authorizations = nil
	}
	if err := checkAuthorizations(req); err != nil {
		return Prepared{}, err
	}
	c, err := e.client(req.ChainID)
	if err != nil {
		return Prepared{}, err
	}
	key, err := e.keys.Key(ctx, req.From)
	if err != nil {
		return Prepared{}, fmt.Errorf("chaintx: no key for %s: %w", req.From, err)
	}
	tip, feeCap, err := c.Fees(ctx)
	if err != nil {
		return Prepared{}, err
	}
	n, err := c.Nonce(ctx, req.From, false)
	if err != nil {
		return Prepared{}, err
	}
	if req.Value == nil {
		req.Value = new(big.Int)
	}
	if req.GasLimit == 0 {
		est, err := c.EstimateGas(ctx, req.CallMsg())
		if err != nil {
			return Prepared{}, fmt.Errorf("chaintx: estimate gas of %s %s: %w", req.Purpose, req.Ref, err)
		}
		// The state may change before it is mined (another deposit, a warm slot gone cold).
		req.GasLimit = est + est*3/10
	}
	return Prepared{Request: req, key: key, tip: tip, feeCap: feeCap, chainNonce: n, chainChainID: big.NewInt(req.ChainID)}, nil
}

// Create stores the transaction of p in dbtx: the nonce is allocated, the transaction signed
// and stored, all committing (or not) with the caller's transaction. If the (purpose, ref)
// transaction exists already it is returned unchanged and created is false.
func (e *Engine) Create(ctx context.Context, dbtx pgx.Tx, p Prepared) (t domain.ChainTx, created bool, err error) {
	q := store.New(dbtx)
	if existing, err := q.ChainTxByRef(ctx, p.Purpose, p.Ref); err == nil {
		return existing, false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return t, false, err
	}
	if len(p.Authorizations) == 0 {
		p.Authorizations = nil
	}
	if err := checkAuthorizations(p.Request); err != nil {
		return t, false, err
	}
	auths, err := marshalAuthorizations(p.Authorizations)
	if err != nil {
		return t, false, err
	}
	from := p.From.Hex()
	// A new sequence starts at the chain's nonce: the address may have sent before Coffer knew it.
	if err := q.EnsureNonce(ctx, p.ChainID, from, p.chainNonce); err != nil {
		return t, false, err
	}
	nonce, err := q.AllocateNonce(ctx, p.ChainID, from)
	if err != nil {
		return t, false, err
	}
	e.step(StepNonce)
	signed, err := e.sign(p, nonce, p.tip, p.feeCap)
	if err != nil {
		return t, false, err
	}
	e.step(StepSigned)
	raw, err := signed.MarshalBinary()
	if err != nil {
		return t, false, err
	}
	t = domain.ChainTx{ChainID: p.ChainID, From: from, Nonce: nonce, To: p.To.Hex(), Value: p.Value, Data: p.Data,
		GasLimit: p.GasLimit, PaysOwnGas: p.PaysOwnGas, Purpose: p.Purpose, Ref: p.Ref, State: domain.ChainTxPending,
		Authorizations: auths}
	a := domain.TxAttempt{Hash: signed.Hash().Hex(), Raw: raw, Value: p.Value, TipCap: p.tip, FeeCap: p.feeCap}
	if t.ID, err = q.InsertChainTx(ctx, t, a); err != nil {
		return t, false, err
	}
	t.Attempts = []domain.TxAttempt{a}
	return t, true, nil
}

// Submit prepares and stores a transaction in its own database transaction.
func (e *Engine) Submit(ctx context.Context, req Request) (domain.ChainTx, error) {
	t, _, err := e.SubmitIf(ctx, req, nil)
	return t, err
}

// SubmitIf is Submit with a last check: guard runs in the database transaction that stores the
// transaction, just before it (holding whatever rows it locks), and nothing is stored when it
// returns false. An existing (purpose, ref) transaction is returned as is, without the check.
func (e *Engine) SubmitIf(ctx context.Context, req Request, guard func(tx pgx.Tx) (bool, error)) (domain.ChainTx, bool, error) {
	if t, err := store.New(e.pool).ChainTxByRef(ctx, req.Purpose, req.Ref); err == nil {
		return t, true, nil
	}
	p, err := e.Prepare(ctx, req)
	if err != nil {
		return domain.ChainTx{}, false, err
	}
	var t domain.ChainTx
	stored := false
	err = store.InTx(ctx, e.pool, func(tx pgx.Tx) error {
		if guard != nil {
			ok, err := guard(tx)
			if err != nil || !ok {
				return err
			}
		}
		t, _, err = e.Create(ctx, tx, p)
		stored = err == nil
		return err
	})
	if constraint, dup := store.IsUniqueViolation(err); dup && strings.Contains(constraint, "purpose_ref") {
		// A concurrent caller stored this (purpose, ref) first: that one is the transaction (the
		// nonce this attempt allocated was rolled back with it).
		t, err = store.New(e.pool).ChainTxByRef(ctx, req.Purpose, req.Ref)
		return t, err == nil, err
	}
	if err == nil && stored {
		e.step(StepStored)
	}
	return t, stored, err
}

func (e *Engine) sign(p Prepared, nonce uint64, tip, feeCap *big.Int) (*types.Transaction, error) {
	return e.signValue(p, nonce, p.Value, tip, feeCap)
}

func (e *Engine) signValue(p Prepared, nonce uint64, value, tip, feeCap *big.Int) (*types.Transaction, error) {
	to := p.To
	if len(p.Authorizations) == 0 {
		tx := types.NewTx(&types.DynamicFeeTx{ChainID: p.chainChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap,
			Gas: p.GasLimit, To: &to, Value: value, Data: p.Data})
		return types.SignTx(tx, types.LatestSignerForChainID(p.chainChainID), p.key)
	}
	u := func(x *big.Int) (*uint256.Int, error) {
		v, overflow := uint256.FromBig(x)
		if overflow || x.Sign() < 0 {
			return nil, fmt.Errorf("chaintx: %s does not fit a SetCodeTx field", x)
		}
		return v, nil
	}
	var fields [4]*uint256.Int
	for i, x := range []*big.Int{p.chainChainID, tip, feeCap, value} {
		v, err := u(x)
		if err != nil {
			return nil, err
		}
		fields[i] = v
	}
	tx := types.NewTx(&types.SetCodeTx{ChainID: fields[0], Nonce: nonce, GasTipCap: fields[1], GasFeeCap: fields[2],
		Gas: p.GasLimit, To: to, Value: fields[3], Data: p.Data, AuthList: slices.Clone(p.Authorizations)})
	return types.SignTx(tx, types.LatestSignerForChainID(p.chainChainID), p.key)
}

// marshalAuthorizations is the stored form of an authorization list: nil for none.
func marshalAuthorizations(auths []types.SetCodeAuthorization) ([]byte, error) {
	if len(auths) == 0 {
		return nil, nil
	}
	return json.Marshal(auths)
}

// Authorizations decodes the EIP-7702 authorization list a stored transaction carries (nil for
// none).
func Authorizations(t domain.ChainTx) ([]types.SetCodeAuthorization, error) {
	if len(t.Authorizations) == 0 {
		return nil, nil
	}
	var auths []types.SetCodeAuthorization
	if err := json.Unmarshal(t.Authorizations, &auths); err != nil {
		return nil, fmt.Errorf("chaintx: authorizations of transaction %d: %w", t.ID, err)
	}
	return auths, nil
}

// Advance moves a stored transaction on: it settles it from the receipt of any mined attempt,
// or (re)broadcasts the newest attempt, replacing it with higher fees once it is stuck. It
// returns the transaction as it now stands; callers poll until State is not pending.
func (e *Engine) Advance(ctx context.Context, id int64) (domain.ChainTx, error) {
	q := store.New(e.pool)
	t, err := q.ChainTx(ctx, id)
	if err != nil || t.State != domain.ChainTxPending {
		return t, err
	}
	c, err := e.client(t.ChainID)
	if err != nil {
		return t, err
	}
	e.step(StepReceipt)
	for _, v := range slices.Backward(t.Attempts) {
		r, err := c.Receipt(ctx, common.HexToHash(v.Hash))
		if errors.Is(err, ethereum.NotFound) {
			continue
		}
		if err != nil {
			return t, err
		}
		event := Mined
		switch {
		case v.Cancel:
			event = CancelMined
			e.log.Warn("transaction cancelled: its 0-value self-send was mined", "chain", t.ChainID, "purpose", t.Purpose,
				"ref", t.Ref, "hash", r.TxHash)
		case r.Status != types.ReceiptStatusSuccessful:
			event = Reverted
			e.log.Error("transaction reverted", "chain", t.ChainID, "purpose", t.Purpose, "ref", t.Ref, "hash", r.TxHash)
		}
		state, err := Next(t.State, event)
		if err != nil {
			return t, err
		}
		if err := q.MarkMined(ctx, t.ID, string(state), r.TxHash.Hex(), r.BlockNumber.Uint64(), r.GasUsed, r.EffectiveGasPrice); err != nil {
			return t, err
		}
		return q.ChainTx(ctx, id)
	}
	latest := t.Latest()
	now := e.now()
	switch {
	case t.RequestedAction != "":
		// The service team's re-send or cancel: a new attempt now, whatever its age.
		if mined, err := e.nonceUsed(ctx, c, t); err != nil || mined {
			return t, err // an attempt is mined; its receipt shows up on the next call
		}
		// The request is cleared with the attempt that carries it out (replace), or here when
		// no attempt can.
		replaced, err := e.replace(ctx, t, t.RequestedAction == domain.TxCancel)
		switch {
		case errors.Is(err, errSuperseded):
			return q.ChainTx(ctx, id)
		case errors.Is(err, ErrNoRoomToBump):
			if err := store.New(e.pool).ClearTxAction(ctx, t.ID, t.RequestedAction); err != nil {
				return t, err
			}
		case err != nil:
			return t, err
		default:
			latest = replaced
		}
	case latest.BroadcastAt != nil && now.Sub(latest.CreatedAt) > e.StuckAfter:
		if mined, err := e.nonceUsed(ctx, c, t); err != nil || mined {
			return t, err // an attempt is mined; its receipt shows up on the next call
		}
		replaced, err := e.replace(ctx, t, false)
		switch {
		case errors.Is(err, errSuperseded):
			return q.ChainTx(ctx, id)
		case errors.Is(err, ErrNoRoomToBump):
			e.log.Info("transaction not replaced: its gas would take all it sends", "chain", t.ChainID, "purpose", t.Purpose,
				"ref", t.Ref, "nonce", t.Nonce)
			if now.Sub(*latest.BroadcastAt) < e.RebroadcastAfter {
				return t, nil
			}
		case err != nil:
			return t, err
		default:
			latest = replaced
		}
	case latest.BroadcastAt != nil && now.Sub(*latest.BroadcastAt) < e.RebroadcastAfter:
		return t, nil
	}
	if err := e.broadcast(ctx, c, t, latest); err != nil {
		return t, err
	}
	return q.ChainTx(ctx, id)
}

// nonceUsed reports whether the chain has moved past the transaction's nonce.
func (e *Engine) nonceUsed(ctx context.Context, c *chain.Client, t domain.ChainTx) (bool, error) {
	n, err := c.Nonce(ctx, common.HexToAddress(t.From), false)
	return n > t.Nonce, err
}

func (e *Engine) broadcast(ctx context.Context, c *chain.Client, t domain.ChainTx, a domain.TxAttempt) error {
	var signed types.Transaction
	if err := signed.UnmarshalBinary(a.Raw); err != nil {
		return fmt.Errorf("chaintx: stored attempt %d: %w", a.ID, err)
	}
	if ago, ok := e.mayBroadcast(a.ID); !ok {
		return fmt.Errorf("chaintx: broadcast %s: %w (refused %s ago)", a.Hash, ErrInsufficientFunds, ago.Round(time.Millisecond))
	}
	err := c.Send(ctx, &signed)
	switch {
	case err == nil, alreadySent(err):
		e.setRefused(a.ID, false)
	case insufficientFunds(err):
		e.setRefused(a.ID, true)
		e.log.Warn("broadcast refused: the sender cannot pay for it", "chain", t.ChainID, "purpose", t.Purpose, "ref", t.Ref,
			"hash", a.Hash, "from", t.From, "error", err, "retry_in", e.RefusedRetry)
		return fmt.Errorf("chaintx: broadcast %s: %w: %w", a.Hash, ErrInsufficientFunds, err)
	default:
		e.log.Warn("broadcast failed", "chain", t.ChainID, "purpose", t.Purpose, "ref", t.Ref, "hash", a.Hash, "error", err)
		return fmt.Errorf("chaintx: broadcast %s: %w", a.Hash, err)
	}
	e.step(StepBroadcast)
	return store.New(e.pool).MarkBroadcast(ctx, a.ID)
}

// mayBroadcast reports whether the attempt may be sent to the node: not refused for want of
// funds within RefusedRetry (else how long ago it was). A caller asking again after a refusal
// takes the turn, so concurrent callers do not all ask at once.
func (e *Engine) mayBroadcast(attempt int64) (time.Duration, bool) {
	e.refusedMu.Lock()
	defer e.refusedMu.Unlock()
	at, refused := e.refused[attempt]
	if !refused {
		return 0, true
	}
	now := e.now()
	if ago := now.Sub(at); ago < e.RefusedRetry {
		return ago, false
	}
	e.refused[attempt] = now
	return 0, true
}

// setRefused records (or, with refused false, forgets) a refusal of the attempt, and forgets
// refusals older than RefusedRetry (replaced attempts are never asked about again).
func (e *Engine) setRefused(attempt int64, refused bool) {
	e.refusedMu.Lock()
	defer e.refusedMu.Unlock()
	now := e.now()
	for id, at := range e.refused {
		if now.Sub(at) >= e.RefusedRetry {
			delete(e.refused, id)
		}
	}
	if refused {
		e.refused[attempt] = now
	} else {
		delete(e.refused, attempt)
	}
}

// ErrInsufficientFunds: the node refused a transaction its sender cannot pay for (value plus
// gas at the fee cap). Nothing was sent; the sender needs funding before the next attempt.
var ErrInsufficientFunds = errors.New("sender cannot pay for the transaction")

func insufficientFunds(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "insufficient funds")
}

// alreadySent recognises node answers meaning this nonce is taken care of: the same bytes are
// in the pool, or an attempt with this nonce is pooled or mined.
func alreadySent(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"already known", "known transaction", "nonce too low", "replacement transaction underpriced", "already imported"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// ErrNoRoomToBump: a transaction that pays its own gas cannot be replaced with higher fees
// because the gas would take everything it sends. It stays as it is (re-broadcast) until fees fall.
var ErrNoRoomToBump = errors.New("no room to raise the fees")

// cancelGas is the gas of a cancel attempt: a plain 0-value transfer to the sender itself.
const cancelGas = 21000

// replace signs a new attempt with the same nonce and fees raised by at least 12.5% (nodes
// require 10%), or to the current suggestion if that is higher. With cancel, or once the
// newest attempt is a cancel, the attempt is a 0-value self-send (the same nonce, so at most
// one of the transaction and its cancel is mined).
func (e *Engine) replace(ctx context.Context, t domain.ChainTx, cancel bool) (domain.TxAttempt, error) {
	prev := t.Latest()
	cancel = cancel || prev.Cancel
	auths, err := Authorizations(t)
	if err != nil {
		return domain.TxAttempt{}, err
	}
	req := Request{ChainID: t.ChainID, From: common.HexToAddress(t.From), To: common.HexToAddress(t.To), Value: t.Value,
		Data: t.Data, GasLimit: t.GasLimit, Authorizations: auths, Purpose: t.Purpose, Ref: t.Ref}
	if cancel {
		// A cancel only takes the nonce: it delegates nothing.
		req.To, req.Value, req.Data, req.GasLimit, req.Authorizations = req.From, new(big.Int), nil, cancelGas, nil
	}
	p, err := e.Prepare(ctx, req)
	if err != nil {
		return domain.TxAttempt{}, err
	}
	bump := func(old, suggested *big.Int) *big.Int {
		raised := new(big.Int).Div(new(big.Int).Mul(old, big.NewInt(1125)), big.NewInt(1000))
		raised.Add(raised, big.NewInt(1))
		if suggested.Cmp(raised) > 0 {
			return suggested
		}
		return raised
	}
	tip, feeCap := bump(prev.TipCap, p.tip), bump(prev.FeeCap, p.feeCap)
	if feeCap.Cmp(tip) < 0 {
		feeCap = new(big.Int).Set(tip)
	}
	value := prev.Value
	if cancel {
		value = new(big.Int)
	} else if t.PaysOwnGas {
		// The extra gas comes out of the value: the replacement costs what the first attempt did.
		extra := new(big.Int).Mul(new(big.Int).SetUint64(t.GasLimit), new(big.Int).Sub(feeCap, prev.FeeCap))
		if value = new(big.Int).Sub(prev.Value, extra); value.Sign() <= 0 {
			return prev, fmt.Errorf("chaintx: %s %s: raising the fee cap to %s would leave nothing to send: %w",
				t.Purpose, t.Ref, feeCap, ErrNoRoomToBump)
		}
	}
	signed, err := e.signValue(p, t.Nonce, value, tip, feeCap)
	if err != nil {
		return domain.TxAttempt{}, err
	}
	raw, err := signed.MarshalBinary()
	if err != nil {
		return domain.TxAttempt{}, err
	}
	a := domain.TxAttempt{Hash: signed.Hash().Hex(), Raw: raw, Value: value, TipCap: tip, FeeCap: feeCap, CreatedAt: e.now(), Cancel: cancel}
	if err := e.storeReplacement(ctx, t, a); err != nil {
		return a, err
	}
	t2, err := store.New(e.pool).ChainTx(ctx, t.ID)
	if err != nil {
		return a, err
	}
	e.log.Info("transaction replaced with higher fees", "chain", t.ChainID, "purpose", t.Purpose, "ref", t.Ref,
		"nonce", t.Nonce, "hash", a.Hash, "attempts", len(t2.Attempts), "cancel", cancel)
	return t2.Latest(), nil
}

// errSuperseded: the transaction changed after Advance read it (another worker replaced it,
// carried out the request, or settled it); the replacement decided on the old reading is not
// stored.
var errSuperseded = errors.New("chaintx: the transaction changed since it was read")

// storeReplacement stores attempt a, decided on the reading t, only if t still stands: pending,
// the same newest attempt, the same service-team request (cleared with it, so the request is
// carried out once). The transaction's row lock serialises workers advancing it at once, as
// the nonce row does for allocations: without it each added its own replacement at the nonce.
// The RPC calls stay outside the lock (Prepare runs before).
func (e *Engine) storeReplacement(ctx context.Context, t domain.ChainTx, a domain.TxAttempt) error {
	return store.InTx(ctx, e.pool, func(tx pgx.Tx) error {
		q := store.New(tx)
		if _, _, err := q.LockChainTxState(ctx, t.ID); err != nil {
			return err
		}
		now, err := q.ChainTx(ctx, t.ID)
		if err != nil {
			return err
		}
		if now.State != domain.ChainTxPending || now.Latest().ID != t.Latest().ID || now.RequestedAction != t.RequestedAction {
			return errSuperseded
		}
		if err := q.InsertTxAttempt(ctx, t.ID, a); err != nil {
			return err
		}
		if t.RequestedAction == "" {
			return nil
		}
		return q.ClearTxAction(ctx, t.ID, t.RequestedAction)
	})
}
