package legacy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/withdrawal"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenHeaders are the response headers a golden file records, when the response has them.
var goldenHeaders = []string{"Content-Type", "Cache-Control", "Allow", "Retry-After"}

// placeholders replace volatile values in response bodies, in order.
var placeholders = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`), "http://<host>"},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uuid>"},
	{regexp.MustCompile(`\bsr_[0-9A-Za-z]+`), "<sessionRef>"},
	{regexp.MustCompile(`("address":"|"depositAddress":"|address=)0x[0-9a-fA-F]{40}`), "${1}<depositAddress>"},
	{regexp.MustCompile(`\bsk_[0-9A-Za-z]+`), "<operatorKey>"},
	{regexp.MustCompile(`\badm_[0-9A-Za-z]+`), "<adminToken>"},
	{regexp.MustCompile(`"nextCursor":"[^"]+"`), `"nextCursor":"<cursor>"`},
	{regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})`), "<time>"},
}

// goldenFile is the layout of testdata/golden/<name>.json.
type goldenFile struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// normalize renders a response as its golden file: volatile values replaced, the body's field
// order kept, pretty-printed.
func normalize(t testing.TB, res response) []byte {
	t.Helper()
	body := bytes.TrimSpace(res.body)
	if !json.Valid(body) {
		t.Fatalf("response body is not JSON: %q", res.body)
	}
	for _, p := range placeholders {
		body = p.re.ReplaceAll(body, []byte(p.with))
	}
	g := goldenFile{Status: res.status, Headers: map[string]string{}, Body: body}
	for _, h := range goldenHeaders {
		v := res.header.Get(h)
		if v == "" {
			continue
		}
		if h == "Retry-After" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				t.Errorf("Retry-After %q is not a positive number of seconds", v)
			}
			v = "<seconds>"
		}
		g.Headers[h] = v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(g); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkGolden compares a response with testdata/golden/<name>.json, or rewrites the file
// under -update.
func checkGolden(t testing.TB, name string, res response) {
	t.Helper()
	got := normalize(t, res)
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run: go test ./server/internal/legacy -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (rerun with -update if the change is intended)\n--- got\n%s--- want\n%s", path, got, want)
	}
}

const (
	someUUID    = "7a8b9c0d-1111-4222-8333-444455556666"
	unknownUUID = "00000000-0000-4000-8000-000000000000"
)

// insertWithdrawal records a withdrawal of 25.00 USD (25 USDT) with a fixed id.
func insertWithdrawal(t *testing.T, env *apptest.Env, id, operatorID, sid string, status domain.WithdrawalStatus) {
	t.Helper()
	mode := domain.ApprovalSync
	if status == domain.WithdrawalAwaitingApproval {
		mode = domain.ApprovalExternal
	}
	amount := decimal.RequireFromString("25.00")
	env.InsertWithdrawal(t, domain.Withdrawal{ID: id, OperatorID: operatorID, SessionID: sid,
		ExternalUserID: "golden", Type: "DIRECT_TRANSFER", ApprovalMode: mode, Status: status, ChainID: 1337, Currency: "USDT",
		ContractAddress: "0x00000000000000000000000000000000000000a1", Decimals: 6, Address: "0x52908400098527886E0F7030069857D2E4169EE7",
		FiatCurrency: "USD", FiatAmount: amount, CryptoAmount: decimal.NewFromInt(25_000_000), ExpiresAt: time.Now().Add(24 * time.Hour),
		AmountInUSD: decimal.NewNullDecimal(amount), CapAmount: decimal.NewNullDecimal(amount)})
}

type goldenCase struct {
	name string
	req  request
	// before runs just before the request (state the case needs).
	before func(t *testing.T)
}

func TestGolden(t *testing.T) {
	env := apptest.StartAPI(t)
	// The operator's webhook receiver acknowledges everything (test webhooks are really sent).
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		// A failed write shows as the request's own failure, which the case checks.
		_, _ = w.Write([]byte(`{"error":0,"description":"received"}`))
	}))
	t.Cleanup(receiver.Close)
	op, key := env.Operator(t, domain.OperatorSettings{WebhookURL: &receiver.URL})
	_, otherKey := env.Operator(t, domain.OperatorSettings{})
	inactive := false
	_, inactiveKey := env.Operator(t, domain.OperatorSettings{Active: &inactive})
	adm, adminToken := env.Admin(t, "")

	depSid, _, _ := openSession(t, env, key, "deposit", map[string]any{"externalUserId": "golden-dep"})
	wdSid, _, _ := openSession(t, env, key, "withdraw", map[string]any{"externalUserId": "golden-wd"})
	expiredDepSid, _, _ := openSession(t, env, key, "deposit", map[string]any{"externalUserId": "golden-expired-dep"})
	expiredWdSid, _, _ := openSession(t, env, key, "withdraw", map[string]any{"externalUserId": "golden-expired-wd"})
	env.ExpireSession(t, expiredDepSid)
	env.ExpireSession(t, expiredWdSid)
	otherSid, _, _ := openSession(t, env, otherKey, "deposit", nil)

	// Withdrawals: an operator whose receiver refuses (code 2), and mode-B operators, one not
	// enabled to release withdrawals and one with a per-transaction cap below 25.00.
	refuser := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"error":2,"description":"balance 3.10"}`))
	}))
	t.Cleanup(refuser.Close)
	_, refuserKey := env.Operator(t, domain.OperatorSettings{WebhookURL: &refuser.URL})
	refusedSid, _, _ := openSession(t, env, refuserKey, "withdraw", map[string]any{"externalUserId": "golden-refused"})
	external, enabled, disabled, lowCap := domain.ApprovalExternal, true, false, "10"
	notEnabledOp, notEnabledKey := env.Operator(t, domain.OperatorSettings{WebhookURL: &receiver.URL, ApprovalMode: &external,
		ApprovalEnabled: &disabled})
	cappedOp, cappedKey := env.Operator(t, domain.OperatorSettings{WebhookURL: &receiver.URL, ApprovalMode: &external,
		ApprovalEnabled: &enabled, PerTxCap: &lowCap})
	notEnabledSid, _, _ := openSession(t, env, notEnabledKey, "withdraw", map[string]any{"externalUserId": "golden-b1"})
	cappedSid, _, _ := openSession(t, env, cappedKey, "withdraw", map[string]any{"externalUserId": "golden-b2"})
	modeBSid, _, _ := openSession(t, env, notEnabledKey, "withdraw", map[string]any{"externalUserId": "golden-b3"})
	const (
		notEnabledWd = "5a000000-0000-4000-8000-000000000001"
		cappedWd     = "5a000000-0000-4000-8000-000000000002"
		rejectedWd   = "5a000000-0000-4000-8000-000000000003"
		pendingWd    = "5a000000-0000-4000-8000-000000000004"
	)
	insertWithdrawal(t, env, notEnabledWd, notEnabledOp.ID, notEnabledSid, "AWAITING_APPROVAL")
	insertWithdrawal(t, env, cappedWd, cappedOp.ID, cappedSid, "AWAITING_APPROVAL")
	insertWithdrawal(t, env, rejectedWd, cappedOp.ID, cappedSid, "AWAITING_APPROVAL")
	adminSid, _, _ := openSession(t, env, key, "withdraw", map[string]any{"externalUserId": "golden-admin"})
	insertWithdrawal(t, env, pendingWd, op.ID, adminSid, "PENDING")
	// A session whose withdrawal an admin took (PROCESSING): it pays out no more.
	const processingWd = "5a000000-0000-4000-8000-000000000005"
	processingSid, _, _ := openSession(t, env, key, "withdraw", map[string]any{"externalUserId": "golden-processing"})
	insertWithdrawal(t, env, processingWd, op.ID, processingSid, "PROCESSING")
	limitedSid, _, _ := openSession(t, env, key, "withdraw", map[string]any{"externalUserId": "golden-limited"})
	// A withdrawal the expiry job closed, and a PROCESSING one of an operator made inactive.
	const expiredWd, inactiveWd = "5a000000-0000-4000-8000-000000000006", "5a000000-0000-4000-8000-000000000007"
	expiredSid, _, _ := openSession(t, env, cappedKey, "withdraw", map[string]any{"externalUserId": "golden-expired"})
	insertWithdrawal(t, env, expiredWd, cappedOp.ID, expiredSid, "EXPIRED")
	lapsedOp, lapsedKey := env.Operator(t, domain.OperatorSettings{WebhookURL: &receiver.URL})
	lapsedSid, _, _ := openSession(t, env, lapsedKey, "withdraw", map[string]any{"externalUserId": "golden-lapsed"})
	insertWithdrawal(t, env, inactiveWd, lapsedOp.ID, lapsedSid, "PROCESSING")
	env.Fund(t, lapsedOp.ID, 1337, "USDT", "100")
	if _, err := env.Services.Operators.Update(context.Background(), lapsedOp.ID, domain.OperatorSettings{Active: &inactive}); err != nil {
		t.Fatal(err)
	}
	child, _ := env.Operator(t, domain.OperatorSettings{ParentID: &op.ID})
	openSession(t, env, key, "withdraw", map[string]any{"operatorReference": "golden-withdraw-ref"})
	openSession(t, env, key, "deposit", map[string]any{"operatorReference": "golden-deposit-ref"})

	tooBig := `{"externalUserId":"` + strings.Repeat("x", 70<<10) + `"}`
	addressBody := func(sid string) string {
		return `{"sid":"` + sid + `","currency":"USDT","chainId":1337}`
	}
	transferBody := func(sid string) string {
		return `{"sid":"` + sid + `","address":"0x00000000000000000000000000000000000000b1","currency":"USDT","chainId":1337}`
	}
	login := func(password string) string {
		return `{"email":"` + adm.Email + `","password":"` + password + `"}`
	}
	throttledEmail := "throttled@coffer.test"
	statusPath := "/admin/withdrawals/" + someUUID + "/status"
	decisionPath := "/withdraw/" + someUUID + "/decision"

	cases := []goldenCase{
		// POST /session/deposit
		{name: "session_deposit_ok", req: request{method: "POST", path: "/session/deposit", bearer: key,
			body: sessionBody(map[string]any{"email": "user@example.com"})}},
		{name: "session_deposit_invalid_amount", req: request{method: "POST", path: "/session/deposit", bearer: key,
			body: sessionBody(map[string]any{"amount": "abc"})}},
		{name: "session_deposit_missing_amount", req: request{method: "POST", path: "/session/deposit", bearer: key,
			body: sessionBody(map[string]any{"amount": nil})}},
		{name: "session_deposit_empty_object", req: request{method: "POST", path: "/session/deposit", bearer: key, body: `{}`}},
		{name: "session_deposit_unknown_field", req: request{method: "POST", path: "/session/deposit", bearer: key,
			body: sessionBody(map[string]any{"callbackUrl": "https://x.example"})}},
		{name: "session_deposit_wrong_type", req: request{method: "POST", path: "/session/deposit", bearer: key,
			body: sessionBody(map[string]any{"amount": 25})}},
		{name: "session_deposit_malformed_json", req: request{method: "POST", path: "/session/deposit", bearer: key,
			body: `{"externalUserId":`}},
		{name: "session_deposit_empty_body", req: request{method: "POST", path: "/session/deposit", bearer: key}},
		{name: "session_deposit_unauthenticated", req: request{method: "POST", path: "/session/deposit", body: sessionBody(nil)}},
		{name: "session_deposit_invalid_key", req: request{method: "POST", path: "/session/deposit", bearer: "sk_not_a_real_key",
			body: sessionBody(nil)}},
		{name: "session_deposit_forbidden_admin_token", req: request{method: "POST", path: "/session/deposit", bearer: adminToken,
			body: sessionBody(nil)}},
		{name: "session_deposit_forbidden_inactive_operator", req: request{method: "POST", path: "/session/deposit",
			bearer: inactiveKey, body: sessionBody(nil)}},
		{name: "session_deposit_conflict_reference", req: request{method: "POST", path: "/session/deposit", bearer: key,
			body: sessionBody(map[string]any{"externalUserId": "golden-withdraw-ref-user", "operatorReference": "golden-withdraw-ref"})}},
		// golden-deposit-ref names a live deposit session of user-1 for 25.00 USD.
		{name: "session_deposit_conflict_reference_user", req: request{method: "POST", path: "/session/deposit", bearer: key,
			body: sessionBody(map[string]any{"externalUserId": "user-2", "operatorReference": "golden-deposit-ref"})}},
		{name: "session_deposit_conflict_reference_amount", req: request{method: "POST", path: "/session/deposit", bearer: key,
			body: sessionBody(map[string]any{"amount": "250.00", "operatorReference": "golden-deposit-ref"})}},
		{name: "session_deposit_conflict_reference_currency", req: request{method: "POST", path: "/session/deposit", bearer: key,
			body: sessionBody(map[string]any{"platformFiatCurrency": "EUR", "operatorReference": "golden-deposit-ref"})}},
		{name: "session_deposit_unpriced_currency", req: request{method: "POST", path: "/session/deposit", bearer: key,
			body: sessionBody(map[string]any{"platformFiatCurrency": "JPY"})}},
		{name: "session_deposit_method_not_allowed", req: request{method: "GET", path: "/session/deposit", bearer: key}},
		{name: "session_deposit_unsupported_media_type", req: request{method: "POST", path: "/session/deposit", bearer: key,
			contentType: "text/plain", body: sessionBody(nil)}},
		{name: "session_deposit_missing_content_type", req: request{method: "POST", path: "/session/deposit", bearer: key,
			contentType: noContentType, body: sessionBody(nil)}},
		{name: "session_deposit_payload_too_large", req: request{method: "POST", path: "/session/deposit", bearer: key, body: tooBig}},

		// POST /session/withdraw
		{name: "session_withdraw_ok", req: request{method: "POST", path: "/session/withdraw", bearer: key, body: sessionBody(nil)}},
		{name: "session_withdraw_invalid_balance", req: request{method: "POST", path: "/session/withdraw", bearer: key,
			body: sessionBody(map[string]any{"userBalance": "ten"})}},
		{name: "session_withdraw_invalid_currency", req: request{method: "POST", path: "/session/withdraw", bearer: key,
			body: sessionBody(map[string]any{"platformFiatCurrency": "USDT"})}},
		{name: "session_withdraw_unauthenticated", req: request{method: "POST", path: "/session/withdraw", body: sessionBody(nil)}},
		{name: "session_withdraw_forbidden_admin_token", req: request{method: "POST", path: "/session/withdraw", bearer: adminToken,
			body: sessionBody(nil)}},
		{name: "session_withdraw_conflict_reference", req: request{method: "POST", path: "/session/withdraw", bearer: key,
			body: sessionBody(map[string]any{"operatorReference": "golden-deposit-ref"})}},
		{name: "session_withdraw_unpriced_currency", req: request{method: "POST", path: "/session/withdraw", bearer: key,
			body: sessionBody(map[string]any{"platformFiatCurrency": "xyz"})}},
		{name: "session_withdraw_method_not_allowed", req: request{method: "PUT", path: "/session/withdraw", bearer: key,
			body: sessionBody(nil)}},
		{name: "session_withdraw_unsupported_media_type", req: request{method: "POST", path: "/session/withdraw", bearer: key,
			contentType: "application/x-www-form-urlencoded", body: "externalUserId=u"}},
		{name: "session_withdraw_payload_too_large", req: request{method: "POST", path: "/session/withdraw", bearer: key, body: tooBig}},

		// POST /session/{uuid}/test-webhook
		{name: "session_test_webhook_deposit", req: request{method: "POST", path: "/session/" + depSid + "/test-webhook", bearer: key}},
		{name: "session_test_webhook_withdraw_with_overrides", req: request{method: "POST", path: "/session/" + wdSid + "/test-webhook",
			bearer: key, body: `{"amount":"10","currency":"USDT","chainId":1337}`}},
		{name: "session_test_webhook_not_found_other_operator", req: request{method: "POST", path: "/session/" + otherSid + "/test-webhook", bearer: key}},
		{name: "session_test_webhook_not_found_unknown", req: request{method: "POST", path: "/session/" + unknownUUID + "/test-webhook", bearer: key}},
		{name: "session_test_webhook_invalid_sid", req: request{method: "POST", path: "/session/not-a-uuid/test-webhook", bearer: key}},
		{name: "session_test_webhook_sid_in_body", req: request{method: "POST", path: "/session/" + depSid + "/test-webhook", bearer: key,
			body: `{"sid":"` + depSid + `"}`}},
		{name: "session_test_webhook_invalid_chain_id", req: request{method: "POST", path: "/session/" + depSid + "/test-webhook", bearer: key,
			body: `{"chainId":"1337"}`}},
		{name: "session_test_webhook_unauthenticated", req: request{method: "POST", path: "/session/" + depSid + "/test-webhook"}},
		{name: "session_test_webhook_forbidden_admin_token", req: request{method: "POST", path: "/session/" + depSid + "/test-webhook", bearer: adminToken}},
		{name: "session_test_webhook_method_not_allowed", req: request{method: "GET", path: "/session/" + depSid + "/test-webhook", bearer: key}},

		// POST /depositor/create
		{name: "depositor_create_ok", req: request{method: "POST", path: "/depositor/create", bearer: key,
			body: `{"externalUserId":"golden-depositor","email":"golden@example.com"}`}},
		{name: "depositor_create_existing", req: request{method: "POST", path: "/depositor/create", bearer: key,
			body: `{"externalUserId":"golden-depositor"}`}},
		{name: "depositor_create_ok_without_email", req: request{method: "POST", path: "/depositor/create", bearer: key,
			body: `{"externalUserId":"golden-depositor-2"}`}},
		{name: "depositor_create_existing_same_email", req: request{method: "POST", path: "/depositor/create", bearer: key,
			body: `{"externalUserId":"golden-depositor","email":"golden@example.com"}`}},
		{name: "depositor_create_existing_email_updated", req: request{method: "POST", path: "/depositor/create", bearer: key,
			body: `{"externalUserId":"golden-depositor","email":"golden.new@example.com"}`}},
		{name: "depositor_create_existing_email_set", req: request{method: "POST", path: "/depositor/create", bearer: key,
			body: `{"externalUserId":"golden-depositor-2","email":"second@example.com"}`}},
		{name: "depositor_create_invalid_email", req: request{method: "POST", path: "/depositor/create", bearer: key,
			body: `{"externalUserId":"golden-depositor-3","email":"not-an-email"}`}},
		{name: "depositor_create_missing_external_user_id", req: request{method: "POST", path: "/depositor/create", bearer: key,
			body: `{"email":"golden@example.com"}`}},
		{name: "depositor_create_unauthenticated", req: request{method: "POST", path: "/depositor/create", body: `{"externalUserId":"x"}`}},
		{name: "depositor_create_forbidden_admin_token", req: request{method: "POST", path: "/depositor/create", bearer: adminToken,
			body: `{"externalUserId":"x"}`}},
		{name: "depositor_create_method_not_allowed", req: request{method: "GET", path: "/depositor/create", bearer: key}},
		{name: "depositor_create_unsupported_media_type", req: request{method: "POST", path: "/depositor/create", bearer: key,
			contentType: "text/plain", body: `{"externalUserId":"x"}`}},

		// GET /depositor/{externalUserId}/check
		{name: "depositor_check_found", req: request{method: "GET", path: "/depositor/golden-depositor/check", bearer: key}},
		{name: "depositor_check_absent", req: request{method: "GET", path: "/depositor/nobody/check", bearer: key}},
		{name: "depositor_create_unicode_slash", req: request{method: "POST", path: "/depositor/create", bearer: key,
			body: `{"externalUserId":"usér/1 2"}`}},
		{name: "depositor_check_escaped_path", req: request{method: "GET", path: "/depositor/us%C3%A9r%2F1%202/check", bearer: key}},
		{name: "depositor_check_too_long", req: request{method: "GET", path: "/depositor/" + strings.Repeat("u", 129) + "/check", bearer: key}},
		{name: "depositor_check_unauthenticated", req: request{method: "GET", path: "/depositor/golden-depositor/check"}},
		{name: "depositor_check_forbidden_admin_token", req: request{method: "GET", path: "/depositor/golden-depositor/check", bearer: adminToken}},
		{name: "depositor_check_method_not_allowed", req: request{method: "POST", path: "/depositor/golden-depositor/check", bearer: key,
			body: `{}`}},

		// POST /depositor/address
		{name: "depositor_address_ok", req: request{method: "POST", path: "/depositor/address", body: addressBody(depSid)}},
		{name: "depositor_address_session_expired", req: request{method: "POST", path: "/depositor/address", body: addressBody(expiredDepSid)}},
		{name: "depositor_address_unknown_session", req: request{method: "POST", path: "/depositor/address", body: addressBody(unknownUUID)}},
		{name: "depositor_address_forbidden_withdraw_session", req: request{method: "POST", path: "/depositor/address", body: addressBody(wdSid)}},
		{name: "depositor_address_invalid_sid", req: request{method: "POST", path: "/depositor/address", body: addressBody("not-a-uuid")}},
		{name: "depositor_address_chain_id_string", req: request{method: "POST", path: "/depositor/address",
			body: `{"sid":"` + depSid + `","currency":"USDT","chainId":"1337"}`}},
		{name: "depositor_address_method_not_allowed", req: request{method: "GET", path: "/depositor/address"}},
		{name: "depositor_address_unsupported_media_type", req: request{method: "POST", path: "/depositor/address",
			contentType: "text/plain", body: addressBody(depSid)}},
		// golden-dep's address was assigned by depositor_address_ok: both depositor calls show it.
		{name: "depositor_check_with_address", req: request{method: "GET", path: "/depositor/golden-dep/check", bearer: key}},
		{name: "depositor_create_existing_with_address", req: request{method: "POST", path: "/depositor/create", bearer: key,
			body: `{"externalUserId":"golden-dep"}`}},

		// GET /chain
		{name: "chain_ok", req: request{method: "GET", path: "/chain"}},
		{name: "chain_method_not_allowed", req: request{method: "POST", path: "/chain", body: `{}`}},

		// POST /withdraw/direct-transfer
		{name: "withdraw_direct_transfer_ok", req: request{method: "POST", path: "/withdraw/direct-transfer", body: transferBody(wdSid)}},
		{name: "withdraw_direct_transfer_denied", req: request{method: "POST", path: "/withdraw/direct-transfer", body: transferBody(refusedSid)}},
		{name: "withdraw_direct_transfer_mode_b", req: request{method: "POST", path: "/withdraw/direct-transfer", body: transferBody(modeBSid)}},
		{name: "withdraw_direct_transfer_bad_checksum", req: request{method: "POST", path: "/withdraw/direct-transfer",
			body: `{"sid":"` + wdSid + `","address":"0x52908400098527886e0F7030069857D2E4169EE7","currency":"USDT","chainId":1337}`}},
		{name: "withdraw_direct_transfer_zero_address", req: request{method: "POST", path: "/withdraw/direct-transfer",
			body: `{"sid":"` + wdSid + `","address":"0x0000000000000000000000000000000000000000","currency":"USDT","chainId":1337}`}},
		{name: "withdraw_direct_transfer_unknown_chain", req: request{method: "POST", path: "/withdraw/direct-transfer",
			body: `{"sid":"` + wdSid + `","address":"0x00000000000000000000000000000000000000b1","currency":"USDT","chainId":99}`}},
		{name: "withdraw_direct_transfer_session_expired", req: request{method: "POST", path: "/withdraw/direct-transfer", body: transferBody(expiredWdSid)}},
		{name: "withdraw_direct_transfer_unknown_session", req: request{method: "POST", path: "/withdraw/direct-transfer", body: transferBody(unknownUUID)}},
		{name: "withdraw_direct_transfer_forbidden_deposit_session", req: request{method: "POST", path: "/withdraw/direct-transfer", body: transferBody(depSid)}},
		{name: "withdraw_direct_transfer_invalid_address", req: request{method: "POST", path: "/withdraw/direct-transfer",
			body: `{"sid":"` + wdSid + `","address":"0x1234","currency":"USDT","chainId":1337}`}},
		{name: "withdraw_direct_transfer_method_not_allowed", req: request{method: "GET", path: "/withdraw/direct-transfer"}},
		{name: "withdraw_direct_transfer_conflict_processing", req: request{method: "POST", path: "/withdraw/direct-transfer",
			body: transferBody(processingSid)}},
		{name: "withdraw_direct_transfer_rate_limited", req: request{method: "POST", path: "/withdraw/direct-transfer", body: transferBody(limitedSid)},
			before: func(t *testing.T) {
				t.Helper()
				for i := range withdrawal.SubmitLimit {
					if res := send(t, env, request{method: "POST", path: "/withdraw/direct-transfer", body: transferBody(limitedSid)}); res.status != http.StatusOK {
						t.Fatalf("submission %d: %d %s", i+1, res.status, res.body)
					}
				}
			}},

		// POST /withdraw/{id}/decision
		{name: "withdraw_decision_not_found", req: request{method: "POST", path: decisionPath, bearer: key, body: `{"decision":"APPROVE"}`}},
		{name: "withdraw_decision_held_not_enabled", req: request{method: "POST", path: "/withdraw/" + notEnabledWd + "/decision",
			bearer: notEnabledKey, body: `{"decision":"APPROVE"}`}},
		{name: "withdraw_decision_held_cap_exceeded", req: request{method: "POST", path: "/withdraw/" + cappedWd + "/decision",
			bearer: cappedKey, body: `{"decision":"APPROVE"}`}},
		{name: "withdraw_decision_reject", req: request{method: "POST", path: "/withdraw/" + rejectedWd + "/decision",
			bearer: cappedKey, body: `{"decision":"REJECT","reason":"suspicious"}`}},
		{name: "withdraw_decision_repeated", req: request{method: "POST", path: "/withdraw/" + rejectedWd + "/decision",
			bearer: cappedKey, body: `{"decision":"APPROVE"}`}},
		{name: "withdraw_decision_other_operator", req: request{method: "POST", path: "/withdraw/" + cappedWd + "/decision",
			bearer: key, body: `{"decision":"APPROVE"}`}},
		{name: "withdraw_decision_mode_a_refused", req: request{method: "POST", path: "/withdraw/" + pendingWd + "/decision",
			bearer: key, body: `{"decision":"APPROVE"}`}},
		{name: "withdraw_decision_invalid_decision", req: request{method: "POST", path: decisionPath, bearer: key, body: `{"decision":"MAYBE"}`}},
		{name: "withdraw_decision_missing_decision", req: request{method: "POST", path: decisionPath, bearer: key, body: `{"reason":"x"}`}},
		{name: "withdraw_decision_invalid_id", req: request{method: "POST", path: "/withdraw/not-a-uuid/decision", bearer: key,
			body: `{"decision":"APPROVE"}`}},
		{name: "withdraw_decision_id_in_body", req: request{method: "POST", path: decisionPath, bearer: key,
			body: `{"decision":"APPROVE","withdrawRequestId":"` + someUUID + `"}`}},
		{name: "withdraw_decision_unauthenticated", req: request{method: "POST", path: decisionPath, body: `{"decision":"APPROVE"}`}},
		{name: "withdraw_decision_forbidden_admin_token", req: request{method: "POST", path: decisionPath, bearer: adminToken,
			body: `{"decision":"APPROVE"}`}},
		{name: "withdraw_decision_method_not_allowed", req: request{method: "GET", path: decisionPath, bearer: key}},

		{name: "withdraw_decision_expired_held", req: request{method: "POST", path: "/withdraw/" + expiredWd + "/decision",
			bearer: cappedKey, body: `{"decision":"APPROVE"}`}},

		// GET /balances
		{name: "balances_ok", req: request{method: "GET", path: "/balances", bearer: key},
			before: func(t *testing.T) {
				t.Helper()
				env.Fund(t, op.ID, 1337, "USDT", "125.5")
			}},
		{name: "balances_sub_operator", req: request{method: "GET", path: "/balances?operatorId=" + child.ID, bearer: key}},
		{name: "balances_not_found_other_operator", req: request{method: "GET", path: "/balances?operatorId=" + op.ID, bearer: otherKey}},
		{name: "balances_invalid_operator_id", req: request{method: "GET", path: "/balances?operatorId=42", bearer: key}},
		{name: "balances_unknown_parameter", req: request{method: "GET", path: "/balances?currency=USDT", bearer: key}},
		{name: "balances_unauthenticated", req: request{method: "GET", path: "/balances"}},
		{name: "balances_forbidden_admin_token", req: request{method: "GET", path: "/balances", bearer: adminToken}},
		{name: "balances_method_not_allowed", req: request{method: "POST", path: "/balances", bearer: key, body: `{}`}},

		// POST /admin/login
		{name: "admin_login_ok", req: request{method: "POST", path: "/admin/login", body: login(apptest.AdminPassword)}},
		{name: "admin_login_wrong_password", req: request{method: "POST", path: "/admin/login", body: login("wrong password")}},
		{name: "admin_login_missing_password", req: request{method: "POST", path: "/admin/login", body: `{"email":"` + adm.Email + `"}`}},
		{name: "admin_login_invalid_totp", req: request{method: "POST", path: "/admin/login",
			body: `{"email":"` + adm.Email + `","password":"x","totp":"12ab56"}`}},
		{name: "admin_login_unknown_field", req: request{method: "POST", path: "/admin/login",
			body: `{"username":"` + adm.Email + `","password":"x"}`}},
		{name: "admin_login_method_not_allowed", req: request{method: "GET", path: "/admin/login"}},
		{name: "admin_login_unsupported_media_type", req: request{method: "POST", path: "/admin/login", contentType: "text/plain",
			body: login(apptest.AdminPassword)}},
		{name: "admin_login_rate_limited", req: request{method: "POST", path: "/admin/login",
			body: `{"email":"` + throttledEmail + `","password":"wrong"}`},
			before: func(t *testing.T) {
				t.Helper()
				for i := range 10 {
					res := send(t, env, request{method: "POST", path: "/admin/login", body: `{"email":"` + throttledEmail + `","password":"wrong"}`})
					if res.status != http.StatusUnauthorized {
						t.Fatalf("failed login %d: %d %s", i+1, res.status, res.body)
					}
				}
			}},

		// GET /admin/withdrawals
		{name: "admin_withdrawals_filtered", req: request{method: "GET", bearer: adminToken,
			path: "/admin/withdrawals?operatorId=" + cappedOp.ID + "&status=REJECTED,AWAITING_APPROVAL&limit=1"}},
		{name: "admin_withdrawals_invalid_status", req: request{method: "GET", path: "/admin/withdrawals?status=DONE", bearer: adminToken}},
		{name: "admin_withdrawals_invalid_from", req: request{method: "GET", path: "/admin/withdrawals?from=yesterday", bearer: adminToken}},
		{name: "admin_withdrawals_unknown_parameter", req: request{method: "GET", path: "/admin/withdrawals?sort=asc", bearer: adminToken}},
		{name: "admin_withdrawals_invalid_page_token", req: request{method: "GET", path: "/admin/withdrawals?pageToken=xyz", bearer: adminToken}},
		{name: "admin_withdrawals_unauthenticated", req: request{method: "GET", path: "/admin/withdrawals"}},
		{name: "admin_withdrawals_invalid_token", req: request{method: "GET", path: "/admin/withdrawals", bearer: "adm_not_a_real_token"}},
		{name: "admin_withdrawals_forbidden_operator_key", req: request{method: "GET", path: "/admin/withdrawals", bearer: key}},
		{name: "admin_withdrawals_method_not_allowed", req: request{method: "POST", path: "/admin/withdrawals", bearer: adminToken, body: `{}`}},

		// PATCH /admin/withdrawals/{id}/status
		{name: "admin_withdrawal_status_not_found", req: request{method: "PATCH", path: statusPath, bearer: adminToken,
			body: `{"status":"PROCESSING","adminNote":"checked"}`}},
		{name: "admin_withdrawal_status_direct_jump_refused", req: request{method: "PATCH", path: "/admin/withdrawals/" + pendingWd + "/status",
			bearer: adminToken, body: `{"status":"COMPLETED","adminNote":"paid"}`}},
		{name: "admin_withdrawal_status_processing", req: request{method: "PATCH", path: "/admin/withdrawals/" + pendingWd + "/status",
			bearer: adminToken, body: `{"status":"PROCESSING","adminNote":"checked"}`}},
		{name: "admin_withdrawal_status_rejected", req: request{method: "PATCH", path: "/admin/withdrawals/" + pendingWd + "/status",
			bearer: adminToken, body: `{"status":"REJECTED","adminNote":"KYC failed"}`}},
		// op holds 125.5 USDT (balances_ok): a 25 USDT payout fits; a 250 USDT one does not.
		{name: "admin_withdrawal_status_completed_short_of_funds", req: request{method: "PATCH",
			path: "/admin/withdrawals/" + processingWd + "/status", bearer: adminToken, body: `{"status":"COMPLETED","adminNote":"pay"}`},
			before: func(t *testing.T) {
				t.Helper()
				if _, err := env.Pool.Exec(t.Context(), `UPDATE withdrawals SET crypto_amount = 250000000 WHERE id = $1`, processingWd); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "admin_withdrawal_status_completed_inactive_operator", req: request{method: "PATCH",
			path: "/admin/withdrawals/" + inactiveWd + "/status", bearer: adminToken, body: `{"status":"COMPLETED","adminNote":"pay"}`}},
		{name: "admin_withdrawal_status_pending_not_allowed", req: request{method: "PATCH", path: statusPath, bearer: adminToken,
			body: `{"status":"PENDING"}`}},
		{name: "admin_withdrawal_status_unknown_status", req: request{method: "PATCH", path: statusPath, bearer: adminToken,
			body: `{"status":"DONE"}`}},
		{name: "admin_withdrawal_status_invalid_id", req: request{method: "PATCH", path: "/admin/withdrawals/42/status", bearer: adminToken,
			body: `{"status":"PROCESSING"}`}},
		{name: "admin_withdrawal_status_unauthenticated", req: request{method: "PATCH", path: statusPath, body: `{"status":"PROCESSING"}`}},
		{name: "admin_withdrawal_status_forbidden_operator_key", req: request{method: "PATCH", path: statusPath, bearer: key,
			body: `{"status":"PROCESSING"}`}},
		{name: "admin_withdrawal_status_method_not_allowed", req: request{method: "POST", path: statusPath, bearer: adminToken,
			body: `{"status":"PROCESSING"}`}},

		// Unknown paths
		{name: "not_found_unknown_path", req: request{method: "GET", path: "/nope"}},
		{name: "not_found_unknown_post", req: request{method: "POST", path: "/session", bearer: key, body: sessionBody(nil)}},
		{name: "not_found_trailing_slash", req: request{method: "GET", path: "/chain/"}},
		{name: "not_found_deeper_path", req: request{method: "POST", path: "/session/deposit/extra", bearer: key, body: sessionBody(nil)}},
	}

	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate golden case %s", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			if c.before != nil {
				c.before(t)
			}
			res := send(t, env, c.req)
			checkGolden(t, c.name, res)
			checkEnvelopeShape(t, c.req, res)
		})
	}

	t.Run("repeated_operator_reference", func(t *testing.T) {
		for _, kind := range []string{"deposit", "withdraw"} {
			ref := "order-42-" + kind
			body := sessionBody(map[string]any{"operatorReference": ref})
			first := send(t, env, request{method: "POST", path: "/session/" + kind, bearer: key, body: body})
			sessions := env.Count(t, "sessions")
			// The same user, amount (numerically) and currency (any case); other fields may
			// differ: the live session is returned unchanged.
			again := send(t, env, request{method: "POST", path: "/session/" + kind, bearer: key,
				body: sessionBody(map[string]any{"operatorReference": ref, "amount": "25", "platformFiatCurrency": "usd", "lang": "de",
					"userBalance": "1.00"})})
			checkGolden(t, "session_"+kind+"_reference_first", first)
			checkGolden(t, "session_"+kind+"_reference_repeat", again)
			if first.status != http.StatusOK || again.status != http.StatusOK {
				t.Fatalf("%s: statuses %d, %d", kind, first.status, again.status)
			}
			if !bytes.Equal(bytes.TrimSpace(first.body), bytes.TrimSpace(again.body)) {
				t.Errorf("%s: a repeated operatorReference returned another session:\n%s\n%s", kind, first.body, again.body)
			}
			a, b := sessionOf(t, first), sessionOf(t, again)
			if a.URL == "" || a.URL != b.URL || a.SessionRef == "" || a.SessionRef != b.SessionRef {
				t.Errorf("%s: url/sessionRef differ: %+v vs %+v", kind, a, b)
			}
			if n := env.Count(t, "sessions"); n != sessions {
				t.Errorf("%s: a repeated operatorReference wrote a session (%d -> %d)", kind, sessions, n)
			}
			// Another operator may use the same reference: it gets its own session.
			other := send(t, env, request{method: "POST", path: "/session/" + kind, bearer: otherKey, body: body})
			if c := sessionOf(t, other); other.status != http.StatusOK || c.SessionRef == a.SessionRef || c.URL == a.URL {
				t.Errorf("%s: another operator's reference must open its own session: %d %s", kind, other.status, other.body)
			}
			// Once the session expired, the reference opens a new one and names it from then on.
			env.ExpireSession(t, apptest.SID(t, a.URL))
			renewed := send(t, env, request{method: "POST", path: "/session/" + kind, bearer: key, body: body})
			c := sessionOf(t, renewed)
			if renewed.status != http.StatusOK || c.SessionRef == a.SessionRef || c.URL == a.URL {
				t.Fatalf("%s: after expiry: %d %s", kind, renewed.status, renewed.body)
			}
			if d := sessionOf(t, send(t, env, request{method: "POST", path: "/session/" + kind, bearer: key, body: body})); d != c {
				t.Errorf("%s: the reference names %+v, want the new session %+v", kind, d, c)
			}
		}
	})
	// Known bugs, skipped until fixed.
	t.Run("chain_cache_control", func(t *testing.T) { chainCacheControl(t, env) })
	t.Run("enum_messages", func(t *testing.T) { enumMessages(t, env, adminToken) })
}

type sessionJSON struct {
	URL        string `json:"url"`
	SessionRef string `json:"sessionRef"`
}

// sessionOf decodes a session response's data.
func sessionOf(t *testing.T, res response) sessionJSON {
	t.Helper()
	var out struct {
		Data sessionJSON `json:"data"`
	}
	if err := json.Unmarshal(res.body, &out); err != nil {
		t.Fatalf("%v: %s", err, res.body)
	}
	return out.Data
}

// checkEnvelopeShape checks what every golden response shares, beyond the golden file: the
// envelope (or the raw value of /chain and /admin/*), and a status matching data.code.
func checkEnvelopeShape(t *testing.T, req request, res response) {
	t.Helper()
	if ct := res.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	raw := res.status == http.StatusOK && (req.path == "/chain" || strings.HasPrefix(req.path, "/admin/"))
	if raw {
		if bytes.HasPrefix(bytes.TrimSpace(res.body), []byte(`{"status"`)) {
			t.Errorf("%s must answer the raw value, not an envelope: %s", req.path, res.body)
		}
		return
	}
	env, data := decodeEnvelope(t, res)
	switch res.status {
	case http.StatusOK:
		if env.Status != "success" || env.Message == "" {
			t.Errorf("success envelope: %s", res.body)
		}
	default:
		if env.Status != "error" || env.Message == "" || data.Code == "" {
			t.Errorf("error envelope: %s", res.body)
		}
		want := map[string]int{
			"INVALID_ARGUMENT": 400, "UNAUTHENTICATED": 401, "FORBIDDEN": 403, "NOT_FOUND": 404,
			"METHOD_NOT_ALLOWED": 405, "CONFLICT": 409, "SESSION_EXPIRED": 410, "PAYLOAD_TOO_LARGE": 413,
			"UNSUPPORTED_MEDIA_TYPE": 415, "WITHDRAW_DENIED": 422, "FAILED_PRECONDITION": 422, "RATE_LIMITED": 429,
			"INTERNAL": 500, "NOT_IMPLEMENTED": 501, "UNAVAILABLE": 503,
		}[data.Code]
		if want != res.status {
			t.Errorf("data.code %s with HTTP %d (want %d)", data.Code, res.status, want)
		}
		if data.Code == "INVALID_ARGUMENT" && data.Field != "" && !strings.Contains(env.Message, data.Field) {
			t.Errorf("message %q does not name field %q", env.Message, data.Field)
		}
		if (res.status == http.StatusMethodNotAllowed) != (res.header.Get("Allow") != "") {
			t.Errorf("HTTP %d with Allow %q", res.status, res.header.Get("Allow"))
		}
		if (res.status == http.StatusTooManyRequests) != (res.header.Get("Retry-After") != "") {
			t.Errorf("HTTP %d with Retry-After %q", res.status, res.header.Get("Retry-After"))
		}
	}
}

// chainCacheControl: GET /chain is public and changes only with the chains file; its
// handler asks for public caching.
func chainCacheControl(t *testing.T, env *apptest.Env) {
	t.Helper()
	res := send(t, env, request{method: "GET", path: "/chain"})
	if got := res.header.Get("Cache-Control"); got != "public, max-age=60" {
		t.Errorf("Cache-Control %q, want %q", got, "public, max-age=60")
	}
}

// enumMessages: a refused enum value is explained with the spec's names, not protobuf
// numbers.
func enumMessages(t *testing.T, env *apptest.Env, adminToken string) {
	t.Helper()
	res := send(t, env, request{method: "PATCH", path: "/admin/withdrawals/" + someUUID + "/status", bearer: adminToken, body: `{"status":"PENDING"}`})
	msg, _ := decodeEnvelope(t, res)
	for _, name := range []string{"PROCESSING", "COMPLETED", "REJECTED"} {
		if !strings.Contains(msg.Message, name) {
			t.Errorf("message %q does not name %s", msg.Message, name)
		}
	}
}
