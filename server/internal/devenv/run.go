//go:build !nodev

package devenv

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/app"
	"github.com/cofferhq/coffer/server/internal/batchsweep"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/config"
	"github.com/cofferhq/coffer/server/internal/contracts"
	"github.com/cofferhq/coffer/server/internal/devchain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/funds"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/pgcluster"
	"github.com/cofferhq/coffer/server/internal/rates"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/wallet"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// Run starts everything and serves until ctx ends, then stops it all.
func Run(ctx context.Context, opts Options) error {
	log := opts.Log
	dir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	st, err := loadState(dir)
	if err != nil {
		return fmt.Errorf("read %s/state.json: %w", dir, err)
	}
	if st.MasterKey == "" {
		st.MasterKey = secret.NewMasterKey()
	}
	if st.OpsToken == "" {
		st.OpsToken = secret.Token("ops_")
	}
	if st.FaucetKey == "" {
		k, _ := crypto.GenerateKey()
		st.FaucetKey = hex.EncodeToString(crypto.FromECDSA(k))
	}
	faucet, err := crypto.HexToECDSA(st.FaucetKey)
	if err != nil {
		return fmt.Errorf("state.json faucetPrivateKey: %w", err)
	}

	dbURL := opts.DatabaseURL
	if dbURL == "" {
		cluster, err := pgcluster.Start(ctx, pgcluster.Options{Dir: filepath.Join(dir, "pg"), Logger: log})
		if err != nil {
			return err
		}
		defer func() { _ = cluster.Stop() }() // shutdown: nothing is left to report it to
		dbURL = cluster.URL
	}
	masterKey, _ := secret.ParseMasterKey(st.MasterKey)
	box, err := secret.NewBox(masterKey)
	if err != nil {
		return err
	}
	keys, err := prepareDatabase(ctx, dbURL, box, log)
	if err != nil {
		return err
	}

	chainDir, chainAddr := filepath.Join(dir, "chain"), opts.ChainAddr
	if chainAddr == "" {
		chainAddr = "127.0.0.1:0"
	}
	dev, err := devchain.Start(ctx, devchain.Options{BlockTime: opts.BlockTime, HTTPAddr: chainAddr, FaucetKey: faucet, Logger: log,
		DataDir: chainDir})
	if err != nil {
		return fmt.Errorf("dev chain in %s: %w; remove %s to start over", chainDir, err, dir)
	}
	defer dev.Close()
	if err := checkCursor(ctx, dbURL, dev, chainDir, dir, opts.DatabaseURL != ""); err != nil {
		return err
	}
	if err := fundServiceWallets(ctx, dev, keys); err != nil {
		return err
	}
	faucetBalances, err := balances(ctx, dev, dev.FaucetAddress())
	if err != nil {
		return err
	}
	_, bankroll := keys.DevBankroll()
	if st.SweeperAddress, err = ensureSweeper(ctx, dev, keys, st.SweeperAddress); err != nil {
		return err
	}
	registry, err := chainRegistry(dev, bankroll, st.SweeperAddress)
	if err != nil {
		return err
	}
	// The check `coffer serve` runs on a chains file: the dev chain passes it like any other.
	if err := chain.Check(ctx, registry, chain.VerifyStrict, log); err != nil {
		return fmt.Errorf("dev chain: %w", err)
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	internalAddr := opts.InternalAddr
	if internalAddr == "" {
		internalAddr = "127.0.0.1:0"
	}
	iln, err := lc.Listen(ctx, "tcp", internalAddr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("listen on %s: %w", internalAddr, err)
	}
	baseURL := "http://" + ln.Addr().String()
	webhookURL, err := ensureDemo(ctx, dbURL, box, &st, baseURL+devWebhookPath, registry)
	if err != nil {
		ln.Close()
		return err
	}
	if err := writeJSON(filepath.Join(dir, "state.json"), st); err != nil {
		return err
	}
	cfg := config.Defaults()
	cfg.DatabaseURL, cfg.Addr, cfg.BaseURL, cfg.WidgetURL = dbURL, ln.Addr().String(), baseURL, baseURL+"/widget"
	cfg.MasterKey, cfg.OpsToken, cfg.Chains, cfg.AutoMigrate = masterKey, st.OpsToken, registry, true
	cfg.WebhookReach, cfg.StaticPrices, cfg.FiatRates = webhook.ReachLoopback, rates.DevUSD(), rates.DevPerUSD()
	cfg.ScanInterval, cfg.SettlePoll = 250*time.Millisecond, 250*time.Millisecond
	cfg.DevWebhookOperator, cfg.OffRamp, cfg.DevFaucetKey = st.OperatorID, "dev", faucet
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		ln.Close()
		iln.Close()
		return err
	}
	a.InternalListener = iln
	f := File{BaseURL: baseURL, WidgetURL: cfg.WidgetURL, PanelURL: baseURL + "/panel", InternalURL: "http://" + iln.Addr().String(),
		DatabaseURL: dbURL,
		OpsToken:    st.OpsToken, MasterKey: st.MasterKey, FaucetPrivateKey: "0x" + st.FaucetKey,
		FaucetAddress: dev.FaucetAddress().Hex(), FaucetBalances: faucetBalances}
	f.Operator.ID, f.Operator.Key, f.Operator.WebhookURL = st.OperatorID, st.OperatorKey, webhookURL
	f.Admin.Email, f.Admin.Password = st.AdminEmail, st.AdminPassword
	for _, n := range registry.Networks() {
		fc := FileChain{ChainID: n.ChainID, Name: n.Name, RPCURL: dev.RPCURL(), NativeSymbol: n.NativeSymbol,
			NativeDecimals: n.NativeDecimals, Confirmations: n.Confirmations, BankrollAddress: n.BankrollAddress.Hex(), PriceFeeds: n.PriceFeeds,
			SweepMethod: n.SweepMethod, SweeperAddress: n.SweeperAddress}
		for _, t := range n.Tokens {
			fc.Tokens = append(fc.Tokens, FileToken{Symbol: t.Symbol, ContractAddress: t.ContractAddress.Hex(), Decimals: int(t.Decimals)})
		}
		f.Chains = append(f.Chains, fc)
	}
	if err := writeJSON(filepath.Join(dir, "dev.json"), f); err != nil {
		return err
	}
	if opts.Out != nil {
		printSummary(opts.Out, f, filepath.Join(dir, "dev.json"))
	}
	return a.Run(ctx, ln)
}

// prepareDatabase migrates the database and loads (or creates) the service's HD wallet.
func prepareDatabase(ctx context.Context, dbURL string, box *secret.Box, log *slog.Logger) (*wallet.Keys, error) {
	pool, err := store.Open(ctx, dbURL, 2)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	applied, err := store.Migrate(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	for _, m := range applied {
		log.Info("migration applied", "migration", m)
	}
	return wallet.Load(ctx, pool, box)
}

// checkCursor refuses a dev chain that is not the one PostgreSQL scanned: the chain directory
// was removed or reset while the database was kept (or the database comes from elsewhere).
// The deposits, sweeps and wallet nonces PostgreSQL records would then refer to blocks and
// transactions the chain does not have, and the stack could take no deposit.
func checkCursor(ctx context.Context, dbURL string, dev *devchain.Chain, chainDir, dir string, externalDB bool) error {
	pool, err := store.Open(ctx, dbURL, 1)
	if err != nil {
		return err
	}
	defer pool.Close()
	var next int64
	err = pool.QueryRow(ctx, `SELECT next_block FROM chain_cursors WHERE chain_id = $1`, dev.ChainID()).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // nothing scanned yet
	}
	if err != nil {
		return fmt.Errorf("read the chain cursor: %w", err)
	}
	number, want := next-1, ""
	err = pool.QueryRow(ctx, `SELECT number, hash FROM chain_blocks WHERE chain_id = $1 ORDER BY number DESC LIMIT 1`, dev.ChainID()).Scan(&number, &want)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("read the scanned blocks: %w", err)
	}
	if number < 0 {
		return nil
	}
	head, err := dev.Client().HeaderByNumber(ctx, nil)
	if err != nil {
		return fmt.Errorf("dev chain head: %w", err)
	}
	var found string
	if h, err := dev.Client().HeaderByNumber(ctx, big.NewInt(number)); err == nil {
		found = h.Hash().Hex()
	} else if !errors.Is(err, ethereum.NotFound) {
		return fmt.Errorf("dev chain block %d: %w", number, err)
	}
	if found != "" && (want == "" || strings.EqualFold(found, want)) {
		return nil
	}
	what := fmt.Sprintf("has no block %d (its head is block %d)", number, head.Number)
	if found != "" {
		what = fmt.Sprintf("has block %d with hash %s, not %s", number, found, want)
	}
	fix := fmt.Sprintf("remove %s to start over (rm -rf %s)", dir, dir)
	if externalDB {
		fix = "start over with an empty database (DATABASE_URL) and remove " + dir
	}
	return fmt.Errorf("the dev chain in %s was reset: PostgreSQL scanned it up to block %d but the chain %s, "+
		"so the deposits, sweeps and wallet nonces PostgreSQL records are not on it and no deposit could be taken; %s",
		chainDir, number, what, fix)
}

// Amounts the faucet gives out at first start, or to a service wallet found empty (a new
// database on a kept chain): 1,000 ETH to the gas tank (ERC20 sweep gas) and to the hot wallet
// (payouts), 1,000,000 of each test token to the hot wallet, and 1,000,000,000 of each test
// token to the faucet itself, from which deposits are paid as from a user's wallet.
const (
	walletEther = 1000
	hotTokens   = 1_000_000_000_000     // 1,000,000 tokens of 6 decimals
	faucetToken = 1_000_000_000_000_000 // 1,000,000,000 tokens of 6 decimals
)

// fundServiceWallets funds, from the faucet, what a new dev chain lacks: the faucet's own test
// tokens, and the gas tank and hot wallet. A resumed chain keeps its balances; a wallet it
// holds no ether for is new (the database was reset) and is funded.
func fundServiceWallets(ctx context.Context, dev *devchain.Chain, keys *wallet.Keys) error {
	_, gasTank := keys.GasTank()
	_, hot := keys.HotWallet()
	var hashes []common.Hash
	if !dev.Resumed() {
		for _, t := range dev.Tokens() {
			h, err := dev.Mint(ctx, t.Symbol, dev.FaucetAddress(), big.NewInt(faucetToken))
			if err != nil {
				return fmt.Errorf("mint %s: %w", t.Symbol, err)
			}
			hashes = append(hashes, h)
		}
	}
	for _, to := range []common.Address{gasTank, hot} {
		bal, err := dev.Client().BalanceAt(ctx, to, nil)
		if err != nil {
			return fmt.Errorf("balance of %s: %w", to.Hex(), err)
		}
		if bal.Sign() > 0 {
			continue
		}
		h, err := dev.SendNative(ctx, to, new(big.Int).Mul(big.NewInt(walletEther), big.NewInt(1e18)))
		if err != nil {
			return fmt.Errorf("fund %s: %w", to.Hex(), err)
		}
		hashes = append(hashes, h)
		if to != hot {
			continue
		}
		for _, t := range dev.Tokens() {
			h, err := dev.Mint(ctx, t.Symbol, hot, big.NewInt(hotTokens))
			if err != nil {
				return fmt.Errorf("mint %s: %w", t.Symbol, err)
			}
			hashes = append(hashes, h)
		}
	}
	if len(hashes) == 0 {
		return nil
	}
	_, err := dev.Mine(ctx, hashes...)
	return err
}

// balances returns holder's ether and test token balances on the dev chain, in whole units.
func balances(ctx context.Context, dev *devchain.Chain, holder common.Address) (map[string]string, error) {
	wei, err := dev.Client().BalanceAt(ctx, holder, nil)
	if err != nil {
		return nil, fmt.Errorf("balance of %s: %w", holder.Hex(), err)
	}
	out := map[string]string{"ETH": formatUnits(wei, 18)}
	tt := contracts.NewTestToken()
	for _, t := range dev.Tokens() {
		b, err := bind.Call(tt.Instance(dev.Client(), t.Address), &bind.CallOpts{Context: ctx}, tt.PackBalanceOf(holder), tt.UnpackBalanceOf)
		if err != nil {
			return nil, fmt.Errorf("%s balance of %s: %w", t.Symbol, holder.Hex(), err)
		}
		out[t.Symbol] = formatUnits(b, int(t.Decimals))
	}
	return out, nil
}

// formatUnits writes a base-unit amount in whole units with its decimals, e.g. 1.500000.
func formatUnits(x *big.Int, decimals int) string {
	s := new(big.Int).Abs(x).String()
	if len(s) <= decimals {
		s = strings.Repeat("0", decimals-len(s)+1) + s
	}
	whole, frac := s[:len(s)-decimals], s[len(s)-decimals:]
	if x.Sign() < 0 {
		whole = "-" + whole
	}
	if decimals == 0 {
		return whole
	}
	return whole + "." + frac
}

// ensureSweeper returns the dev chain's Sweeper for this wallet's gas tank and bankroll: the
// one of an earlier run when it is still there and obeys them, else a new one.
func ensureSweeper(ctx context.Context, dev *devchain.Chain, keys *wallet.Keys, known common.Address) (common.Address, error) {
	_, gasTank := keys.GasTank()
	_, bankroll := keys.DevBankroll()
	if known != (common.Address{}) && batchsweep.Verify(ctx, dev.Client(), known, gasTank, bankroll, common.Address{}) == nil {
		return known, nil
	}
	addr, err := dev.DeploySweeper(ctx, gasTank, bankroll, common.Address{}) // the dev chain has no feeAddress
	if err != nil {
		return common.Address{}, err
	}
	return addr, nil
}

func chainRegistry(dev *devchain.Chain, bankroll, sweeper common.Address) (*chain.Registry, error) {
	n := chain.Network{
		ChainID: dev.ChainID(), Name: "Coffer Dev Chain", RPCURLs: []string{dev.RPCURL()}, Confirmations: Confirmations,
		NativeSymbol: "ETH", NativeDecimals: 18, BankrollAddress: bankroll, PriceFeeds: map[string]common.Address{},
		TraceInternalTransfers: true, // the embedded chain serves the trace API
		// Prague is active: token deposits get their own addresses, swept in EIP-7702 batches.
		SweepMethod: chain.SweepEIP7702, SweeperAddress: sweeper,
	}
	for _, t := range dev.Tokens() {
		n.Tokens = append(n.Tokens, chain.Token{Symbol: t.Symbol, ContractAddress: t.Address, Decimals: int32(t.Decimals)})
	}
	for _, a := range dev.Aggregators() {
		symbol, _, _ := strings.Cut(a.Pair, "/")
		n.PriceFeeds[symbol] = a.Address
	}
	return chain.NewRegistry([]chain.Network{n})
}

// devWebhookPath is where `coffer dev` serves its own webhook receiver.
const devWebhookPath = "/dev/webhook"

// ensureDemo creates the demo operator and admin on first run (or when the database was
// reset) and returns the operator's webhook URL. A webhook still on a previous run's dev
// receiver follows this run's address (devWebhook); one the user pointed elsewhere is kept.
func ensureDemo(ctx context.Context, dbURL string, box *secret.Box, st *state, devWebhook string, chains *chain.Registry) (string, error) {
	pool, err := store.Open(ctx, dbURL, 2)
	if err != nil {
		return "", err
	}
	defer pool.Close()
	operators, admins := operator.New(pool, box), admin.New(pool, box, admin.Options{})
	webhookURL, exists := devWebhook, false
	if st.OperatorID != "" {
		if webhookURL, exists, err = demoWebhook(ctx, operators, st.OperatorID, devWebhook); err != nil {
			return "", err
		}
	}
	if !exists {
		name := "Demo Operator"
		op, key, err := operators.Create(ctx, domain.OperatorSettings{Name: &name, WebhookURL: &webhookURL})
		if err != nil {
			return "", err
		}
		st.OperatorID, st.OperatorKey = op.ID, key
		if err := fundDemo(ctx, funds.New(pool, chains), op.ID, chains); err != nil {
			return "", err
		}
	}
	if st.AdminEmail == "" {
		st.AdminEmail = "admin@coffer.local"
		st.AdminPassword = secret.Token("")[:24]
	}
	if _, _, err := admins.Create(ctx, st.AdminEmail, st.AdminPassword, "", false); err != nil && !fault.Is(err, fault.Conflict) {
		return "", err
	}
	return webhookURL, nil
}

// demoWebhook is the existing demo operator's webhook URL, moved to devWebhook when it is a
// previous run's dev receiver; exists is false when the operator is gone (a reset database).
func demoWebhook(ctx context.Context, operators *operator.Service, id, devWebhook string) (webhookURL string, exists bool, err error) {
	op, err := operators.Get(ctx, id)
	if fault.Is(err, fault.NotFound) {
		return devWebhook, false, nil
	}
	if err != nil {
		return "", false, err
	}
	if !isDevWebhook(op.WebhookURL) || op.WebhookURL == devWebhook {
		return op.WebhookURL, true, nil
	}
	if _, err := operators.Update(ctx, id, domain.OperatorSettings{WebhookURL: &devWebhook}); err != nil {
		return "", false, err
	}
	return devWebhook, true, nil
}

// isDevWebhook reports whether u is a dev receiver of `coffer dev` on loopback (a previous
// run's, whose port may have changed).
func isDevWebhook(u string) bool {
	parsed, err := url.Parse(u)
	if err != nil || parsed.Path != devWebhookPath {
		return false
	}
	ip := net.ParseIP(parsed.Hostname())
	return parsed.Hostname() == "localhost" || ip != nil && ip.IsLoopback()
}

// DemoFloat is what the demo operator starts with, per asset of the dev chain, so that its
// withdrawals can be paid before any deposit: a tenth of what the hot wallet is funded with.
func DemoFloat() map[string]string {
	return map[string]string{"ETH": "100", "USDT": "100000", "USDC": "100000"}
}

func fundDemo(ctx context.Context, ledger *funds.Ledger, operatorID string, chains *chain.Registry) error {
	for _, n := range chains.Networks() {
		for symbol, amount := range DemoFloat() {
			if _, ok := n.Asset(symbol); !ok {
				continue
			}
			if _, err := ledger.Adjust(ctx, funds.Adjustment{OperatorID: operatorID, ChainID: n.ChainID, Currency: symbol, Amount: amount,
				Note: "coffer dev: the demo operator's starting float, backed by the hot wallet's dev funding", Actor: "coffer-dev"}); err != nil {
				return fmt.Errorf("fund the demo operator: %w", err)
			}
		}
	}
	return nil
}

func printSummary(w io.Writer, f File, path string) {
	c := f.Chains[0]
	fmt.Fprintf(w, `
Coffer dev is running.

  API         %s
  Widget      %s/?sid=<sid>
  Panel       %s   (admin %s / %s)
  Internal    %s   (/metrics, OpsService with the opsToken, gRPC reflection)
  Database    %s
  Dev chain   %s (chain id %d)

  Operator    %s
  Operator key (Bearer): %s

Create a deposit session:

  curl -s %s/session/deposit \
    -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \
    -d '{"externalUserId":"user-1","lang":"en","platformFiatCurrency":"USD","userBalance":"0.00","amount":"25.00"}'

Pay it from a wallet: the faucet %s holds
`, f.BaseURL, f.WidgetURL, f.PanelURL, f.Admin.Email, f.Admin.Password, f.InternalURL, f.DatabaseURL, c.RPCURL, c.ChainID,
		f.Operator.ID, f.Operator.Key, f.BaseURL, f.Operator.Key, f.FaucetAddress)
	fmt.Fprintf(w, "  %-5s %s (native)\n", "ETH", f.FaucetBalances["ETH"])
	for _, t := range c.Tokens {
		fmt.Fprintf(w, "  %-5s %s (token %s, %d decimals)\n", t.Symbol, f.FaucetBalances[t.Symbol], t.ContractAddress, t.Decimals)
	}
	token := FileToken{Symbol: "USDT", ContractAddress: "<token>", Decimals: 6}
	if len(c.Tokens) > 0 {
		token = c.Tokens[0]
	}
	fmt.Fprintf(w, `Open the widget and press "Pay with the dev wallet"; or take data.address from the API and pay it
with coffer dev pay (a plain transfer or an ERC20 transfer() from the faucet, as a wallet sends):

  curl -s %s/depositor/address -H 'Content-Type: application/json' \
    -d '{"sid":"<sid>","currency":"%s","chainId":%d}'
  %s dev pay --to <address> --currency %s --amount 25%s

or import its key (faucetPrivateKey) into a wallet on RPC %s, chain id %d, or use Foundry's cast:

  cast send %s 'transfer(address,uint256)' <address> 25000000 \
    --private-key %s --rpc-url %s

After %d confirmations the deposit is credited and the demo webhook is delivered.
Everything above is in %s. Ctrl-C stops it all; `+"`coffer dev`"+` on the same data directory resumes it.

`, f.BaseURL, token.Symbol, c.ChainID, selfCommand(), token.Symbol, dataDirFlag(filepath.Dir(path)), c.RPCURL, c.ChainID, token.ContractAddress, f.FaucetPrivateKey, c.RPCURL, c.Confirmations, path)
}

// selfCommand is how to run this binary again: its path (make run's .coffer/bin/coffer), or
// go run when it is go run's temporary build.
func selfCommand() string {
	if strings.Contains(os.Args[0], "go-build") {
		return "go run ./server/cmd/coffer"
	}
	return os.Args[0]
}

// dataDirFlag is the --data-dir a command run from here needs to find this data directory:
// none for ./.coffer, the default.
func dataDirFlag(dir string) string {
	if def, err := filepath.Abs(".coffer"); err == nil && def == dir {
		return ""
	}
	return " --data-dir " + dir
}
