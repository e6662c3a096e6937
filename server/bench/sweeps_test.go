package bench

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/cofferhq/coffer/server/internal/batchsweep"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/deposit"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/wallet"
)

// BenchmarkSweepGas: the gas an ERC20 deposit costs to sweep with EIP-7702 batching
// (batchsweep, contracts/src/Sweeper.sol) on the embedded dev chain, next to today's top-up
// sweep measured on the same chain. 20 HD deposit addresses of the service's wallet each
// receive USDT; the wallet's gas tank sweeps them in one transaction: first with their
// delegations (authorizations), then, every iteration, after a new deposit to each (steady
// state). Reported: gas per deposit of both, and the ETH left on the deposit addresses.
// Target: steady state <= 0.3 x 67,593 (today's 21,000 top-up + 46,593 transfer), dust 0.
//
// It measures the contract and the transaction only: the live sweep path still tops up
// (wiring batchsweep into the chaintx engine is planned, docs/sweeps-eip7702.md).
func BenchmarkSweepGas(b *testing.B) {
	const batch, today = 20, 67_593
	ctx := b.Context()
	hd, err := wallet.FromSeed(secret.Random(64))
	if err != nil {
		b.Fatal(err)
	}
	tankKey, tank := hd.GasTank()
	_, bankroll := hd.DevBankroll()
	dev, err := devchain.Start(ctx, devchain.Options{Alloc: types.GenesisAlloc{
		tank: {Balance: new(big.Int).Mul(big.NewInt(1000), big.NewInt(params.Ether))}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = dev.Close() })
	s := &sender{b: b, dev: dev, chainID: big.NewInt(dev.ChainID())}
	usdt, _ := dev.Token("USDT")

	r := s.mine(ctx, tankKey, &types.DynamicFeeTx{ChainID: s.chainID, Nonce: s.nonce(tank), GasTipCap: big.NewInt(params.GWei),
		GasFeeCap: s.feeCap(ctx), Gas: 2_000_000, Data: batchsweep.DeployData(tank, bankroll)})
	sweeper := r.ContractAddress
	accounts := make([]batchsweep.Account, batch)
	addrs := make([]common.Address, batch)
	for i := range accounts {
		if _, addrs[i], err = hd.Deposit(uint32(i)); err != nil {
			b.Fatal(err)
		}
		accounts[i] = batchsweep.Account{Address: addrs[i], Assets: []batchsweep.Asset{{Token: usdt.Address, Amount: big.NewInt(25_000_000)}}}
	}
	keys := deposit.KeyRing{Keys: hd}
	sweep := func() (uint64, int) {
		p, err := batchsweep.Build(ctx, dev.Client(), keys, s.chainID, sweeper, accounts)
		if err != nil {
			b.Fatal(err)
		}
		gas, err := dev.Client().EstimateGas(ctx, p.CallMsg(tank))
		if err != nil {
			b.Fatal(err)
		}
		return s.sendData(ctx, tankKey, &tank, p, gas+gas/4).GasUsed, len(p.Authorizations)
	}

	s.mint(ctx, usdt.Symbol, addrs, 25_000_000)
	first, auths := sweep()
	if auths != batch {
		b.Fatalf("first sweep carries %d authorizations, want %d", auths, batch)
	}
	var steady, rounds uint64
	for b.Loop() {
		b.StopTimer()
		s.mint(ctx, usdt.Symbol, addrs, 25_000_000)
		b.StartTimer()
		gas, auths := sweep()
		if auths != 0 {
			b.Fatalf("steady-state sweep carries %d authorizations", auths)
		}
		steady += gas
		rounds++
	}
	dust := new(big.Int)
	for _, a := range addrs {
		bal, err := dev.Client().BalanceAt(ctx, a, nil)
		if err != nil {
			b.Fatal(err)
		}
		dust.Add(dust, bal)
		if left := s.balanceOf(ctx, usdt.Address, a); left.Sign() != 0 {
			b.Fatalf("%s still holds %v USDT", a, left)
		}
	}
	perDeposit := float64(steady) / float64(rounds*batch)

	// Today's top-up sweep of one deposit on the same chain: the gas tank sends the transfer's
	// gas, the deposit address sends its tokens to the bankroll.
	depKey, _ := crypto.GenerateKey()
	dep := crypto.PubkeyToAddress(depKey.PublicKey)
	s.mint(ctx, usdt.Symbol, []common.Address{dep}, 25_000_000)
	transfer := contracts.NewTestToken().PackTransfer(bankroll, big.NewInt(25_000_000))
	gas, err := dev.Client().EstimateGas(ctx, ethereum.CallMsg{From: dep, To: &usdt.Address, Data: transfer})
	if err != nil {
		b.Fatal(err)
	}
	tip, feeCap := big.NewInt(params.GWei), s.feeCap(ctx) // one fee cap for both: the top-up pays exactly the transfer's maximum
	topUp := s.mine(ctx, tankKey, &types.DynamicFeeTx{ChainID: s.chainID, Nonce: s.nonce(tank), GasTipCap: tip, GasFeeCap: feeCap,
		Gas: params.TxGas, To: &dep, Value: new(big.Int).Mul(new(big.Int).SetUint64(gas), feeCap)})
	moved := s.mine(ctx, depKey, &types.DynamicFeeTx{ChainID: s.chainID, Nonce: s.nonce(dep), GasTipCap: tip, GasFeeCap: feeCap,
		Gas: gas, To: &usdt.Address, Data: transfer})
	topUpDust, err := dev.Client().BalanceAt(ctx, dep, nil)
	if err != nil {
		b.Fatal(err)
	}

	b.ReportMetric(perDeposit, "gas/deposit")
	fmt.Printf("\nERC20 sweep gas per deposit, EIP-7702 batch of %d: steady state %.0f (target <= %.0f = 0.3 x %d), "+
		"first sweep with authorization %d; today's top-up sweep on this chain %d + %d = %d "+
		"(into a bankroll already holding the token; the first into an empty balance costs 17,100 more: 67,593)\n",
		batch, perDeposit, 0.3*today, today, first/batch, topUp.GasUsed, moved.GasUsed, topUp.GasUsed+moved.GasUsed)
	fmt.Printf("ETH dust left per deposit: EIP-7702 %v wei (target 0); top-up sweep with an exact top-up %v wei\n\n",
		new(big.Int).Div(dust, big.NewInt(batch)), topUpDust)
}

// sender signs, sends and mines transactions on a dev chain.
type sender struct {
	b       *testing.B
	dev     *devchain.Chain
	chainID *big.Int
	nonces  map[common.Address]uint64
}

func (s *sender) feeCap(ctx context.Context) *big.Int {
	head, err := s.dev.Client().HeaderByNumber(ctx, nil)
	if err != nil {
		s.b.Fatal(err)
	}
	return new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), big.NewInt(params.GWei))
}

func (s *sender) nonce(from common.Address) uint64 {
	if s.nonces == nil {
		s.nonces = map[common.Address]uint64{}
	}
	n := s.nonces[from]
	s.nonces[from]++
	return n
}

func (s *sender) sendData(ctx context.Context, key *ecdsa.PrivateKey, from *common.Address, p batchsweep.Plan, gas uint64) *types.Receipt {
	s.b.Helper()
	return s.mine(ctx, key, p.TxData(s.chainID, s.nonce(*from), batchsweep.Fees{Tip: big.NewInt(params.GWei), FeeCap: s.feeCap(ctx), Gas: gas}))
}

func (s *sender) mine(ctx context.Context, key *ecdsa.PrivateKey, data types.TxData) *types.Receipt {
	s.b.Helper()
	tx := types.MustSignNewTx(key, types.LatestSignerForChainID(s.chainID), data)
	if err := s.dev.Client().SendTransaction(ctx, tx); err != nil {
		s.b.Fatal(err)
	}
	rs, err := s.dev.Mine(ctx, tx.Hash())
	if err != nil {
		s.b.Fatal(err)
	}
	if rs[0].Status != types.ReceiptStatusSuccessful {
		s.b.Fatalf("transaction %s failed", tx.Hash())
	}
	return rs[0]
}

func (s *sender) mint(ctx context.Context, symbol string, to []common.Address, amount int64) {
	s.b.Helper()
	hashes := make([]common.Hash, len(to))
	for i, a := range to {
		h, err := s.dev.Mint(ctx, symbol, a, big.NewInt(amount))
		if err != nil {
			s.b.Fatal(err)
		}
		hashes[i] = h
	}
	if _, err := s.dev.Mine(ctx, hashes...); err != nil {
		s.b.Fatal(err)
	}
}

func (s *sender) balanceOf(ctx context.Context, token, owner common.Address) *big.Int {
	tt := contracts.NewTestToken()
	bal, err := bind.Call(tt.Instance(s.dev.Client(), token), &bind.CallOpts{Context: ctx}, tt.PackBalanceOf(owner), tt.UnpackBalanceOf)
	if err != nil {
		s.b.Fatal(err)
	}
	return bal
}
