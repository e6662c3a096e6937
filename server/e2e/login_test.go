package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/wallet"
)

// procKiB reads a "Name:   123 kB" line of /proc/<pid>/status.
func procKiB(t *testing.T, pid int, name string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", name, pid)
	return 0
}

// 100 parallel logins with random emails, each from its own client address (a botnet behind
// the trusted proxy, so that no rate limit refuses them before they hash), must not grow a real
// `coffer serve` by more than ~100 MiB: argon2id takes 19 MiB a hash, and the hashing budget
// (default: two at once) bounds how many run together. Before the budget: 72 → 1,901 MiB.
// Logins beyond the budget's capacity wait, then answer 503.
func TestLoginMemoryIsBounded(t *testing.T) {
	bin := buildCoffer(t)
	addr := freeAddr(t)
	base := "http://" + addr
	dbURL, masterKey := testdb.URL(t), secret.NewMasterKey()
	createWallet(t, dbURL, masterKey) // as a worker would: an API replica waits for it
	env := []string{"DATABASE_URL=" + dbURL, "COFFER_MASTER_KEY=" + masterKey, "COFFER_ADDR=" + addr, "COFFER_INTERNAL_ADDR=127.0.0.1:0",
		"COFFER_BASE_URL=" + base, "COFFER_AUTO_MIGRATE=true", "COFFER_ROLE=api", "COFFER_LOG_LEVEL=warn",
		"COFFER_TRUSTED_PROXY_HEADER=X-Forwarded-For"}
	p := serve(t, bin, base, env)
	pid := p.cmd.Process.Pid
	before := procKiB(t, pid, "VmRSS")

	const n = 100
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := `{"email":"` + uuid.NewString() + `@coffer.test","password":"` + uuid.NewString() + `"}`
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/admin/login", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("203.0.113.%d, 198.51.100.%d", i%250+1, i%250+1))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			statuses[i] = res.StatusCode
		})
	}
	wg.Wait()
	after, peak := procKiB(t, pid, "VmRSS"), procKiB(t, pid, "VmHWM")
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	growth := (max(after, peak) - before) / 1024
	t.Logf("RSS before %d MiB, after %d MiB, peak %d MiB: growth %d MiB; answers %v", before/1024, after/1024, peak/1024, growth, counts)
	if growth > 100 {
		t.Errorf("100 parallel logins grew RSS by %d MiB, want at most 100", growth)
	}
	for s := range counts {
		if s != http.StatusUnauthorized && s != http.StatusServiceUnavailable {
			t.Errorf("answer %d, want 401 (verified) or 503 (hashing at capacity)", s)
		}
	}
	if counts[http.StatusUnauthorized] == 0 {
		t.Error("no login was verified")
	}
}

// createWallet creates the HD wallet on the database, as the first worker does.
func createWallet(t *testing.T, dbURL, masterKey string) {
	t.Helper()
	ctx := context.Background()
	pool, err := store.Open(ctx, dbURL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	box, err := secret.NewBox(mustParse(t, masterKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wallet.Load(ctx, pool, box); err != nil {
		t.Fatal(err)
	}
}
