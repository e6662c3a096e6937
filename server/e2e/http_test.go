package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/proctest"
)

// get is http.Get bound to the test's context.
func get(t *testing.T, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}

// call sends a JSON request and returns the HTTP status and the decoded body.
func call(t *testing.T, method, url, bearer, body string) (int, map[string]any) {
	t.Helper()
	res := proctest.Request(t, method, url, bearer, body)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %s", method, url, res.StatusCode, raw)
	}
	return res.StatusCode, out
}

// rest calls a REST endpoint that answers the JSON envelope, and returns its data.
func rest(t *testing.T, method, url, bearer, body string) map[string]any {
	t.Helper()
	status, out := call(t, method, url, bearer, body)
	if status != http.StatusOK || out["status"] != "success" {
		t.Fatalf("%s %s: %d %+v", method, url, status, out)
	}
	data, _ := out["data"].(map[string]any)
	return data
}

// rawJSON calls a REST endpoint that answers a raw object (the /admin/* endpoints).
func rawJSON(t *testing.T, method, url, bearer, body string) map[string]any {
	t.Helper()
	status, out := call(t, method, url, bearer, body)
	if status != http.StatusOK {
		t.Fatalf("%s %s: %d %v", method, url, status, out)
	}
	return out
}

// openSession opens a session (kind "deposit" or "withdraw") with an operator key and returns
// its widget sid and the answer's data.
func openSession(t *testing.T, base, kind, key, body string) (sid string, data map[string]any) {
	t.Helper()
	data = rest(t, "POST", base+"/session/"+kind, key, body)
	return strings.TrimPrefix(data["url"].(string), base+"/widget/?sid="), data
}

// depositAddress is the address the widget shows a session for a currency on chain 1337.
func depositAddress(t *testing.T, base, sid, currency string) common.Address {
	t.Helper()
	return common.HexToAddress(rest(t, "POST", base+"/depositor/address", "", `{"sid":"`+sid+`","currency":"`+currency+`","chainId":1337}`)["address"].(string))
}

// directTransfer submits a session's withdrawal of USDT on chain 1337 to dest and returns the
// answer's data.
func directTransfer(t *testing.T, base, sid string, dest common.Address) map[string]any {
	t.Helper()
	return rest(t, "POST", base+"/withdraw/direct-transfer", "", `{"sid":"`+sid+`","address":"`+dest.Hex()+`","currency":"USDT","chainId":1337}`)
}
