package devchain_test

import (
	"bytes"
	"crypto/ecdsa"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/devchain"
)

// TestPragueActive: the dev chain runs Prague, so an EIP-7702 SetCodeTx installs the
// delegation designator 0xef0100 || delegate at the authority — and shows the hazard of
// delegated deposit addresses: a 21,000-gas ETH transfer to one fails.
func TestPragueActive(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	senderKey, sender := newKey(t)
	c := startChain(t, devchain.Options{Alloc: types.GenesisAlloc{sender: {Balance: big.NewInt(params.Ether)}}})
	ec := c.Client()
	chainID := big.NewInt(devchain.ChainID)
	signer := types.LatestSignerForChainID(chainID)

	var nonce uint64
	send := func(data types.TxData) *types.Receipt {
		t.Helper()
		tx := types.MustSignNewTx(senderKey, signer, data)
		if err := ec.SendTransaction(ctx, tx); err != nil {
			t.Fatalf("send: %v", err)
		}
		nonce++
		rs, err := c.Mine(ctx, tx.Hash())
		if err != nil {
			t.Fatal(err)
		}
		return rs[0]
	}
	head, err := ec.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	feeCap := new(big.Int).Mul(head.BaseFee, big.NewInt(4))
	tip := big.NewInt(params.GWei)
	feeCap.Add(feeCap, tip)

	// A delegate with a receive() function: the Sweeper.
	sw := contracts.NewSweeper()
	r := send(&types.DynamicFeeTx{ChainID: chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: 2_000_000,
		Data: append(common.FromHex(contracts.SweeperMetaData.Bin), sw.PackConstructor(sender, sender, common.Address{})...)})
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("deploy Sweeper failed")
	}
	delegate := r.ContractAddress

	authorityKey, authority := newKey(t)
	delegateTo(t, authorityKey, chainID, delegate, func(auth types.SetCodeAuthorization) {
		r = send(&types.SetCodeTx{ChainID: uint256.MustFromBig(chainID), Nonce: nonce,
			GasTipCap: uint256.MustFromBig(tip), GasFeeCap: uint256.MustFromBig(feeCap), Gas: 100_000,
			To: authority, Value: new(uint256.Int), AuthList: []types.SetCodeAuthorization{auth}})
		if r.Status != types.ReceiptStatusSuccessful {
			t.Fatal("SetCodeTx failed")
		}
	})
	code, err := ec.CodeAt(ctx, authority, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte{0xef, 0x01, 0x00}, delegate.Bytes()...); !bytes.Equal(code, want) {
		t.Fatalf("code at authority = %x, want %x", code, want)
	}

	// The hazard: 21,000 gas leaves nothing to run the delegate's code with.
	r = send(&types.DynamicFeeTx{ChainID: chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: params.TxGas,
		To: &authority, Value: big.NewInt(1)})
	if r.Status != types.ReceiptStatusFailed {
		t.Fatal("a 21,000-gas ETH transfer to a delegated address succeeded")
	}
	// With gas for the code (as an estimating wallet gives) it is accepted.
	r = send(&types.DynamicFeeTx{ChainID: chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap, Gas: 30_000,
		To: &authority, Value: big.NewInt(1)})
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("a 30,000-gas ETH transfer to a delegated address failed")
	}
	if bal, err := ec.BalanceAt(ctx, authority, nil); err != nil || bal.Int64() != 1 {
		t.Fatalf("authority balance = %v (%v), want 1", bal, err)
	}
}

func delegateTo(t *testing.T, key *ecdsa.PrivateKey, chainID *big.Int, delegate common.Address, use func(types.SetCodeAuthorization)) {
	t.Helper()
	auth, err := types.SignSetCode(key, types.SetCodeAuthorization{ChainID: *uint256.MustFromBig(chainID), Address: delegate})
	if err != nil {
		t.Fatal(err)
	}
	use(auth)
}
