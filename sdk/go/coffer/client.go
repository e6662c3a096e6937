// Package coffer is the Go SDK for Coffer operators: Connect clients for the operator API
// (sessions, depositors, withdrawals, chains), authenticated with the operator key.
//
//	c := coffer.New("https://pay.example.com", os.Getenv("COFFER_OPERATOR_KEY"))
//	res, err := c.Sessions.CreateDepositSession(ctx, &cofferv1.CreateDepositSessionRequest{...})
//
// Errors are *connect.Error; ErrorCode returns Coffer's code ("SESSION_EXPIRED", ...).
package coffer

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
)

// Client holds one client per operator-facing service.
type Client struct {
	Sessions    cofferv1connect.SessionServiceClient
	Depositors  cofferv1connect.DepositorServiceClient
	Withdrawals cofferv1connect.WithdrawalServiceClient
	Chains      cofferv1connect.ChainServiceClient
}

type config struct {
	httpClient connect.HTTPClient
	options    []connect.ClientOption
}

// Option configures New.
type Option func(*config)

// WithHTTPClient replaces http.DefaultClient (for timeouts, proxies, TLS settings).
func WithHTTPClient(c connect.HTTPClient) Option { return func(cfg *config) { cfg.httpClient = c } }

// WithClientOptions passes connect options through, e.g. connect.WithGRPC().
func WithClientOptions(opts ...connect.ClientOption) Option {
	return func(cfg *config) { cfg.options = append(cfg.options, opts...) }
}

// New returns clients for baseURL (e.g. "https://pay.example.com") that send the operator key
// as a Bearer credential on every call.
func New(baseURL, operatorKey string, opts ...Option) *Client {
	cfg := &config{httpClient: http.DefaultClient}
	for _, o := range opts {
		o(cfg)
	}
	baseURL = strings.TrimRight(baseURL, "/")
	options := append([]connect.ClientOption{connect.WithInterceptors(bearer(operatorKey))}, cfg.options...)
	return &Client{
		Sessions:    cofferv1connect.NewSessionServiceClient(cfg.httpClient, baseURL, options...),
		Depositors:  cofferv1connect.NewDepositorServiceClient(cfg.httpClient, baseURL, options...),
		Withdrawals: cofferv1connect.NewWithdrawalServiceClient(cfg.httpClient, baseURL, options...),
		Chains:      cofferv1connect.NewChainServiceClient(cfg.httpClient, baseURL, options...),
	}
}

func bearer(key string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+key)
			return next(ctx, req)
		}
	}
}

// ErrorCode returns Coffer's error code of a failed call ("INVALID_ARGUMENT",
// "SESSION_EXPIRED", ...), or "" when err carries none.
func ErrorCode(err error) string {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return ""
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if info, ok := v.(*errdetails.ErrorInfo); ok && derr == nil && info.GetDomain() == "coffer.v1" {
			return info.GetReason()
		}
	}
	return ""
}
