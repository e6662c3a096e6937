package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// get and post are http.Get and http.Post bound to the test's context.
func get(t *testing.T, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}

func post(t *testing.T, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
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
