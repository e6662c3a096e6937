package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/pgcluster"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

// What was seen: during a PostgreSQL restart operator and admin calls answered 500 INTERNAL,
// one of them 27 ms after the restart from a stale pooled connection (57P01). A dependency
// that is down answers 503 UNAVAILABLE (Unavailable over Connect) with Retry-After, and once
// PostgreSQL is back the pool's dead connections are never surfaced.
func TestPostgresRestartAnswers503NotInternal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cluster := testdb.Cluster(t, pgcluster.Options{Dir: dir, Ephemeral: true})
	testdb.Migrate(t, cluster.URL)
	env := apptest.Start(t, apptest.Options{DatabaseURL: cluster.URL})
	_, key := env.Operator(t, domain.OperatorSettings{})
	_, adminToken := env.Admin(t, "")
	api := newConnectAPI(http.DefaultClient, env.URL)

	createREST := func() (int, map[string]any, http.Header) {
		res := env.Do(t, "POST", "/session/deposit", key, `{"externalUserId":"u1","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"10"}`)
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		var env map[string]any
		_ = json.Unmarshal(body, &env)
		return res.StatusCode, env, res.Header
	}
	for range 5 { // warm the pool
		if status, body, _ := createREST(); status != 200 {
			t.Fatalf("before the restart: %d %v", status, body)
		}
	}

	// Load runs through the whole restart: every answer is a success or 503, never 500.
	var mu sync.Mutex
	statuses := map[int]int{}
	var bad []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				status, body, _ := createREST()
				var code connect.Code
				if w%2 == 1 {
					_, err := api.CreateDepositSession(ctx, key, depositSessionRequest(""))
					code = connect.CodeOf(err)
					if err == nil {
						code = 0
					}
				}
				mu.Lock()
				statuses[status]++
				if status != 200 && (status != 503 || body["data"].(map[string]any)["code"] != "UNAVAILABLE") {
					bad = append(bad, fmt.Sprintf("REST %d %v", status, body))
				}
				if code != 0 && code != connect.CodeUnavailable {
					bad = append(bad, fmt.Sprintf("Connect %v", code))
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	port := cluster.Port
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}

	// Down: each interface says so, in its envelope.
	status, body, header := createREST()
	if status != 503 || body["status"] != "error" || body["data"].(map[string]any)["code"] != "UNAVAILABLE" || header.Get("Retry-After") != "1" {
		t.Errorf("REST while PostgreSQL is down: %d %v (Retry-After %q), want 503 UNAVAILABLE", status, body, header.Get("Retry-After"))
	}
	if _, err := api.CreateDepositSession(ctx, key, depositSessionRequest("")); connect.CodeOf(err) != connect.CodeUnavailable {
		t.Errorf("Connect while PostgreSQL is down: %v, want Unavailable", err)
	}
	res := env.Do(t, "GET", "/admin/withdrawals", adminToken, "")
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("admin call while PostgreSQL is down: %d, want 503", res.StatusCode)
	}
	time.Sleep(300 * time.Millisecond)

	testdb.Cluster(t, pgcluster.Options{Dir: dir, Port: port}) // the same data, at the same address
	restarted := time.Now()
	// Right after the restart, and then, every call succeeds.
	for i := range 20 {
		if status, body, _ := createREST(); status != 200 {
			t.Errorf("call %d, %v after the restart: %d %v", i, time.Since(restarted).Round(time.Millisecond), status, body)
		}
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("%d answers other than success or 503 UNAVAILABLE during the restart, first: %s", len(bad), strings.Join(bad[:min(5, len(bad))], "; "))
	}
	t.Logf("answers during the restart: %v", statuses)
}
