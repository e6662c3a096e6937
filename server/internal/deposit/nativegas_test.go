package deposit_test

import (
	"math/big"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestNativeDepositWith21000Gas: every address the service hands out for a native deposit
// accepts a plain transfer with exactly 21,000 gas (as many exchanges send), and the deposit
// is credited, on a chain that sweeps with top-ups and on one that sweeps with EIP-7702. It
// guards the EIP-7702 plan (docs/sweeps-eip7702.md): a delegated address has code, and such a
// transfer to it fails, so native deposit addresses must stay plain EOAs, also for a user who
// already has a token-deposit address.
func TestNativeDepositWith21000Gas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		network func(*chain.Network)
	}{
		{"topup", func(*chain.Network) {}},
		{"eip7702", batched},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, 0, tc.network)
			// A user asking for a token first (a token-deposit address on eip7702), one asking
			// for the native currency only, and a second session of the first.
			e.handOut("token-first", "USDT")
			var handed []common.Address
			for _, user := range []string{"token-first", "native-only", "token-first"} {
				handed = append(handed, e.handOut(user, e.network.NativeSymbol))
			}
			u := e.newUser()
			chainID := big.NewInt(e.dev.ChainID())
			var sent []string
			for i, to := range handed {
				if code, err := e.dev.Client().CodeAt(e.ctx, to, nil); err != nil || len(code) != 0 {
					t.Fatalf("native deposit address %s has code %x (%v)", to, code, err)
				}
				tx := types.MustSignNewTx(u.key, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{ChainID: chainID,
					Nonce: uint64(i), GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei), Gas: params.TxGas,
					To: &to, Value: testfactory.Ether(1)})
				if err := e.client.Send(e.ctx, tx); err != nil {
					t.Fatal(err)
				}
				e.mine(tx)
				sent = append(sent, tx.Hash().Hex())
			}
			e.run(func() bool { return len(e.hooks.all()) == len(sent) })
			var credited []string
			for _, d := range e.depositsWhere("CREDITED") {
				credited = append(credited, d.TxHash)
			}
			slices.Sort(sent)
			slices.Sort(credited)
			if !slices.Equal(credited, sent) {
				t.Fatalf("credited %v, want every 21,000-gas transfer %v", credited, sent)
			}
		})
	}
}

// TestNativeDepositInSetCodeTx: an EIP-7702 transaction (type 4) paying a deposit address is
// scanned and credited like any other: blocks holding the gas tank's batch sweeps, or anyone's
// SetCodeTx, decode and scan.
func TestNativeDepositInSetCodeTx(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	addr, u := e.payer("user-7702")
	authority, _ := crypto.GenerateKey()
	usdt := e.usdt.Address // any code will do as a delegate
	chainID := big.NewInt(e.dev.ChainID())
	auth, err := types.SignSetCode(authority, types.SetCodeAuthorization{ChainID: *uint256.MustFromBig(chainID), Address: usdt})
	if err != nil {
		t.Fatal(err)
	}
	tx := types.MustSignNewTx(u.key, types.LatestSignerForChainID(chainID), &types.SetCodeTx{ChainID: uint256.MustFromBig(chainID),
		GasTipCap: uint256.NewInt(params.GWei), GasFeeCap: uint256.NewInt(100 * params.GWei), Gas: 100_000,
		To: addr, Value: uint256.MustFromBig(testfactory.Ether(1)), AuthList: []types.SetCodeAuthorization{auth}})
	if err := e.client.Send(e.ctx, tx); err != nil {
		t.Fatal(err)
	}
	e.mine(tx)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	if credited := e.depositsWhere("CREDITED"); len(credited) != 1 || credited[0].TxHash != tx.Hash().Hex() {
		t.Fatalf("credited %+v, want the SetCodeTx", credited)
	}
}
