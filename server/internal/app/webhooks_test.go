package app_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/hooktest"
	"github.com/cofferhq/coffer/server/internal/jobs"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/testwebhook"
	"github.com/cofferhq/coffer/server/internal/webhook"
)

// enqueueDeposit puts a DEPOSIT in the outbox the way the deposit pipeline does: in the
// transaction of the state change.
func enqueueDeposit(t *testing.T, env *apptest.Env, operatorID string, depositID int64) string {
	t.Helper()
	id := uuid.NewString()
	err := store.InTx(t.Context(), env.Pool, func(tx pgx.Tx) error {
		return env.Services.Webhooks.Enqueue(t.Context(), tx, webhook.Event{ID: id, OperatorID: operatorID,
			SubjectID: uuid.NewString(), Message: &cofferv1.DepositEvent{
				Event: "DEPOSIT", DepositId: depositID, IdempotencyKey: "dep-" + strconv.FormatInt(depositID, 10),
				ExternalUserId: "alice", Amount: "24750000", GrossAmount: "25000000", FeeAmount: "250000",
				LocalCurrencyCode: "USD", CurrentRate: "1", Pair: "USDT/USD", Type: "DIRECT_TRANSFER", ChainId: 1337}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func eventState(t *testing.T, env *apptest.Env, id string) (state string, attempts int) {
	t.Helper()
	err := env.Pool.QueryRow(t.Context(),
		`SELECT state, (SELECT count(*) FROM webhook_attempts a WHERE a.event_id = e.id) FROM webhook_events e WHERE id = $1`, id).
		Scan(&state, &attempts)
	if err != nil {
		t.Fatal(err)
	}
	return state, attempts
}

func waitEventState(t *testing.T, env *apptest.Env, id, want string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		state, attempts := eventState(t, env, id)
		if state == want {
			return attempts
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook %s is %s after %d attempts, want %s", id, state, attempts, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOutboxThroughTheRunningService: a receiver that is down for the first attempts gets the
// webhook once it is up, with the same webhook-id on every attempt; a receiver down for all
// five attempts gets it dead-lettered, listed to the operator's admin (not to another
// operator's) and to the service team, and redelivered from the admin API with the same id.
func TestOutboxThroughTheRunningService(t *testing.T) {
	env := apptest.Start(t, apptest.Options{WebhookRetries: jobs.RetrySchedule{50 * time.Millisecond}})
	admins := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
	ops := cofferv1connect.NewOpsServiceClient(http.DefaultClient, env.InternalURL)
	as := func(key string) context.Context { return withBearer(t.Context(), key) }

	t.Run("down then up", func(t *testing.T) {
		r := hooktest.New(t)
		op, _ := r.Operator(t, env, domain.OperatorSettings{})
		r.SetDown(true)
		id := enqueueDeposit(t, env, op.ID, 101)
		r.AwaitAttempts(2, 20*time.Second)
		r.SetDown(false)
		attempts := waitEventState(t, env, id, "delivered")
		time.Sleep(300 * time.Millisecond) // room for a wrong extra attempt to show up
		seen, got := r.Attempts(), r.All()
		if len(got) != 1 || got[0].ID != id {
			t.Fatalf("receiver acknowledged %d webhooks (%v), want exactly one with id %s", len(got), got, id)
		}
		if len(seen) != attempts || attempts < 3 {
			t.Errorf("receiver saw %d requests, %d attempts recorded; want the same, at least 3", len(seen), attempts)
		}
		for i, s := range seen {
			if s != id {
				t.Errorf("attempt %d had webhook-id %s, want %s", i+1, s, id)
			}
		}
		if d, ok := got[0].Parsed.(*cofferv1.DepositEvent); !ok || d.DepositId != 101 || d.IdempotencyKey != "dep-101" {
			t.Errorf("delivered %v", got[0].Parsed)
		}
	})

	t.Run("dead-lettered then redelivered", func(t *testing.T) {
		r := hooktest.New(t)
		op, _ := r.Operator(t, env, domain.OperatorSettings{})
		other, _ := env.Operator(t, domain.OperatorSettings{})
		_, opAdmin := env.Admin(t, op.ID)
		_, otherAdmin := env.Admin(t, other.ID)
		r.SetDown(true)
		id := enqueueDeposit(t, env, op.ID, 202)
		if n := waitEventState(t, env, id, "dead"); n != webhook.MaxAttempts {
			t.Fatalf("dead after %d attempts, want %d", n, webhook.MaxAttempts)
		}
		time.Sleep(300 * time.Millisecond)
		if seen := r.Attempts(); len(seen) != webhook.MaxAttempts {
			t.Fatalf("receiver saw %d requests, want %d", len(seen), webhook.MaxAttempts)
		}

		list, err := admins.ListDeadLetters(as(opAdmin), &cofferv1.ListDeadLettersRequest{})
		if err != nil || len(list.Deliveries) != 1 || list.Deliveries[0].EventId != id || list.Deliveries[0].Attempts != webhook.MaxAttempts {
			t.Fatalf("operator admin's dead letters: %v, %v; want the one event after %d attempts", list, err, webhook.MaxAttempts)
		}
		if d := list.Deliveries[0]; d.State != "dead" || d.LastError == "" || d.Payload == "" {
			t.Errorf("dead letter %v: want state dead, the last error and the payload", d)
		}
		if list, err := admins.ListDeadLetters(as(otherAdmin), &cofferv1.ListDeadLettersRequest{}); err != nil || len(list.Deliveries) != 0 {
			t.Errorf("another operator's admin sees %v, %v; want nothing", list, err)
		}
		team, err := ops.ListDeadLetteredWebhooks(as(env.OpsToken), &cofferv1.ListDeadLetteredWebhooksRequest{OperatorId: op.ID})
		if err != nil || len(team.Deliveries) != 1 {
			t.Errorf("service team's dead letters: %v, %v", team, err)
		}

		_, err = admins.RedeliverWebhook(as(otherAdmin), &cofferv1.RedeliverWebhookRequest{EventId: id})
		wantConnectError(t, "another operator's admin redelivers", err, connect.CodeNotFound, "NOT_FOUND")

		r.SetDown(false)
		var res *cofferv1.RedeliverWebhookResponse
		for i := 0; ; i++ { // the job that dead-lettered it may still be finishing
			res, err = admins.RedeliverWebhook(as(opAdmin), &cofferv1.RedeliverWebhookRequest{EventId: id})
			if code, _ := connectErrorInfo(err); err == nil || code != connect.CodeAborted || i == 50 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil || res.Delivery.EventId != id {
			t.Fatalf("redeliver: %v, %v", res, err)
		}
		waitEventState(t, env, id, "delivered")
		time.Sleep(300 * time.Millisecond)
		seen, got := r.Attempts(), r.All()
		if len(got) != 1 || got[0].ID != id {
			t.Fatalf("acknowledged %v, want one webhook with id %s", got, id)
		}
		for i, s := range seen {
			if s != id {
				t.Errorf("request %d had webhook-id %s, want %s", i+1, s, id)
			}
		}
		_, err = admins.RedeliverWebhook(as(opAdmin), &cofferv1.RedeliverWebhookRequest{EventId: id})
		if code, reason := connectErrorInfo(err); err == nil || reason == "" {
			t.Errorf("redelivering a delivered webhook: %v (%v %s), want a refusal", err, code, reason)
		}
		if list, _ := admins.ListDeadLetters(as(opAdmin), &cofferv1.ListDeadLettersRequest{}); len(list.GetDeliveries()) != 0 {
			t.Errorf("dead letters after redelivery: %v", list.GetDeliveries())
		}
	})
}

// webhookFamily is a running Coffer with a parent operator and its child (their API keys), both
// sending their webhooks to r, and a SessionService client.
type webhookFamily struct {
	env                 *apptest.Env
	r                   *hooktest.Receiver
	parentKey, childKey string
	sessions            cofferv1connect.SessionServiceClient
}

func startWebhookFamily(t *testing.T) webhookFamily {
	t.Helper()
	f := webhookFamily{env: apptest.Start(t, apptest.Options{}), r: hooktest.New(t)}
	var parent domain.Operator
	parent, f.parentKey = f.r.Operator(t, f.env, domain.OperatorSettings{})
	_, f.childKey = f.r.Operator(t, f.env, domain.OperatorSettings{ParentID: &parent.ID})
	f.sessions = cofferv1connect.NewSessionServiceClient(http.DefaultClient, f.env.URL)
	return f
}

// TestTestWebhook: POST /session/:uuid/test-webhook sends a real, signed DEPOSIT or
// WITHDRAW_COMPLETE with test=true and the body's overrides; the depositId is negative and the
// same for the same session; a sub-operator's session is accepted; the sixth call in a minute
// is refused with RATE_LIMITED and Retry-After.
func TestTestWebhook(t *testing.T) {
	t.Parallel()
	f := startWebhookFamily(t)
	env, r, key, subKey, sessions := f.env, f.r, f.parentKey, f.childKey, f.sessions
	newSession := func(k string, withdraw bool) string {
		t.Helper()
		if withdraw {
			res, err := sessions.CreateWithdrawSession(withBearer(t.Context(), k), &cofferv1.CreateWithdrawSessionRequest{
				ExternalUserId: "alice", Lang: "en", PlatformFiatCurrency: "usd", Amount: "40.00", UserBalance: "100.00"})
			if err != nil {
				t.Fatal(err)
			}
			return res.Sid
		}
		res, err := sessions.CreateDepositSession(withBearer(t.Context(), k), depositSessionRequest(""))
		if err != nil {
			t.Fatal(err)
		}
		return res.Sid
	}
	depositSid, withdrawSid := newSession(key, false), newSession(key, true)
	subSid := newSession(subKey, false)

	send := func(sid, body string) (int, map[string]any) {
		return restOutcome(t, env, "POST", "/session/"+sid+"/test-webhook", key, body)
	}
	lastDeposit := func() *cofferv1.DepositEvent {
		t.Helper()
		got := r.All()
		d, ok := got[len(got)-1].Parsed.(*cofferv1.DepositEvent)
		if !ok {
			t.Fatalf("last webhook is %T, want a DEPOSIT", got[len(got)-1].Parsed)
		}
		return d
	}

	status, data := send(depositSid, "")
	if status != 200 || data["delivered"] != true || data["status"] != float64(200) || data["event"] != "DEPOSIT" {
		t.Fatalf("test DEPOSIT: %d %v", status, data)
	}
	first := lastDeposit()
	if !first.Test || first.DepositId >= 0 || first.Event != "DEPOSIT" {
		t.Errorf("test DEPOSIT: test=%v depositId=%d event=%s; want test, a negative id, DEPOSIT", first.Test, first.DepositId, first.Event)
	}
	if first.DepositId != webhook.TestDepositID(depositSid) {
		t.Errorf("depositId %d, want %d (derived from the session)", first.DepositId, webhook.TestDepositID(depositSid))
	}

	status, data = send(depositSid, `{"amount":"12.5","currency":"USDC","chainId":1337}`)
	if status != 200 || data["delivered"] != true {
		t.Fatalf("test DEPOSIT with overrides: %d %v", status, data)
	}
	second := lastDeposit()
	if second.DepositId != first.DepositId {
		t.Errorf("second test DEPOSIT of the session has id %d, first %d: want the same", second.DepositId, first.DepositId)
	}
	// 12.5 USDC in its smallest unit (6 decimals), on the USDC contract of chain 1337.
	usdc := apptest.TestChains()[0].Tokens[1].ContractAddress.Hex()
	if second.Amount != "12500000" || !strings.EqualFold(second.GetContractAddress(), usdc) || second.ChainId != 1337 {
		t.Errorf("overrides not applied: amount %s contract %s chain %d; want 12500000 on %s", second.Amount,
			second.GetContractAddress(), second.ChainId, usdc)
	}

	addr := "0x52908400098527886E0F7030069857D2E4169EE7"
	status, data = send(withdrawSid, `{"address":"`+addr+`"}`)
	if status != 200 || data["event"] != "WITHDRAW_COMPLETE" || data["delivered"] != true {
		t.Fatalf("test WITHDRAW_COMPLETE: %d %v", status, data)
	}
	got := r.All()
	if w, ok := got[len(got)-1].Parsed.(*cofferv1.WithdrawCompleteEvent); !ok || !w.Test || w.Address != addr {
		t.Errorf("test WITHDRAW_COMPLETE: %v", got[len(got)-1].Parsed)
	} else if _, err := uuid.Parse(w.WithdrawRequestId); err != nil || w.Type != "DIRECT_TRANSFER" || w.Status != "COMPLETED" ||
		w.SessionRef == "" || w.ExternalUserId == "" || w.CryptoCurrencyCode == "" || w.FiatCurrencyCode == "" ||
		w.FiatAmount == "" || w.GetCryptoAmountSent() == "" || w.GetAmountInUsd() == "" || w.CompletedAt == nil {
		t.Errorf("test WITHDRAW_COMPLETE lacks what a real one carries: %v", w)
	}

	// The parent's key reaches its sub-operator's session; the webhook goes to the
	// sub-operator's endpoint, signed with the sub-operator's key.
	status, data = send(subSid, "")
	if status != 200 || data["event"] != "DEPOSIT" || data["delivered"] != true {
		t.Errorf("sub-operator's session with the parent's key: %d %v, want 200 and delivered", status, data)
	}

	// Four calls so far this minute; the fifth passes, the sixth is refused.
	if status, data = send(depositSid, ""); status != 200 {
		t.Fatalf("fifth call: %d %v", status, data)
	}
	res := env.Do(t, "POST", "/session/"+depositSid+"/test-webhook", key, "")
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	retry, _ := strconv.Atoi(res.Header.Get("Retry-After"))
	// The sliding minute frees its next place at most a minute and a fifth after five calls.
	if longest := int((testwebhook.Window + testwebhook.Window/testwebhook.Limit).Seconds()); res.StatusCode != http.StatusTooManyRequests ||
		retry < 1 || retry > longest {
		t.Errorf("sixth call: %d, Retry-After %q, %s; want 429 with Retry-After 1..%d", res.StatusCode, res.Header.Get("Retry-After"), body, longest)
	}
	if want := `"code":"RATE_LIMITED"`; !strings.Contains(string(body), want) {
		t.Errorf("sixth call body %s, want %s", body, want)
	}
	// The limit is per operator: the sub-operator has its own.
	if status, data := restOutcome(t, env, "POST", "/session/"+subSid+"/test-webhook", subKey, ""); status != 200 {
		t.Errorf("sub-operator's own first call: %d %v", status, data)
	}
	if seen := r.Attempts(); len(seen) != 6 {
		t.Errorf("receiver saw %d requests, want 6 (the refused call sends nothing)", len(seen))
	}
	// Another operator's key on this operator's session is refused (and sends nothing).
	_, strangerKey := env.Operator(t, domain.OperatorSettings{})
	if status, data := restOutcome(t, env, "POST", "/session/"+depositSid+"/test-webhook", strangerKey, ""); status != 404 || data["code"] != "NOT_FOUND" {
		t.Errorf("another operator's key: %d %v, want 404 NOT_FOUND", status, data)
	}
	// The scope reaches down only: a sub-operator's key cannot fire at its parent's endpoint.
	if status, data := restOutcome(t, env, "POST", "/session/"+withdrawSid+"/test-webhook", subKey, ""); status != 404 || data["code"] != "NOT_FOUND" {
		t.Errorf("a sub-operator's key on its parent's session: %d %v, want 404 NOT_FOUND", status, data)
	}
	if seen := r.Attempts(); len(seen) != 6 {
		t.Errorf("receiver saw %d requests, want still 6 (refused calls send nothing)", len(seen))
	}
}

// What was seen: a parent could fire test webhooks at its children's endpoints, and the limit
// counted per caller only. An endpoint receives at most 5 a minute whoever sends them.
func TestTestWebhookLimitPerReceivingOperator(t *testing.T) {
	t.Parallel()
	f := startWebhookFamily(t)
	env, r, parentKey, childKey, sessions := f.env, f.r, f.parentKey, f.childKey, f.sessions
	res, err := sessions.CreateDepositSession(withBearer(t.Context(), childKey), depositSessionRequest(""))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if status, data := restOutcome(t, env, "POST", "/session/"+res.Sid+"/test-webhook", parentKey, ""); status != 200 {
			t.Fatalf("parent's call %d to the child's endpoint: %d %v", i+1, status, data)
		}
	}
	// The child has sent none itself, but its endpoint has had its five.
	status, data := restOutcome(t, env, "POST", "/session/"+res.Sid+"/test-webhook", childKey, "")
	if status != http.StatusTooManyRequests || data["code"] != "RATE_LIMITED" {
		t.Fatalf("the child's first call after five to its endpoint: %d %v, want 429", status, data)
	}
	if seen := r.Attempts(); len(seen) != 5 {
		t.Fatalf("the child's endpoint received %d test webhooks, want 5", len(seen))
	}
}

// A theme's logoUrl is an https URL or a small raster data URI: javascript:, http:, SVG and
// other schemes are refused by the server, whatever client sends them.
func TestThemeLogoURLs(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	op, _ := env.Operator(t, domain.OperatorSettings{})
	_, token := env.Admin(t, "")
	panel := cofferv1connect.NewAdminServiceClient(http.DefaultClient, env.URL)
	for i, c := range []struct {
		logo string
		ok   bool
	}{
		{"https://cdn.example/logo.png", true},
		{"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", true},
		{"javascript:alert(document.cookie)", false},
		{"JavaScript:alert(1)", false},
		{"http://cdn.example/logo.png", false},
		{"data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+", false},
		{"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", false},
		{"vbscript:msgbox", false},
		{"//evil.example/logo.png", false},
	} {
		_, err := panel.CreateTheme(withBearer(t.Context(), token), &cofferv1.CreateThemeRequest{OperatorId: op.ID,
			Slug: fmt.Sprintf("logo-%d", i), Name: "Logo", Style: &cofferv1.ThemeStyle{PrimaryColor: "#112233",
				BackgroundColor: "#ffffff", TextColor: "#000000", LogoUrl: c.logo}})
		if got := err == nil; got != c.ok {
			t.Errorf("%s: accepted=%v (%v), want %v", c.logo, got, err, c.ok)
		}
		if !c.ok && connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("%s: %v, want invalid_argument", c.logo, err)
		}
	}
}
