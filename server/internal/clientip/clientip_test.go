package clientip

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestAddr(t *testing.T) {
	t.Parallel()
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	xff := &Resolver{Header: "X-Forwarded-For", Trusted: proxies}
	for _, c := range []struct {
		name    string
		r       *Resolver
		peer    string
		headers []string // values of the resolver's header (or X-Forwarded-For)
		want    string
	}{
		// Without a configured header, no header is ever read.
		{"no header configured", &Resolver{}, "203.0.113.9:5555", []string{"198.51.100.1"}, "203.0.113.9"},
		{"no header configured, IPv6 peer", &Resolver{}, "[2001:db8::1]:5555", nil, "2001:db8::1"},
		{"IPv4-mapped peer", &Resolver{}, "[::ffff:203.0.113.9]:5555", nil, "203.0.113.9"},
		// A header from a peer that is not a trusted proxy proves nothing.
		{"untrusted peer", xff, "203.0.113.9:5555", []string{"198.51.100.1"}, "203.0.113.9"},
		// From a trusted proxy: the right-most entry that is not a trusted proxy.
		{"one hop", xff, "10.0.0.2:80", []string{"198.51.100.1"}, "198.51.100.1"},
		{"spoofed left entries", xff, "10.0.0.2:80", []string{"1.2.3.4, 5.6.7.8, 198.51.100.1"}, "198.51.100.1"},
		{"chain of trusted proxies", xff, "10.0.0.2:80", []string{"6.6.6.6, 198.51.100.1, 10.0.0.7, 10.1.1.1"}, "198.51.100.1"},
		{"repeated header lines", xff, "10.0.0.2:80", []string{"6.6.6.6", "198.51.100.1, 10.0.0.7"}, "198.51.100.1"},
		{"entries with ports and brackets", xff, "10.0.0.2:80", []string{"[2001:db8::5]:443"}, "2001:db8::5"},
		{"only trusted hops", xff, "10.0.0.2:80", []string{"10.9.9.9, 10.0.0.7"}, "10.9.9.9"},
		{"empty header", xff, "10.0.0.2:80", nil, "10.0.0.2"},
		{"garbage right-most entry", xff, "10.0.0.2:80", []string{"198.51.100.1, unknown"}, "10.0.0.2"},
		{"IPv6 proxy", xff, "[fd00::1]:80", []string{"2001:db8::7"}, "2001:db8::7"},
		{"X-Real-IP", &Resolver{Header: "X-Real-Ip", Trusted: proxies}, "10.0.0.2:80", []string{"198.51.100.4"}, "198.51.100.4"},
		{"Forwarded", &Resolver{Header: "Forwarded", Trusted: proxies}, "10.0.0.2:80",
			[]string{`for=6.6.6.6, for="[2001:db8::9]:4711";proto=https, for=10.0.0.7;by=10.0.0.2`}, "2001:db8::9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
			req.RemoteAddr = c.peer
			header := c.r.Header
			if header == "" {
				header = "X-Forwarded-For"
			}
			for _, v := range c.headers {
				req.Header.Add(header, v)
			}
			if got := c.r.Addr(req); got != netip.MustParseAddr(c.want) {
				t.Fatalf("got %s, want %s", got, c.want)
			}
			// The middleware records the same address.
			var seen netip.Addr
			c.r.Middleware(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { seen = From(r.Context()) })).
				ServeHTTP(httptest.NewRecorder(), req)
			if seen.String() != c.want {
				t.Fatalf("middleware recorded %s, want %s", seen, c.want)
			}
		})
	}
}

func TestKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr netip.Addr
		want string
	}{
		{netip.MustParseAddr("203.0.113.9"), "203.0.113.9"},
		{netip.MustParseAddr("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64"},
		{netip.MustParseAddr("2001:db8:1:2::ffff"), "2001:db8:1:2::/64"},
		{netip.Addr{}, "unknown"},
	} {
		if got := Key(c.addr); got != c.want {
			t.Errorf("Key(%s) = %s, want %s", c.addr, got, c.want)
		}
	}
}

func TestParsePrefixes(t *testing.T) {
	t.Parallel()
	got, err := ParsePrefixes(" 10.0.0.0/8, 192.0.2.7 ,fd00::/8,, 2001:db8::1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.7/32", "fd00::/8", "2001:db8::1/128"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("%d: %s, want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.internal", "10.0.0"} {
		if _, err := ParsePrefixes(bad); err == nil {
			t.Errorf("ParsePrefixes(%q) accepted", bad)
		}
	}
}
