package deposit

import (
	"context"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Transaction purposes of the deposit pipeline (chain_txs.purpose).
const (
	PurposeSweep    = "sweep"     // deposit address → bankroll, the net amount
	PurposeSweepFee = "sweep-fee" // deposit address → fee address, the operator's deposit fee
	PurposeGas      = "gas"       // gas tank → deposit address, gas for an ERC20 sweep
)

// nativeTransferGas is the gas of a plain value transfer.
const nativeTransferGas = 21000

// maxGasTopUps bounds the top-ups one deposit may receive (fees rising between top-up and sweep).
const maxGasTopUps = 3

// SettleArgs settles one deposit: gas for its sweep while it confirms, then the sweep, then the
// credit with its DEPOSIT webhook.
type SettleArgs struct {
	DepositID int64 `json:"depositId"`
}

// Kind implements river.JobArgs.
func (SettleArgs) Kind() string { return "deposit.settle" }

// InsertOpts keeps one settle job per deposit alive.
func (SettleArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: jobs.OnePerArgs()}
}

// SettleWorker works SettleArgs.
type SettleWorker struct {
	river.WorkerDefaults[SettleArgs]
	Service *Service
}

// Work advances the deposit as far as it can; it snoozes while waiting for the chain (snoozes
// do not count as attempts).
func (w *SettleWorker) Work(ctx context.Context, job *river.Job[SettleArgs]) error {
	for range 2 {
		done, err := w.Service.Settle(ctx, job.Args.DepositID)
		if err != nil {
			return err
		}
		if !done {
			return river.JobSnooze(w.Service.cfg.SettlePoll)
		}
		if again, err := w.Service.endSettleJob(ctx, job); err != nil || !again {
			return err
		}
	}
	return river.JobSnooze(w.Service.cfg.SettlePoll)
}

// endSettleJob completes the job of a deposit that is done for now. A confirming deposit is
// done until the scanner confirms it and queues its job again; but that insert is skipped
// while this job still runs. So the job completes in a transaction holding the deposit's row,
// which the confirmation updates: either the confirmation comes after the job ended (and
// queues a new one), or it came first and again is true (sweep now, in this job).
func (s *Service) endSettleJob(ctx context.Context, job *river.Job[SettleArgs]) (again bool, err error) {
	err = store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		status, err := store.New(tx).LockDepositStatus(ctx, job.Args.DepositID)
		if err != nil {
			return err
		}
		if status == "SWEEPING" {
			again = true
			return nil
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	return again, err
}

// ref is the chain_txs reference of a deposit's transactions.
func ref(depositID int64) string { return fmt.Sprintf("deposit:%d", depositID) }

// Settle moves a deposit as far as it can now; done is true when nothing is left to do.
func (s *Service) Settle(ctx context.Context, id int64) (done bool, err error) {
	d, err := store.New(s.pool).GetDeposit(ctx, id)
	if err != nil {
		return false, err
	}
	switch d.Status {
	case "CONFIRMING":
		// An ERC20 sweep needs gas at the deposit address: send it while confirmations accrue,
		// so the sweep can go out as soon as the deposit is confirmed. Then there is nothing to
		// do until the scanner confirms the deposit, which queues this job again.
		if d.ContractAddress == "" {
			return true, nil
		}
		p, err := s.sweepPlan(ctx, d)
		return err == nil && p.ready, err
	case "SWEEPING":
		swept, err := s.sweep(ctx, d)
		if err != nil || !swept {
			return false, err
		}
		return true, s.credit(ctx, id)
	default: // CREDITED, ORPHANED, UNSWEEPABLE
		return true, nil
	}
}

// transfer is one transaction of a sweep.
type transfer struct {
	purpose string
	to      common.Address
	amount  *big.Int
}

// sweepPlan works out a deposit's sweep and, for ERC20, makes sure the deposit address holds
// the gas for it (ready is false while a top-up is on its way).
type plan struct {
	transfers []transfer
	gasLimit  uint64
	ready     bool
}

func (s *Service) feeOf(ctx context.Context, d store.Deposit) (*big.Int, error) {
	op, err := store.New(s.pool).GetOperator(ctx, d.OperatorID)
	if err != nil {
		return nil, err
	}
	fee := new(big.Int).Mul(d.GrossAmount, big.NewInt(int64(op.DepositFeeBps)))
	return fee.Div(fee, big.NewInt(10000)), nil
}

func (s *Service) sweepPlan(ctx context.Context, d store.Deposit) (plan, error) {
	n, c, err := s.network(d.ChainID)
	if err != nil {
		return plan{}, err
	}
	if n.BankrollAddress == (common.Address{}) {
		return plan{}, fmt.Errorf("deposit: chain %d has no bankrollAddress to sweep to", d.ChainID)
	}
	fee, err := s.feeOf(ctx, d)
	if err != nil {
		return plan{}, err
	}
	net := new(big.Int).Sub(d.GrossAmount, fee)
	p := plan{transfers: []transfer{{PurposeSweep, n.BankrollAddress, net}}}
	if fee.Sign() > 0 && n.FeeAddress != (common.Address{}) {
		p.transfers = append(p.transfers, transfer{PurposeSweepFee, n.FeeAddress, fee})
	}
	if d.ContractAddress == "" {
		p.gasLimit, p.ready = nativeTransferGas, true
		return p, nil
	}
	from, token := common.HexToAddress(d.Address), common.HexToAddress(d.ContractAddress)
	est, err := c.EstimateGas(ctx, ethereum.CallMsg{From: from, To: &token, Data: chain.ERC20Transfer(n.BankrollAddress, net)})
	if err != nil {
		return plan{}, fmt.Errorf("deposit %d: estimate sweep gas: %w", d.ID, err)
	}
	p.gasLimit = est + est*3/10
	_, feeCap, err := c.Fees(ctx)
	if err != nil {
		return plan{}, err
	}
	need := new(big.Int).Mul(new(big.Int).SetUint64(p.gasLimit*uint64(len(p.transfers))), feeCap)
	p.ready, err = s.ensureGas(ctx, d, c, need)
	return p, err
}

// ensureGas tops the deposit address up from the gas tank until it holds need (twice need is
// sent, so one top-up usually covers rising fees).
func (s *Service) ensureGas(ctx context.Context, d store.Deposit, c *chain.Client, need *big.Int) (bool, error) {
	addr := common.HexToAddress(d.Address)
	topups, err := store.New(s.pool).ChainTxsByRefPrefix(ctx, PurposeGas, ref(d.ID)+"#")
	if err != nil {
		return false, err
	}
	for _, t := range topups {
		if t.State == "pending" {
			t, err = s.engine.Advance(ctx, t.ID)
			if err != nil || t.State == "pending" {
				return false, err
			}
		}
	}
	bal, err := c.Balance(ctx, addr)
	if err != nil {
		return false, err
	}
	if bal.Cmp(need) >= 0 {
		return true, nil
	}
	if len(topups) >= maxGasTopUps {
		return false, fmt.Errorf("deposit %d: %d gas top-ups sent and %s still holds %s wei of the %s needed", d.ID, len(topups), addr, bal, need)
	}
	_, gasTank := s.keys.GasTank()
	amount := new(big.Int).Sub(new(big.Int).Mul(need, big.NewInt(2)), bal)
	t, err := s.engine.Submit(ctx, chaintx.Request{ChainID: d.ChainID, From: gasTank, To: addr, Value: amount,
		GasLimit: nativeTransferGas, Purpose: PurposeGas, Ref: fmt.Sprintf("%s#%d", ref(d.ID), len(topups)+1)})
	if err != nil {
		return false, fmt.Errorf("deposit %d: gas top-up: %w", d.ID, err)
	}
	_, err = s.engine.Advance(ctx, t.ID)
	return false, err
}

// sweep sends the deposit's transfers and reports whether all are mined (or the deposit turned
// out unsweepable). The transfers are planned and stored once; afterwards they are only advanced.
func (s *Service) sweep(ctx context.Context, d store.Deposit) (bool, error) {
	txs, err := s.sweepTxs(ctx, d.ID)
	if err != nil {
		return false, err
	}
	if len(txs) == 0 {
		p, err := s.sweepPlan(ctx, d)
		if err != nil || !p.ready {
			return false, err
		}
		sweepable, err := s.createSweep(ctx, d, p)
		if err != nil || !sweepable {
			return !sweepable && err == nil, err
		}
		if txs, err = s.sweepTxs(ctx, d.ID); err != nil {
			return false, err
		}
	}
	allMined := true
	for _, t := range txs {
		if t, err = s.engine.Advance(ctx, t.ID); err != nil {
			return false, err
		}
		switch t.State {
		case "reverted":
			return false, fmt.Errorf("deposit %d: %s transaction %s reverted; the funds are still at %s", d.ID, t.Purpose, t.MinedHash, d.Address)
		case "pending":
			allMined = false
		}
	}
	return allMined, nil
}

// sweepTxs loads the deposit's stored sweep transactions (none before they are created).
func (s *Service) sweepTxs(ctx context.Context, depositID int64) ([]store.ChainTx, error) {
	q := store.New(s.pool)
	var out []store.ChainTx
	for _, purpose := range []string{PurposeSweep, PurposeSweepFee} {
		t, err := q.ChainTxByRef(ctx, purpose, ref(depositID))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// createSweep signs and stores the deposit's transfers in one database transaction: all exist or
// none does. A native sweep pays its gas from the deposit: each transfer reserves gasLimit × fee
// cap and the net amount shrinks by the reserve; a deposit too small for that is marked
// UNSWEEPABLE (sweepable false).
func (s *Service) createSweep(ctx context.Context, d store.Deposit, p plan) (sweepable bool, err error) {
	from := common.HexToAddress(d.Address)
	prepared := make([]chaintx.Prepared, len(p.transfers))
	feeCap := new(big.Int)
	for i, tr := range p.transfers {
		req := chaintx.Request{ChainID: d.ChainID, From: from, GasLimit: p.gasLimit, Purpose: tr.purpose, Ref: ref(d.ID)}
		if d.ContractAddress == "" {
			req.To, req.Value = tr.to, tr.amount
		} else {
			req.To, req.Data = common.HexToAddress(d.ContractAddress), chain.ERC20Transfer(tr.to, tr.amount)
		}
		if prepared[i], err = s.engine.Prepare(ctx, req); err != nil {
			return false, err
		}
		if prepared[i].FeeCap().Cmp(feeCap) > 0 {
			feeCap = prepared[i].FeeCap()
		}
	}
	if d.ContractAddress == "" {
		reserve := new(big.Int).Mul(big.NewInt(int64(nativeTransferGas*len(p.transfers))), feeCap)
		net := new(big.Int).Sub(p.transfers[0].amount, reserve)
		if net.Sign() <= 0 {
			s.log.Warn("native deposit too small to pay its own sweep", "deposit", d.ID, "gross", d.GrossAmount, "gas_reserve", reserve)
			return false, store.New(s.pool).MarkUnsweepable(ctx, d.ID)
		}
		prepared[0].Value = net
	}
	return true, store.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		for _, p := range prepared {
			if _, _, err := s.engine.Create(ctx, tx, p); err != nil {
				return err
			}
		}
		return nil
	})
}
