package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"code.dny.dev/ssrf"
	"github.com/valyala/fasthttp"

	sdk "github.com/cofferhq/coffer/sdk/go/webhook"
)

// Outbound limits (DESIGN.md, Webhook delivery).
const (
	// DefaultTimeout bounds one attempt: connecting, sending and reading the answer.
	DefaultTimeout = 15 * time.Second
	// SyncWithdrawTimeout bounds the synchronous WITHDRAW_REQUEST of mode A.
	SyncWithdrawTimeout = 10 * time.Second
	// MaxResponseBody is how much of a receiver's answer is read.
	MaxResponseBody = 64 << 10
)

// Reach is which addresses webhooks may be sent to.
type Reach int

// Reaches. Whatever the reach, link-local addresses (169.254.0.0/16, where cloud metadata
// services answer, and fe80::/10), unspecified, multicast, broadcast, documentation and the
// other special-purpose ranges of IANA's registries are refused, as are IPv6 forms that embed
// an IPv4 address (IPv4-compatible ::a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, NAT64
// 64:ff9b::/96 and 64:ff9b:1::/48, 6to4, Teredo): IPv6 targets must be global unicast.
// IPv4-mapped addresses (::ffff:a.b.c.d) are judged as the IPv4 address they are.
const (
	// ReachPublic: public unicast addresses only (production).
	ReachPublic Reach = iota
	// ReachLoopback adds loopback (127.0.0.0/8, ::1): `coffer dev` and tests, whose receivers
	// run on the same machine.
	ReachLoopback
	// ReachPrivate adds loopback and private networks (RFC 1918, CGNAT 100.64.0.0/10, ULA
	// fc00::/7): COFFER_WEBHOOK_ALLOW=private, for operators' receivers inside the same
	// private network.
	ReachPrivate
)

// ParseReach reads COFFER_WEBHOOK_ALLOW: public, loopback or private.
func ParseReach(s string) (Reach, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "public":
		return ReachPublic, nil
	case "loopback":
		return ReachLoopback, nil
	case "private":
		return ReachPrivate, nil
	}
	return ReachPublic, fmt.Errorf("%q is not public, loopback or private", s)
}

func (r Reach) String() string {
	return [...]string{"public", "loopback", "private"}[r]
}

// ClientOptions configure the outbound HTTP client.
type ClientOptions struct {
	// Reach is which addresses may be targets (ReachPublic when zero).
	Reach Reach
	// Timeout per attempt; DefaultTimeout when zero.
	Timeout time.Duration
	// UserAgent; "Coffer-Webhooks/1" when empty.
	UserAgent string
}

// Client posts webhooks. It speaks http and https only (HTTP/1.1), follows no redirect,
// refuses non-public targets at dial time (the resolved address is checked, so a DNS answer
// that changes between a check and the connection cannot bypass it), uses no proxy, bounds
// each attempt by a timeout and reads at most MaxResponseBody bytes of the answer.
//
// It runs on fasthttp rather than net/http: a post is written and its answer read on the
// caller's goroutine, where net/http's transport hands every request to a writer and a reader
// goroutine of the connection. Those hand-offs were most of a delivery's cost in the outbox
// benchmark (client and receiver: 80 µs of CPU a post with net/http, 45 with fasthttp).
type Client struct {
	http    *fasthttp.Client
	timeout time.Duration
	agent   string
}

// maxConns bounds the connections to one receiver: above any webhook concurrency a deployment
// runs (operators served at once × DefaultOperatorConcurrency); idle ones are kept, so rounds
// of concurrent deliveries reuse them instead of dialing again (a TCP, perhaps TLS, handshake).
const maxConns = 4096

// NewClient returns a client.
func NewClient(opts ClientOptions) *Client {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dialer := &net.Dialer{
		KeepAlive: 30 * time.Second,
		Control:   dialControl(guardian(opts.Reach)),
	}
	agent := opts.UserAgent
	if agent == "" {
		agent = "Coffer-Webhooks/1"
	}
	return &Client{
		http: &fasthttp.Client{
			// The dial is the address check's: no proxy, no DNS cache of fasthttp's own.
			DialTimeout: func(addr string, t time.Duration) (net.Conn, error) {
				d := *dialer
				d.Timeout = min(t, 10*time.Second)
				return d.Dial("tcp", addr)
			},
			Name:                      agent,
			MaxConnsPerHost:           maxConns,
			MaxConnWaitTimeout:        timeout,
			MaxIdleConnDuration:       90 * time.Second,
			MaxResponseBodySize:       MaxResponseBody,
			ReadBufferSize:            64 << 10, // bounds the answer's headers, as net/http's MaxResponseHeaderBytes did
			MaxIdemponentCallAttempts: 2,
			RetryIfErr:                retryClosedConnection,
			DisablePathNormalizing:    true,
		},
		timeout: timeout,
		agent:   agent,
	}
}

// retryClosedConnection retries a post once on a new connection when the receiver had closed
// the one it was sent on before answering: an idle keep-alive connection the receiver closed
// as the post took it (net/http's transport retries that case too). The webhook-id is the same,
// so a receiver that did see the first deduplicates it.
func retryClosedConnection(_ *fasthttp.Request, attempts int, err error) (resetTimeout, retry bool) {
	closed := errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
	return false, attempts < 2 && closed
}

// Result is the outcome of one attempt.
type Result struct {
	// Status is the HTTP status; 0 when there was no response.
	Status int
	// Acked is true for a delivered webhook: a 2xx status and a JSON object whose error is
	// the number 0.
	Acked bool
	// ErrorCode is the receiver's error value. It is meaningful when Err is nil (a 2xx JSON
	// answer): then a non-zero ErrorCode is the receiver's refusal (for the synchronous
	// WITHDRAW_REQUEST, the spec's code).
	ErrorCode int
	// Description and TransactionID are the receiver's description and transactionId.
	Description   string
	TransactionID string
	// Err is set when the attempt failed for any other reason than a clean non-zero error:
	// invalid URL, refused target, connection or TLS failure, timeout, a non-2xx status
	// (including redirects), an answer over MaxResponseBody, not JSON, or without a numeric
	// error. For the synchronous WITHDRAW_REQUEST it means code 3 (temporarily unavailable).
	Err error
	// Duration of the attempt.
	Duration time.Duration

	coded bool // the answer carried a numeric error
}

// Failure describes a failed attempt for the delivery record ("" when acknowledged).
func (r Result) Failure() string {
	switch {
	case r.Acked:
		return ""
	case r.Err != nil:
		return r.Err.Error()
	case r.Description != "":
		return fmt.Sprintf("receiver answered error %d: %s", r.ErrorCode, r.Description)
	default:
		return fmt.Sprintf("receiver answered error %d", r.ErrorCode)
	}
}

// ErrTargetRefused is returned (wrapped) when a webhook URL resolves to an address that is
// not allowed.
var ErrTargetRefused = errors.New("webhook target address not allowed")

// CheckURL validates a webhook URL: absolute http or https with a host.
func CheckURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("the operator has no webhook URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("invalid webhook URL")
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return nil, fmt.Errorf("webhook URL scheme %q is not http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, errors.New("webhook URL has no host")
	}
	return u, nil
}

// redacted stands in for a secret Redact removes.
const redacted = "xxxxx"

// Redact removes what may be a credential from a URL for records and logs: the user and
// password, every query value (operators put tokens there: ?token=…), path segments shaped
// like a token (/hooks/T0001/B0002/9xQ…, see tokenSegment) and the fragment. The scheme, host,
// the path's words and the query's parameter names stay, so the URL can still be recognised.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	if u.User != nil {
		u.User = url.User(redacted)
	}
	if escaped := redactPath(u.EscapedPath()); escaped != u.EscapedPath() {
		if path, err := url.PathUnescape(escaped); err == nil {
			u.Path, u.RawPath = path, escaped
		}
	}
	u.RawQuery = redactQuery(u.RawQuery)
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = redacted, ""
	}
	return u.String()
}

// redactPath replaces each path segment shaped like a token (see tokenSegment) in an escaped
// path.
func redactPath(escaped string) string {
	segments := strings.Split(escaped, "/")
	for i, seg := range segments {
		if tokenSegment(seg) {
			segments[i] = redacted
		}
	}
	return strings.Join(segments, "/")
}

// tokenSegment reports whether a path segment looks like a secret rather than a word: 16
// characters or more with a digit and a letter among them (random tokens, hex keys, UUIDs), or
// 32 or more of anything. Words such as "coffer-webhook-receiver" stay readable.
func tokenSegment(seg string) bool {
	if len(seg) >= 32 {
		return true
	}
	if len(seg) < 16 {
		return false
	}
	digit := strings.ContainsFunc(seg, func(r rune) bool { return r >= '0' && r <= '9' })
	letter := strings.ContainsFunc(seg, func(r rune) bool { return (r|0x20) >= 'a' && (r|0x20) <= 'z' })
	return digit && letter
}

// redactQuery keeps a query's parameter names and replaces each value; a parameter without a
// name ("?abc123") may itself be the secret, so it is replaced whole.
func redactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		name, _, hasValue := strings.Cut(p, "=")
		switch {
		case p == "":
		case hasValue && name != "":
			parts[i] = name + "=" + redacted
		default:
			parts[i] = redacted
		}
	}
	return strings.Join(parts, "&")
}

// Post sends one signed webhook and judges the answer. ctx may shorten the client's
// timeout; it never lengthens it.
func (c *Client) Post(ctx context.Context, target string, header http.Header, body []byte) Result {
	start := time.Now()
	res := c.post(ctx, target, header, body)
	res.Duration = time.Since(start)
	return res
}

func (c *Client) post(ctx context.Context, target string, header http.Header, body []byte) Result {
	u, err := CheckURL(target)
	if err != nil {
		return Result{Err: err}
	}
	limit := c.timeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < limit {
		limit = time.Until(dl).Round(time.Millisecond)
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.SetRequestURI(u.String())
	req.Header.SetMethod(http.MethodPost)
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.SetContentType(sdk.ContentType)
	req.Header.SetUserAgent(c.agent)
	req.Header.Set("Accept", "application/json")
	req.SetBodyRaw(body)
	a, err := c.do(ctx, req, resp, time.Now().Add(limit))
	res := Result{Status: a.status}
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		res.Err = fmt.Errorf("HTTP %d, answer over %d KiB", a.status, MaxResponseBody>>10)
		return res
	case err != nil:
		return Result{Err: transportError(ctx, err, limit)}
	}
	answer, location := a.body, a.location
	code, parseErr := parseAnswer(answer, &res)
	switch {
	case res.Status >= 300 && res.Status < 400:
		res.Err = fmt.Errorf("HTTP %d redirect to %q (redirects are not followed)", res.Status, Redact(string(location)))
	case res.Status < 200 || res.Status > 299:
		res.Err = fmt.Errorf("HTTP %d%s", res.Status, describe(res.Description))
	case parseErr != nil:
		res.Err = fmt.Errorf("HTTP %d, %w", res.Status, parseErr)
	default:
		res.Acked = code == 0
	}
	return res
}

// exchanged is what post reads of a receiver's answer.
type exchanged struct {
	status         int
	body, location []byte
}

// do runs the exchange and releases req and resp. fasthttp takes no context: when ctx can end
// before the deadline, the exchange runs on its own goroutine and do returns ctx's error as
// soon as ctx ends (the exchange then finishes or times out on its own, its answer unread).
func (c *Client) do(ctx context.Context, req *fasthttp.Request, resp *fasthttp.Response, deadline time.Time) (exchanged, error) {
	exchange := func() (exchanged, error) {
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		err := c.http.DoDeadline(req, resp, deadline)
		// The status is kept with ErrBodyTooLarge (the headers were read); the body only
		// without an error.
		a := exchanged{status: resp.StatusCode()}
		if err == nil {
			a.body, a.location = bytes.Clone(resp.Body()), bytes.Clone(resp.Header.Peek("Location"))
		}
		return a, err
	}
	if ctx.Done() == nil {
		return exchange()
	}
	type outcome struct {
		a   exchanged
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		a, err := exchange()
		done <- outcome{a, err}
	}()
	select {
	case o := <-done:
		return o.a, o.err
	case <-ctx.Done():
		return exchanged{}, ctx.Err()
	}
}

func describe(d string) string {
	if d == "" {
		return ""
	}
	return ": " + d
}

// parseAnswer reads {"error": <number>, "description": "...", "transactionId": "..."}.
// error must be a JSON number with an integer value: the string "0" is not an
// acknowledgement (the spec types error as a number, and a mode-A approval must not rest on
// a lenient reading). For the same reason keys match exactly and at most once:
// encoding/json would take "Error" for "error" and let a second "error" override the first,
// so {"error":1,"error":0} or {"error":1,"ERROR":0} would approve.
func parseAnswer(b []byte, res *Result) (int, error) {
	fields, err := answerFields(b)
	if err != nil {
		return 0, err
	}
	res.Description = jsonText(fields["description"])
	res.TransactionID = jsonText(fields["transactionId"])
	raw := fields["error"]
	var n json.Number
	if len(raw) == 0 || json.Unmarshal(raw, &n) != nil || n == "" || raw[0] == '"' {
		return 0, fmt.Errorf("answer has no numeric \"error\": %s", snippet(b))
	}
	code, ok := exactCode(n.String())
	if !ok {
		return 0, fmt.Errorf("answer's \"error\" %s is not an integer", snippet([]byte(n)))
	}
	res.ErrorCode, res.coded = code, true
	return res.ErrorCode, nil
}

// maxExponent bounds the exponents exactCode reads: past it a number with a non-zero digit is
// far outside int32 (or far below 1), whatever the up to 64 KiB of digits around it.
const maxExponent = 1 << 20

// exactCode reads a JSON number's exact value as an int32-sized integer. Floating point would
// not do: 1e-400 underflows to 0 there, and a mode-A approval must not rest on a rounding.
// "0.0" and "-0" are 0; "1.5", "1e-400" and values beyond int32 are refused.
func exactCode(lit string) (int, bool) {
	neg := strings.HasPrefix(lit, "-")
	mantissa, exponent, hasExp := strings.Cut(strings.ToLower(strings.TrimPrefix(lit, "-")), "e")
	whole, frac, _ := strings.Cut(mantissa, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return 0, true // zero, whatever the exponent
	}
	exp := 0
	if hasExp {
		var err error
		if exp, err = strconv.Atoi(exponent); err != nil || exp > maxExponent || exp < -maxExponent {
			return 0, false
		}
	}
	// digits read as 0.digits × 10^point.
	point := len(whole) - (len(whole+frac) - len(digits)) + exp
	significant := strings.TrimRight(digits, "0")
	if point < len(significant) || point > len(strconv.Itoa(math.MaxInt32)) {
		return 0, false // a fraction, or more digits than int32 has
	}
	v, err := strconv.ParseInt(significant+strings.Repeat("0", point-len(significant)), 10, 64)
	if err != nil || v > math.MaxInt32 {
		return 0, false
	}
	if neg {
		v = -v
	}
	return int(v), true
}

// answerFields splits one JSON object into its top-level members, keyed exactly as written;
// a member named twice is refused.
func answerFields(b []byte) (map[string]json.RawMessage, error) {
	notObject := fmt.Errorf("answer is not a JSON object: %s", snippet(b))
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, notObject
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, notObject
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, notObject
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("answer has %q more than once: %s", key, snippet(b))
		}
		fields[key] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, notObject
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, notObject
	}
	return fields, nil
}

// jsonText renders a JSON string as its text and any other value as its JSON, printable.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return printable(truncate(s, 500))
	}
	return printable(truncate(string(raw), 500))
}

// printable is a receiver's text as it can be shown to users and stored: PostgreSQL's text
// holds neither NUL nor invalid UTF-8 (an attempt that cannot be recorded is posted again and
// again, never dead-lettered), so invalid bytes become U+FFFD and control characters spaces.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "empty"
	}
	return fmt.Sprintf("%q", truncate(string(b), 80))
}

// truncate cuts s to at most n bytes, on a character boundary (a cut inside one would leave
// invalid UTF-8).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// transportError names timeouts plainly.
func transportError(ctx context.Context, err error, timeout time.Duration) error {
	// fasthttp's ErrTimeout and a connection's i/o timeout both say Timeout().
	te, timedOut := errors.AsType[interface {
		error
		Timeout() bool
	}](err)
	if timedOut && te.Timeout() || errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s", timeout)
	}
	if uerr, ok := errors.AsType[*url.Error](err); ok {
		err = uerr.Err
	}
	return err
}

// dialControl refuses connections to addresses outside the reach; it runs on the resolved
// address of every connection, so a DNS answer that changes between a check and the
// connection cannot bypass it.
func dialControl(g *ssrf.Guardian) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s", ErrTargetRefused, address)
		}
		if err := checkAddr(g, ap.Addr()); err != nil {
			return err
		}
		return nil
	}
}

// checkAddr judges one address: an IPv4-mapped IPv6 address as its IPv4 address, every other
// address by code.dny.dev/ssrf (IANA's special-purpose registries; IPv6 must be global unicast).
func checkAddr(g *ssrf.Guardian, a netip.Addr) error {
	if err := g.SafeAddr(a.Unmap()); err != nil {
		return fmt.Errorf("%w: %s is not a public address (%w)", ErrTargetRefused, a, err)
	}
	return nil
}

// guardian builds the address check of a reach: ssrf's defaults (only public unicast), any
// port, plus the prefixes the reach allows. Link-local is never allowed.
func guardian(r Reach) *ssrf.Guardian {
	var v4, v6 []netip.Prefix
	switch r {
	case ReachPublic: // ssrf's defaults alone
	case ReachPrivate:
		v4 = append(v4, netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"),
			netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("100.64.0.0/10"))
		v6 = append(v6, netip.MustParsePrefix("fc00::/7"))
		fallthrough
	case ReachLoopback:
		v4 = append(v4, netip.MustParsePrefix("127.0.0.0/8"))
		v6 = append(v6, netip.MustParsePrefix("::1/128"))
	}
	return ssrf.New(ssrf.WithAnyPort(), ssrf.WithAllowedV4Prefixes(v4...), ssrf.WithAllowedV6Prefixes(v6...))
}
