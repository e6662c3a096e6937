// Package coffer is the Go SDK for Coffer operators: Connect clients for the operator API
// (sessions, depositors, withdrawals, deposits, chains, balances, events), authenticated with
// the operator key.
//
//	c := coffer.New("https://pay.example.com", os.Getenv("COFFER_OPERATOR_KEY"))
//	res, err := c.Sessions.CreateDepositSession(ctx, &cofferv1.CreateDepositSessionRequest{...})
//
// Calls time out after DefaultTimeout, and calls that are safe to repeat (reads, declared
// NO_SIDE_EFFECTS or IDEMPOTENT in the API) are retried on UNAVAILABLE with backoff, honouring
// Retry-After. Errors are *connect.Error; ErrorCode returns Coffer's code (CodeSessionExpired,
// ...) and ErrorField the request field it names.
package coffer

import (
	"context"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
)

// Client holds one client per operator-facing service.
type Client struct {
	Sessions    cofferv1connect.SessionServiceClient
	Depositors  cofferv1connect.DepositorServiceClient
	Withdrawals cofferv1connect.WithdrawalServiceClient
	Chains      cofferv1connect.ChainServiceClient
	Balances    cofferv1connect.BalanceServiceClient
	Deposits    cofferv1connect.DepositServiceClient
	// Events is the event feed. Its calls share the client's timeout, a stream included: to
	// follow the feed, use SubscribeEvents, which has none and resumes by itself.
	Events cofferv1connect.EventServiceClient

	// stream is the event service on an HTTP client without an overall timeout (the default
	// client's would cut a long stream), for SubscribeEvents.
	stream cofferv1connect.EventServiceClient
}

// DefaultTimeout bounds a call made through a client New built without WithHTTPClient.
const DefaultTimeout = 30 * time.Second

type config struct {
	httpClient connect.HTTPClient
	custom     bool // httpClient is the caller's
	options    []connect.ClientOption
	retry      RetryPolicy
}

// Option configures New.
type Option func(*config)

// WithHTTPClient replaces the default client (an http.Client with DefaultTimeout), for
// proxies, TLS settings or another timeout.
// SubscribeEvents uses it too.
func WithHTTPClient(c connect.HTTPClient) Option {
	return func(cfg *config) { cfg.httpClient, cfg.custom = c, true }
}

// WithClientOptions passes connect options through, e.g. connect.WithGRPC().
func WithClientOptions(opts ...connect.ClientOption) Option {
	return func(cfg *config) { cfg.options = append(cfg.options, opts...) }
}

// New returns clients for baseURL (e.g. "https://pay.example.com") that send the operator key
// as a Bearer credential on every call.
func New(baseURL, operatorKey string, opts ...Option) *Client {
	cfg := &config{httpClient: &http.Client{Timeout: DefaultTimeout}, retry: DefaultRetryPolicy()}
	for _, o := range opts {
		o(cfg)
	}
	baseURL = strings.TrimRight(baseURL, "/")
	options := append([]connect.ClientOption{connect.WithInterceptors(bearer(operatorKey), retrier{cfg.retry})}, cfg.options...)
	streamHTTP := cfg.httpClient
	if !cfg.custom {
		streamHTTP = &http.Client{}
	}
	return &Client{
		Sessions:    cofferv1connect.NewSessionServiceClient(cfg.httpClient, baseURL, options...),
		Depositors:  cofferv1connect.NewDepositorServiceClient(cfg.httpClient, baseURL, options...),
		Withdrawals: cofferv1connect.NewWithdrawalServiceClient(cfg.httpClient, baseURL, options...),
		Chains:      cofferv1connect.NewChainServiceClient(cfg.httpClient, baseURL, options...),
		Balances:    cofferv1connect.NewBalanceServiceClient(cfg.httpClient, baseURL, options...),
		Deposits:    cofferv1connect.NewDepositServiceClient(cfg.httpClient, baseURL, options...),
		Events:      cofferv1connect.NewEventServiceClient(cfg.httpClient, baseURL, options...),
		stream:      cofferv1connect.NewEventServiceClient(streamHTTP, baseURL, options...),
	}
}

// bearer sends the operator key on every call, streams included.
type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
