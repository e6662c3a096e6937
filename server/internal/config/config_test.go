package config

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fromEnv runs FromEnv on the variables of envs, later maps winning. With wantErr set, the
// error must contain it, and ok is false: the case ends there.
func fromEnv(t *testing.T, wantErr string, envs ...map[string]string) (c Config, ok bool) {
	t.Helper()
	env := map[string]string{}
	for _, e := range envs {
		maps.Copy(env, e)
	}
	c, err := FromEnv(func(k string) string { return env[k] })
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want one containing %q", err, wantErr)
		}
		return c, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return c, true
}

// requiredEnv holds only the settings FromEnv requires.
func requiredEnv() map[string]string {
	return map[string]string{"DATABASE_URL": "postgres://x@localhost/db", "COFFER_MASTER_KEY": strings.Repeat("ab", 32)}
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"DATABASE_URL":      "postgres://x@localhost/db",
		"COFFER_MASTER_KEY": strings.Repeat("ab", 32),
		"COFFER_BASE_URL":   "https://pay.example.com/",
	}
	c, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.WidgetURL != "https://pay.example.com/widget" || c.SessionTTL != 30*time.Minute || c.Role != RoleAll || len(c.Chains.Networks()) != 0 {
		t.Fatalf("defaults: %+v", c)
	}
	rates, err := ParseRates(" eur=0.92, GBP=0.79 ,")
	if err != nil || rates["EUR"].String() != "0.92" || len(rates) != 2 {
		t.Fatalf("ParseRates: %v %v", rates, err)
	}
	for _, bad := range []string{"EUR", "EUR=", "EUR=-1", "=1", "EUR=abc"} {
		if _, err := ParseRates(bad); err == nil {
			t.Errorf("ParseRates(%q) accepted", bad)
		}
	}
	env = map[string]string{"COFFER_SESSION_TTL": "-1m", "COFFER_ROLE": "boss", "COFFER_MASTER_KEY": "short", "COFFER_LOG_LEVEL": "loud"}
	_, err = FromEnv(func(k string) string { return env[k] })
	for _, want := range []string{"DATABASE_URL is required", "COFFER_MASTER_KEY", "COFFER_SESSION_TTL", `role "boss"`, "COFFER_LOG_LEVEL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}

func TestLoginSettings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		env     map[string]string
		check   func(Config) bool
		wantErr string
	}{
		{"defaults: no header, two hashes, 2s", nil, func(c Config) bool {
			return c.TrustedProxyHeader == "" && c.LoginHashMemory == 38<<20 && c.LoginHashWait == 2*time.Second &&
				len(c.TrustedProxies) == 6
		}, ""},
		{"header and proxies", map[string]string{"COFFER_TRUSTED_PROXY_HEADER": "x-forwarded-for", "COFFER_TRUSTED_PROXIES": "10.1.0.0/16, 192.0.2.7"},
			func(c Config) bool {
				return c.TrustedProxyHeader == "X-Forwarded-For" && len(c.TrustedProxies) == 2 && c.TrustedProxies[1].String() == "192.0.2.7/32"
			}, ""},
		{"budget and wait", map[string]string{"COFFER_LOGIN_HASH_MEMORY": "100", "COFFER_LOGIN_HASH_WAIT": "500ms"},
			func(c Config) bool { return c.LoginHashMemory == 100<<20 && c.LoginHashWait == 500*time.Millisecond }, ""},
		{"bad header", map[string]string{"COFFER_TRUSTED_PROXY_HEADER": "X-Forwarded-For: 1.2.3.4"}, nil, "COFFER_TRUSTED_PROXY_HEADER"},
		{"bad proxies", map[string]string{"COFFER_TRUSTED_PROXIES": "lb.internal"}, nil, "COFFER_TRUSTED_PROXIES"},
		{"budget below one hash", map[string]string{"COFFER_LOGIN_HASH_MEMORY": "10"}, nil, "COFFER_LOGIN_HASH_MEMORY"},
		{"budget not a number", map[string]string{"COFFER_LOGIN_HASH_MEMORY": "64MiB"}, nil, "COFFER_LOGIN_HASH_MEMORY"},
		{"bad wait", map[string]string{"COFFER_LOGIN_HASH_WAIT": "0s"}, nil, "COFFER_LOGIN_HASH_WAIT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if cfg, ok := fromEnv(t, c.wantErr, requiredEnv(), c.env); ok && !c.check(cfg) {
				t.Fatalf("%+v", cfg)
			}
		})
	}
}

// TestMasterKeySources: exactly one master key source, at most one previous one, each read
// and checked at start with a message naming the variables.
func TestMasterKeySources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hexKey := strings.Repeat("ab", 32)
	raw := bytes.Repeat([]byte{0xcd}, 32)
	files := map[string][]byte{"hex": []byte(hexKey + "\n"), "raw": raw, "short": []byte("abc")}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := func(name string) string { return filepath.Join(dir, name) }
	for _, tc := range []struct {
		name      string
		env       map[string]string
		key       []byte
		url       string
		prevKey   []byte
		prevURL   string
		wantError string
	}{
		{name: "key", env: map[string]string{"COFFER_MASTER_KEY": hexKey}, key: bytes.Repeat([]byte{0xab}, 32)},
		{name: "file in hex with a newline", env: map[string]string{"COFFER_MASTER_KEY_FILE": file("hex")}, key: bytes.Repeat([]byte{0xab}, 32)},
		{name: "file of raw bytes", env: map[string]string{"COFFER_MASTER_KEY_FILE": file("raw")}, key: raw},
		{name: "KMS", env: map[string]string{"COFFER_MASTER_KEY_URL": "awskms://alias/coffer?region=eu-west-1"}, url: "awskms://alias/coffer?region=eu-west-1"},
		{name: "rotation: key and previous key", env: map[string]string{"COFFER_MASTER_KEY_URL": "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k",
			"COFFER_MASTER_KEY_PREVIOUS": hexKey}, url: "gcpkms://projects/p/locations/l/keyRings/r/cryptoKeys/k", prevKey: bytes.Repeat([]byte{0xab}, 32)},
		{name: "rotation: previous KMS", env: map[string]string{"COFFER_MASTER_KEY_FILE": file("raw"), "COFFER_MASTER_KEY_PREVIOUS_URL": "hashivault://coffer"},
			key: raw, prevURL: "hashivault://coffer"},
		{name: "none", env: map[string]string{}, wantError: "a master key is required: set one of COFFER_MASTER_KEY"},
		{name: "only a previous key", env: map[string]string{"COFFER_MASTER_KEY_PREVIOUS": hexKey}, wantError: "a master key is required"},
		{name: "key and file", env: map[string]string{"COFFER_MASTER_KEY": hexKey, "COFFER_MASTER_KEY_FILE": file("hex")},
			wantError: "COFFER_MASTER_KEY and COFFER_MASTER_KEY_FILE are set together: set exactly one"},
		{name: "file and URL", env: map[string]string{"COFFER_MASTER_KEY_FILE": file("hex"), "COFFER_MASTER_KEY_URL": "awskms://x"},
			wantError: "COFFER_MASTER_KEY_FILE and COFFER_MASTER_KEY_URL are set together"},
		{name: "two previous", env: map[string]string{"COFFER_MASTER_KEY": hexKey, "COFFER_MASTER_KEY_PREVIOUS": hexKey,
			"COFFER_MASTER_KEY_PREVIOUS_URL": "awskms://x"}, wantError: "COFFER_MASTER_KEY_PREVIOUS and COFFER_MASTER_KEY_PREVIOUS_URL are set together"},
		{name: "missing file", env: map[string]string{"COFFER_MASTER_KEY_FILE": file("nope")}, wantError: "COFFER_MASTER_KEY_FILE: open"},
		{name: "short file", env: map[string]string{"COFFER_MASTER_KEY_FILE": file("short")}, wantError: "COFFER_MASTER_KEY_FILE: the file must hold a 32-byte key"},
		{name: "short key", env: map[string]string{"COFFER_MASTER_KEY": "abc"}, wantError: "COFFER_MASTER_KEY: master key must be 32 bytes"},
		{name: "not a URL", env: map[string]string{"COFFER_MASTER_KEY_URL": "alias/coffer"}, wantError: "COFFER_MASTER_KEY_URL: \"alias/coffer\" is not a URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, ok := fromEnv(t, tc.wantError, map[string]string{"DATABASE_URL": "postgres://x@localhost/db"}, tc.env)
			if ok && !bytes.Equal(c.MasterKey, tc.key) || c.MasterKeyURL != tc.url || !bytes.Equal(c.PreviousMasterKey, tc.prevKey) || c.PreviousMasterKeyURL != tc.prevURL {
				t.Fatalf("got key %x url %q previous %x %q", c.MasterKey, c.MasterKeyURL, c.PreviousMasterKey, c.PreviousMasterKeyURL)
			}
		})
	}
}

// TestPublicURLs: the base and widget URLs go into every session URL handed to operators and
// into the widget page: one that is not an absolute http(s) URL is refused at start, naming
// the variable, rather than handing out links no browser can open.
func TestPublicURLs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		env             map[string]string
		baseURL, widget string
		wantErr         string
	}{
		{name: "defaults", baseURL: "http://localhost:8080", widget: "http://localhost:8080/widget"},
		{name: "widget on its own host", env: map[string]string{"COFFER_BASE_URL": "https://api.example.com/", "COFFER_WIDGET_URL": "https://pay.example.com/"},
			baseURL: "https://api.example.com", widget: "https://pay.example.com"},
		{name: "no scheme", env: map[string]string{"COFFER_BASE_URL": "localhost:8080"}, wantErr: `COFFER_BASE_URL "localhost:8080": must be an absolute http(s) URL`},
		{name: "no host", env: map[string]string{"COFFER_BASE_URL": "https://"}, wantErr: "COFFER_BASE_URL"},
		{name: "another scheme", env: map[string]string{"COFFER_BASE_URL": "ftp://pay.example.com"}, wantErr: "COFFER_BASE_URL"},
		{name: "relative widget", env: map[string]string{"COFFER_WIDGET_URL": "/widget"}, wantErr: `COFFER_WIDGET_URL "/widget": must be an absolute http(s) URL`},
		{name: "widget with a query", env: map[string]string{"COFFER_WIDGET_URL": "https://pay.example.com/w?x=1"},
			wantErr: "COFFER_WIDGET_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, ok := fromEnv(t, tc.wantErr, requiredEnv(), tc.env)
			if ok && (c.BaseURL != tc.baseURL || c.WidgetURL != tc.widget) {
				t.Fatalf("base %q widget %q, want %q %q", c.BaseURL, c.WidgetURL, tc.baseURL, tc.widget)
			}
		})
	}
}

// TestFailpoint: a failpoint that names no step is refused at start; a misspelt one would
// never fire and the crash test setting it would prove nothing.
func TestFailpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ value, wantErr string }{
		{"", ""},
		{"after-broadcast", ""},
		{"before-receipt", ""},
		{"reseal-pause:3", ""},
		{"after-broadcst", `COFFER_FAILPOINT "after-broadcst": must be empty (testing only), one of after-nonce`},
		{"reseal-pause:x", "COFFER_FAILPOINT"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			t.Parallel()
			if c, ok := fromEnv(t, tc.wantErr, requiredEnv(), map[string]string{"COFFER_FAILPOINT": tc.value}); ok && c.Failpoint != tc.value {
				t.Fatalf("failpoint %q", c.Failpoint)
			}
		})
	}
}

// TestTimeoutsThatLoseAnswers: an answer is cut off at COFFER_HTTP_WRITE_TIMEOUT from the
// request's start, so a write timeout that does not outlast the longest wait a request makes
// (COFFER_SETTLE_WAIT for an APPROVE or an admin COMPLETED, the 10 s synchronous
// WITHDRAW_REQUEST of a submission) loses the answer of a decision that was carried out.
func TestTimeoutsThatLoseAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"defaults", nil, ""},
		{"longer settle wait, longer write timeout", map[string]string{"COFFER_SETTLE_WAIT": "45s", "COFFER_HTTP_WRITE_TIMEOUT": "90s"}, ""},
		{"write timeout under the settle wait", map[string]string{"COFFER_HTTP_WRITE_TIMEOUT": "15s"},
			"COFFER_HTTP_WRITE_TIMEOUT (15s) must be at least 5s longer than COFFER_SETTLE_WAIT (20s)"},
		{"settle wait up to the write timeout", map[string]string{"COFFER_SETTLE_WAIT": "60s"},
			"COFFER_HTTP_WRITE_TIMEOUT (1m0s) must be at least 5s longer than COFFER_SETTLE_WAIT (1m0s)"},
		{"write timeout under the synchronous WITHDRAW_REQUEST", map[string]string{"COFFER_SETTLE_WAIT": "1s", "COFFER_HTTP_WRITE_TIMEOUT": "8s"},
			"COFFER_HTTP_WRITE_TIMEOUT (8s) must be at least 5s longer than the synchronous WITHDRAW_REQUEST (10s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fromEnv(t, tc.wantErr, requiredEnv(), tc.env)
		})
	}
}

// TestDevOffRampOnlyOnTheDevChain: the dev off-ramp "collects" at an address whose key nobody
// holds. `coffer serve` with COFFER_OFFRAMP=dev on a real network paid every OFF_RAMP
// withdrawal there: the operator's funds settled, the tokens gone. It is refused at start
// unless every configured chain is the dev chain (chain 1337).
func TestDevOffRampOnlyOnTheDevChain(t *testing.T) {
	t.Parallel()
	chainsFile := func(chainID int) string {
		path := filepath.Join(t.TempDir(), "chains.json")
		body := `[{"chainId":` + strconv.Itoa(chainID) + `,"name":"N","rpcUrls":["http://127.0.0.1:9"],"confirmations":1,"nativeSymbol":"ETH",` +
			`"bankrollAddress":"0x0000000000000000000000000000000000000b0b"}]`
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"no off-ramp on a real network", map[string]string{"COFFER_CHAINS_FILE": chainsFile(8453)}, ""},
		{"dev off-ramp on the dev chain", map[string]string{"COFFER_CHAINS_FILE": chainsFile(1337), "COFFER_OFFRAMP": "dev"}, ""},
		{"dev off-ramp on a real network", map[string]string{"COFFER_CHAINS_FILE": chainsFile(8453), "COFFER_OFFRAMP": "dev"},
			"COFFER_OFFRAMP=dev pays OFF_RAMP withdrawals to an address nobody holds: only on the dev chain (1337), not chain 8453"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fromEnv(t, tc.wantErr, requiredEnv(), tc.env)
		})
	}
}
