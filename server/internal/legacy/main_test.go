package legacy_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/testdb"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// noContentType, as a request's contentType, sends a body without a Content-Type header.
const noContentType = "-"

// request is one REST call. contentType defaults to application/json when there is a body.
type request struct {
	method, path, bearer, contentType, body string
}

// response is a REST answer with its body read.
type response struct {
	status int
	header http.Header
	body   []byte
}

func send(t testing.TB, env *apptest.Env, r request) response {
	t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), r.method, env.URL+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	switch ct := r.contentType; {
	case ct == noContentType:
	case ct != "":
		req.Header.Set("Content-Type", ct)
	case r.body != "":
		req.Header.Set("Content-Type", "application/json")
	}
	if r.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+r.bearer)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b}
}

// envelopeJSON is the REST layer's envelope as a client decodes it.
type envelopeJSON struct {
	Status  string          `json:"status"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// errorData is the data of an error envelope.
type errorData struct {
	Code  string `json:"code"`
	Field string `json:"field"`
}

func decodeEnvelope(t testing.TB, res response) (envelopeJSON, errorData) {
	t.Helper()
	var env envelopeJSON
	dec := json.NewDecoder(bytes.NewReader(res.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		t.Fatalf("response %d is not an envelope: %v\n%s", res.status, err, res.body)
	}
	var data errorData
	if env.Status == "error" {
		if err := json.Unmarshal(env.Data, &data); err != nil {
			t.Fatalf("error envelope data: %v\n%s", err, res.body)
		}
	}
	return env, data
}

// sessionBody is a valid body for /session/deposit and /session/withdraw; extra entries are
// added (or, with a nil value, removed).
func sessionBody(extra map[string]any) string {
	m := map[string]any{
		"externalUserId":       "user-1",
		"lang":                 "en",
		"platformFiatCurrency": "USD",
		"userBalance":          "120.50",
		"amount":               "25.00",
	}
	for k, v := range extra {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return mustJSON(m)
}

func mustJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSpace(buf.String())
}

// openSession opens a session over REST and returns its sid, url and sessionRef.
func openSession(t testing.TB, env *apptest.Env, key, kind string, extra map[string]any) (sid, widgetURL, ref string) {
	t.Helper()
	res := send(t, env, request{method: "POST", path: "/session/" + kind, bearer: key, body: sessionBody(extra)})
	if res.status != http.StatusOK {
		t.Fatalf("open %s session: %d %s", kind, res.status, res.body)
	}
	var out struct {
		Data struct {
			URL        string `json:"url"`
			SessionRef string `json:"sessionRef"`
		} `json:"data"`
	}
	if err := json.Unmarshal(res.body, &out); err != nil {
		t.Fatal(err)
	}
	return apptest.SID(t, out.Data.URL), out.Data.URL, out.Data.SessionRef
}
