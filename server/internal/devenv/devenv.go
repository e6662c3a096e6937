// Package devenv runs the whole service on one machine with no set-up (`coffer dev`): a
// private PostgreSQL cluster under the data directory (unless DATABASE_URL is set), the
// embedded EVM dev chain (kept under the data directory too), a demo operator and a panel
// admin, all described in dev.json. A restart on the same data directory resumes all of it.
package devenv

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/chain"
)

// Options configure `coffer dev`.
type Options struct {
	DataDir string
	Addr    string // API listen address; port 0 picks a free one
	// InternalAddr is the listen address of /metrics, OpsService and reflection (port 0: free).
	InternalAddr string
	BlockTime    time.Duration // dev chain block interval
	// ChainAddr is the dev chain's JSON-RPC listen address ("": a free loopback port). A fixed
	// one keeps the RPC URL a wallet was given valid across restarts.
	ChainAddr string
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
	// SweeperAddress is the dev chain's EIP-7702 Sweeper, deployed on the first run (and again
	// when the chain or the wallet was reset).
	SweeperAddress common.Address `json:"sweeperAddress,omitzero"`
}

// File is dev.json.
type File struct {
	BaseURL   string `json:"baseUrl"`
	WidgetURL string `json:"widgetUrl"`
	PanelURL  string `json:"panelUrl"`
	// InternalURL serves /metrics, OpsService (the opsToken) and gRPC reflection.
	InternalURL      string `json:"internalUrl"`
	DatabaseURL      string `json:"databaseUrl"`
	OpsToken         string `json:"opsToken"`
	MasterKey        string `json:"masterKey"`
	FaucetPrivateKey string `json:"faucetPrivateKey"`
	// FaucetAddress holds ETH and every test token of the dev chain: import FaucetPrivateKey
	// into a wallet to pay deposits the way a user does.
	FaucetAddress string `json:"faucetAddress"`
	// FaucetBalances are the faucet's balances at start, in whole units, by symbol.
	FaucetBalances map[string]string `json:"faucetBalances"`
	Chains         []FileChain       `json:"chains"`
	Operator       struct {
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
	// SweepMethod and SweeperAddress: token deposits are swept in EIP-7702 batches through
	// this Sweeper (chains file fields of the same names).
	SweepMethod    chain.SweepMethod `json:"sweepMethod,omitempty"`
	SweeperAddress common.Address    `json:"sweeperAddress,omitzero"`
}

// Network is the chains-file entry of a dev.json chain.
func (c FileChain) Network() chain.Network {
	n := chain.Network{ChainID: c.ChainID, Name: c.Name, RPCURLs: []string{c.RPCURL}, Confirmations: c.Confirmations,
		NativeSymbol: c.NativeSymbol, NativeDecimals: c.NativeDecimals, BankrollAddress: common.HexToAddress(c.BankrollAddress),
		PriceFeeds: c.PriceFeeds, SweepMethod: c.SweepMethod, SweeperAddress: c.SweeperAddress}
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
