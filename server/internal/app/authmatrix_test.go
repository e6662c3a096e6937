package app_test

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	"github.com/cofferhq/coffer/gen/go/coffer/v1/cofferv1connect"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/auth"
	"github.com/cofferhq/coffer/server/internal/domain"
	"github.com/cofferhq/coffer/server/internal/session"
)

// The credentials of the matrix's columns.
const (
	credNone     = iota // no Authorization header
	credOperator        // Bearer <operator A's key>
	credOtherOp         // Bearer <operator B's key>
	credAdmin           // Bearer <service-team admin token>
	credOps             // Bearer <ops token>
	credSid             // no Authorization header; session-scoped endpoints get a valid sid of operator A in the body
	numCreds
)

var credNames = [numCreds]string{"none", "operator key", "other operator's key", "admin token", "ops token", "valid sid"}

// authMatrix is the authentication contract of every endpoint: per credential presented (the
// columns), the HTTP status of each REST route of legacy.go and the outcome of each Connect
// procedure (ok, or a connect.Code: unauth = Unauthenticated, denied = PermissionDenied,
// notfound = NotFound, unimpl = Unimplemented, unavail = Unavailable: the harness's test chain
// has no node, so a replay that passes authentication cannot reach one).
//
//   - Operator endpoints take only the operator key: none → 401, admin/ops token → 403.
//     Operator A's deposit, withdrawal and event are NOT_FOUND to operator B (never FORBIDDEN).
//   - Session-scoped endpoints (/depositor/address, /withdraw/direct-transfer, WidgetService)
//     authenticate by the sid alone. In every column but "sid" the body carries an unknown sid,
//     so a Bearer credential gets 401: it does not stand in for the sid.
//   - GET /chain, ChainService, /admin/login and AdminService.Login are public.
//   - /admin/* and AdminService take only the admin token; OpsService only the ops token.
//   - A withdrawal submitted with the real sid is refused by operator A's receiver, which
//     nothing answers: 422 / denied_wd (FailedPrecondition, reason WITHDRAW_DENIED, code 3).
//     Authentication runs first: every outcome past it appears only with the right credential.
//   - The other operator's key is a valid key: it opens its own sessions, and meets operator
//     A's session on test-webhook as 404 (see isolation_test.go).
//
//nolint:dupword // a row repeats an outcome across credentials: --fix must not merge cells
const authMatrix = `
endpoint                                  none      opKey     otherOp   admin     ops       sid
POST  /session/deposit                    401       200       200       403       403       401
POST  /session/withdraw                   401       200       200       403       403       401
POST  /session/{uuid}/test-webhook        401       200       404       403       403       401
POST  /depositor/create                   401       200       200       403       403       401
GET   /depositor/{externalUserId}/check   401       200       200       403       403       401
POST  /depositor/address                  401       401       401       401       401       200
GET   /chain                              200       200       200       200       200       200
POST  /withdraw/direct-transfer           401       401       401       401       401       422
POST  /withdraw/{id}/decision             401       404       404       403       403       401
POST  /admin/login                        200       200       200       200       200       200
GET   /admin/withdrawals                  401       403       403       200       403       401
PATCH /admin/withdrawals/{id}/status      401       403       403       404       403       401
GET   /balances                           401       200       200       403       403       401
GET   /deposits                           401       200       200       403       403       401
GET   /deposits/{depositId}               401       200       404       403       403       401
GET   /withdrawals                        401       200       200       403       403       401
GET   /withdrawals/{withdrawRequestId}    401       200       404       403       403       401
GET   /events                             401       200       200       403       403       401
POST  /events/{eventId}/redeliver         401       200       404       403       403       401

SessionService.CreateDepositSession       unauth    ok        ok        denied    denied    unauth
SessionService.CreateWithdrawSession      unauth    ok        ok        denied    denied    unauth
SessionService.SendTestWebhook            unauth    ok        notfound  denied    denied    unauth
DepositorService.CreateDepositor          unauth    ok        ok        denied    denied    unauth
DepositorService.CheckDepositor           unauth    ok        ok        denied    denied    unauth
WithdrawalService.DecideWithdrawal        unauth    notfound  notfound  denied    denied    unauth
WithdrawalService.GetWithdrawal           unauth    notfound  notfound  denied    denied    unauth
WithdrawalService.ListWithdrawals         unauth    ok        ok        denied    denied    unauth
BalanceService.ListBalances               unauth    ok        ok        denied    denied    unauth
DepositService.ListDeposits               unauth    ok        ok        denied    denied    unauth
DepositService.GetDeposit                 unauth    ok        notfound  denied    denied    unauth
EventService.ListEvents                   unauth    ok        ok        denied    denied    unauth
EventService.SubscribeEvents              unauth    ok        ok        denied    denied    unauth
EventService.RedeliverEvent               unauth    ok        notfound  denied    denied    unauth
ChainService.ListChains                   ok        ok        ok        ok        ok        ok
WidgetService.GetSession                  unauth    unauth    unauth    unauth    unauth    ok
WidgetService.GetDepositAddress           unauth    unauth    unauth    unauth    unauth    ok
WidgetService.WatchDeposits               unauth    unauth    unauth    unauth    unauth    ok
WidgetService.ListSessionDeposits         unauth    unauth    unauth    unauth    unauth    ok
WidgetService.QuoteWithdrawal             unauth    unauth    unauth    unauth    unauth    ok
WidgetService.SubmitWithdrawal            unauth    unauth    unauth    unauth    unauth    denied_wd
WidgetService.CancelSession               unauth    unauth    unauth    unauth    unauth    ok
AdminService.Login                        ok        ok        ok        ok        ok        ok
AdminService.Logout                       unauth    denied    denied    ok        denied    unauth
AdminService.GetMe                        unauth    denied    denied    ok        denied    unauth
AdminService.ListWithdrawals              unauth    denied    denied    ok        denied    unauth
AdminService.GetAdminWithdrawal           unauth    denied    denied    notfound  denied    unauth
AdminService.UpdateWithdrawalStatus       unauth    denied    denied    notfound  denied    unauth
AdminService.OverrideDecision             unauth    denied    denied    notfound  denied    unauth
AdminService.ListDeposits                 unauth    denied    denied    ok        denied    unauth
AdminService.ReplayDeposit                unauth    denied    denied    unavail   denied    unauth
AdminService.ListThemes                   unauth    denied    denied    ok        denied    unauth
AdminService.CreateTheme                  unauth    denied    denied    ok        denied    unauth
AdminService.UpdateTheme                  unauth    denied    denied    ok        denied    unauth
AdminService.DeleteTheme                  unauth    denied    denied    ok        denied    unauth
AdminService.ListDeadLetters              unauth    denied    denied    ok        denied    unauth
AdminService.RedeliverWebhook             unauth    denied    denied    notfound  denied    unauth
AdminService.ListOperatorFunds            unauth    denied    denied    ok        denied    unauth
AdminService.ListDepositReorgs            unauth    denied    denied    ok        denied    unauth
AdminService.ListPayoutPauses             unauth    denied    denied    ok        denied    unauth
AdminService.PausePayouts                 unauth    denied    denied    notfound  denied    unauth
AdminService.ResumePayouts                unauth    denied    denied    notfound  denied    unauth
AdminService.ListChainTransactions        unauth    denied    denied    ok        denied    unauth
AdminService.ResendChainTransaction       unauth    denied    denied    notfound  denied    unauth
AdminService.CancelChainTransaction       unauth    denied    denied    notfound  denied    unauth
AdminService.FailChainTransaction         unauth    denied    denied    notfound  denied    unauth
OpsService.CreateOperator                 unauth    denied    denied    denied    ok        unauth
OpsService.UpdateOperator                 unauth    denied    denied    denied    ok        unauth
OpsService.GetOperator                    unauth    denied    denied    denied    ok        unauth
OpsService.ListOperators                  unauth    denied    denied    denied    ok        unauth
OpsService.RotateOperatorKey              unauth    denied    denied    denied    ok        unauth
OpsService.CreateAdmin                    unauth    denied    denied    denied    ok        unauth
OpsService.ListDeadLetteredWebhooks       unauth    denied    denied    denied    ok        unauth
OpsService.RedeliverDeadLetter            unauth    denied    denied    denied    notfound  unauth
OpsService.ReplayMissedDeposit            unauth    denied    denied    denied    unavail   unauth
OpsService.GetTreasuryAddress             unauth    denied    denied    denied    ok        unauth
OpsService.ListOperatorBalances           unauth    denied    denied    denied    ok        unauth
OpsService.AdjustOperatorFunds            unauth    denied    denied    denied    ok        unauth
OpsService.Reconcile                      unauth    denied    denied    denied    unavail   unauth
OpsService.DisableAdmin                   unauth    denied    denied    denied    ok        unauth
OpsService.EnableAdmin                    unauth    denied    denied    denied    ok        unauth
OpsService.RevokeAdminSessions            unauth    denied    denied    denied    ok        unauth
OpsService.ListReorgedDeposits            unauth    denied    denied    denied    ok        unauth
OpsService.ResolveReorgedDeposit          unauth    denied    denied    denied    notfound  unauth
OpsService.PausePayouts                   unauth    denied    denied    denied    notfound  unauth
OpsService.ResumePayouts                  unauth    denied    denied    denied    notfound  unauth
OpsService.ListPayoutPauses               unauth    denied    denied    denied    ok        unauth
OpsService.ListChainTransactions          unauth    denied    denied    denied    ok        unauth
OpsService.ResendChainTransaction         unauth    denied    denied    denied    notfound  unauth
OpsService.CancelChainTransaction         unauth    denied    denied    denied    notfound  unauth
OpsService.FailChainTransaction           unauth    denied    denied    denied    notfound  unauth
OpsService.SetWalletThreshold             unauth    denied    denied    denied    notfound  unauth
OpsService.ListWalletThresholds           unauth    denied    denied    denied    ok        unauth
OpsService.ListSweepBatches               unauth    denied    denied    denied    ok        unauth
OpsService.SendTestEvent                  unauth    denied    denied    denied    notfound  unauth
`

// matrixRow is one line of authMatrix. endpoint is "METHOD /path" for a REST route and the
// procedure ("/coffer.v1.SessionService/CreateDepositSession") for a Connect one.
type matrixRow struct {
	endpoint string
	want     [numCreds]string
}

func parseAuthMatrix(t *testing.T) []matrixRow {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(authMatrix), "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "endpoint none opKey otherOp admin ops sid" {
		t.Fatalf("authMatrix columns are %q", got)
	}
	var rows []matrixRow
	for i, line := range lines[1:] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var r matrixRow
		endpoint, outcomes := matrixEndpoint(line)
		r.endpoint = endpoint
		fields := strings.Fields(outcomes)
		if len(fields) != numCreds {
			t.Fatalf("authMatrix line %d: %d outcomes, want %d: %q", i+2, len(fields), numCreds, line)
		}
		copy(r.want[:], fields)
		rows = append(rows, r)
	}
	return rows
}

// matrixEndpoint reads the endpoint a line of authMatrix or of the request table starts with
// ("METHOD /path" of a REST route, "Service.Method" of a Connect procedure, which it returns
// as "/coffer.v1.Service/Method") and returns it with the rest of the line.
func matrixEndpoint(line string) (endpoint, rest string) {
	first, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	rest = strings.TrimSpace(rest)
	if first == strings.ToUpper(first) { // REST: METHOD /path
		path, rest, _ := strings.Cut(rest, " ")
		return first + " " + path, strings.TrimSpace(rest)
	}
	svc, method, _ := strings.Cut(first, ".")
	return "/coffer.v1." + svc + "/" + method, rest
}

// connectOutcomes are the matrix's names of Connect outcomes.
var connectOutcomes = map[connect.Code]string{
	connect.CodeUnauthenticated: "unauth", connect.CodePermissionDenied: "denied",
	connect.CodeNotFound: "notfound", connect.CodeUnimplemented: "unimpl", connect.CodeUnavailable: "unavail",
	connect.CodeFailedPrecondition: "denied_wd",
}

// sessionIDs are the sids a session-scoped request carries: operator A's real sessions in the
// "sid" column, unknown UUIDs in the others.
type sessionIDs struct{ deposit, withdraw, cancel string }

// matrixFixture is the world the matrix runs in.
type matrixFixture struct {
	env           *apptest.Env
	opA           domain.Operator
	opC           domain.Operator // a bystander operator for OpsService's writes
	bearer        [numCreds]string
	real, unknown sessionIDs
	// testWebhookSid is operator A's session that test-webhook targets in every column.
	testWebhookSid string
	adminEmail     string
	bystanderEmail string // an admin OpsService disables, enables and revokes
	themeToUpdate  string
	themeToDelete  string
	// depositID and withdrawalID are operator A's deposit and withdrawal (the reconciliation reads).
	depositID    int64
	withdrawalID string
	// eventID is operator A's delivered event (redelivered; then pending, which answers as it is).
	eventID string
	// requests are the request table's: endpoint → request, filled per call by fill.
	requests map[string]string
	// freshWithdraw opens another withdraw session of operator A: each withdrawal submitted
	// with the valid sid gets its own, since submissions are rate-limited per session.
	freshWithdraw func() string
}

// submitSid is the sid a withdrawal submission carries: a fresh session for the valid sid.
func (f *matrixFixture) submitSid(s sessionIDs) string {
	if s.withdraw == f.real.withdraw {
		return f.freshWithdraw()
	}
	return s.withdraw
}

func newMatrixFixture(t *testing.T) *matrixFixture {
	t.Helper()
	env := apptest.Start(t, apptest.Options{})
	ctx := t.Context()
	f := &matrixFixture{env: env, requests: parseMatrixRequests(t)}
	var keyA string
	f.opA, keyA = env.Operator(t, domain.OperatorSettings{})
	opB, keyB := env.Operator(t, domain.OperatorSettings{})
	f.opC, _ = env.Operator(t, domain.OperatorSettings{})
	adm, adminToken := env.Admin(t, "")
	f.adminEmail = adm.Email
	bystander, _ := env.Admin(t, "")
	f.bystanderEmail = bystander.Email
	f.bearer = [numCreds]string{credOperator: keyA, credOtherOp: keyB, credAdmin: adminToken, credOps: env.OpsToken}

	open := func(kind domain.SessionKind) string {
		o, err := env.Services.Sessions.Open(ctx, f.opA, kind, session.Input{ExternalUserID: "matrix-user", Lang: "en",
			FiatCurrency: "USD", UserBalance: "100", Amount: "10"})
		if err != nil {
			t.Fatal(err)
		}
		return o.Session.ID
	}
	f.real = sessionIDs{deposit: open(session.Deposit), withdraw: open(session.Withdraw), cancel: open(session.Deposit)}
	f.unknown = sessionIDs{deposit: uuid.NewString(), withdraw: uuid.NewString(), cancel: uuid.NewString()}
	f.testWebhookSid = open(session.Deposit)
	f.freshWithdraw = func() string { return open(session.Withdraw) }

	theme := func(slug string) string {
		th, err := env.Services.Themes.Create(ctx, auth.Admin{}, f.opA.ID, slug, "Matrix", matrixStyle)
		if err != nil {
			t.Fatal(err)
		}
		return th.ID
	}
	f.themeToUpdate, f.themeToDelete = theme("matrix-update"), theme("matrix-delete")

	// Records in final states, which no job moves: an orphaned deposit, a rejected withdrawal.
	f.depositID = env.InsertDeposit(t, domain.Deposit{OperatorID: f.opA.ID, ExternalUserID: "matrix-user", ChainID: 1337,
		TxHash: matrixTxHash, LogIndex: 0, BlockNumber: 1, BlockHash: "0xb1", Address: matrixAddress, Currency: "USDT",
		ContractAddress: "0x00000000000000000000000000000000000000a1", Decimals: 6, GrossAmount: big.NewInt(10_000_000),
		Status: domain.DepositOrphaned, IdempotencyKey: "matrix-deposit"}).ID
	f.withdrawalID = uuid.NewString()
	amount := decimal.RequireFromString("10")
	env.InsertWithdrawal(t, domain.Withdrawal{ID: f.withdrawalID, OperatorID: f.opA.ID, SessionID: open(session.Withdraw),
		ExternalUserID: "matrix-user", Type: "DIRECT_TRANSFER", ApprovalMode: domain.ApprovalSync, Status: domain.WithdrawalRejected,
		ChainID: 1337, Currency: "USDT", ContractAddress: "0x00000000000000000000000000000000000000a1", Decimals: 6,
		Address: matrixAddress, FiatCurrency: "USD", FiatAmount: amount, CryptoAmount: decimal.NewFromInt(10_000_000),
		ExpiresAt: time.Now().Add(24 * time.Hour), AmountInUSD: decimal.NewNullDecimal(amount), CapAmount: decimal.NewNullDecimal(amount)})
	// A delivered event each for A and B (B's own feed is not empty: its stream has one to send).
	for _, op := range []string{f.opA.ID, opB.ID} {
		id := uuid.NewString()
		if _, err := env.Pool.Exec(ctx, `INSERT INTO webhook_events (id, operator_id, event_type, subject_id, body, state, attempts,
			last_status, last_attempt_at, delivered_at) VALUES ($1::uuid, $2, 'DEPOSIT', $1::text, 'event=DEPOSIT', 'delivered', 1, 200, now(), now())`,
			id, op); err != nil {
			t.Fatal(err)
		}
		if op == f.opA.ID {
			f.eventID = id
		}
	}
	return f
}

var matrixStyle = domain.ThemeStyle{PrimaryColor: "#112233", BackgroundColor: "#ffffff", TextColor: "#000000"}

const (
	matrixAddress = "0x00000000000000000000000000000000000000b1"
	matrixTxHash  = "0x1111111111111111111111111111111111111111111111111111111111111111"
)

//go:embed testdata/authmatrix_requests.txt
var matrixRequestTable string

// parseMatrixRequests reads the request table: endpoint → request, {name}s not yet filled.
func parseMatrixRequests(t *testing.T) map[string]string {
	t.Helper()
	requests := map[string]string{}
	for i, line := range strings.Split(matrixRequestTable, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		endpoint, req := matrixEndpoint(line)
		if _, dup := requests[endpoint]; dup || req == "" {
			t.Fatalf("authmatrix_requests.txt line %d: a second or an empty request for %s", i+1, endpoint)
		}
		requests[endpoint] = req
	}
	return requests
}

var unfilled = regexp.MustCompile(`\{[A-Za-z.]+\}`)

// fill puts the fixture's values into req, a request of the table; the withdrawal submission
// with the valid sid opens its own session (submitSid) only when req submits one.
func (f *matrixFixture) fill(t *testing.T, req string, s sessionIDs) string {
	t.Helper()
	submit := s.withdraw
	if strings.Contains(req, "{sid.submit}") {
		submit = f.submitSid(s)
	}
	id := uuid.NewString()
	filled := strings.NewReplacer("{sid.deposit}", s.deposit, "{sid.withdraw}", s.withdraw, "{sid.cancel}", s.cancel,
		"{sid.submit}", submit, "{testWebhookSid}", f.testWebhookSid, "{operatorA}", f.opA.ID, "{operatorC}", f.opC.ID,
		"{adminEmail}", f.adminEmail, "{bystanderEmail}", f.bystanderEmail, "{adminPassword}", apptest.AdminPassword,
		"{themeToUpdate}", f.themeToUpdate, "{themeToDelete}", f.themeToDelete, "{depositID}", strconv.FormatInt(f.depositID, 10),
		"{withdrawalID}", f.withdrawalID, "{eventID}", f.eventID, "{address}", matrixAddress, "{txHash}", matrixTxHash,
		"{uuid}", id, "{short}", id[:8]).Replace(req)
	if name := unfilled.FindString(filled); name != "" {
		t.Fatalf("request %q: nothing fills %s", req, name)
	}
	return filled
}

// invoke calls procedure with req (protojson) through a client built from the procedure's
// descriptor, so one path serves every unary and server-streaming procedure. A stream answers at once (the
// session's deposits, the feed's events): its first message is the outcome.
func (f *matrixFixture) invoke(ctx context.Context, procedure, req string) error {
	service, method, _ := strings.Cut(strings.TrimPrefix(procedure, "/"), "/")
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(service))
	if err != nil {
		return err
	}
	md := d.(protoreflect.ServiceDescriptor).Methods().ByName(protoreflect.Name(method))
	in := dynamicpb.NewMessage(md.Input())
	if err := protojson.Unmarshal([]byte(req), in); err != nil {
		return err
	}
	base := f.env.URL
	if service == cofferv1connect.OpsServiceName {
		base = f.env.InternalURL // OpsService is served on the internal listener only
	}
	client := connect.NewClient[dynamicpb.Message, dynamicpb.Message](http.DefaultClient, base+procedure,
		connect.WithSchema(md), connect.WithResponseInitializer(func(_ connect.Spec, msg any) error {
			*msg.(*dynamicpb.Message) = *dynamicpb.NewMessage(md.Output())
			return nil
		}))
	if !md.IsStreamingServer() {
		_, err := client.CallUnary(ctx, connect.NewRequest(in))
		return err
	}
	stream, err := client.CallServerStream(ctx, connect.NewRequest(in))
	if err != nil {
		return err
	}
	defer stream.Close()
	if !stream.Receive() {
		return stream.Err()
	}
	return nil
}

// sidScoped are the endpoints the sid authenticates.
func sidScoped(endpoint string) bool {
	return endpoint == "POST /depositor/address" || endpoint == "POST /withdraw/direct-transfer" ||
		strings.HasPrefix(endpoint, "/"+cofferv1connect.WidgetServiceName+"/")
}

// errorCodes are the reasons (REST data.code, Connect ErrorInfo) each failing outcome carries,
// so a 501 from Coffer is told apart from a missing route.
var errorCodes = map[string]string{
	"401": "UNAUTHENTICATED", "403": "FORBIDDEN", "404": "NOT_FOUND", "422": "WITHDRAW_DENIED", "501": "NOT_IMPLEMENTED",
	"unauth": "UNAUTHENTICATED", "denied": "FORBIDDEN", "notfound": "NOT_FOUND", "unimpl": "NOT_IMPLEMENTED", "unavail": "UNAVAILABLE",
	"denied_wd": "WITHDRAW_DENIED",
}

// call sends endpoint's request with the column's credential and returns the outcome and the
// error reason it carried ("" on success).
func (f *matrixFixture) call(t *testing.T, endpoint string, bearer string, s sessionIDs) (outcome, reason string) {
	t.Helper()
	req, ok := f.requests[endpoint]
	if !ok {
		t.Fatalf("no request for %s", endpoint)
	}
	req = f.fill(t, req, s)
	if strings.HasPrefix(endpoint, "/") { // a Connect procedure
		err := f.invoke(withBearer(t.Context(), bearer), endpoint, req)
		if err == nil {
			return "ok", ""
		}
		code, reason := connectErrorInfo(err)
		if name, ok := connectOutcomes[code]; ok {
			return name, reason
		}
		return code.String(), reason
	}
	method, rest, _ := strings.Cut(req, " ")
	path, body, _ := strings.Cut(rest, " ")
	res := f.env.Do(t, method, path, bearer, body)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		var env struct {
			Status string `json:"status"`
			Data   struct {
				Code string `json:"code"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &env); err != nil || env.Status != "error" {
			t.Errorf("%s: error body is not the error envelope: %s", endpoint, b)
		}
		reason = env.Data.Code
	}
	return strconv.Itoa(res.StatusCode), reason
}

// bearerFor is the credential a cell presents. Logout revokes the token it presents, so it
// gets a token of its own.
func (f *matrixFixture) bearerFor(t *testing.T, endpoint string, cred int) string {
	t.Helper()
	if cred == credAdmin && endpoint == cofferv1connect.AdminServiceLogoutProcedure {
		_, token := f.env.Admin(t, "")
		return token
	}
	return f.bearer[cred]
}

func TestAuthMatrix(t *testing.T) {
	matrix := parseAuthMatrix(t)
	checkMatrixCoversEveryEndpoint(t, matrix)
	f := newMatrixFixture(t)

	for _, row := range matrix {
		t.Run(row.endpoint, func(t *testing.T) {
			var got [numCreds]string
			for cred := range numCreds {
				s := f.real
				if sidScoped(row.endpoint) && cred != credSid {
					s = f.unknown
				}
				outcome, reason := f.call(t, row.endpoint, f.bearerFor(t, row.endpoint, cred), s)
				got[cred] = outcome
				if outcome != row.want[cred] {
					t.Errorf("%s: got %s, want %s", credNames[cred], outcome, row.want[cred])
				} else if want := errorCodes[outcome]; reason != want {
					t.Errorf("%s: %s carries reason %q, want %q", credNames[cred], outcome, reason, want)
				}
			}
			if t.Failed() {
				t.Logf("observed row: %q", got)
			}
		})
	}

	// On session-scoped endpoints a Bearer header is irrelevant: with the valid sid, every
	// credential gets what the sid alone gets.
	t.Run("bearer is irrelevant with a valid sid", func(t *testing.T) {
		for _, row := range matrix {
			if !sidScoped(row.endpoint) {
				continue
			}
			for _, cred := range []int{credOperator, credOtherOp, credAdmin, credOps} {
				outcome, _ := f.call(t, row.endpoint, f.bearer[cred], f.real)
				if outcome != row.want[credSid] {
					t.Errorf("%s with a valid sid and the %s: got %s, want %s", row.endpoint, credNames[cred], outcome, row.want[credSid])
				}
			}
		}
	})
}

// checkMatrixCoversEveryEndpoint fails when an endpoint lacks a row or a request: the REST
// routes of legacy.go, and every procedure of every coffer.v1 service.
func checkMatrixCoversEveryEndpoint(t *testing.T, matrix []matrixRow) {
	t.Helper()
	rows := map[string]bool{}
	for _, row := range matrix {
		if rows[row.endpoint] {
			t.Errorf("matrix: %s has two rows", row.endpoint)
		}
		rows[row.endpoint] = true
	}
	var procedures []string
	protoregistry.GlobalFiles.RangeFilesByPackage("coffer.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			svc := fd.Services().Get(i)
			for j := range svc.Methods().Len() {
				procedures = append(procedures, fmt.Sprintf("/%s/%s", svc.FullName(), svc.Methods().Get(j).Name()))
			}
		}
		return true
	})
	if len(procedures) < 30 {
		t.Fatalf("found only %d coffer.v1 procedures: are the generated files registered?", len(procedures))
	}
	requests := parseMatrixRequests(t)
	routes := 0
	for endpoint := range requests {
		if !strings.HasPrefix(endpoint, "/") {
			routes++
		}
	}
	for _, p := range procedures {
		if !rows[p] {
			t.Errorf("matrix: no row for procedure %s", p)
		}
		if requests[p] == "" {
			t.Errorf("matrix: no request for procedure %s", p)
		}
	}
	if routes != 19 {
		t.Errorf("matrix: %d REST routes, want the 19 of legacy.go", routes)
	}
	for endpoint := range requests {
		if !rows[endpoint] {
			t.Errorf("matrix: no row for %s, which has a request", endpoint)
		}
	}
	for endpoint := range rows {
		if requests[endpoint] == "" {
			t.Errorf("matrix: row %s names no endpoint", endpoint)
		}
	}
	if n := len(rows) - routes; n != len(procedures) {
		t.Errorf("matrix: %d Connect rows for %d procedures", n, len(procedures))
	}
}

// The internal endpoints (OpsService, gRPC reflection, /metrics) answer only on the internal
// listener: the public one answers 404 for every one of them, whatever the credential.
func TestInternalEndpointsAreNotPublic(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	var paths []string
	protoregistry.GlobalFiles.RangeFilesByPackage("coffer.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			if svc := fd.Services().Get(i); svc.FullName() == cofferv1connect.OpsServiceName {
				for j := range svc.Methods().Len() {
					paths = append(paths, fmt.Sprintf("/%s/%s", svc.FullName(), svc.Methods().Get(j).Name()))
				}
			}
		}
		return true
	})
	paths = append(paths, "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
		"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", "/metrics")
	for _, p := range paths {
		for _, base := range []string{env.URL} {
			method := "POST"
			if p == "/metrics" {
				method = "GET"
			}
			req, _ := http.NewRequestWithContext(t.Context(), method, base+p, strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+env.OpsToken)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusNotFound {
				t.Errorf("public %s %s: %d, want 404", method, p, res.StatusCode)
			}
		}
	}
	// And they do answer on the internal listener.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, env.InternalURL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("internal /metrics: %v %v", res, err)
	}
	res.Body.Close()
	ops := cofferv1connect.NewOpsServiceClient(http.DefaultClient, env.InternalURL)
	if _, err := ops.ListOperators(withBearer(t.Context(), env.OpsToken), &cofferv1.ListOperatorsRequest{}); err != nil {
		t.Fatalf("internal OpsService: %v", err)
	}
}

// TestOperatorKeyForms: a revoked key, and forms of a valid key that are not the key (another
// case, a wrong or missing prefix, a character inside it changed to whitespace, very long),
// are UNAUTHENTICATED over REST and Connect, in the documented envelope; whitespace around
// the credential is not part of it.
func TestOperatorKeyForms(t *testing.T) {
	t.Parallel()
	env := apptest.Start(t, apptest.Options{})
	op, key := env.Operator(t, domain.OperatorSettings{})
	revoked := key
	key, _, err := env.Services.Operators.RotateKey(t.Context(), op.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := cofferv1connect.NewEventServiceClient(http.DefaultClient, env.URL)
	body := strings.TrimPrefix(key, "sk_")
	cases := []struct {
		name, cred string
		ok         bool
	}{
		{"valid", key, true},
		{"surrounding whitespace", " " + key + "\t", true},
		{"revoked", revoked, false},
		{"upper case", strings.ToUpper(key), false},
		{"prefix only upper", "SK_" + body, false},
		{"no prefix", body, false},
		{"other prefix", "pk_" + body, false},
		{"inner space", key[:len(key)/2] + " " + key[len(key)/2+1:], false},
		{"trailing extra", key + "x", false},
		{"very long", key + strings.Repeat("a", 6000), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := env.Do(t, http.MethodGet, "/events", tc.cred, "")
			defer res.Body.Close()
			want := http.StatusOK
			if !tc.ok {
				want = http.StatusUnauthorized
			}
			if res.StatusCode != want {
				t.Errorf("REST GET /events: %d; want %d", res.StatusCode, want)
			}
			_, err := c.ListEvents(withBearer(t.Context(), tc.cred), &cofferv1.EventServiceListEventsRequest{})
			switch {
			case tc.ok && err != nil:
				t.Errorf("Connect ListEvents: %v; want served", err)
			case !tc.ok && connect.CodeOf(err) != connect.CodeUnauthenticated:
				t.Errorf("Connect ListEvents: %v; want unauthenticated", err)
			}
			var ce *connect.Error
			if !tc.ok && errors.As(err, &ce) && ce.Message() == "" {
				t.Errorf("Connect ListEvents: no message")
			}
		})
	}
}
