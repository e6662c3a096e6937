package bench

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/wallet"
)

// BenchmarkSweepGas: the gas an ERC20 deposit costs to sweep with EIP-7702 batching, through
// the live path (deposit/batch.go on the chaintx engine) on the embedded dev chain, next to
// today's top-up sweep measured on the same kind of chain. Coffer runs on a chain with
// sweepMethod eip7702; 20 users' token-deposit addresses each receive 25 USDT in one block.
// The service sweeps them (its first batch carries their delegations), then, every
// iteration, after a new deposit to each (steady state), until every DEPOSIT is acknowledged.
// Reported: gas per deposit (the batch transactions' gas used over the deposits they swept),
// the batches per round, and the ETH left at the deposit addresses.
// Target: steady state <= 0.3 x 67,593 (today's 21,000 top-up + 46,593 transfer), dust 0.
func BenchmarkSweepGas(b *testing.B) { benchSweepGas(b, 0) }

// BenchmarkSweepGasWithFee is BenchmarkSweepGas with a 1% operator deposit fee, which each
// sweep pays to the chain's feeAddress (already holding the token) next to the bankroll.
func BenchmarkSweepGasWithFee(b *testing.B) { benchSweepGas(b, 100) }

func benchSweepGas(b *testing.B, feeBps int32) {
	b.Helper()
	const batch, today, amount = 20, 67_593, 25_000_000
	ctx := b.Context()
	feeAddress := common.HexToAddress("0x00000000000000000000000000000000000fee11")
	dev, env := startBatchedCoffer(b, 250*time.Millisecond, 100*time.Millisecond, 3, func(n *chain.Network) {
		if feeBps > 0 {
			n.FeeAddress = feeAddress
		}
	})
	if feeBps > 0 {
		mintInOneBlock(ctx, b, dev, "USDT", []common.Address{feeAddress}, 1) // not an empty balance, as the bankroll
	}
	receiver := newAcks(b, "DEPOSIT", "transactionHash", `{"error":0}`)
	op, _ := env.Operator(b, domain.OperatorSettings{WebhookURL: &receiver.srv.URL, DepositFeeBps: &feeBps})
	addrs := make([]common.Address, batch)
	for i := range addrs {
		var err error
		if addrs[i], err = env.Services.Deposits.TokenAddressFor(ctx, op.ID, fmt.Sprintf("user-%d", i)); err != nil {
			b.Fatal(err)
		}
	}
	acked := 0
	// round pays each address once and waits for every DEPOSIT; it returns the gas the new
	// batches used, how many there were and how many authorizations they carried.
	seen := 0
	round := func() (gas uint64, batches, auths int) {
		mintInOneBlock(ctx, b, dev, "USDT", addrs, amount)
		acked += batch
		receiver.wait(b, acked, 2*time.Minute)
		rows, err := env.Pool.Query(ctx, `SELECT gas_used, coalesce(jsonb_array_length(authorizations), 0) FROM chain_txs
			WHERE purpose = 'sweep-batch' AND state = 'mined' ORDER BY id OFFSET $1`, seen)
		if err != nil {
			b.Fatal(err)
		}
		var used uint64
		var n int
		if _, err := pgx.ForEachRow(rows, []any{&used, &n}, func() error {
			gas, batches, auths = gas+used, batches+1, auths+n
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		seen += batches
		return gas, batches, auths
	}
	first, firstBatches, auths := round()
	if auths != batch {
		b.Fatalf("the first batches carry %d authorizations, want %d", auths, batch)
	}
	var steady, rounds, steadyBatches uint64
	for b.Loop() {
		gas, batches, auths := round()
		if auths != 0 {
			b.Fatalf("steady-state batches carry %d authorizations", auths)
		}
		steady += gas
		steadyBatches += uint64(batches)
		rounds++
	}
	if n := testdb.Count(ctx, b, env.Pool, `SELECT count(*) FROM chain_txs WHERE purpose IN ('gas', 'sweep', 'sweep-fee')`); n != 0 {
		b.Fatalf("%d top-up or per-address sweep transactions on a batched chain", n)
	}
	client := env.Services.Clients[dev.ChainID()]
	usdt, _ := dev.Token("USDT")
	dust := new(big.Int)
	for _, a := range addrs {
		bal, err := client.Balance(ctx, a)
		if err != nil {
			b.Fatal(err)
		}
		dust.Add(dust, bal)
		if left, err := client.TokenBalance(ctx, usdt.Address, a); err != nil || left.Sign() != 0 {
			b.Fatalf("%s still holds %v USDT (%v)", a, left, err)
		}
	}
	perDeposit := float64(steady) / float64(rounds*batch)
	if feeBps > 0 {
		b.ReportMetric(perDeposit, "gas/deposit")
		fmt.Printf("\nSame with a %d bps deposit fee paid to feeAddress in the same sweep: steady state %.0f gas per deposit "+
			"(target <= %.0f), first sweep with authorization %d\n\n", feeBps, perDeposit, 0.3*today, first/batch)
		return
	}
	topUp, moved, topUpDust := topUpSweepGas(b)

	b.ReportMetric(perDeposit, "gas/deposit")
	fmt.Printf("\nERC20 sweep gas per deposit through the live path, EIP-7702, %d deposits a round in one block: steady state %.0f "+
		"(target <= %.0f = 0.3 x %d; %.1f batches a round), first sweep with authorization %d (%d batches); "+
		"today's top-up sweep on this chain %d + %d = %d (into a bankroll already holding the token; the first into an empty "+
		"balance costs 17,100 more: 67,593)\n",
		batch, perDeposit, 0.3*today, today, float64(steadyBatches)/float64(rounds), first/batch, firstBatches,
		topUp, moved, topUp+moved)
	fmt.Printf("ETH dust left per deposit: EIP-7702 %v wei (target 0); top-up sweep with an exact top-up %v wei\n\n",
		new(big.Int).Div(dust, big.NewInt(batch)), topUpDust)
}

// topUpSweepGas measures today's top-up sweep of one ERC20 deposit on a dev chain: the gas
// tank sends the transfer's gas, the deposit address sends its tokens to the bankroll (which
// already holds the token). It returns both transactions' gas and the ETH left at the address.
func topUpSweepGas(b *testing.B) (topUp, moved uint64, dust *big.Int) {
	b.Helper()
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
	defer func() { _ = dev.Close() }()
	s := &sender{b: b, dev: dev, chainID: big.NewInt(dev.ChainID())}
	usdt, _ := dev.Token("USDT")
	s.mint(ctx, usdt.Symbol, []common.Address{bankroll}, 1)
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
	topUpTx := s.mine(ctx, tankKey, &types.DynamicFeeTx{ChainID: s.chainID, Nonce: s.nonce(tank), GasTipCap: tip, GasFeeCap: feeCap,
		Gas: params.TxGas, To: &dep, Value: new(big.Int).Mul(new(big.Int).SetUint64(gas), feeCap)})
	movedTx := s.mine(ctx, depKey, &types.DynamicFeeTx{ChainID: s.chainID, Nonce: s.nonce(dep), GasTipCap: tip, GasFeeCap: feeCap,
		Gas: gas, To: &usdt.Address, Data: transfer})
	dust, err = dev.Client().BalanceAt(ctx, dep, nil)
	if err != nil {
		b.Fatal(err)
	}
	return topUpTx.GasUsed, movedTx.GasUsed, dust
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
