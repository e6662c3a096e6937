// Package clientip finds the address of the client behind a request, for per-client limits
// (admin logins). It is the connection's peer address, unless the process is configured with
// the header a trusted reverse proxy sets (X-Forwarded-For, say) and the peer is one of the
// trusted proxies: then it is the right-most address of that header that is not a trusted
// proxy, which is the last hop that no proxy of ours vouches for. Entries to its left were
// written by the client or by proxies we do not know, so they prove nothing.
package clientip

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// DefaultTrusted are the proxies believed when a header is configured and no list is given:
// loopback and private networks, where a load balancer in front of Coffer usually sits.
//
//nolint:gochecknoglobals // read by config and apptest; a func is the follow-up once they are free
var DefaultTrusted = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("fc00::/7"),
}

// Resolver finds a request's client address.
type Resolver struct {
	// Header is the header the trusted proxies set ("X-Forwarded-For", "X-Real-IP",
	// "Forwarded"); empty means no header is ever read.
	Header string
	// Trusted are the proxies whose Header is believed.
	Trusted []netip.Prefix
}

// ParsePrefixes reads a comma-separated list of CIDR prefixes or single addresses.
func ParsePrefixes(raw string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for item := range strings.SplitSeq(raw, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR prefix", item)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func (r *Resolver) trusted(a netip.Addr) bool {
	for _, p := range r.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Addr returns the client address of req; invalid when even the peer address is unreadable.
func (r *Resolver) Addr(req *http.Request) netip.Addr {
	peer := parseHost(req.RemoteAddr)
	if r.Header == "" || !peer.IsValid() || !r.trusted(peer) {
		return peer
	}
	entries := headerEntries(req.Header.Values(r.Header), strings.EqualFold(r.Header, "Forwarded"))
	var leftmost netip.Addr
	for _, entrie := range slices.Backward(entries) {
		a := parseHost(entrie)
		if !a.IsValid() {
			// Our own proxy wrote an entry we cannot read (a misconfigured header): fall back
			// to the peer rather than believe anything to its left.
			return peer
		}
		if !r.trusted(a) {
			return a
		}
		leftmost = a
	}
	if leftmost.IsValid() { // every hop is a trusted proxy: the first one is the client
		return leftmost
	}
	return peer
}

// headerEntries splits the header's values into hops, left to right. For Forwarded (RFC 7239)
// each hop's for= parameter is taken.
func headerEntries(values []string, forwarded bool) []string {
	var out []string
	for _, v := range values {
		for hop := range strings.SplitSeq(v, ",") {
			hop = strings.TrimSpace(hop)
			if forwarded {
				value := ""
				for pair := range strings.SplitSeq(hop, ";") {
					if k, v, ok := strings.Cut(strings.TrimSpace(pair), "="); ok && strings.EqualFold(k, "for") {
						value = v
					}
				}
				hop = value
			}
			out = append(out, hop)
		}
	}
	return out
}

// parseHost reads "1.2.3.4", "1.2.3.4:80", "::1", "[::1]:80" or a quoted form of them.
func parseHost(s string) netip.Addr {
	s = strings.Trim(strings.TrimSpace(s), `"`)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone("")
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"))
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap().WithZone("")
}

// Key is the bucket a limit counts a client in: the IPv4 address, or the IPv6 /64 (one host
// commonly holds a whole /64, so single IPv6 addresses cost an attacker nothing).
func Key(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "unknown"
	case a.Is4():
		return a.String()
	default:
		return netip.PrefixFrom(a, 64).Masked().String()
	}
}

type ctxKey struct{}

// With records the client address in ctx.
func With(ctx context.Context, a netip.Addr) context.Context {
	return context.WithValue(ctx, ctxKey{}, a)
}

// From returns the client address recorded by With or the middleware; invalid when none was.
func From(ctx context.Context) netip.Addr {
	a, _ := ctx.Value(ctxKey{}).(netip.Addr)
	return a
}

// Middleware records every request's client address in its context.
func (r *Resolver) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		next.ServeHTTP(w, req.WithContext(With(req.Context(), r.Addr(req))))
	})
}
