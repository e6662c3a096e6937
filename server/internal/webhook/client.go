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
	"strings"
	"syscall"
	"time"

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

// ClientOptions configure the outbound HTTP client.
type ClientOptions struct {
	// AllowPrivate permits loopback, private, link-local and CGNAT targets (coffer dev, tests,
	// COFFER_WEBHOOK_ALLOW_PRIVATE). Unspecified, multicast and broadcast addresses are refused
	// regardless.
	AllowPrivate bool
	// Timeout per attempt; DefaultTimeout when zero.
	Timeout time.Duration
	// UserAgent; "Coffer-Webhooks/1" when empty.
	UserAgent string
}

// Client posts webhooks. It speaks http and https only, follows no redirect, refuses
// non-public targets at dial time (the resolved address is checked, so a DNS answer that
// changes between a check and the connection cannot bypass it), uses no proxy, bounds each
// attempt by a timeout and reads at most MaxResponseBody bytes of the answer.
type Client struct {
	http    *http.Client
	timeout time.Duration
	agent   string
}

// NewClient returns a client.
func NewClient(opts ClientOptions) *Client {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	dialer := &net.Dialer{
		Timeout:   min(timeout, 10*time.Second),
		KeepAlive: 30 * time.Second,
		Control:   dialControl(opts.AllowPrivate),
	}
	transport := &http.Transport{
		Proxy:                  nil, // a proxy would dial the target itself, past the address check
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	agent := opts.UserAgent
	if agent == "" {
		agent = "Coffer-Webhooks/1"
	}
	return &Client{
		http: &http.Client{
			Transport: transport,
			// A 3xx is a failed delivery: the answer is returned as it is.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		timeout: timeout,
		agent:   agent,
	}
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

// Redact removes credentials from a URL for records and logs.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	if u.User != nil {
		u.User = url.User("xxxxx")
	}
	return u.String()
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
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return Result{Err: errors.New("invalid webhook URL")}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", sdk.ContentType)
	req.Header.Set("User-Agent", c.agent)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return Result{Err: transportError(ctx, err, limit)}
	}
	defer resp.Body.Close()
	res := Result{Status: resp.StatusCode}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody+1))
	if err != nil {
		res.Err = fmt.Errorf("HTTP %d, reading the answer: %w", resp.StatusCode, transportError(ctx, err, limit))
		return res
	}
	if len(answer) > MaxResponseBody {
		res.Err = fmt.Errorf("HTTP %d, answer over %d KiB", resp.StatusCode, MaxResponseBody>>10)
		return res
	}
	code, parseErr := parseAnswer(answer, &res)
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		res.Err = fmt.Errorf("HTTP %d redirect to %q (redirects are not followed)", resp.StatusCode, Redact(resp.Header.Get("Location")))
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		res.Err = fmt.Errorf("HTTP %d%s", resp.StatusCode, describe(res.Description))
	case parseErr != nil:
		res.Err = fmt.Errorf("HTTP %d, %w", resp.StatusCode, parseErr)
	default:
		res.Acked = code == 0
	}
	return res
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
// a lenient reading).
func parseAnswer(b []byte, res *Result) (int, error) {
	var v struct {
		Error         json.RawMessage `json:"error"`
		Description   json.RawMessage `json:"description"`
		TransactionID json.RawMessage `json:"transactionId"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil || dec.More() {
		return 0, fmt.Errorf("answer is not a JSON object: %s", snippet(b))
	}
	res.Description = jsonText(v.Description)
	res.TransactionID = jsonText(v.TransactionID)
	var n json.Number
	if len(v.Error) == 0 || json.Unmarshal(v.Error, &n) != nil || n == "" || v.Error[0] == '"' {
		return 0, fmt.Errorf("answer has no numeric \"error\": %s", snippet(b))
	}
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return 0, fmt.Errorf("answer's \"error\" %s is not an integer", n)
	}
	res.ErrorCode, res.coded = int(f), true
	return res.ErrorCode, nil
}

// jsonText renders a JSON string as its text and any other value as its JSON.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return truncate(s, 500)
	}
	return truncate(string(raw), 500)
}

func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "empty"
	}
	return fmt.Sprintf("%q", truncate(string(b), 80))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// transportError names timeouts plainly.
func transportError(ctx context.Context, err error, timeout time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s", timeout)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return err
}

// dialControl refuses connections to addresses that are not public unicast, unless
// allowPrivate; it runs on the resolved address of every connection.
func dialControl(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: %s", ErrTargetRefused, address)
		}
		if reason := refused(ap.Addr(), allowPrivate); reason != "" {
			return fmt.Errorf("%w: %s is %s", ErrTargetRefused, ap.Addr(), reason)
		}
		return nil
	}
}

var (
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	reserved    = []netip.Prefix{
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("192.0.2.0/24"),    // documentation
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
		netip.MustParsePrefix("198.51.100.0/24"), // documentation
		netip.MustParsePrefix("203.0.113.0/24"),  // documentation
		netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
		netip.MustParsePrefix("2001:db8::/32"),   // documentation
		netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
		netip.MustParsePrefix("100::/64"),        // discard
	}
	// IPv6 prefixes that embed an IPv4 address: the embedded address is judged too.
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixto4 = netip.MustParsePrefix("2002::/16")
	teredo = netip.MustParsePrefix("2001::/32")
)

// refused says why an address may not be a webhook target, or "" when it may.
func refused(a netip.Addr, allowPrivate bool) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified() || thisNetwork.Contains(a):
		return "unspecified"
	case a.IsMulticast():
		return "multicast"
	}
	for _, p := range reserved {
		if p.Contains(a) {
			return "reserved"
		}
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return refusedEmbedded(netip.AddrFrom4([4]byte(b[12:16])), allowPrivate)
		case sixto4.Contains(a):
			return refusedEmbedded(netip.AddrFrom4([4]byte(b[2:6])), allowPrivate)
		case teredo.Contains(a):
			// The client's address is the last 32 bits, inverted.
			return refusedEmbedded(netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), allowPrivate)
		}
	}
	if allowPrivate {
		return ""
	}
	switch {
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	}
	if cgnat.Contains(a) {
		return "shared (CGNAT)"
	}
	return ""
}

func refusedEmbedded(v4 netip.Addr, allowPrivate bool) string {
	if r := refused(v4, allowPrivate); r != "" {
		return r + " (embedded " + v4.String() + ")"
	}
	return ""
}
