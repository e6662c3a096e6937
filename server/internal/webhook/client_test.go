package webhook

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/cofferhq/coffer/sdk/go/webhook"
)

// TestRefusedAddresses: which addresses each reach allows, for every form of address a target
// can resolve to (the issue named ::a.b.c.d, 64:ff9b:1::/48 and ::ffff:0:a.b.c.d).
func TestRefusedAddresses(t *testing.T) {
	t.Parallel()
	const (
		none     = iota // refused by every reach
		public          // allowed by every reach
		loopback        // allowed from ReachLoopback on
		private         // allowed by ReachPrivate only
	)
	tests := []struct {
		addr  string
		from  int
		about string
	}{
		{"93.184.215.14", public, "public IPv4"},
		{"8.8.8.8", public, "public IPv4"},
		{"2606:4700:4700::1111", public, "public IPv6"},
		{"::ffff:93.184.215.14", public, "IPv4-mapped public address"},
		{"127.0.0.1", loopback, "loopback"},
		{"127.8.9.10", loopback, "loopback"},
		{"::1", loopback, "IPv6 loopback"},
		{"::ffff:127.0.0.1", loopback, "IPv4-mapped loopback"},
		{"10.0.0.1", private, "RFC 1918"},
		{"172.16.5.4", private, "RFC 1918"},
		{"172.31.255.255", private, "RFC 1918"},
		{"192.168.1.1", private, "RFC 1918"},
		{"100.64.0.1", private, "CGNAT"},
		{"100.127.255.254", private, "CGNAT"},
		{"fc00::1", private, "ULA"},
		{"fd12:3456::1", private, "ULA"},
		{"::ffff:10.0.0.1", private, "IPv4-mapped private"},
		{"169.254.169.254", none, "link-local: cloud metadata"},
		{"::ffff:169.254.169.254", none, "IPv4-mapped metadata"},
		{"fe80::1", none, "IPv6 link-local"},
		{"::a9fe:a9fe", none, "IPv4-compatible ::169.254.169.254"},
		{"::7f00:1", none, "IPv4-compatible ::127.0.0.1"},
		{"::808:808", none, "IPv4-compatible ::8.8.8.8 (deprecated form, never a real target)"},
		{"::ffff:0:7f00:1", none, "IPv4-translated ::ffff:0:127.0.0.1"},
		{"::ffff:0:a9fe:a9fe", none, "IPv4-translated metadata"},
		{"64:ff9b::7f00:1", none, "NAT64 of 127.0.0.1"},
		{"64:ff9b::a9fe:a9fe", none, "NAT64 of the metadata address"},
		{"64:ff9b::5db8:d70e", none, "NAT64 of a public address (outside global unicast)"},
		{"64:ff9b:1::a00:1", none, "local-use NAT64 64:ff9b:1::/48"},
		{"64:ff9b:1:ffff::7f00:1", none, "local-use NAT64"},
		{"2002:a00:1::", none, "6to4 of 10.0.0.1"},
		{"2002:5db8:d70e::", none, "6to4 of a public address"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", none, "Teredo"},
		{"0.0.0.0", none, "unspecified"},
		{"0.1.2.3", none, "this network"},
		{"::", none, "IPv6 unspecified"},
		{"224.0.0.1", none, "multicast"},
		{"239.255.255.250", none, "multicast"},
		{"ff02::1", none, "IPv6 multicast"},
		{"255.255.255.255", none, "broadcast"},
		{"240.0.0.1", none, "reserved"},
		{"192.0.2.1", none, "documentation"},
		{"2001:db8::1", none, "IPv6 documentation"},
		{"198.18.0.1", none, "benchmarking"},
	}
	reaches := []Reach{ReachPublic, ReachLoopback, ReachPrivate}
	for _, tt := range tests {
		a := netip.MustParseAddr(tt.addr)
		for i, r := range reaches {
			want := tt.from != none && (tt.from == public || i >= tt.from-1)
			err := checkAddr(guardian(r), a)
			if got := err == nil; got != want {
				t.Errorf("%s (%s) with reach %s: allowed=%v, want %v (%v)", tt.addr, tt.about, r, got, want, err)
			}
			if err != nil && !errors.Is(err, ErrTargetRefused) {
				t.Errorf("%s: %v is not ErrTargetRefused", tt.addr, err)
			}
		}
	}
}

func TestParseReach(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Reach{"": ReachPublic, "public": ReachPublic, "Loopback": ReachLoopback, "private": ReachPrivate} {
		if got, err := ParseReach(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseReach("all"); err == nil {
		t.Error("all: accepted")
	}
}

// Targets that are not public are refused when the connection is made, whatever the URL
// names (an IP literal or a host name resolving to it), and nothing is sent.
func TestClientRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(acking(&hits))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	c := NewClient(ClientOptions{Timeout: 2 * time.Second})
	for _, target := range []string{
		srv.URL,
		"http://localhost:" + port + "/hook", // resolved by DNS to loopback
		"http://[::1]:" + port,
		"http://10.255.255.1/hook",
		"http://192.168.0.1/",
		"https://169.254.169.254/latest/meta-data",
		"http://100.64.0.1/",
		"http://0.0.0.0:" + port,
		"http://[fe80::1]/",
		"http://[::ffff:127.0.0.1]:" + port,
		"http://2130706433:" + port, // 127.0.0.1 as one number
	} {
		start := time.Now()
		res := c.Post(context.Background(), target, nil, []byte("event=DEPOSIT"))
		if res.Acked || res.Err == nil {
			t.Errorf("%s: %+v", target, res)
			continue
		}
		if !errors.Is(res.Err, ErrTargetRefused) && !strings.Contains(res.Err.Error(), "no such host") {
			t.Errorf("%s: error %v, want a refusal", target, res.Err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: refusal took %v", target, d)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("%d requests reached the loopback receiver", hits.Load())
	}
	// coffer dev and tests allow loopback; even then, not the metadata address.
	res := NewClient(ClientOptions{Reach: ReachLoopback}).Post(context.Background(), srv.URL, nil, []byte("event=DEPOSIT"))
	if !res.Acked || res.Status != 200 || res.Err != nil {
		t.Fatalf("ReachLoopback: %+v", res)
	}
	if res := NewClient(ClientOptions{Reach: ReachPrivate, Timeout: time.Second}).Post(context.Background(),
		"http://169.254.169.254/latest/meta-data", nil, nil); !errors.Is(res.Err, ErrTargetRefused) {
		t.Fatalf("ReachPrivate reached the metadata address: %+v", res)
	}
}

func TestClientURLChecks(t *testing.T) {
	t.Parallel()
	c := NewClient(ClientOptions{Reach: ReachLoopback, Timeout: time.Second})
	for _, target := range []string{"", "ftp://example.com/x", "file:///etc/passwd", "javascript:alert(1)",
		"gopher://example.com", "http://", "http:///path", "//example.com/hook", "example.com/hook", "http://exa mple.com/"} {
		res := c.Post(context.Background(), target, nil, nil)
		if res.Acked || res.Err == nil || res.Status != 0 {
			t.Errorf("%q: %+v", target, res)
		}
	}
	if _, err := CheckURL("HTTPS://Example.com/hook"); err != nil {
		t.Errorf("upper-case scheme: %v", err)
	}
	if got := Redact("https://user:pass@example.com/hook?x=1"); strings.Contains(got, "pass") {
		t.Errorf("Redact kept the password: %s", got)
	}
}

func TestClientRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	var followed atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusMovedPermanently)
	})
	mux.Handle("/elsewhere", acking(&followed))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := NewClient(ClientOptions{Reach: ReachLoopback})
	for _, path := range []string{"/hook", "/moved"} {
		res := c.Post(context.Background(), srv.URL+path, nil, []byte("event=DEPOSIT"))
		if res.Acked || res.Err == nil || !strings.Contains(res.Err.Error(), "redirect") || res.Status/100 != 3 {
			t.Errorf("%s: %+v", path, res)
		}
	}
	if followed.Load() != 0 {
		t.Fatal("a redirect was followed")
	}
}

func TestClientTimeouts(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) //nolint:errcheck
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/slow-body", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"error":`)) //nolint:errcheck
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(release) // before Close, which waits for the handlers
	c := NewClient(ClientOptions{Reach: ReachLoopback, Timeout: 300 * time.Millisecond})
	for _, path := range []string{"/slow", "/slow-body"} {
		start := time.Now()
		res := c.Post(context.Background(), srv.URL+path, nil, []byte("event=DEPOSIT"))
		d := time.Since(start)
		if res.Acked || res.Err == nil || !strings.Contains(res.Err.Error(), "no answer within 300ms") {
			t.Errorf("%s: %+v", path, res)
		}
		if d < 250*time.Millisecond || d > 2*time.Second {
			t.Errorf("%s: gave up after %v", path, d)
		}
	}
	// A caller's shorter deadline wins (the synchronous WITHDRAW_REQUEST's 10 s).
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := c.Post(ctx, srv.URL+"/slow", nil, nil)
	if res.Err == nil || time.Since(start) > 250*time.Millisecond || !withinCallersDeadline(res.Err, 100*time.Millisecond) {
		t.Errorf("caller deadline: %+v after %v", res, time.Since(start))
	}
	if got := NewClient(ClientOptions{}).timeout; got != 15*time.Second {
		t.Errorf("default timeout %v", got)
	}
}

// An endless answer is cut at 64 KiB: the attempt fails at once, without reading the rest.
func TestClientOversizeAnswer(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"error":0,"description":"`)) //nolint:errcheck
		chunk := []byte(strings.Repeat("x", 4096))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/just-over", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, 200, `{"error":0,"description":"`+strings.Repeat("x", MaxResponseBody)+`"}`)
	})
	mux.HandleFunc("/just-under", func(w http.ResponseWriter, _ *http.Request) {
		pad := MaxResponseBody - len(`{"error":0,"description":""}`)
		reply(w, 200, `{"error":0,"description":"`+strings.Repeat("x", pad)+`"}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := NewClient(ClientOptions{Reach: ReachLoopback, Timeout: 5 * time.Second})
	for _, path := range []string{"/endless", "/just-over"} {
		start := time.Now()
		res := c.Post(context.Background(), srv.URL+path, nil, nil)
		if res.Acked || res.Err == nil || !strings.Contains(res.Err.Error(), "over 64 KiB") {
			t.Errorf("%s: %v", path, res.Err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: took %v", path, d)
		}
	}
	if res := c.Post(context.Background(), srv.URL+"/just-under", nil, nil); !res.Acked {
		t.Errorf("64 KiB exactly: %v", res.Err)
	}
}

// What counts as an acknowledgement: 2xx and a JSON object whose error is the number 0.
func TestClientJudgesAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status       int
		body         string
		acked        bool
		err          string // substring of Result.Err; "" for none
		code         int
		description  string
		transactions string
	}{
		{200, `{"error":0}`, true, "", 0, "", ""},
		{200, `{"error":0,"description":"Deposit credited","transactionId":"op-77"}`, true, "", 0, "Deposit credited", "op-77"},
		{201, ` {"error": 0, "transactionId": 12345} ` + "\n", true, "", 0, "", "12345"},
		{200, `{"error":0.0}`, true, "", 0, "", ""},
		{200, `{"error":2,"description":"Insufficient balance for withdrawal"}`, false, "", 2, "Insufficient balance for withdrawal", ""},
		{200, `{"error":-1}`, false, "", -1, "", ""},
		{200, `{"error":"0"}`, false, `no numeric "error"`, 0, "", ""},
		{200, `{"error":null}`, false, `no numeric "error"`, 0, "", ""},
		{200, `{"description":"ok"}`, false, `no numeric "error"`, 0, "ok", ""},
		{200, `{"error":1.5}`, false, "not an integer", 0, "", ""},
		// The number's exact value counts, not its float64: 1e-400 underflows to 0 there.
		{200, `{"error":1e-400}`, false, "not an integer", 0, "", ""},
		{200, `{"error":-1E-400}`, false, "not an integer", 0, "", ""},
		{200, `{"error":0.` + strings.Repeat("0", 400) + `1}`, false, "not an integer", 0, "", ""},
		{200, `{"error":1.0000000000000000001}`, false, "not an integer", 0, "", ""},
		{200, `{"error":1e999999999999999999999}`, false, "not an integer", 0, "", ""},
		{200, `{"error":2147483648}`, false, "not an integer", 0, "", ""},
		{200, `{"error":-0}`, true, "", 0, "", ""},
		{200, `{"error":0e-999999999999999999999}`, true, "", 0, "", ""},
		{200, `{"error":0.01e2}`, false, "", 1, "", ""},
		{200, `{"error":5E+1}`, false, "", 50, "", ""},
		// What a receiver writes is kept as printable text: PostgreSQL's text refuses NUL and
		// invalid UTF-8, and a cut at 500 bytes falls on a character boundary.
		{200, `{"error":1,"description":"held\u0000for\nreview","transactionId":"t\u0000x"}`, false, "", 1, "held for review", "t x"},
		{200, `{"error":1,"description":"` + strings.Repeat("a", 499) + `é"}`, false, "", 1, strings.Repeat("a", 499) + "…", ""},
		{200, `{"error":true}`, false, `no numeric "error"`, 0, "", ""},
		{200, `[0]`, false, "not a JSON object", 0, "", ""},
		{200, `OK`, false, "not a JSON object", 0, "", ""},
		{200, ``, false, "not a JSON object: empty", 0, "", ""},
		{200, `{"error":0}{"error":1}`, false, "not a JSON object", 0, "", ""},
		// Keys match exactly and once: Go's case-insensitive, last-wins field matching would
		// read each of these as error 0, an approval in mode A.
		{200, `{"Error":0}`, false, `no numeric "error"`, 0, "", ""},
		{200, `{"ERROR":0,"description":"ok"}`, false, `no numeric "error"`, 0, "ok", ""},
		{200, `{"error":1,"ERROR":0}`, false, "", 1, "", ""},
		{200, `{"error":1,"error":0}`, false, `"error" more than once`, 0, "", ""},
		{200, `{"error":0,"error":0}`, false, `"error" more than once`, 0, "", ""},
		{200, `{"error":0,"nested":{"error":1,"x":[1,{"error":2}]},"description":"ok"}`, true, "", 0, "ok", ""},
		{204, ``, false, "not a JSON object", 0, "", ""},
		{500, `{"error":0}`, false, "HTTP 500", 0, "", ""},
		{400, `{"error":2,"description":"Insufficient balance"}`, false, "HTTP 400: Insufficient balance", 2, "Insufficient balance", ""},
		{404, `<html>not found</html>`, false, "HTTP 404", 0, "", ""},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if tt.status == 204 {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			reply(w, tt.status, tt.body)
		}))
		res := NewClient(ClientOptions{Reach: ReachLoopback}).Post(context.Background(), srv.URL, nil, []byte("x=1"))
		srv.Close()
		name := tt.body
		if res.Acked != tt.acked || res.Status != tt.status {
			t.Errorf("%d %s: acked %v status %d", tt.status, name, res.Acked, res.Status)
		}
		if tt.err == "" && res.Err != nil || tt.err != "" && (res.Err == nil || !strings.Contains(res.Err.Error(), tt.err)) {
			t.Errorf("%d %s: error %v, want %q", tt.status, name, res.Err, tt.err)
		}
		if res.ErrorCode != tt.code || res.Description != tt.description || res.TransactionID != tt.transactions {
			t.Errorf("%d %s: code %d description %q transactionId %q", tt.status, name, res.ErrorCode, res.Description, res.TransactionID)
		}
		if !res.Acked && res.Failure() == "" || res.Acked && res.Failure() != "" {
			t.Errorf("%d %s: Failure() = %q", tt.status, name, res.Failure())
		}
	}
}

// The request carries the body, the form media type and the signature headers.
func TestClientSendsHeaders(t *testing.T) {
	t.Parallel()
	var got *http.Request
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b := make([]byte, 100)
		n, _ := r.Body.Read(b)
		body = string(b[:n])
		reply(w, 200, `{"error":0}`)
	}))
	defer srv.Close()
	key := []byte("sk_test")
	h := sdk.Headers([][]byte{key}, "id-1", time.Now(), []byte("event=DEPOSIT"))
	res := NewClient(ClientOptions{Reach: ReachLoopback}).Post(context.Background(), srv.URL, h, []byte("event=DEPOSIT"))
	if !res.Acked {
		t.Fatal(res.Err)
	}
	if got.Method != http.MethodPost || got.Header.Get("Content-Type") != sdk.ContentType || body != "event=DEPOSIT" ||
		!strings.HasPrefix(got.Header.Get("User-Agent"), "Coffer-Webhooks/") {
		t.Fatalf("request: %s %v %q", got.Method, got.Header, body)
	}
	if err := sdk.Verify(got.Header, []byte(body), key, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Credentials in the URL are sent as basic authentication, decoded as net/http decodes them.
	u, _ := url.Parse(srv.URL)
	u.User, u.Path = url.UserPassword("op@example.com", "p@ss:w/rd"), "/hook/a%2Fb"
	if res := NewClient(ClientOptions{Reach: ReachLoopback}).Post(context.Background(), u.String(), h, []byte("event=DEPOSIT")); !res.Acked {
		t.Fatal(res.Err)
	}
	if user, pass, ok := got.BasicAuth(); !ok || user != "op@example.com" || pass != "p@ss:w/rd" || got.URL.EscapedPath() != "/hook/a%252Fb" {
		t.Fatalf("credentials %q %q %v, path %q", user, pass, ok, got.URL.EscapedPath())
	}
}

// TestClientKeepsConnectionsForConcurrentDeliveries: rounds of 100 concurrent posts (the
// webhooks queue's default workers) to one receiver reuse the connections of the first round
// instead of closing those above an idle cap and dialing them again.
func TestClientKeepsConnectionsForConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	const workers = 100
	var conns atomic.Int32
	var release atomic.Pointer[chan struct{}]
	var inFlight atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch := *release.Load()
		if inFlight.Add(1) == workers {
			close(ch)
		}
		<-ch // every round's posts are open at once, as busy workers' are
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"error":0}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := NewClient(ClientOptions{Reach: ReachLoopback})
	for round := range 3 {
		inFlight.Store(0)
		ch := make(chan struct{})
		release.Store(&ch)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				if res := c.Post(t.Context(), srv.URL, http.Header{}, []byte(`{}`)); !res.Acked {
					t.Errorf("round %d: %+v", round, res)
				}
			})
		}
		wg.Wait()
	}
	if n := conns.Load(); n > workers {
		t.Fatalf("%d connections for %d concurrent deliveries: idle ones were closed and dialed again", n, workers)
	}
}

// A keep-alive connection the receiver closed while idle is not a failed delivery: the post
// that takes it is sent again on a new connection, once.
func TestClientRetriesAConnectionTheReceiverClosed(t *testing.T) {
	t.Parallel()
	var posts atomic.Int32
	srv := httptest.NewUnstartedServer(acking(&posts))
	srv.Config.IdleTimeout = 20 * time.Millisecond // the receiver closes idle connections at once
	srv.Start()
	defer srv.Close()
	c := NewClient(ClientOptions{Reach: ReachLoopback})
	for i := range 5 {
		if res := c.Post(context.Background(), srv.URL, nil, []byte("event=DEPOSIT")); !res.Acked || res.Err != nil {
			t.Fatalf("post %d: %+v", i, res)
		}
		time.Sleep(60 * time.Millisecond) // the connection goes idle and the receiver closes it
	}
	if n := posts.Load(); n != 5 {
		t.Fatalf("%d posts received, want 5", n)
	}
}

// https targets are verified: a receiver whose certificate no trusted authority signed is
// refused, and nothing is posted.
func TestClientVerifiesTLS(t *testing.T) {
	t.Parallel()
	var posts atomic.Int32
	srv := httptest.NewTLSServer(acking(&posts))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	defer srv.Close()
	res := NewClient(ClientOptions{Reach: ReachLoopback, Timeout: 5 * time.Second}).Post(context.Background(), srv.URL, nil, []byte("event=DEPOSIT"))
	if res.Acked || res.Err == nil || !strings.Contains(res.Err.Error(), "certificate") || posts.Load() != 0 {
		t.Fatalf("self-signed receiver: %+v, %d posts", res, posts.Load())
	}
}

// acking is a receiver that acknowledges every post and counts them in n.
func acking(n *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		reply(w, 200, `{"error":0}`)
	})
}

// withinCallersDeadline: err names the time left of a caller's deadline of at most limit. The
// client names what was left when it sent (99ms under load for a 100 ms deadline, in
// make test), not the caller's whole deadline, which a context does not carry.
func withinCallersDeadline(err error, limit time.Duration) bool {
	left, ok := strings.CutPrefix(err.Error(), "no answer within ")
	if !ok {
		return false
	}
	d, perr := time.ParseDuration(left)
	return perr == nil && d > 0 && d <= limit
}
