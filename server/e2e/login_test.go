package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/cofferhq/coffer/server/internal/proctest"
)

// 100 parallel logins with random emails, each from its own client address (a botnet behind
// the trusted proxy, so that no rate limit refuses them before they hash), must not grow a real
// `coffer serve` by more than ~100 MiB: argon2id takes 19 MiB a hash, and the hashing budget
// (default: two at once) bounds how many run together. Before the budget: 72 → 1,901 MiB.
// Logins beyond the budget's capacity wait, then answer 503.
func TestLoginMemoryIsBounded(t *testing.T) {
	db := newCofferDB(t)
	db.createWallet(t) // as a worker would: an API replica waits for it
	addr := proctest.FreeAddr(t)
	base := "http://" + addr
	p := serve(t, db.bin, base, db.env("COFFER_ADDR="+addr, "COFFER_INTERNAL_ADDR=127.0.0.1:0", "COFFER_BASE_URL="+base,
		"COFFER_AUTO_MIGRATE=true", "COFFER_ROLE=api", "COFFER_LOG_LEVEL=warn", "COFFER_TRUSTED_PROXY_HEADER=X-Forwarded-For"))
	pid := p.Cmd.Process.Pid
	before := proctest.StatusKiB(t, pid, "VmRSS")

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
	after, peak := proctest.StatusKiB(t, pid, "VmRSS"), proctest.StatusKiB(t, pid, "VmHWM")
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
