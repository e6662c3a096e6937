package e2e

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"os/exec"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/app"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/gethdev"
	"github.com/cofferhq/coffer/server/internal/hooktest"
	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// serve starts `coffer serve` and waits until baseURL/readyz answers 200; it is stopped when
// the test ends.
func serve(t *testing.T, bin, baseURL string, env []string) *proctest.Process {
	t.Helper()
	p := proctest.Start(t, bin, env, "serve")
	p.WaitFor(t, "coffer serve to be ready", func() bool { return proctest.OK(t.Context(), baseURL+"/readyz") })
	return p
}

// cofferDB is what the `coffer serve` processes of a test share: the binary, a fresh database
// and a master key.
type cofferDB struct {
	bin, dbURL string
	masterKey  []byte
}

func newCofferDB(t *testing.T) cofferDB {
	t.Helper()
	return cofferDB{bin: proctest.BuildCoffer(t), dbURL: testdb.URL(t), masterKey: secret.Random(secret.KeySize)}
}

// env is the environment of a process on the database: its URL, the master key, then env.
func (d cofferDB) env(env ...string) []string {
	return append([]string{"DATABASE_URL=" + d.dbURL, "COFFER_MASTER_KEY=" + hex.EncodeToString(d.masterKey)}, env...)
}

// createWallet creates the HD wallet, as the first worker does (an API replica waits for it).
func (d cofferDB) createWallet(t *testing.T) {
	t.Helper()
	apptest.CreateWallet(t, d.dbURL, d.masterKey)
}

// servers are the `coffer serve` processes of a test, one after another on one database, API
// address and chain list, and OpsService on their internal listener.
type servers struct {
	cofferDB

	base string
	env  []string
	ops  cofferv1connect.OpsServiceClient
}

// newServers builds coffer and prepares its environment: the chain, a fresh database,
// loopback webhooks, a scan every 200 ms, and env.
func newServers(t *testing.T, chain map[string]any, env ...string) *servers {
	t.Helper()
	addr, internalAddr := proctest.FreeAddr(t), proctest.FreeAddr(t)
	s := &servers{cofferDB: newCofferDB(t), base: "http://" + addr}
	opsToken := secret.Token("ops_")
	s.env = append(s.cofferDB.env("COFFER_OPS_TOKEN="+opsToken, "COFFER_CHAINS_FILE="+proctest.ChainsFile(t, chain), "COFFER_ADDR="+addr,
		"COFFER_INTERNAL_ADDR="+internalAddr, "COFFER_BASE_URL="+s.base, "COFFER_AUTO_MIGRATE=true", "COFFER_WEBHOOK_ALLOW=loopback",
		"COFFER_SCAN_INTERVAL=200ms", "COFFER_LOG_LEVEL=info"), env...)
	s.ops = cofferv1connect.NewOpsServiceClient(http.DefaultClient, "http://"+internalAddr, connect.WithInterceptors(proctest.Bearer(opsToken)))
	return s
}

// serve starts a process with env added to the servers' (a failpoint, say).
func (s *servers) serve(t *testing.T, env ...string) *proctest.Process {
	t.Helper()
	return serve(t, s.bin, s.base, slices.Concat(s.env, env))
}

// operator creates the operator Acme, whose webhooks recv receives, and returns it with its key.
func (s *servers) operator(t *testing.T, recv *hooktest.Receiver) (*cofferv1.Operator, string) {
	t.Helper()
	created, err := s.ops.CreateOperator(context.Background(), &cofferv1.CreateOperatorRequest{
		Settings: &cofferv1.OperatorSettings{Name: new("Acme"), WebhookUrl: new(recv.URL())}})
	if err != nil {
		t.Fatal(err)
	}
	recv.SetKey(created.OperatorKey)
	return created.Operator, created.OperatorKey
}

// gethChain is a geth --dev node as ethChain (tests that look at the bankroll set their own).
func gethChain(node *gethdev.Node) map[string]any {
	return ethChain(node.ChainID, "geth dev", node.URL)
}

// ethChain is an ETH chain served at rpcURL as a chain list names it, with two confirmations
// and a bankroll nobody holds.
func ethChain(chainID int64, name, rpcURL string) map[string]any {
	return map[string]any{"chainId": chainID, "name": name, "rpcUrls": []string{rpcURL},
		"confirmations": 2, "nativeSymbol": "ETH", "nativeDecimals": 18, "bankrollAddress": "0x0000000000000000000000000000000000000b0b"}
}

// awaitFailpoint waits for a process to exit at its failpoint.
func awaitFailpoint(t *testing.T, p *proctest.Process, dbURL string) {
	t.Helper()
	select {
	case <-p.Done():
		var exit *exec.ExitError
		if !errors.As(p.Err(), &exit) || exit.ExitCode() != app.FailpointExitCode {
			t.Fatalf("process ended with %v, want the failpoint's exit\n%s", p.Err(), p.Stderr)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the failpoint was not reached\n%s\n%s", p.Stderr, jobsReport(t, dbURL))
	}
}
