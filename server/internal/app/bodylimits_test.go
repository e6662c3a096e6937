package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// Hostile bodies (too large, deeply nested JSON, a huge string or array) on the public
// listener (REST and Connect's JSON) and the internal one (OpsService) get a clear error —
// REST in its envelope, Connect as a Connect error (resource_exhausted is HTTP 429 in the
// Connect protocol) — and change nothing.
func TestHostileBodies(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	_, key := env.Operator(t, domain.OperatorSettings{})
	nested := `{"externalUserId":` + strings.Repeat("[", 30000) + strings.Repeat("]", 30000) + `}`
	nestedOps := `{"settings":{"name":` + strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000) + `}}`
	huge := `{"externalUserId":"` + strings.Repeat("u", 100<<10) + `"}`
	hugeArray := `{"settings":{"name":[` + strings.Repeat("1,", 20<<10) + `1]}}`
	type target struct {
		name, url, bearer string
		connect           bool
	}
	rest := target{"REST /session/deposit", env.URL + "/session/deposit", key, false}
	conn := target{"Connect CreateDepositSession", env.URL + "/coffer.v1.SessionService/CreateDepositSession", key, true}
	ops := target{"Connect OpsService.CreateOperator", env.InternalURL + "/coffer.v1.OpsService/CreateOperator", env.OpsToken, true}
	cases := []struct {
		about  string
		to     target
		body   string
		status int
		code   string // REST data.code, or the Connect error code
	}{
		{"100 KiB", rest, huge, 413, "PAYLOAD_TOO_LARGE"},
		{"100 KiB", conn, huge, 429, "resource_exhausted"},
		{"100 KiB", ops, `{"settings":{"name":"` + strings.Repeat("n", 100<<10) + `"}}`, 429, "resource_exhausted"},
		{"nested 30000 deep", rest, nested, 400, "INVALID_ARGUMENT"},
		{"nested 30000 deep", conn, nested, 400, "invalid_argument"},
		{"nested 10000 deep", ops, nestedOps, 400, "invalid_argument"},
		{"a 20k array where a string goes", ops, hugeArray, 400, "invalid_argument"},
	}
	operators, sessions := env.Count(t, "operators"), env.Count(t, "sessions")
	for _, tc := range cases {
		t.Run(tc.to.name+" "+tc.about, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, tc.to.url, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tc.to.bearer)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			var out struct {
				Code string `json:"code"`
				Data struct {
					Code string `json:"code"`
				} `json:"data"`
			}
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatalf("%d, not JSON: %.200q", res.StatusCode, b)
			}
			code := out.Data.Code
			if tc.to.connect {
				code = out.Code
			}
			if res.StatusCode != tc.status || code != tc.code {
				t.Errorf("%d %q (%.200s); want %d %q", res.StatusCode, code, b, tc.status, tc.code)
			}
		})
	}
	t.Cleanup(func() {
		if n := env.Count(t, "operators"); n != operators {
			t.Errorf("operators %d → %d", operators, n)
		}
		if n := env.Count(t, "sessions"); n != sessions {
			t.Errorf("sessions %d → %d", sessions, n)
		}
	})
}
