package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cofferhq/coffer/server/internal/proctest"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// TestREADMEWalkthrough runs the README's "Using the API" walkthrough as a reader pastes it,
// against `coffer dev`, so that the README's promise ("paste it while make run is running")
// is kept by CI. Only what differs from a reader's terminal is replaced: the API address (a
// free port, not 8080) and `go run ./server/cmd/coffer` (the built binary; the test does not
// run in the repository). Every answer must be a success, and the money steps must have
// happened: the deposit paid and found, both withdrawals paid on-chain.
func TestREADMEWalkthrough(t *testing.T) {
	t.Parallel()
	curl := proctest.Need(t, "curl", "apt-get install curl")
	bin, _ := devTest(t)
	home := t.TempDir()
	dataDir := filepath.Join(home, ".coffer") // the walkthrough reads .coffer/dev.json and runs .coffer/bin/coffer
	f, _ := startDev(t, bin, dataDir)
	awaitScanning(t, f.DatabaseURL)
	if err := os.MkdirAll(filepath.Join(dataDir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(dataDir, "bin", "coffer")); err != nil {
		t.Fatal(err)
	}

	script := readmeWalkthrough(t)
	for old, repl := range map[string]string{
		"B=http://127.0.0.1:8080\n":  "B=" + f.BaseURL + "\n",
		"go run ./server/cmd/coffer": filepath.Join(dataDir, "bin", "coffer"),
	} {
		if !strings.Contains(script, old) {
			t.Fatalf("the README's walkthrough no longer has %q; update this test", old)
		}
		script = strings.ReplaceAll(script, old, repl)
	}
	cmd := exec.CommandContext(t.Context(), "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "DATABASE_URL=", "PATH="+filepath.Dir(curl)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the walkthrough failed: %v\n%s", err, out)
	}
	got := string(out)
	if strings.Contains(got, `"status":"error"`) {
		t.Errorf("the walkthrough got an error answer:\n%s", got)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`"message":"Test webhook sent","data":\{"delivered":true`),
		regexp.MustCompile(`(?m)^0x[0-9a-f]{64}$`), // coffer dev pay's USDT transfer, mined
		regexp.MustCompile(`"currency":"ETH","amount":"0.010000000000000000","block":\d+`),
		regexp.MustCompile(`"message":"Depositor (created|already exists)`),
		regexp.MustCompile(`"message":"Balances","data":\{"items":\[\{`),
		regexp.MustCompile(`"status":"COMPLETED".*"settlementTxHash":"0x[0-9a-f]{64}"`), // the admin's COMPLETED paid on-chain
		regexp.MustCompile(`"withdrawStatus":"COMPLETED","settlementTxHash":"0x[0-9a-f]{64}"`),
		regexp.MustCompile(`"message":"Deposit","data":\{"depositId":\d+`),
		regexp.MustCompile(`"message":"Withdrawal","data":\{"withdrawRequestId"`),
		regexp.MustCompile(`"message":"Redelivery queued"`),
	} {
		if !want.MatchString(got) {
			t.Errorf("the walkthrough's output lacks %s:\n%s", want, got)
		}
	}
}

// readmeWalkthrough is the first sh block of the README's "Using the API" section.
func readmeWalkthrough(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Using the API\n")
	if !ok {
		t.Fatal("the README has no ## Using the API section")
	}
	_, block, ok := strings.Cut(section, "\n```sh\n")
	if !ok {
		t.Fatal("the README's Using the API section has no sh block")
	}
	block, _, ok = strings.Cut(block, "\n```\n")
	if !ok {
		t.Fatal("the README's walkthrough block is not closed")
	}
	return block + "\n"
}

// awaitScanning waits until the service scans the dev chain (two deposit.scan passes done), as
// it does by the time a reader has pasted the walkthrough: a worker's periodic scans begin
// once River has elected it leader, a second or more after the start on a busy machine.
func awaitScanning(t *testing.T, databaseURL string) {
	t.Helper()
	pool := testdb.Open(t, databaseURL, 1)
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		var passes int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM river_job WHERE kind = 'deposit.scan' AND state = 'completed'`).
			Scan(&passes); err != nil {
			t.Fatal(err)
		}
		if passes >= 2 {
			return
		}
		if time.Since(start) > time.Minute {
			t.Fatalf("%d deposit scan passes a minute after coffer dev started", passes)
		}
	}
}
