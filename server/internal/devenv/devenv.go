// Package devenv runs the whole service on one machine with no set-up (`coffer dev`): a
// private PostgreSQL cluster under the data directory (unless DATABASE_URL is set), the
// embedded EVM dev chain, a demo operator and a panel admin, all described in dev.json.
package devenv

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/app"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/config"
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

// Options configure `coffer dev`.
type Options struct {
	DataDir string
	Addr    string // API listen address; port 0 picks a free one
	// InternalAddr is the listen address of /metrics, OpsService and reflection (port 0: free).
	InternalAddr string
	BlockTime    time.Duration // dev chain block interval
	// DatabaseURL, when set, replaces the private cluster.
	DatabaseURL string
	Log         *slog.Logger
	// Out receives the human-readable summary.
	Out io.Writer
}

// Confirmations required on the dev chain.
const Confirmations = 3

// state is what `coffer dev` keeps between runs in <data-dir>/state.json (mode 0600).
type state struct {
	MasterKey     string `json:"masterKey"`
	OpsToken      string `json:"opsToken"`
	FaucetKey     string `json:"faucetPrivateKey"`
	OperatorID    string `json:"operatorId"`
	OperatorKey   string `json:"operatorKey"`
	AdminEmail    string `json:"adminEmail"`
	AdminPassword string `json:"adminPassword"`
}

// File is dev.json.
type File struct {
	BaseURL   string `json:"baseUrl"`
	WidgetURL string `json:"widgetUrl"`
	PanelURL  string `json:"panelUrl"`
	// InternalURL serves /metrics, OpsService (the opsToken) and gRPC reflection.
	InternalURL      string      `json:"internalUrl"`
	DatabaseURL      string      `json:"databaseUrl"`
	OpsToken         string      `json:"opsToken"`
	MasterKey        string      `json:"masterKey"`
	FaucetPrivateKey string      `json:"faucetPrivateKey"`
	Chains           []FileChain `json:"chains"`
	Operator         struct {
		ID         string `json:"id"`
		Key        string `json:"key"`
		WebhookURL string `json:"webhookUrl"`
	} `json:"operator"`
	Admin struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	} `json:"admin"`
}

// FileChain is a chain of dev.json.
type FileChain struct {
	ChainID         int64                     `json:"chainId"`
	Name            string                    `json:"name"`
	RPCURL          string                    `json:"rpcUrl"`
	NativeSymbol    string                    `json:"nativeSymbol"`
	NativeDecimals  int32                     `json:"nativeDecimals"`
	Confirmations   int32                     `json:"confirmations"`
	BankrollAddress string                    `json:"bankrollAddress"`
	PriceFeeds      map[string]common.Address `json:"priceFeeds"`
	Tokens          []FileToken               `json:"tokens"`
}

// Network is the chains-file entry of a dev.json chain.
func (c FileChain) Network() chain.Network {
	n := chain.Network{ChainID: c.ChainID, Name: c.Name, RPCURLs: []string{c.RPCURL}, Confirmations: c.Confirmations,
		NativeSymbol: c.NativeSymbol, NativeDecimals: c.NativeDecimals, BankrollAddress: common.HexToAddress(c.BankrollAddress),
		PriceFeeds: c.PriceFeeds}
	for _, t := range c.Tokens {
		n.Tokens = append(n.Tokens, chain.Token{Symbol: t.Symbol, ContractAddress: common.HexToAddress(t.ContractAddress), Decimals: int32(t.Decimals)}) //nolint:gosec // decimals are at most 255
	}
	return n
}

// FileToken is a token of dev.json.
type FileToken struct {
	Symbol          string `json:"symbol"`
	ContractAddress string `json:"contractAddress"`
	Decimals        int    `json:"decimals"`
}

// ReadFile reads a data directory's dev.json.
func ReadFile(dataDir string) (File, error) {
	var f File
	b, err := os.ReadFile(filepath.Join(dataDir, "dev.json"))
	if err != nil {
		return f, err
	}
	return f, json.Unmarshal(b, &f)
}

func loadState(dir string) (state, error) {
	var s state
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

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

	dev, err := devchain.Start(ctx, devchain.Options{BlockTime: opts.BlockTime, HTTPAddr: "127.0.0.1:0", FaucetKey: faucet, Logger: log})
	if err != nil {
		return fmt.Errorf("dev chain: %w", err)
	}
	defer dev.Close()
	if err := fundServiceWallets(ctx, dev, keys); err != nil {
		return err
	}
	_, bankroll := keys.DevBankroll()
	registry, err := chainRegistry(dev, bankroll)
	if err != nil {
		return err
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
	webhookURL := baseURL + "/dev/webhook"
	if err := ensureDemo(ctx, dbURL, box, &st, webhookURL, registry); err != nil {
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
	cfg.DevWebhookOperator, cfg.OffRamp = st.OperatorID, "dev"
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		ln.Close()
		iln.Close()
		return err
	}
	a.InternalListener = iln
	f := File{BaseURL: baseURL, WidgetURL: cfg.WidgetURL, PanelURL: baseURL + "/panel", InternalURL: "http://" + iln.Addr().String(),
		DatabaseURL: dbURL,
		OpsToken:    st.OpsToken, MasterKey: st.MasterKey, FaucetPrivateKey: "0x" + st.FaucetKey}
	f.Operator.ID, f.Operator.Key, f.Operator.WebhookURL = st.OperatorID, st.OperatorKey, webhookURL
	f.Admin.Email, f.Admin.Password = st.AdminEmail, st.AdminPassword
	for _, n := range registry.Networks() {
		fc := FileChain{ChainID: n.ChainID, Name: n.Name, RPCURL: dev.RPCURL(), NativeSymbol: n.NativeSymbol,
			NativeDecimals: n.NativeDecimals, Confirmations: n.Confirmations, BankrollAddress: n.BankrollAddress.Hex(), PriceFeeds: n.PriceFeeds}
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

// fundServiceWallets gives the gas tank (ERC20 sweep gas) and the hot wallet (payouts) ether
// and test tokens from the faucet; the dev chain starts empty on every run.
func fundServiceWallets(ctx context.Context, dev *devchain.Chain, keys *wallet.Keys) error {
	_, gasTank := keys.GasTank()
	_, hot := keys.HotWallet()
	thousand := new(big.Int).Mul(big.NewInt(1000), big.NewInt(1e18))
	var hashes []common.Hash
	for _, to := range []common.Address{gasTank, hot} {
		h, err := dev.SendNative(ctx, to, thousand)
		if err != nil {
			return fmt.Errorf("fund %s: %w", to.Hex(), err)
		}
		hashes = append(hashes, h)
	}
	for _, t := range dev.Tokens() {
		h, err := dev.Mint(ctx, t.Symbol, hot, big.NewInt(1_000_000_000_000)) // 1,000,000 tokens of 6 decimals
		if err != nil {
			return fmt.Errorf("mint %s: %w", t.Symbol, err)
		}
		hashes = append(hashes, h)
	}
	_, err := dev.Mine(ctx, hashes...)
	return err
}

func chainRegistry(dev *devchain.Chain, bankroll common.Address) (*chain.Registry, error) {
	n := chain.Network{
		ChainID: dev.ChainID(), Name: "Coffer Dev Chain", RPCURLs: []string{dev.RPCURL()}, Confirmations: Confirmations,
		NativeSymbol: "ETH", NativeDecimals: 18, BankrollAddress: bankroll, PriceFeeds: map[string]common.Address{},
		TraceInternalTransfers: true, // the embedded chain serves the trace API
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

// ensureDemo creates the demo operator and admin on first run (or when the database was
// reset), and points the operator's webhook at this run's address.
func ensureDemo(ctx context.Context, dbURL string, box *secret.Box, st *state, webhookURL string, chains *chain.Registry) error {
	pool, err := store.Open(ctx, dbURL, 2)
	if err != nil {
		return err
	}
	defer pool.Close()
	operators, admins := operator.New(pool, box), admin.New(pool, box, admin.Options{})
	exists := false
	if st.OperatorID != "" {
		_, err := operators.Update(ctx, st.OperatorID, domain.OperatorSettings{WebhookURL: &webhookURL})
		if err != nil && !fault.Is(err, fault.NotFound) {
			return err
		}
		exists = err == nil
	}
	if !exists {
		name := "Demo Operator"
		op, key, err := operators.Create(ctx, domain.OperatorSettings{Name: &name, WebhookURL: &webhookURL})
		if err != nil {
			return err
		}
		st.OperatorID, st.OperatorKey = op.ID, key
		if err := fundDemo(ctx, funds.New(pool, chains), op.ID, chains); err != nil {
			return err
		}
	}
	if st.AdminEmail == "" {
		st.AdminEmail = "admin@coffer.local"
		st.AdminPassword = secret.Token("")[:24]
	}
	if _, _, err := admins.Create(ctx, st.AdminEmail, st.AdminPassword, "", false); err != nil && !fault.Is(err, fault.Conflict) {
		return err
	}
	return nil
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

Everything above is in %s. Ctrl-C stops it all.

`, f.BaseURL, f.WidgetURL, f.PanelURL, f.Admin.Email, f.Admin.Password, f.InternalURL, f.DatabaseURL, f.Chains[0].RPCURL, f.Chains[0].ChainID,
		f.Operator.ID, f.Operator.Key, f.BaseURL, f.Operator.Key, path)
}
