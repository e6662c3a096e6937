package coffer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/sdk/go/coffer"
)

// flaky answers UNAVAILABLE to the first failures calls of every method, then succeeds.
type flaky struct {
	cofferv1connect.UnimplementedChainServiceHandler
	cofferv1connect.UnimplementedSessionServiceHandler

	failures int64
	calls    atomic.Int64
	auth     atomic.Value
}

func (f *flaky) fail() error {
	if f.calls.Add(1) <= f.failures {
		return connect.NewError(connect.CodeUnavailable, errors.New("database restarting"))
	}
	return nil
}

func (f *flaky) ListChains(context.Context, *cofferv1.ListChainsRequest) (*cofferv1.ListChainsResponse, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return &cofferv1.ListChainsResponse{Chains: []*cofferv1.Chain{{ChainId: 1337}}}, nil
}

func (f *flaky) CreateDepositSession(context.Context, *cofferv1.CreateDepositSessionRequest) (*cofferv1.CreateDepositSessionResponse, error) {
	if err := f.fail(); err != nil {
		return nil, err
	}
	return &cofferv1.CreateDepositSessionResponse{Sid: "s-1"}, nil
}

func serve(t *testing.T, f *flaky) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(cofferv1connect.NewChainServiceHandler(f))
	mux.Handle(cofferv1connect.NewSessionServiceHandler(f))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.auth.Store(r.Header.Get("Authorization"))
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

var quick = coffer.RetryPolicy{Attempts: 4, Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond}

// TestRetries: a read (NO_SIDE_EFFECTS) is retried on UNAVAILABLE up to the policy's attempts;
// a call that may have had an effect is never repeated.
func TestRetries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		failures  int64
		policy    *coffer.RetryPolicy
		call      func(context.Context, *coffer.Client) error
		wantCalls int64
		wantCode  connect.Code
	}{
		{"read recovers", 2, &quick, listChains, 3, 0},
		{"read gives up after the attempts", 10, &quick, listChains, 4, connect.CodeUnavailable},
		{"retries off", 10, &coffer.RetryPolicy{Attempts: 1}, listChains, 1, connect.CodeUnavailable},
		{"write is not repeated", 1, &quick, createSession, 1, connect.CodeUnavailable},
		{"default policy retries a read", 1, nil, listChains, 2, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := &flaky{failures: c.failures}
			opts := []coffer.Option{}
			if c.policy != nil {
				opts = append(opts, coffer.WithRetryPolicy(*c.policy))
			}
			err := c.call(t.Context(), coffer.New(serve(t, f), "sk_test", opts...))
			if connect.CodeOf(err) != c.wantCode && (err != nil || c.wantCode != 0) {
				t.Fatalf("err %v, want code %v", err, c.wantCode)
			}
			if got := f.calls.Load(); got != c.wantCalls {
				t.Fatalf("%d calls, want %d", got, c.wantCalls)
			}
			if f.auth.Load() != "Bearer sk_test" {
				t.Fatalf("Authorization %q", f.auth.Load())
			}
		})
	}
}

// TestRetryStopsWithTheContext: a cancelled context ends the waits at once.
func TestRetryStopsWithTheContext(t *testing.T) {
	t.Parallel()
	f := &flaky{failures: 100}
	c := coffer.New(serve(t, f), "sk_test", coffer.WithRetryPolicy(coffer.RetryPolicy{Attempts: 10, Backoff: time.Hour, MaxBackoff: time.Hour}))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := listChains(ctx, c); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	if time.Since(start) > 10*time.Second || f.calls.Load() != 1 {
		t.Fatalf("waited %s over %d calls", time.Since(start), f.calls.Load())
	}
}

func listChains(ctx context.Context, c *coffer.Client) error {
	_, err := c.Chains.ListChains(ctx, &cofferv1.ListChainsRequest{})
	return err
}

func createSession(ctx context.Context, c *coffer.Client) error {
	_, err := c.Sessions.CreateDepositSession(ctx, &cofferv1.CreateDepositSessionRequest{ExternalUserId: "u"})
	return err
}

func TestErrorAccessors(t *testing.T) {
	t.Parallel()
	err := connect.NewError(connect.CodeInvalidArgument, errors.New("amount must be positive"))
	d, derr := connect.NewErrorDetail(&errdetails.ErrorInfo{Domain: coffer.ErrorDomain, Reason: "INVALID_ARGUMENT",
		Metadata: map[string]string{"field": "amount"}})
	if derr != nil {
		t.Fatal(derr)
	}
	err.AddDetail(d)
	err.Meta().Set("Retry-After", "2")
	wrapped := errors.Join(errors.New("create session"), err)
	if coffer.ErrorCode(wrapped) != coffer.CodeInvalidArgument || coffer.ErrorField(wrapped) != "amount" ||
		coffer.RetryAfter(wrapped) != 2*time.Second || coffer.ErrorDetail(wrapped, "errorCode") != "" {
		t.Fatalf("code %q field %q retry %s", coffer.ErrorCode(wrapped), coffer.ErrorField(wrapped), coffer.RetryAfter(wrapped))
	}
	foreign := connect.NewError(connect.CodeInternal, errors.New("x"))
	if d, derr := connect.NewErrorDetail(&errdetails.ErrorInfo{Domain: "other.example", Reason: "OOPS"}); derr == nil {
		foreign.AddDetail(d)
	}
	for _, e := range []error{nil, errors.New("dial tcp: refused"), foreign} {
		if coffer.ErrorCode(e) != "" || coffer.ErrorField(e) != "" || coffer.RetryAfter(e) != 0 {
			t.Fatalf("%v: code %q", e, coffer.ErrorCode(e))
		}
	}
	seen := map[coffer.Code]bool{}
	for _, c := range coffer.Codes() {
		if c == "" || seen[c] {
			t.Fatalf("code %q listed twice or empty", c)
		}
		seen[c] = true
	}
}

// pager serves ListDeposits in pages of two over five deposits, and fails once if asked to.
type pager struct {
	cofferv1connect.UnimplementedDepositServiceHandler

	failAt string
	tokens []string
}

func (p *pager) ListDeposits(_ context.Context, req *cofferv1.DepositServiceListDepositsRequest) (*cofferv1.DepositServiceListDepositsResponse, error) {
	p.tokens = append(p.tokens, req.GetPageToken())
	if req.GetExternalUserId() != "user-1" {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("filter lost between pages"))
	}
	if req.GetPageToken() == p.failAt && p.failAt != "" {
		return nil, connect.NewError(connect.CodeNotFound, errors.New("gone"))
	}
	start := 0
	if t := req.GetPageToken(); t != "" {
		start = int(t[0] - '0')
	}
	res := &cofferv1.DepositServiceListDepositsResponse{}
	for id := start; id < min(start+2, 5); id++ {
		res.Deposits = append(res.Deposits, &cofferv1.OperatorDeposit{DepositId: int64(id + 1)})
	}
	if start+2 < 5 {
		res.NextPageToken = string(rune('0' + start + 2))
	}
	return res, nil
}

func TestAllDeposits(t *testing.T) {
	t.Parallel()
	serveDeposits := func(p *pager) *coffer.Client {
		mux := http.NewServeMux()
		mux.Handle(cofferv1connect.NewDepositServiceHandler(p))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return coffer.New(srv.URL, "sk_test")
	}
	p := &pager{}
	req := &cofferv1.DepositServiceListDepositsRequest{ExternalUserId: "user-1"}
	var ids []int64
	for d, err := range serveDeposits(p).AllDeposits(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.GetDepositId())
	}
	if fmt.Sprint(ids) != "[1 2 3 4 5]" || fmt.Sprint(p.tokens) != "[ 2 4]" || req.GetPageToken() != "" {
		t.Fatalf("ids %v over tokens %q; caller's request token %q", ids, p.tokens, req.GetPageToken())
	}

	// An early break stops fetching; an error is yielded once and ends the walk.
	p = &pager{}
	for _, err := range serveDeposits(p).AllDeposits(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if len(p.tokens) != 1 {
		t.Fatalf("break after the first item fetched %d pages", len(p.tokens))
	}
	p = &pager{failAt: "2"}
	var errs, items int
	for _, err := range serveDeposits(p).AllDeposits(t.Context(), req) {
		if err != nil {
			errs++
			if coffer.ErrorCode(err) != "" || connect.CodeOf(err) != connect.CodeNotFound {
				t.Fatalf("error %v", err)
			}
			continue
		}
		items++
	}
	if errs != 1 || items != 2 {
		t.Fatalf("%d items then %d errors", items, errs)
	}
}
