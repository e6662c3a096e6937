package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/chaintx"
	"github.com/cofferhq/coffer/server/internal/deposit"
)

// An operator that changes its deposit fee while a sweep is on its way is charged, on the
// deposits of that sweep, the fee the sweep was signed with: the DEPOSIT's amount is what
// reached the bankroll and its fee what reached the fee address. (Before, the credit applied
// the new fee: a top-up sweep's token deposit was never credited, its transfer no longer
// matching the deposits' net; a batched one was credited an amount the bankroll did not get.)
func TestFeeChangedAfterSigningIsNotCharged(t *testing.T) {
	t.Parallel()
	feeAddress := common.HexToAddress("0x00000000000000000000000000000000000fee08")
	for _, batched := range []bool{false, true} {
		name := map[bool]string{false: "topup", true: "eip7702"}[batched]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := setupWith(t, options{feeBps: 250, batched: batched, network: func(n *chain.Network) { n.FeeAddress = feeAddress }})
			bankroll0 := e.tokenBalance(e.bankroll)
			changed := false
			raise := func() {
				if !changed {
					changed = true
					if _, err := e.pool.Exec(e.ctx, `UPDATE operators SET deposit_fee_bps = 900 WHERE id = $1`, e.op.ID); err != nil {
						t.Error(err)
					}
				}
			}
			to := e.paidAddress("a", batched)
			if batched {
				deposit.SetCrash(e.svc, func(step string) {
					if step == deposit.StepBatchStored {
						raise()
					}
				})
			} else {
				e.engine.Crash = func(step string) {
					if step == chaintx.StepBroadcast && e.count(`SELECT count(*) FROM chain_txs WHERE purpose = $1`, deposit.PurposeSweep) > 0 {
						raise()
					}
				}
			}
			e.mint("USDT", to, 10_000_000)
			e.run(func() bool { return len(e.hooks.all()) == 1 })
			if !changed {
				t.Fatal("the fee was never changed")
			}
			ev := e.hooks.all()[0]
			if ev.GrossAmount != "10000000" || ev.FeeAmount != "250000" || ev.Amount != "9750000" {
				t.Fatalf("DEPOSIT gross %s fee %s amount %s, want the 2.5%% fee the sweep was signed with", ev.GrossAmount,
					ev.FeeAmount, ev.Amount)
			}
			if got := new(big.Int).Sub(e.tokenBalance(e.bankroll), bankroll0); got.String() != ev.Amount {
				t.Fatalf("the bankroll received %v, the DEPOSIT says %s", got, ev.Amount)
			}
			if got := e.tokenBalance(feeAddress); got.String() != ev.FeeAmount {
				t.Fatalf("the fee address received %v, the DEPOSIT's fee is %s", got, ev.FeeAmount)
			}
		})
	}
}
