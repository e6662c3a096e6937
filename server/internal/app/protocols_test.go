package app_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// apiClient is one protocol's way of calling the session flow. Every implementation talks to
// the same running server; only the wire protocol differs.
type apiClient interface {
	// CreateDepositSession calls SessionService.CreateDepositSession with
	// "Authorization: Bearer <bearer>" (no header when bearer is "").
	CreateDepositSession(ctx context.Context, bearer string, req *cofferv1.CreateDepositSessionRequest) (*cofferv1.CreateDepositSessionResponse, error)
	GetSession(ctx context.Context, req *cofferv1.GetSessionRequest) (*cofferv1.GetSessionResponse, error)
	GetDepositAddress(ctx context.Context, req *cofferv1.GetDepositAddressRequest) (*cofferv1.GetDepositAddressResponse, error)
	// ErrorInfo returns the code of a failed call and the reason of its ErrorInfo detail.
	ErrorInfo(err error) (code connect.Code, reason string)
}

// connectAPI drives the generated connect-go clients (`simple` codegen).
type connectAPI struct {
	sessions cofferv1connect.SessionServiceClient
	widget   cofferv1connect.WidgetServiceClient
}

func newConnectAPI(hc connect.HTTPClient, baseURL string, opts ...connect.ClientOption) *connectAPI {
	return &connectAPI{
		sessions: cofferv1connect.NewSessionServiceClient(hc, baseURL, opts...),
		widget:   cofferv1connect.NewWidgetServiceClient(hc, baseURL, opts...),
	}
}

func (c *connectAPI) CreateDepositSession(ctx context.Context, bearer string, req *cofferv1.CreateDepositSessionRequest) (*cofferv1.CreateDepositSessionResponse, error) {
	return c.sessions.CreateDepositSession(withBearer(ctx, bearer), req)
}

func (c *connectAPI) GetSession(ctx context.Context, req *cofferv1.GetSessionRequest) (*cofferv1.GetSessionResponse, error) {
	return c.widget.GetSession(ctx, req)
}

func (c *connectAPI) GetDepositAddress(ctx context.Context, req *cofferv1.GetDepositAddressRequest) (*cofferv1.GetDepositAddressResponse, error) {
	return c.widget.GetDepositAddress(ctx, req)
}

func (c *connectAPI) ErrorInfo(err error) (connect.Code, string) { return connectErrorInfo(err) }

// withBearer returns a client context whose calls carry "Authorization: Bearer <cred>" (the
// `simple` codegen passes headers through connect.CallInfo). An empty cred sends no header.
// Use a fresh context for each call.
// consoles are the service team's OpsService client (on the internal listener), the admin
// panel's AdminService client, and the test's context carrying the ops token.
func consoles(t *testing.T, env *apptest.Env) (context.Context, cofferv1connect.OpsServiceClient, cofferv1connect.AdminServiceClient) {
	t.Helper()
	return withBearer(t.Context(), env.OpsToken), cofferv1connect.NewOpsServiceClient(http.DefaultClient, env.InternalURL),
		cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
}

func withBearer(ctx context.Context, cred string) context.Context {
	if cred == "" {
		return ctx
	}
	ctx, info := connect.NewClientContext(ctx)
	info.RequestHeader().Set("Authorization", "Bearer "+cred)
	return ctx
}

// connectErrorInfo returns the code of a connect-go error and the reason of its ErrorInfo.
func connectErrorInfo(err error) (connect.Code, string) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return connect.CodeUnknown, ""
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if info, ok := v.(*errdetails.ErrorInfo); derr == nil && ok {
			return ce.Code(), info.GetReason()
		}
	}
	return ce.Code(), ""
}

// h2cClient speaks HTTP/2 without TLS (prior knowledge), as gRPC needs.
func h2cClient() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p}}
}

func depositSessionRequest(ref string) *cofferv1.CreateDepositSessionRequest {
	return &cofferv1.CreateDepositSessionRequest{ExternalUserId: "user-42", Lang: "en", PlatformFiatCurrency: "usd",
		UserBalance: "120.50", Amount: "25", OperatorReference: ref}
}

// TestSessionFlowOnEveryProtocol runs the same operation, CreateDepositSession, GetSession on
// the returned sid, then the repeated operatorReference, over the Connect protocol (binary and
// JSON), gRPC over h2c, gRPC-Web and grpc-go against one server, and checks each protocol's
// error mapping (code and ErrorInfo reason).
func TestSessionFlowOnEveryProtocol(t *testing.T) {
	env := apptest.Start(t, apptest.Options{})
	op, key := env.Operator(t, domain.OperatorSettings{})
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()

	// A deposit session that has expired, for the SESSION_EXPIRED mapping.
	seed := newConnectAPI(http.DefaultClient, env.URL)
	expired, err := seed.CreateDepositSession(ctx, key, depositSessionRequest(""))
	if err != nil {
		t.Fatal(err)
	}
	env.ExpireSession(t, expired.Sid)

	clients := []struct {
		name string
		api  apiClient
	}{
		{"connect-proto", newConnectAPI(http.DefaultClient, env.URL)},
		{"connect-json", newConnectAPI(http.DefaultClient, env.URL, connect.WithProtoJSON())},
		{"grpc-h2c", newConnectAPI(h2cClient(), env.URL, connect.WithGRPC())},
		{"grpc-web", newConnectAPI(http.DefaultClient, env.URL, connect.WithGRPCWeb())},
		{"grpc-web-json", newConnectAPI(http.DefaultClient, env.URL, connect.WithGRPCWeb(), connect.WithProtoJSON())},
		{"grpc-go", &grpcGoClient{conn: dialGRPC(t, env)}},
	}

	var sharedSids []string
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			req := depositSessionRequest("order-" + c.name)
			first, err := c.api.CreateDepositSession(ctx, key, req)
			if err != nil {
				t.Fatalf("CreateDepositSession: %v", err)
			}
			if _, err := uuid.Parse(first.Sid); err != nil {
				t.Errorf("sid %q is not a UUID", first.Sid)
			}
			if want := env.URL + "/widget/?sid=" + first.Sid; first.Url != want {
				t.Errorf("url = %q, want %q", first.Url, want)
			}
			if !strings.HasPrefix(first.SessionRef, "sr_") || first.Existing {
				t.Errorf("sessionRef %q, existing %v: want a new sr_ reference", first.SessionRef, first.Existing)
			}
			if exp := first.GetExpiresAt().AsTime(); time.Until(exp) < 25*time.Minute || time.Until(exp) > 31*time.Minute {
				t.Errorf("expiresAt %v: want about 30 minutes from now", exp)
			}

			got, err := c.api.GetSession(ctx, &cofferv1.GetSessionRequest{Sid: first.Sid})
			if err != nil {
				t.Fatalf("GetSession: %v", err)
			}
			if got.Sid != first.Sid || got.Kind != cofferv1.SessionKind_SESSION_KIND_DEPOSIT ||
				got.Status != cofferv1.SessionStatus_SESSION_STATUS_OPEN || got.Amount != "25.00" ||
				got.FiatCurrency != "USD" || got.Lang != "en" || got.OperatorName != op.Name {
				t.Errorf("GetSession = %v", got)
			}

			again, err := c.api.CreateDepositSession(ctx, key, req)
			if err != nil {
				t.Fatalf("repeated CreateDepositSession: %v", err)
			}
			if again.Sid != first.Sid || again.SessionRef != first.SessionRef || again.Url != first.Url || !again.Existing {
				t.Errorf("repeated operatorReference: got sid %s ref %s existing %v, want sid %s ref %s existing true",
					again.Sid, again.SessionRef, again.Existing, first.Sid, first.SessionRef)
			}

			// One reference shared by every protocol: the first opens it, the others find it.
			shared, err := c.api.CreateDepositSession(ctx, key, depositSessionRequest("order-shared"))
			if err != nil {
				t.Fatalf("shared reference: %v", err)
			}
			if shared.Existing != (len(sharedSids) > 0) {
				t.Errorf("shared reference: existing = %v after %d earlier calls", shared.Existing, len(sharedSids))
			}
			sharedSids = append(sharedSids, shared.Sid)

			_, err = c.api.CreateDepositSession(ctx, "", req)
			if code, reason := c.api.ErrorInfo(err); code != connect.CodeUnauthenticated || reason != "UNAUTHENTICATED" {
				t.Errorf("missing key: code %v reason %q (err %v), want unauthenticated / UNAUTHENTICATED", code, reason, err)
			}

			_, err = c.api.GetDepositAddress(ctx, &cofferv1.GetDepositAddressRequest{Sid: expired.Sid, Currency: "USDT", ChainId: 1337})
			if code, reason := c.api.ErrorInfo(err); code != connect.CodeFailedPrecondition || reason != "SESSION_EXPIRED" {
				t.Errorf("expired session: code %v reason %q (err %v), want failed_precondition / SESSION_EXPIRED", code, reason, err)
			}
		})
	}

	if len(slices.Compact(slices.Clone(sharedSids))) != 1 {
		t.Errorf("one operatorReference resolved to different sessions across protocols: %v", sharedSids)
	}

	t.Run("reflection (internal listener)", func(t *testing.T) {
		want := []string{
			cofferv1connect.SessionServiceName, cofferv1connect.DepositorServiceName, cofferv1connect.WithdrawalServiceName,
			cofferv1connect.ChainServiceName, cofferv1connect.WidgetServiceName, cofferv1connect.AdminServiceName,
			cofferv1connect.OpsServiceName, cofferv1connect.BalanceServiceName, cofferv1connect.DepositServiceName,
			cofferv1connect.EventServiceName,
		}
		check := func(t *testing.T, client string, got []string) {
			t.Helper()
			for _, name := range want {
				if !slices.Contains(got, name) {
					t.Errorf("%s: reflection lists %v, without %s", client, got, name)
				}
			}
		}

		// connect-go's reflection client over gRPC (v1 API).
		stream := grpcreflect.NewClient(h2cClient(), env.InternalURL, connect.WithGRPC()).NewStream(ctx)
		names, err := stream.ListServices()
		if err != nil {
			t.Fatalf("ListServices: %v", err)
		}
		var got []string
		for _, n := range names {
			got = append(got, string(n))
		}
		check(t, "connect-go", got)
		files, err := stream.FileContainingSymbol(cofferv1connect.SessionServiceName)
		if err != nil || len(files) == 0 || files[0].GetName() != "coffer/v1/session.proto" {
			t.Errorf("FileContainingSymbol(SessionService): %d files, err %v", len(files), err)
		}
		if _, err := stream.Close(); err != nil {
			t.Errorf("close reflection stream: %v", err)
		}

		check(t, "grpc-go", grpcGoReflectServices(ctx, t, env))
		// The public listener serves no reflection.
		public := grpcreflect.NewClient(h2cClient(), env.URL, connect.WithGRPC()).NewStream(ctx)
		if _, err := public.ListServices(); err == nil {
			t.Error("the public listener answers gRPC reflection")
		}
		public.Close()
	})
}
