package gethdev_test

import (
	"bytes"
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/holiman/uint256"

	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/gethdev"
)

// TestPragueActive: geth --dev runs Prague, so an EIP-7702 SetCodeTx installs the delegation
// designator 0xef0100 || delegate at the authority, and a 21,000-gas ETH transfer to the
// delegated address then fails (the hazard of delegated deposit addresses).
func TestPragueActive(t *testing.T) {
	t.Parallel()
	n := gethdev.Start(t, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sender, err := n.NewAccount(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	r, err := n.Transact(ctx, sender, nil, nil, append(common.FromHex(contracts.SweeperMetaData.Bin),
		contracts.NewSweeper().PackConstructor(sender.Address, sender.Address, common.Address{})...))
	if err != nil || r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("deploy Sweeper: %v", err)
	}
	delegate := r.ContractAddress

	authority, err := n.NewAccount(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	chainID := big.NewInt(n.ChainID)
	auth, err := types.SignSetCode(authority.Key, types.SetCodeAuthorization{ChainID: *uint256.MustFromBig(chainID), Address: delegate})
	if err != nil {
		t.Fatal(err)
	}
	tip := big.NewInt(params.GWei)
	tx, err := n.Send(ctx, sender, func(nonce uint64, baseFee *big.Int) types.TxData {
		feeCap := new(big.Int).Add(new(big.Int).Mul(baseFee, big.NewInt(4)), tip)
		return &types.SetCodeTx{ChainID: uint256.MustFromBig(chainID), Nonce: nonce, GasTipCap: uint256.MustFromBig(tip),
			GasFeeCap: uint256.MustFromBig(feeCap), Gas: 100_000, To: authority.Address, Value: new(uint256.Int),
			AuthList: []types.SetCodeAuthorization{auth}}
	})
	if err != nil {
		t.Fatalf("send SetCodeTx: %v", err)
	}
	if r, err = n.Wait(ctx, tx.Hash()); err != nil || r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("SetCodeTx: %v", err)
	}
	code, err := n.Client.CodeAt(ctx, authority.Address, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]byte{0xef, 0x01, 0x00}, delegate.Bytes()...); !bytes.Equal(code, want) {
		t.Fatalf("code at authority = %x, want %x", code, want)
	}
	// Transact sends plain transfers with exactly 21,000 gas, as many exchanges do.
	r, err = n.Transact(ctx, sender, &authority.Address, big.NewInt(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != types.ReceiptStatusFailed {
		t.Fatal("a 21,000-gas ETH transfer to a delegated address succeeded")
	}
}
