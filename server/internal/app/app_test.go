package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

func TestHealthReadyMetrics(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	for _, path := range []string{"/healthz", "/readyz"} {
		res := env.Do(t, "GET", path, "", "")
		var body map[string]string
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
			t.Fatalf("decode: %v", err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || body["status"] != "ok" {
			t.Fatalf("%s: %d %v", path, res.StatusCode, body)
		}
	}
	_, key := env.Operator(t, domain.OperatorSettings{})
	env.Do(t, "POST", "/session/deposit", key, `{"externalUserId":"u","lang":"en","platformFiatCurrency":"USD","userBalance":"0","amount":"1"}`).Body.Close()
	// A bad request on each transport: one `code` vocabulary (Connect's names) for both.
	env.Do(t, "POST", "/session/deposit", key, `{"externalUserId":"u"}`).Body.Close()
	bad := env.Do(t, "POST", "/coffer.v1.SessionService/CreateDepositSession", key, `{"externalUserId":"u"}`)
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad Connect request: %d", bad.StatusCode)
	}
	// /metrics is on the internal listener only; the public one answers 404.
	public := env.Do(t, "GET", "/metrics", "", "")
	public.Body.Close()
	if public.StatusCode != http.StatusNotFound {
		t.Fatalf("public /metrics: %d, want 404", public.StatusCode)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, env.InternalURL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		`coffer_requests_total{code="ok",operation="POST /session/deposit",transport="rest"} 1`,
		`coffer_requests_total{code="invalid_argument",operation="POST /session/deposit",transport="rest"} 1`,
		`coffer_requests_total{code="invalid_argument",operation="SessionService/CreateDepositSession",transport="connect"} 1`,
		`coffer_request_duration_seconds_count{operation="POST /session/deposit",transport="rest"} 2`,
		"go_goroutines",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestReadyzReportsUnmigratedSchema(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	if _, err := env.Pool.Exec(t.Context(), `DELETE FROM coffer_migrations`); err != nil {
		t.Fatal(err)
	}
	res := env.Do(t, "GET", "/readyz", "", "")
	defer res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz on an unmigrated schema: %d", res.StatusCode)
	}
}
