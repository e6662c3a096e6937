package deposit_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/cofferhq/coffer/server/internal/testfactory"
)

// TestNativeDepositWith21000Gas: the address the service hands out for a native deposit
// accepts a plain transfer with exactly 21,000 gas (as many exchanges send), and the deposit
// is credited. It guards the EIP-7702 plan (docs/sweeps-eip7702.md): a delegated address has
// code, and such a transfer to it fails, so native deposit addresses must stay plain EOAs.
func TestNativeDepositWith21000Gas(t *testing.T) {
	t.Parallel()
	e := setup(t, 0)
	sess := e.openSession("user-21000")
	info, err := e.svc.Address(e.ctx, sess, e.network.NativeSymbol, e.dev.ChainID())
	if err != nil {
		t.Fatal(err)
	}
	if code, err := e.dev.Client().CodeAt(e.ctx, info.Address, nil); err != nil || len(code) != 0 {
		t.Fatalf("native deposit address has code %x (%v)", code, err)
	}
	u := e.newUser()
	chainID := big.NewInt(e.dev.ChainID())
	tx := types.MustSignNewTx(u.key, types.LatestSignerForChainID(chainID), &types.DynamicFeeTx{ChainID: chainID,
		GasTipCap: big.NewInt(params.GWei), GasFeeCap: big.NewInt(100 * params.GWei), Gas: params.TxGas,
		To: &info.Address, Value: testfactory.Ether(1)})
	if err := e.client.Send(e.ctx, tx); err != nil {
		t.Fatal(err)
	}
	e.mine(tx)
	e.run(func() bool { return len(e.hooks.all()) == 1 })
	credited := e.depositsWhere("CREDITED")
	if len(credited) != 1 || credited[0].TxHash != tx.Hash().Hex() {
		t.Fatalf("credited %+v, want the 21,000-gas transfer", credited)
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
