package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

// The rules of issue 9 on sessions, withdraw submissions, webhooks and depositors, each through
// the REST layer and Connect on a running Coffer.

// errorMeta returns a Connect error's code, its ErrorInfo reason and metadata, and its
// Retry-After header.
func errorMeta(err error) (code connect.Code, reason string, meta map[string]string, retryAfter string) {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return connect.CodeUnknown, "", nil, ""
	}
	for _, d := range ce.Details() {
		if v, derr := d.Value(); derr == nil {
			if info, ok := v.(*errdetails.ErrorInfo); ok {
				return ce.Code(), info.GetReason(), info.GetMetadata(), ce.Meta().Get("Retry-After")
			}
		}
	}
	return ce.Code(), "", nil, ce.Meta().Get("Retry-After")
}

// restCall is one REST call's outcome, safe to make from any goroutine.
type restCall struct {
	status     int
	retryAfter string
	message    string
	data       map[string]any
	// raw is the body as an object (the /admin/* answers have no envelope).
	raw map[string]any
}

func callREST(ctx context.Context, env *apptest.Env, method, path, bearer, body string) (restCall, error) {
	req, err := http.NewRequestWithContext(ctx, method, env.URL+path, strings.NewReader(body))
	if err != nil {
		return restCall{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return restCall{}, err
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(res.Body)
	if err != nil {
		return restCall{}, err
	}
	var envelope struct {
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	}
	if err := json.Unmarshal(answer, &envelope); err != nil {
		return restCall{}, err
	}
	var raw map[string]any
	_ = json.Unmarshal(answer, &raw) // an array (a list) is no object: raw stays nil
	return restCall{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), message: envelope.Message, data: envelope.Data,
		raw: raw}, nil
}

func mustREST(t *testing.T, env *apptest.Env, method, path, bearer, body string) restCall {
	t.Helper()
	c, err := callREST(t.Context(), env, method, path, bearer, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return c
}

// restSession opens a session of kind ("deposit" or "withdraw") for user over REST, of 10 in
// fiat, and returns its sid.
func restSession(t *testing.T, env *apptest.Env, key, kind, user, fiat string) string {
	t.Helper()
	s := mustREST(t, env, "POST", "/session/"+kind, key, fmt.Sprintf(
		`{"externalUserId":%q,"lang":"en","platformFiatCurrency":%q,"userBalance":"100","amount":"10"}`, user, fiat))
	if s.status != 200 {
		t.Fatalf("open a %s session: %d %s", kind, s.status, s.message)
	}
	return apptest.SID(t, s.data["url"].(string))
}

const destination = "0x52908400098527886E0F7030069857D2E4169EE7"

// withdrawTransport submits withdrawals and opens withdraw sessions over one transport.
type withdrawTransport struct {
	name string
	// open opens a withdraw session and returns its sid.
	open func(t *testing.T, key, ref string) string
	// submit submits a withdrawal: the withdrawal id, or the error's code name (REST data.code
	// or ErrorInfo reason), its details and Retry-After.
	submit func(sid string) (id, code string, details map[string]string, retryAfter string, err error)
	// process moves a withdrawal PENDING → PROCESSING as an admin.
	process func(t *testing.T, id string)
}

func withdrawTransports(env *apptest.Env, adminToken string) []withdrawTransport {
	sessions := cofferv1connect.NewSessionServiceClient(http.DefaultClient, env.URL)
	widget := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, env.URL)
	admins := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
	sessionBody := func(ref string) string {
		return `{"externalUserId":"payee","lang":"en","platformFiatCurrency":"USD","userBalance":"100","amount":"10.00","operatorReference":"` + ref + `"}`
	}
	return []withdrawTransport{{
		name: "REST",
		open: func(t *testing.T, key, ref string) string {
			t.Helper()
			c := mustREST(t, env, "POST", "/session/withdraw", key, sessionBody(ref))
			return apptest.SID(t, c.data["url"].(string))
		},
		submit: func(sid string) (string, string, map[string]string, string, error) {
			c, err := callREST(context.Background(), env, "POST", "/withdraw/direct-transfer", "",
				`{"sid":"`+sid+`","address":"`+destination+`","currency":"USDT","chainId":1337}`)
			if err != nil {
				return "", "", nil, "", err
			}
			if c.status == http.StatusOK {
				return c.data["withdrawRequestId"].(string), "", nil, "", nil
			}
			details := map[string]string{"httpStatus": strconv.Itoa(c.status)}
			for k, v := range c.data {
				if s, ok := v.(string); ok {
					details[k] = s
				}
			}
			return "", details["code"], details, c.retryAfter, nil
		},
		process: func(t *testing.T, id string) {
			t.Helper()
			if c := mustREST(t, env, "PATCH", "/admin/withdrawals/"+id+"/status", adminToken, `{"status":"PROCESSING","adminNote":"checked"}`); c.status != http.StatusOK {
				t.Fatalf("PROCESSING: %+v", c)
			}
		},
	}, {
		name: "Connect",
		open: func(t *testing.T, key, ref string) string {
			t.Helper()
			res, err := sessions.CreateWithdrawSession(withBearer(t.Context(), key), &cofferv1.CreateWithdrawSessionRequest{
				ExternalUserId: "payee", Lang: "en", PlatformFiatCurrency: "USD", UserBalance: "100", Amount: "10.00", OperatorReference: ref})
			if err != nil {
				t.Fatal(err)
			}
			return res.Sid
		},
		submit: func(sid string) (string, string, map[string]string, string, error) {
			res, err := widget.SubmitWithdrawal(context.Background(), &cofferv1.SubmitWithdrawalRequest{Sid: sid, Address: destination,
				Currency: "USDT", ChainId: 1337})
			if err == nil {
				return res.WithdrawRequestId, "", nil, "", nil
			}
			code, reason, meta, retry := errorMeta(err)
			if code == connect.CodeUnknown {
				return "", "", nil, "", err
			}
			details := map[string]string{"connectCode": code.String()}
			maps.Copy(details, meta)
			return "", reason, details, retry, nil
		},
		process: func(t *testing.T, id string) {
			t.Helper()
			if _, err := admins.UpdateWithdrawalStatus(withBearer(t.Context(), adminToken), &cofferv1.UpdateWithdrawalStatusRequest{
				WithdrawRequestId: id, Status: cofferv1.WithdrawalStatus_WITHDRAWAL_STATUS_PROCESSING, AdminNote: "checked"}); err != nil {
				t.Fatal(err)
			}
		},
	}}
}

// TestWithdrawSessionPaysOnce reproduces the double payout: a mode-A submission, PENDING, an
// admin moves it to PROCESSING, the same sid submits again: CONFLICT, and no WITHDRAW_REQUEST
// reaches the operator. Then 40 rapid submissions on one sid: at most SubmitLimit reach the
// operator, the rest are RATE_LIMITED with Retry-After. Mode B: a newer submission still
// supersedes the AWAITING_APPROVAL one.
func TestWithdrawSessionPaysOnce(t *testing.T) { //nolint:tparallel // its subtests share one env and count its rows, so they run in order; the test runs beside others
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	r := hooktest.New(t)
	_, key := r.Operator(t, env, domain.OperatorSettings{})
	_, adminToken := env.Admin(t, "")
	for _, tr := range withdrawTransports(env, adminToken) {
		t.Run(tr.name, func(t *testing.T) {
			sid := tr.open(t, key, "payout-"+tr.name)
			first, code, _, _, err := tr.submit(sid)
			if err != nil || code != "" {
				t.Fatalf("first submission: %s %v", code, err)
			}
			if got := r.Matching("WITHDRAW_REQUEST", "operatorReference", "payout-"+tr.name); len(got) != 1 {
				t.Fatalf("%d WITHDRAW_REQUESTs for the first submission", len(got))
			}
			tr.process(t, first)
			rows := env.Count(t, "withdrawals")
			_, code, details, _, err := tr.submit(sid)
			if err != nil || code != "CONFLICT" || details["withdrawRequestId"] != first || details["withdrawStatus"] != "PROCESSING" ||
				(details["httpStatus"] != "" && details["httpStatus"] != "409") || (details["connectCode"] != "" && details["connectCode"] != "already_exists") {
				t.Fatalf("second submission: %s %v %v; want CONFLICT naming %s", code, details, err, first)
			}
			if got := r.Matching("WITHDRAW_REQUEST", "operatorReference", "payout-"+tr.name); len(got) != 1 {
				t.Fatalf("%d WITHDRAW_REQUESTs: the refused submission reached the operator", len(got))
			}
			if n := env.Count(t, "withdrawals"); n != rows {
				t.Fatalf("the refused submission wrote %d withdrawals", n-rows)
			}

			// 40 rapid submissions on one sid.
			burst := tr.open(t, key, "burst-"+tr.name)
			var wg sync.WaitGroup
			codes := make([]string, 40)
			retries := make([]string, 40)
			for i := range codes {
				wg.Go(func() {
					_, c, _, retry, err := tr.submit(burst)
					if err != nil {
						t.Error(err)
					}
					codes[i], retries[i] = c, retry
				})
			}
			wg.Wait()
			accepted := 0
			// A sliding window frees its next place at most a window and a limit-th of one
			// after the hits that fill it.
			longest := int((withdrawal.SubmitWindow + withdrawal.SubmitWindow/withdrawal.SubmitLimit).Seconds())
			for i, c := range codes {
				switch n, _ := strconv.Atoi(retries[i]); {
				case c == "":
					accepted++
				case c != "RATE_LIMITED" || n < 1 || n > longest:
					t.Errorf("submission %d: %s with Retry-After %q, want RATE_LIMITED with 1..%d", i, c, retries[i], longest)
				}
			}
			sent := len(r.Matching("WITHDRAW_REQUEST", "operatorReference", "burst-"+tr.name))
			if accepted < 1 || sent > withdrawal.SubmitLimit || accepted > sent {
				t.Fatalf("%d accepted, %d WITHDRAW_REQUESTs sent; want 1..%d", accepted, sent, withdrawal.SubmitLimit)
			}
		})
	}

	t.Run("mode B supersedes", func(t *testing.T) {
		external, enabled := domain.ApprovalExternal, true
		rb := hooktest.New(t)
		_, keyB := rb.Operator(t, env, domain.OperatorSettings{ApprovalMode: &external, ApprovalEnabled: &enabled})
		tr := withdrawTransports(env, adminToken)[0]
		sid := tr.open(t, keyB, "mode-b")
		first, code, _, _, err := tr.submit(sid)
		if err != nil || code != "" {
			t.Fatalf("first: %s %v", code, err)
		}
		second, code, _, _, err := tr.submit(sid)
		if err != nil || code != "" {
			t.Fatalf("second: %s %v", code, err)
		}
		var s1, s2 string
		if err := env.Pool.QueryRow(t.Context(), `SELECT status FROM withdrawals WHERE id = $1`, first).Scan(&s1); err != nil {
			t.Fatal(err)
		}
		if err := env.Pool.QueryRow(t.Context(), `SELECT status FROM withdrawals WHERE id = $1`, second).Scan(&s2); err != nil {
			t.Fatal(err)
		}
		if s1 != "CANCELLED" || s2 != "AWAITING_APPROVAL" {
			t.Fatalf("statuses %s, %s; want CANCELLED, AWAITING_APPROVAL", s1, s2)
		}
		// Both WITHDRAW_REQUESTs go through the outbox, with the session's reference.
		rb.AwaitMatching(t, "WITHDRAW_REQUEST", "operatorReference", "mode-b", 2, 20*time.Second)
	})
}

// sessionTransport opens sessions over one transport: the session's url and sessionRef, or
// the error's code name and field.
type sessionTransport struct {
	name string
	open func(kind, body string) (url, ref, code, field, message string, err error)
}

// startSessionTransports starts a Coffer with one operator and returns the ways to open its
// sessions.
func startSessionTransports(t *testing.T) (*apptest.Env, domain.Operator, []sessionTransport) {
	t.Helper()
	env := apptest.Start(t, apptest.Options{})
	op, key := env.Operator(t, domain.OperatorSettings{})
	sessions := cofferv1connect.NewSessionServiceClient(http.DefaultClient, env.URL)
	return env, op, []sessionTransport{{
		name: "REST",
		open: func(kind, body string) (string, string, string, string, string, error) {
			c, err := callREST(context.Background(), env, "POST", "/session/"+kind, key, body)
			if err != nil {
				return "", "", "", "", "", err
			}
			if c.status == http.StatusOK {
				return c.data["url"].(string), c.data["sessionRef"].(string), "", "", "", nil
			}
			want := map[string]int{"CONFLICT": 409, "INVALID_ARGUMENT": 400}[c.data["code"].(string)]
			if c.status != want {
				return "", "", "", "", "", errors.New("HTTP " + strconv.Itoa(c.status) + " for " + c.data["code"].(string))
			}
			field, _ := c.data["field"].(string)
			return "", "", c.data["code"].(string), field, c.message, nil
		},
	}, {
		name: "Connect",
		open: func(kind, body string) (string, string, string, string, string, error) {
			ctx := withBearer(context.Background(), key)
			var req cofferv1.CreateDepositSessionRequest
			if err := protojsonUnmarshal(body, &req); err != nil {
				return "", "", "", "", "", err
			}
			var err error
			var u, ref string
			if kind == "deposit" {
				var res *cofferv1.CreateDepositSessionResponse
				if res, err = sessions.CreateDepositSession(ctx, &req); err == nil {
					u, ref = res.Url, res.SessionRef
				}
			} else {
				var res *cofferv1.CreateWithdrawSessionResponse
				if res, err = sessions.CreateWithdrawSession(ctx, &cofferv1.CreateWithdrawSessionRequest{ExternalUserId: req.ExternalUserId,
					Lang: req.Lang, PlatformFiatCurrency: req.PlatformFiatCurrency, UserBalance: req.UserBalance, Amount: req.Amount,
					OperatorReference: req.OperatorReference}); err == nil {
					u, ref = res.Url, res.SessionRef
				}
			}
			if err == nil {
				return u, ref, "", "", "", nil
			}
			code, reason, meta, _ := errorMeta(err)
			if want := map[string]connect.Code{"CONFLICT": connect.CodeAlreadyExists, "INVALID_ARGUMENT": connect.CodeInvalidArgument}[reason]; code != want {
				return "", "", "", "", "", err
			}
			var ce *connect.Error
			errors.As(err, &ce)
			return "", "", reason, meta["field"], ce.Message(), nil
		},
	}}
}

func sessionJSONBody(t *testing.T, ref, user, amount, currency string) string {
	t.Helper()
	b, err := json.Marshal(map[string]string{"externalUserId": user, "lang": "en", "platformFiatCurrency": currency,
		"userBalance": "10", "amount": amount, "operatorReference": ref})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSessionReferenceIdempotency: the same reference with the same user, amount
// (numerically) and currency (any case) returns the live session; each differing field is
// CONFLICT naming it, and the other kind too, writing nothing; after the session expired the
// reference opens a new session and names it; concurrent first uses open one session.
func TestSessionReferenceIdempotency(t *testing.T) { //nolint:tparallel // its subtests share one env and count its rows, so they run in order; the test runs beside others
	t.Parallel()
	env, _, transports := startSessionTransports(t)
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			ref := "order-" + tr.name
			u1, r1, code, _, _, err := tr.open("deposit", sessionJSONBody(t, ref, "alice", "25.00", "USD"))
			if err != nil || code != "" {
				t.Fatalf("first: %s %v", code, err)
			}
			u2, r2, code, _, _, err := tr.open("deposit", sessionJSONBody(t, ref, "alice", "25", "usd"))
			if err != nil || code != "" || u2 != u1 || r2 != r1 {
				t.Fatalf("repeat: %s %s %s %v; want %s %s", u2, r2, code, err, u1, r1)
			}
			sessions, refs := env.Count(t, "sessions"), env.Count(t, "operator_references")
			for _, c := range []struct{ name, kind, body, field string }{
				{"user", "deposit", sessionJSONBody(t, ref, "bob", "25.00", "USD"), "externalUserId"},
				{"amount", "deposit", sessionJSONBody(t, ref, "alice", "25.01", "USD"), "amount"},
				{"currency", "deposit", sessionJSONBody(t, ref, "alice", "25.00", "EUR"), "platformFiatCurrency"},
				{"kind", "withdraw", sessionJSONBody(t, ref, "alice", "25.00", "USD"), "operatorReference"},
			} {
				_, _, code, field, msg, err := tr.open(c.kind, c.body)
				if err != nil || code != "CONFLICT" || field != c.field || !strings.HasPrefix(msg, c.field+": ") || !strings.Contains(msg, ref) {
					t.Errorf("other %s: %s field %q %q %v; want CONFLICT on %s", c.name, code, field, msg, err, c.field)
				}
			}
			if s, r := env.Count(t, "sessions"), env.Count(t, "operator_references"); s != sessions || r != refs {
				t.Fatalf("refused repeats wrote: sessions %d -> %d, references %d -> %d", sessions, s, refs, r)
			}

			// Expired: a new session (other parameters allowed), which the reference now names.
			env.ExpireSession(t, apptest.SID(t, u1))
			u3, r3, code, _, _, err := tr.open("deposit", sessionJSONBody(t, ref, "bob", "40.00", "EUR"))
			if err != nil || code != "" || u3 == u1 || r3 == r1 {
				t.Fatalf("after expiry: %s %s %s %v", u3, r3, code, err)
			}
			u4, r4, code, _, _, err := tr.open("deposit", sessionJSONBody(t, ref, "bob", "40", "eur"))
			if err != nil || code != "" || u4 != u3 || r4 != r3 {
				t.Fatalf("the reference names %s %s (%s %v), want the new session %s", u4, r4, code, err, u3)
			}
			if _, _, code, field, _, _ := tr.open("deposit", sessionJSONBody(t, ref, "alice", "25.00", "USD")); code != "CONFLICT" || field != "externalUserId" {
				t.Fatalf("the expired session's parameters on the new one: %s %s", code, field)
			}

			// Concurrent first uses of a new reference open one session.
			var wg sync.WaitGroup
			urls := make([]string, 12)
			for i := range urls {
				wg.Go(func() {
					u, _, code, _, _, err := tr.open("withdraw", sessionJSONBody(t, "race-"+tr.name, "carol", "5", "GBP"))
					if err != nil || code != "" {
						t.Errorf("concurrent create: %s %v", code, err)
					}
					urls[i] = u
				})
			}
			wg.Wait()
			for _, u := range urls {
				if u != urls[0] {
					t.Fatalf("concurrent creates opened several sessions: %v", urls)
				}
			}
		})
	}
}

// TestPricedCurrenciesOnly: a session in JPY or XYZ (REST and Connect) and an operator created
// or updated with such a fiat (OpsService) are INVALID_ARGUMENT listing the supported codes,
// writing nothing; supported ones, in any case, are accepted.
func TestPricedCurrenciesOnly(t *testing.T) { //nolint:tparallel // its subtests share one env and count its rows, so they run in order; the test runs beside others
	t.Parallel()
	env, op, transports := startSessionTransports(t)
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			sessions := env.Count(t, "sessions")
			for _, kind := range []string{"deposit", "withdraw"} {
				for _, code := range []string{"JPY", "XYZ", "jpy"} {
					_, _, got, field, msg, err := tr.open(kind, sessionJSONBody(t, "", "dave", "10", code))
					if err != nil || got != "INVALID_ARGUMENT" || field != "platformFiatCurrency" ||
						!strings.Contains(msg, strings.ToUpper(code)+" has no exchange rate here; supported currencies: EUR, GBP, USD") {
						t.Errorf("%s %s: %s %s %q %v", kind, code, got, field, msg, err)
					}
				}
			}
			if n := env.Count(t, "sessions"); n != sessions {
				t.Fatalf("refused sessions were written: %d -> %d", sessions, n)
			}
			for _, code := range []string{"eur", "GBP", "usd"} {
				if _, _, got, _, _, err := tr.open("deposit", sessionJSONBody(t, "", "dave", "10", code)); err != nil || got != "" {
					t.Errorf("%s: %s %v", code, got, err)
				}
			}
		})
	}

	t.Run("OpsService", func(t *testing.T) {
		ops := cofferv1connect.NewOpsServiceClient(http.DefaultClient, env.InternalURL)
		ctx := func() context.Context { return withBearer(t.Context(), env.OpsToken) }
		name, hook := "Priced", "https://priced.example/hook"
		operators := env.Count(t, "operators")
		for _, code := range []string{"JPY", "xyz"} {
			_, err := ops.CreateOperator(ctx(), &cofferv1.CreateOperatorRequest{Settings: &cofferv1.OperatorSettings{Name: &name,
				WebhookUrl: &hook, FiatCurrency: &code}})
			c, reason, meta, _ := errorMeta(err)
			if c != connect.CodeInvalidArgument || reason != "INVALID_ARGUMENT" || meta["field"] != "fiatCurrency" ||
				!strings.Contains(err.Error(), "supported currencies: EUR, GBP, USD") {
				t.Errorf("create %s: %v", code, err)
			}
			_, err = ops.UpdateOperator(ctx(), &cofferv1.UpdateOperatorRequest{Id: op.ID, Settings: &cofferv1.OperatorSettings{FiatCurrency: &code}})
			if c, _, meta, _ := errorMeta(err); c != connect.CodeInvalidArgument || meta["field"] != "fiatCurrency" {
				t.Errorf("update %s: %v", code, err)
			}
		}
		if n := env.Count(t, "operators"); n != operators {
			t.Fatalf("refused creates wrote %d operators", n-operators)
		}
		eur := "eur"
		created, err := ops.CreateOperator(ctx(), &cofferv1.CreateOperatorRequest{Settings: &cofferv1.OperatorSettings{Name: &name,
			WebhookUrl: &hook, FiatCurrency: &eur}})
		if err != nil || created.Operator.FiatCurrency != "EUR" {
			t.Fatalf("create EUR: %v %v", created, err)
		}
		gbp := "GBP"
		updated, err := ops.UpdateOperator(ctx(), &cofferv1.UpdateOperatorRequest{Id: op.ID, Settings: &cofferv1.OperatorSettings{FiatCurrency: &gbp}})
		if err != nil || updated.Operator.FiatCurrency != "GBP" {
			t.Fatalf("update GBP: %v %v", updated, err)
		}
	})
}

// TestNullIsNotAnIdentifier: webhooks write a missing value as the literal "null", and the
// spec tells receivers to read it as absent, so an externalUserId or operatorReference "null"
// would reach the operator as no user (a DEPOSIT it cannot credit) or no reference. Both are
// INVALID_ARGUMENT naming the field, on both session kinds, both transports and
// /depositor/create, and write nothing; "NULL" is an ordinary id.
func TestNullIsNotAnIdentifier(t *testing.T) { //nolint:tparallel // its subtests share one env and count its rows, so they run in order; the test runs beside others
	t.Parallel()
	env, _, transports := startSessionTransports(t)
	_, key := env.Operator(t, domain.OperatorSettings{})
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			sessions, refs := env.Count(t, "sessions"), env.Count(t, "operator_references")
			for _, kind := range []string{"deposit", "withdraw"} {
				for _, c := range []struct{ user, ref, field string }{
					{"null", "", "externalUserId"},
					{"null", "order-n", "externalUserId"},
					{"frank", "null", "operatorReference"},
				} {
					_, _, code, field, msg, err := tr.open(kind, sessionJSONBody(t, c.ref, c.user, "10", "USD"))
					if err != nil || code != "INVALID_ARGUMENT" || field != c.field || !strings.Contains(msg, `"null"`) {
						t.Errorf("%s user %q ref %q: %s %s %q %v; want INVALID_ARGUMENT %s", kind, c.user, c.ref, code, field, msg, err, c.field)
					}
				}
			}
			if n, r := env.Count(t, "sessions"), env.Count(t, "operator_references"); n != sessions || r != refs {
				t.Fatalf("refused sessions were written: sessions %d -> %d, references %d -> %d", sessions, n, refs, r)
			}
			if _, _, code, _, _, err := tr.open("deposit", sessionJSONBody(t, "NULL", "NULL", "10", "USD")); err != nil || code != "" {
				t.Errorf(`user and reference "NULL": %s %v`, code, err)
			}
		})
	}
	depositors := env.Count(t, "depositors")
	if c := mustREST(t, env, "POST", "/depositor/create", key, `{"externalUserId":"null"}`); c.status != http.StatusBadRequest ||
		c.data["code"] != "INVALID_ARGUMENT" || c.data["field"] != "externalUserId" {
		t.Errorf("depositor null: %d %v", c.status, c.data)
	}
	depositorsClient := cofferv1connect.NewDepositorServiceClient(http.DefaultClient, env.URL)
	_, err := depositorsClient.CreateDepositor(withBearer(t.Context(), key), &cofferv1.CreateDepositorRequest{ExternalUserId: "null"})
	if code, reason, meta, _ := errorMeta(err); code != connect.CodeInvalidArgument || reason != "INVALID_ARGUMENT" || meta["field"] != "externalUserId" {
		t.Errorf("Connect depositor null: %v", err)
	}
	if n := env.Count(t, "depositors"); n != depositors {
		t.Fatalf("refused depositors were written: %d -> %d", depositors, n)
	}
}

// TestBlankIsNotAUserID: what was seen: an externalUserId of white space alone (" ") opened a
// session and registered a depositor, whose DEPOSIT would name no visible user. Blank ids
// (white space or invisible characters only; a tab was refused already, as a control
// character) are INVALID_ARGUMENT naming externalUserId on both session kinds, both
// transports, /depositor/create and /depositor/:externalUserId/check, and write nothing.
// An id with spaces inside or around visible characters is still an id. The same holds for
// an operatorReference that is present (leaving it out is no reference) and for the
// externalUserId a list of deposits or withdrawals is filtered by, which answered an empty
// list, as if that user had none.
func TestBlankIsNotAUserID(t *testing.T) { //nolint:tparallel // its subtests share one env and count its rows, so they run in order; the test runs beside others
	t.Parallel()
	env, _, transports := startSessionTransports(t)
	_, key := env.Operator(t, domain.OperatorSettings{})
	blanks := []string{" ", "   ", "\t", " \t ", "\u00a0", "\u3000", "\u200b", "\ufeff", "\u2028"}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			sessions, depositors := env.Count(t, "sessions"), env.Count(t, "depositors")
			for _, kind := range []string{"deposit", "withdraw"} {
				for _, user := range blanks {
					_, _, code, field, msg, err := tr.open(kind, sessionJSONBody(t, "", user, "10", "USD"))
					if err != nil || code != "INVALID_ARGUMENT" || field != "externalUserId" {
						t.Errorf("%s user %q: %s %s %q %v; want INVALID_ARGUMENT externalUserId", kind, user, code, field, msg, err)
					}
					_, _, code, field, msg, err = tr.open(kind, sessionJSONBody(t, user, "user-7", "10", "USD"))
					if err != nil || code != "INVALID_ARGUMENT" || field != "operatorReference" {
						t.Errorf("%s reference %q: %s %s %q %v; want INVALID_ARGUMENT operatorReference", kind, user, code, field, msg, err)
					}
				}
			}
			if n, d := env.Count(t, "sessions"), env.Count(t, "depositors"); n != sessions || d != depositors {
				t.Fatalf("refused sessions were written: sessions %d -> %d, depositors %d -> %d", sessions, n, depositors, d)
			}
			if _, _, code, _, _, err := tr.open("deposit", sessionJSONBody(t, "", " user 7 ", "10", "USD")); err != nil || code != "" {
				t.Errorf(`user " user 7 ": %s %v`, code, err)
			}
		})
	}
	depositors := env.Count(t, "depositors")
	client := cofferv1connect.NewDepositorServiceClient(http.DefaultClient, env.URL)
	ctx := withBearer(t.Context(), key)
	for _, user := range blanks {
		body, err := json.Marshal(map[string]string{"externalUserId": user})
		if err != nil {
			t.Fatal(err)
		}
		if c := mustREST(t, env, "POST", "/depositor/create", key, string(body)); c.status != http.StatusBadRequest ||
			c.data["code"] != "INVALID_ARGUMENT" || c.data["field"] != "externalUserId" {
			t.Errorf("REST create %q: %d %v", user, c.status, c.data)
		}
		if c := mustREST(t, env, "GET", "/depositor/"+url.PathEscape(user)+"/check", key, ""); c.status != http.StatusBadRequest ||
			c.data["code"] != "INVALID_ARGUMENT" || c.data["field"] != "externalUserId" {
			t.Errorf("REST check %q: %d %v", user, c.status, c.data)
		}
		_, err = client.CreateDepositor(ctx, &cofferv1.CreateDepositorRequest{ExternalUserId: user})
		if code, reason, meta, _ := errorMeta(err); code != connect.CodeInvalidArgument || reason != "INVALID_ARGUMENT" || meta["field"] != "externalUserId" {
			t.Errorf("Connect create %q: %v", user, err)
		}
		_, err = client.CheckDepositor(ctx, &cofferv1.CheckDepositorRequest{ExternalUserId: user})
		if code, reason, meta, _ := errorMeta(err); code != connect.CodeInvalidArgument || reason != "INVALID_ARGUMENT" || meta["field"] != "externalUserId" {
			t.Errorf("Connect check %q: %v", user, err)
		}
	}
	if n := env.Count(t, "depositors"); n != depositors {
		t.Fatalf("refused depositors were written: %d -> %d", depositors, n)
	}

	// A list filtered by a blank id is refused, not answered "this user has none".
	deposits := cofferv1connect.NewDepositServiceClient(http.DefaultClient, env.URL)
	withdrawals := cofferv1connect.NewWithdrawalServiceClient(http.DefaultClient, env.URL)
	for _, user := range append(blanks, "null") {
		for _, path := range []string{"/deposits", "/withdrawals"} {
			if c := mustREST(t, env, "GET", path+"?externalUserId="+url.QueryEscape(user), key, ""); c.status != http.StatusBadRequest ||
				c.data["code"] != "INVALID_ARGUMENT" || c.data["field"] != "externalUserId" {
				t.Errorf("REST %s filtered by %q: %d %v", path, user, c.status, c.data)
			}
		}
		_, err := deposits.ListDeposits(ctx, &cofferv1.DepositServiceListDepositsRequest{ExternalUserId: user})
		if code, reason, meta, _ := errorMeta(err); code != connect.CodeInvalidArgument || reason != "INVALID_ARGUMENT" || meta["field"] != "externalUserId" {
			t.Errorf("Connect ListDeposits filtered by %q: %v", user, err)
		}
		_, err = withdrawals.ListWithdrawals(ctx, &cofferv1.WithdrawalServiceListWithdrawalsRequest{ExternalUserId: user})
		if code, reason, meta, _ := errorMeta(err); code != connect.CodeInvalidArgument || reason != "INVALID_ARGUMENT" || meta["field"] != "externalUserId" {
			t.Errorf("Connect ListWithdrawals filtered by %q: %v", user, err)
		}
	}
	for _, path := range []string{"/deposits", "/withdrawals"} {
		if c := mustREST(t, env, "GET", path+"?externalUserId="+url.QueryEscape(" user 7 "), key, ""); c.status != http.StatusOK {
			t.Errorf("REST %s filtered by an id with spaces around it: %d %v", path, c.status, c.data)
		}
	}
}

// TestOperatorReferenceOnWebhooks: WITHDRAW_REQUEST (the synchronous mode-A request and the
// mode-B one through the outbox) and the test DEPOSIT and WITHDRAW_COMPLETE carry the
// session's operatorReference, and the literal "null" when it has none. (DEPOSIT and
// WITHDRAW_COMPLETE through the outbox: server/e2e and server/internal/withdrawal.)
func TestOperatorReferenceOnWebhooks(t *testing.T) { //nolint:tparallel // its subtests share one env and count its rows, so they run in order; the test runs beside others
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	ra, rb := hooktest.New(t), hooktest.New(t)
	_, keyA := ra.Operator(t, env, domain.OperatorSettings{})
	external, enabled := domain.ApprovalExternal, true
	_, keyB := rb.Operator(t, env, domain.OperatorSettings{ApprovalMode: &external, ApprovalEnabled: &enabled})
	_, adminToken := env.Admin(t, "")
	tr := withdrawTransports(env, adminToken)[1]
	for _, c := range []struct {
		name string
		r    *hooktest.Receiver
		key  string
		ref  string
	}{
		{"mode A with a reference", ra, keyA, "order-a"},
		{"mode A without", ra, keyA, ""},
		{"mode B with a reference", rb, keyB, "order-b"},
		{"mode B without", rb, keyB, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sid := tr.open(t, c.key, c.ref)
			id, code, _, _, err := tr.submit(sid)
			if err != nil || code != "" {
				t.Fatalf("submit: %s %v", code, err)
			}
			want := c.ref
			if want == "" {
				want = "null"
			}
			if got := c.r.AwaitMatching(t, "WITHDRAW_REQUEST", "withdrawRequestId", id, 1, 20*time.Second)[0].Form; got.Get("operatorReference") != want {
				t.Errorf("WITHDRAW_REQUEST operatorReference %q, want %q", got.Get("operatorReference"), want)
			}
			if res := mustREST(t, env, "POST", "/session/"+sid+"/test-webhook", c.key, ""); res.status != 200 || res.data["delivered"] != true {
				t.Fatalf("test webhook: %+v", res)
			}
			got := c.r.AwaitMatching(t, "WITHDRAW_COMPLETE", "sessionRef", sessionRefOf(t, env, sid), 1, 20*time.Second)[0].Form
			if got.Get("operatorReference") != want || got.Get("test") != "true" {
				t.Errorf("test WITHDRAW_COMPLETE: operatorReference %q test %q, want %q", got.Get("operatorReference"), got.Get("test"), want)
			}
		})
	}
	for _, ref := range []string{"order-d", ""} {
		res := mustREST(t, env, "POST", "/session/deposit", keyA, sessionJSONBody(t, ref, "erin", "10", "USD"))
		sid := apptest.SID(t, res.data["url"].(string))
		mustREST(t, env, "POST", "/session/"+sid+"/test-webhook", keyA, "")
		want := ref
		if want == "" {
			want = "null"
		}
		if got := ra.AwaitMatching(t, "DEPOSIT", "sessionRef", res.data["sessionRef"].(string), 1, 20*time.Second)[0].Form; got.Get("operatorReference") != want {
			t.Errorf("test DEPOSIT operatorReference %q, want %q", got.Get("operatorReference"), want)
		}
	}
}

func sessionRefOf(t *testing.T, env *apptest.Env, sid string) string {
	t.Helper()
	var ref string
	if err := env.Pool.QueryRow(t.Context(), `SELECT session_ref FROM sessions WHERE id = $1`, sid).Scan(&ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestDepositorAddressAndEmail: /depositor/create and /check (and their Connect twins) show
// the deposit address once a deposit session handed it out, and a create on an existing user
// says what it did to the email.
func TestDepositorAddressAndEmail(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	_, key := env.Operator(t, domain.OperatorSettings{})
	depositors := cofferv1connect.NewDepositorServiceClient(http.DefaultClient, env.URL)
	widget := cofferv1connect.NewWidgetServiceClient(http.DefaultClient, env.URL)
	ctx := func() context.Context { return withBearer(t.Context(), key) }

	create := mustREST(t, env, "POST", "/depositor/create", key, `{"externalUserId":"frank"}`)
	if create.status != 200 || create.data["depositAddress"] != nil || create.data["emailChange"] != "UNCHANGED" ||
		create.message != "Depositor created" {
		t.Fatalf("create: %+v", create)
	}
	// A deposit session hands out the address.
	res := mustREST(t, env, "POST", "/session/deposit", key, sessionJSONBody(t, "", "frank", "10", "USD"))
	addr, err := widget.GetDepositAddress(t.Context(), &cofferv1.GetDepositAddressRequest{Sid: apptest.SID(t, res.data["url"].(string)),
		Currency: "USDT", ChainId: 1337})
	if err != nil {
		t.Fatal(err)
	}
	check := mustREST(t, env, "GET", "/depositor/frank/check", key, "")
	if check.data["exists"] != true || check.data["depositAddress"] != addr.Address {
		t.Errorf("REST check: %+v, want depositAddress %s", check.data, addr.Address)
	}
	if got, err := depositors.CheckDepositor(ctx(), &cofferv1.CheckDepositorRequest{ExternalUserId: "frank"}); err != nil ||
		got.Depositor.GetDepositAddress() != addr.Address {
		t.Errorf("Connect check: %v %v", got, err)
	}

	for _, c := range []struct {
		email, message string
		change         cofferv1.EmailChange
	}{
		{"", "Depositor already exists; email unchanged", cofferv1.EmailChange_EMAIL_CHANGE_UNCHANGED},
		{"frank@example.com", "Depositor already exists; email set", cofferv1.EmailChange_EMAIL_CHANGE_SET},
		{"frank@example.com", "Depositor already exists; email unchanged", cofferv1.EmailChange_EMAIL_CHANGE_UNCHANGED},
		{"frank.new@example.com", "Depositor already exists; email updated", cofferv1.EmailChange_EMAIL_CHANGE_UPDATED},
		{"", "Depositor already exists; email unchanged", cofferv1.EmailChange_EMAIL_CHANGE_UNCHANGED},
	} {
		body := `{"externalUserId":"frank"}`
		if c.email != "" {
			body = `{"externalUserId":"frank","email":"` + c.email + `"}`
		}
		got := mustREST(t, env, "POST", "/depositor/create", key, body)
		if got.message != c.message || got.data["created"] != false || got.data["depositAddress"] != addr.Address ||
			got.data["emailChange"] != strings.TrimPrefix(c.change.String(), "EMAIL_CHANGE_") {
			t.Errorf("REST create with %q: %q %+v, want %q", c.email, got.message, got.data, c.message)
		}
	}
	if got, _ := depositors.CheckDepositor(ctx(), &cofferv1.CheckDepositorRequest{ExternalUserId: "frank"}); got.GetDepositor().GetEmail() != "frank.new@example.com" {
		t.Errorf("email after the updates: %v", got)
	}
	// Connect: a new depositor with an email, then the same outcomes as an enum.
	for _, c := range []struct {
		email   string
		created bool
		change  cofferv1.EmailChange
	}{
		{"grace@example.com", true, cofferv1.EmailChange_EMAIL_CHANGE_SET},
		{"grace@example.com", false, cofferv1.EmailChange_EMAIL_CHANGE_UNCHANGED},
		{"grace2@example.com", false, cofferv1.EmailChange_EMAIL_CHANGE_UPDATED},
		{"", false, cofferv1.EmailChange_EMAIL_CHANGE_UNCHANGED},
	} {
		got, err := depositors.CreateDepositor(ctx(), &cofferv1.CreateDepositorRequest{ExternalUserId: "grace", Email: c.email})
		if err != nil || got.Created != c.created || got.EmailChange != c.change || got.Depositor.GetEmail() == "" {
			t.Errorf("Connect create with %q: %v %v; want created %v, %v", c.email, got, err, c.created, c.change)
		}
	}
}

// protojsonUnmarshal decodes a session body into the Connect request.
func protojsonUnmarshal(body string, req *cofferv1.CreateDepositSessionRequest) error {
	var m map[string]string
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return err
	}
	req.ExternalUserId, req.Lang, req.PlatformFiatCurrency = m["externalUserId"], m["lang"], m["platformFiatCurrency"]
	req.UserBalance, req.Amount, req.OperatorReference = m["userBalance"], m["amount"], m["operatorReference"]
	return nil
}

// TestDepositFeeBoundOverOps: OpsService refuses a deposit fee above 5000 bps (50%) on create
// and update, INVALID_ARGUMENT naming depositFeeBps, writing nothing: at 10000 a native
// deposit can never pay its sweep's gas and is never credited.
func TestDepositFeeBoundOverOps(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	op, _ := env.Operator(t, domain.OperatorSettings{DepositFeeBps: new(int32(150))})
	ops := cofferv1connect.NewOpsServiceClient(http.DefaultClient, env.InternalURL)
	ctx := withBearer(t.Context(), env.OpsToken)
	name, hook := "Greedy", "https://greedy.example/hook"
	operators := env.Count(t, "operators")
	for _, bps := range []int32{5001, 10000} {
		_, err := ops.CreateOperator(ctx, &cofferv1.CreateOperatorRequest{Settings: &cofferv1.OperatorSettings{Name: &name,
			WebhookUrl: &hook, DepositFeeBps: &bps}})
		if c, _, meta, _ := errorMeta(err); c != connect.CodeInvalidArgument || meta["field"] != "depositFeeBps" {
			t.Errorf("create with %d bps: %v", bps, err)
		}
		_, err = ops.UpdateOperator(ctx, &cofferv1.UpdateOperatorRequest{Id: op.ID, Settings: &cofferv1.OperatorSettings{DepositFeeBps: &bps}})
		if c, _, meta, _ := errorMeta(err); c != connect.CodeInvalidArgument || meta["field"] != "depositFeeBps" {
			t.Errorf("update to %d bps: %v", bps, err)
		}
	}
	if n := env.Count(t, "operators"); n != operators {
		t.Fatalf("refused creates wrote %d operators", n-operators)
	}
	got, err := ops.GetOperator(ctx, &cofferv1.GetOperatorRequest{Id: op.ID})
	if err != nil || got.Operator.DepositFeeBps != 150 {
		t.Fatalf("the refused updates changed the fee: %v %v", got, err)
	}
}
