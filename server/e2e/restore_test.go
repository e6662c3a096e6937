package e2e

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/ethereum/go-ethereum/common"
	"google.golang.org/protobuf/encoding/protojson"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/chain"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
	"github.com/cofferhq/coffer/server/internal/pgcluster"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// pgTool runs a PostgreSQL client program of the server's version (pg_dump, pg_restore).
func pgTool(t *testing.T, name string, args ...string) {
	t.Helper()
	dir, err := pgcluster.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), filepath.Join(dir, name), args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// TestRestoreDrill is docs/deploy.md's restore drill: a deposit is taken through to CREDITED
// on geth --dev by Coffer on one PostgreSQL cluster; the database is dumped (pg_dump -Fc) and
// restored (pg_restore) into a fresh cluster, the first one is stopped, and Coffer started on
// the restore with the same master key finds the same wallet and passes the funds
// reconciliation, through OpsService and `coffer reconcile`. With another master key,
// `coffer serve` refuses to start and says why, and `coffer keys status` shows that nothing
// is sealed under that key.
func TestRestoreDrill(t *testing.T) {
	c := startUSDTChain(t)
	bankroll := newAddress(t)
	network := chain.Network{ChainID: c.node.ChainID, Name: "geth dev", RPCURLs: []string{c.node.URL}, Confirmations: 2,
		NativeSymbol: "ETH", NativeDecimals: 18, BankrollAddress: bankroll,
		Tokens: []chain.Token{{Symbol: "USDT", ContractAddress: c.usdt, Decimals: 6}}}
	masterKey := secret.Random(secret.KeySize)
	start := func(t *testing.T, dbURL string) *apptest.Env {
		t.Helper()
		return apptest.Start(t, apptest.Options{DatabaseURL: dbURL, MasterKey: masterKey, ScanInterval: 200 * time.Millisecond,
			Chains: []chain.Network{network}})
	}
	ops := func(env *apptest.Env) cofferv1connect.OpsServiceClient {
		return cofferv1connect.NewOpsServiceClient(http.DefaultClient, env.InternalURL, connect.WithInterceptors(proctest.Bearer(env.OpsToken)))
	}

	// The service's own cluster, where a user's deposit is credited.
	primary := testdb.Cluster(t, pgcluster.Options{Dir: t.TempDir(), Ephemeral: true})
	testdb.Migrate(t, primary.URL)
	var hotWallet common.Address
	var depositID int64
	var operatorKey string
	t.Run("deposit", func(t *testing.T) {
		env := start(t, primary.URL)
		_, gasTank := env.Services.Keys.GasTank()
		_, hotWallet = env.Services.Keys.HotWallet()
		c.fund(t, gasTank)
		recv := hooktest.New(t)
		_, operatorKey = recv.Operator(t, env, domain.OperatorSettings{})
		sid, _ := openSession(t, env.URL, "deposit", operatorKey,
			`{"externalUserId":"drill-user","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"40.00"}`)
		c.sendUSDT(t, depositAddress(t, env.URL, sid, "USDT"), 40_000_000)
		if events := recv.Await(1, 90*time.Second); len(events) != 1 {
			t.Fatalf("%d DEPOSIT webhooks, want 1", len(events))
		}
		if err := env.Pool.QueryRow(t.Context(), `SELECT id FROM deposits WHERE status = 'CREDITED'`).Scan(&depositID); err != nil {
			t.Fatalf("no CREDITED deposit: %v", err)
		}
		assertReconciled(t, ops(env))
	}) // Coffer on the primary stops here.
	if t.Failed() {
		return
	}

	// Back up, lose the primary, restore into a fresh cluster.
	dump := filepath.Join(t.TempDir(), "coffer.dump")
	pgTool(t, "pg_dump", "--format=custom", "--file="+dump, "--dbname="+primary.URL)
	if err := primary.Stop(); err != nil {
		t.Fatal(err)
	}
	restored := testdb.Cluster(t, pgcluster.Options{Dir: t.TempDir(), Ephemeral: true})
	pgTool(t, "pg_restore", "--no-owner", "--no-privileges", "--exit-on-error", "--dbname="+restored.URL, dump)

	bin := proctest.BuildCoffer(t)
	entry := gethChain(c.node) // the network above
	entry["bankrollAddress"] = bankroll.Hex()
	entry["tokens"] = []map[string]any{{"symbol": "USDT", "contractAddress": c.usdt.Hex(), "decimals": 6}}
	chains := proctest.ChainsFile(t, entry)
	cli := func(key []byte, args ...string) (string, string, error) {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Env = []string{"DATABASE_URL=" + restored.URL, "COFFER_MASTER_KEY=" + hex.EncodeToString(key), "COFFER_CHAINS_FILE=" + chains, "USER=drill"}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	t.Run("another master key", func(t *testing.T) {
		wrong := secret.Random(secret.KeySize)
		p := proctest.Start(t, bin, []string{"DATABASE_URL=" + restored.URL, "COFFER_MASTER_KEY=" + hex.EncodeToString(wrong), "COFFER_CHAINS_FILE=" + chains,
			"COFFER_ADDR=" + proctest.FreeAddr(t), "COFFER_INTERNAL_ADDR=" + proctest.FreeAddr(t)}, "serve")
		select {
		case <-p.Done():
		case <-time.After(60 * time.Second):
			t.Fatalf("coffer serve with another master key is still running\n%s", p.Stderr)
		}
		var exit *exec.ExitError
		if !errors.As(p.Err(), &exit) || exit.ExitCode() != 1 || !strings.Contains(p.Stderr.String(), "cannot open the stored HD seed") ||
			!strings.Contains(p.Stderr.String(), "COFFER_MASTER_KEY") {
			t.Errorf("coffer serve with another master key: %v\n%s", p.Err(), p.Stderr)
		}
		// keys status names the key the restore is sealed under, which this one is not.
		out, errOut, err := cli(wrong, "keys", "status", "--json")
		var st struct {
			SealsWith string         `json:"sealsWith"`
			Pending   int            `json:"pending"`
			Sealed    map[string]any `json:"sealed"`
		}
		if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.Pending == 0 || st.SealsWith != secret.KeyID(wrong) {
			t.Errorf("keys status with another master key: %v %s %s", err, out, errOut)
		}
	})

	t.Run("same master key", func(t *testing.T) {
		out, errOut, err := cli(masterKey, "keys", "status", "--json")
		var st struct {
			Pending int `json:"pending"`
		}
		if err != nil || json.Unmarshal([]byte(out), &st) != nil || st.Pending != 0 {
			t.Errorf("keys status: %v %s %s", err, out, errOut)
		}
		env := start(t, restored.URL)
		if _, hot := env.Services.Keys.HotWallet(); hot != hotWallet {
			t.Errorf("the restore's hot wallet is %s, want %s: another HD seed", hot.Hex(), hotWallet.Hex())
		}
		assertReconciled(t, ops(env))
		out, errOut, err = cli(masterKey, "reconcile", "--json")
		rec := new(cofferv1.ReconcileResponse)
		if err != nil || protojson.Unmarshal([]byte(out), rec) != nil || !rec.Ok {
			t.Errorf("coffer reconcile on the restore: %v %s %s", err, out, errOut)
		}
		owed := false
		for _, l := range rec.Lines {
			owed = owed || (l.Currency == "USDT" && l.Owed != "" && strings.Trim(l.Owed, "0.") != "")
		}
		if !owed {
			t.Errorf("the reconciliation owes no USDT: the deposit's credit was not restored? %s", out)
		}
		// The operator's key and its deposit came back with the database.
		data := rest(t, "GET", env.URL+"/deposits?status=CREDITED", operatorKey, "")
		items, _ := data["items"].([]any)
		if len(items) != 1 || int64(items[0].(map[string]any)["depositId"].(float64)) != depositID {
			t.Errorf("GET /deposits on the restore: %v, want deposit %d", data, depositID)
		}
	})
}
