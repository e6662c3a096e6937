package legacy_test

import (
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// reconFixture is the data of the reconciliation tests: an operator with five deposits and
// five withdrawals, a sub-operator of it and an unrelated operator with one of each.
type reconFixture struct {
	operators

	opDeposits                  []int64 // oldest first
	childDeposit, otherDeposit  int64
	opWithdrawals               []string // oldest first
	childWithdrawal, otherWdraw string
}

func reconDeposit(operatorID, user, sid string, chainID int64, n int, native bool) domain.Deposit {
	d := domain.Deposit{OperatorID: operatorID, ExternalUserID: user, SessionID: sid, ChainID: chainID,
		TxHash: "0x" + strings.Repeat("0", 62) + strconv.Itoa(10+n), LogIndex: int64(n), BlockNumber: uint64(100 + n),
		BlockHash: "0xb" + strconv.Itoa(n), Address: "0x52908400098527886E0F7030069857D2E4169EE7", AddressIndex: uint32(n),
		Currency: "USDT", ContractAddress: "0x00000000000000000000000000000000000000a1", Decimals: 6,
		GrossAmount: big.NewInt(25_000_000), IdempotencyKey: "dep-" + strconv.Itoa(n)}
	if native {
		d.Currency, d.ContractAddress, d.Decimals, d.LogIndex = "ETH", "", 18, -1
		d.GrossAmount = big.NewInt(1_000_000_000_000)
	}
	return d
}

// credited is d credited at 1 USD per token: 0.1 fee, 24.9 net.
func credited(d domain.Deposit) domain.Deposit {
	one := decimal.NewNullDecimal(decimal.NewFromInt(1))
	d.FeeAmount, d.Amount, d.USDPrice, d.FiatPerUSD, d.FiatCurrency = big.NewInt(100_000), big.NewInt(24_900_000), one, one, "USD"
	d.AmountInDollar = decimal.NewNullDecimal(decimal.RequireFromString("24.9"))
	d.AmountInLocal = decimal.NewNullDecimal(decimal.RequireFromString("24.9"))
	d.FeeInDollar = decimal.NewNullDecimal(decimal.RequireFromString("0.1"))
	return d
}

func newReconFixture(t *testing.T) *reconFixture {
	t.Helper()
	f := &reconFixture{operators: newOperators(t)}
	env := f.env

	sid, _, _ := openSession(t, env, f.key, "deposit", map[string]any{"externalUserId": "recon-user", "operatorReference": "order-42"})
	deps := []domain.Deposit{
		env.InsertDeposit(t, credited(reconDeposit(f.op.ID, "recon-user", sid, 1337, 1, false))), // CREDITED, with its session
		env.InsertDeposit(t, withStatus(reconDeposit(f.op.ID, "direct-user", "", 1337, 2, true), domain.DepositBelowMinimum)),
		env.InsertDeposit(t, withStatus(reconDeposit(f.op.ID, "direct-user", "", 1338, 3, false), domain.DepositOrphaned)),
		env.InsertDeposit(t, withStatus(credited(reconDeposit(f.op.ID, "recon-user", sid, 1338, 4, false)), domain.DepositReorged)),
		env.InsertDeposit(t, reconDeposit(f.op.ID, "recon-user", sid, 1337, 5, false)), // CONFIRMING
	}
	for _, d := range deps {
		f.opDeposits = append(f.opDeposits, d.ID)
	}
	f.childDeposit = env.InsertDeposit(t, reconDeposit(f.child.ID, "child-user", "", 1337, 6, false)).ID
	f.otherDeposit = env.InsertDeposit(t, reconDeposit(f.other.ID, "other-user", "", 1337, 7, false)).ID

	wdSid, _, _ := openSession(t, env, f.key, "withdraw", map[string]any{"externalUserId": "recon-wd"})
	for i, st := range []domain.WithdrawalStatus{"PENDING", "PROCESSING", "COMPLETED", "REJECTED", "EXPIRED"} {
		id := "6b000000-0000-4000-8000-00000000000" + strconv.Itoa(i+1)
		if st == domain.WithdrawalCompleted {
			insertCompleted(t, env, id, f.op.ID, wdSid)
		} else {
			insertWithdrawal(t, env, id, f.op.ID, wdSid, st)
		}
		f.opWithdrawals = append(f.opWithdrawals, id)
	}
	childSid, _, _ := openSession(t, env, f.childKey, "withdraw", map[string]any{"externalUserId": "recon-child-wd"})
	f.childWithdrawal = "6b000000-0000-4000-8000-000000000006"
	insertWithdrawal(t, env, f.childWithdrawal, f.child.ID, childSid, "PENDING")
	otherSid, _, _ := openSession(t, env, f.otherKey, "withdraw", map[string]any{"externalUserId": "recon-other-wd"})
	f.otherWdraw = "6b000000-0000-4000-8000-000000000007"
	insertWithdrawal(t, env, f.otherWdraw, f.other.ID, otherSid, "PENDING")
	return f
}

// insertCompleted records a paid withdrawal of 25.00 USD (25 USDT) with a fixed id.
func insertCompleted(t *testing.T, env *apptest.Env, id, operatorID, sid string) {
	t.Helper()
	insertWithdrawal(t, env, id, operatorID, sid, domain.WithdrawalProcessing)
	if _, err := env.Pool.Exec(t.Context(), `UPDATE withdrawals SET status = 'COMPLETED', payout_queued_at = now(), completed_at = now(),
		settlement_tx_hash = $2 WHERE id = $1`, id, "0x"+strings.Repeat("5", 64)); err != nil {
		t.Fatal(err)
	}
}

func withStatus(d domain.Deposit, s domain.DepositStatus) domain.Deposit {
	d.Status = s
	return d
}

// listItem is an item of GET /deposits or GET /withdrawals.
type listItem struct {
	DepositID         int64  `json:"depositId"`
	WithdrawRequestID string `json:"withdrawRequestId"`
	OperatorID        string `json:"operatorId"`
}

// id is a deposit's id, or a withdrawal's.
func (it listItem) id() string {
	if it.WithdrawRequestID != "" {
		return it.WithdrawRequestID
	}
	return strconv.FormatInt(it.DepositID, 10)
}

// listPage is data of a list answer.
type listPage = page[listItem]

func getPage(t *testing.T, env *apptest.Env, path, bearer string) listPage {
	t.Helper()
	return getData[listPage](t, env, path, bearer)
}

func newestFirst[T any](ids []T, str func(T) string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = str(id)
	}
	return out
}

func depositIDs(ids ...int64) []string {
	return newestFirst(ids, func(id int64) string { return strconv.FormatInt(id, 10) })
}

func withdrawalIDs(ids ...string) []string {
	return newestFirst(ids, func(id string) string { return id })
}

func TestReconcile(t *testing.T) {
	f := newReconFixture(t)
	env, key := f.env, f.key
	t.Run("golden", func(t *testing.T) { reconGolden(t, f) })
	t.Run("isolation", func(t *testing.T) { reconIsolation(t, f) })
	t.Run("bad input", func(t *testing.T) { reconBadInput(t, f) })
	t.Run("filters", func(t *testing.T) {
		d := f.opDeposits
		for _, c := range []struct {
			path string
			want []string
		}{
			{"/deposits?chainId=1338", depositIDs(d[2], d[3])},
			{"/deposits?status=BELOW_MINIMUM&status=orphaned", depositIDs(d[1], d[2])},
			{"/deposits?externalUserId=recon-user&chainId=1337", depositIDs(d[0], d[4])},
			{"/deposits?from=2100-01-01T00:00:00Z", nil},
			{"/deposits?to=2000-01-01T00:00:00Z", nil},
			{"/deposits?chainId=1", nil},
			{"/withdrawals?status=COMPLETED,EXPIRED", withdrawalIDs(f.opWithdrawals[2], f.opWithdrawals[4])},
			{"/withdrawals?chainId=1338", nil},
			{"/withdrawals?from=2100-01-01T00:00:00Z", nil},
			{"/withdrawals?externalUserId=nobody", nil},
		} {
			if got := getPage(t, env, c.path, key).ids(); !slices.Equal(got, c.want) {
				t.Errorf("GET %s: %v, want %v", c.path, got, c.want)
			}
		}
	})
	t.Run("paging", func(t *testing.T) {
		for _, list := range []struct {
			path string
			want []string
		}{
			{"/deposits", depositIDs(f.opDeposits...)},
			{"/withdrawals", withdrawalIDs(f.opWithdrawals...)},
		} {
			var got []string
			pages := 0
			path := list.path + "?limit=2"
			for {
				p := getPage(t, env, path, key)
				pages++
				got = append(got, p.ids()...)
				if p.NextCursor == nil {
					break
				}
				if pages > 5 {
					t.Fatalf("%s: more than 5 pages", list.path)
				}
				path = list.path + "?limit=2&cursor=" + url.QueryEscape(*p.NextCursor)
			}
			if pages != 3 || !slices.Equal(got, list.want) {
				t.Errorf("%s by 2: %d pages %v, want 3 pages %v", list.path, pages, got, list.want)
			}
		}
	})
}

func reconGolden(t *testing.T, f *reconFixture) {
	t.Helper()
	key := f.key
	dep := func(i int) string { return strconv.FormatInt(f.opDeposits[i], 10) }
	cases := f.resourceCases(resource{list: "deposits_list", get: "deposit_get", path: "/deposits",
		filter: "status=credited,REORGED&chainId=1338&externalUserId=recon-user&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z",
		bad:    [][2]string{{"invalid_status", "status=DONE"}, {"invalid_limit", "limit=201"}, {"invalid_from", "from=yesterday"}, {"unknown_parameter", "sort=asc"}},
		id:     dep(0), childID: strconv.FormatInt(f.childDeposit, 10), invalidID: "abc"})
	cases = append(cases,
		goldenCase{name: "deposits_list_method_not_allowed", req: request{method: "POST", path: "/deposits", bearer: key, body: `{}`}},
		goldenCase{name: "deposit_get_credited", req: request{method: "GET", path: "/deposits/" + dep(0), bearer: key}},
		goldenCase{name: "deposit_get_below_minimum", req: request{method: "GET", path: "/deposits/" + dep(1), bearer: key}},
		goldenCase{name: "deposit_get_reorged", req: request{method: "GET", path: "/deposits/" + dep(3), bearer: key}},
		goldenCase{name: "deposit_get_not_found", req: request{method: "GET", path: "/deposits/999999", bearer: key}})
	cases = append(cases, f.resourceCases(resource{list: "withdrawals_list", get: "withdrawal_get", path: "/withdrawals",
		filter: "status=PENDING,completed&chainId=1337&externalUserId=recon-wd&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z",
		bad:    [][2]string{{"invalid_status", "status=CREDITED"}, {"invalid_limit", "limit=0"}, {"unknown_parameter", "pageToken=x"}},
		id:     f.opWithdrawals[0], childID: f.childWithdrawal, invalidID: "not-a-uuid"})...)
	cases = append(cases,
		goldenCase{name: "withdrawal_get_ok", req: request{method: "GET", path: "/withdrawals/" + f.opWithdrawals[2], bearer: key}},
		goldenCase{name: "withdrawal_get_method_not_allowed", req: request{method: "DELETE", path: "/withdrawals/" + f.opWithdrawals[0], bearer: key}})
	runGolden(t, f.env, "recon_", cases)
}

// resource is what reconGolden asks deposits and withdrawals alike.
type resource struct {
	list, get string // the case names' prefixes: "deposits_list", "deposit_get"
	path      string
	filter    string      // a query naming every filter
	bad       [][2]string // refused list queries, by the case name's end
	// id is one of the operator's records, childID one of its sub-operator's, invalidID a
	// malformed id.
	id, childID, invalidID string
}

// resourceCases are the golden cases deposits and withdrawals answer alike: the list whole,
// filtered, paged and a sub-operator's, one record of a sub-operator, and what each refuses.
func (f *reconFixture) resourceCases(r resource) []goldenCase {
	key := f.key
	get := func(path, bearer string) request { return request{method: "GET", path: path, bearer: bearer} }
	cases := []goldenCase{
		{name: r.list + "_ok", req: get(r.path, key)},
		{name: r.list + "_filtered", req: get(r.path+"?"+r.filter, key)},
		{name: r.list + "_first_page", req: get(r.path+"?limit=1", key)},
		{name: r.list + "_sub_operator", req: get(r.path+"?operatorId="+f.child.ID, key)},
		{name: r.list + "_not_found_other_operator", req: get(r.path+"?operatorId="+f.op.ID, f.otherKey)},
	}
	for _, b := range append(r.bad, [2]string{"invalid_cursor", "cursor=xyz"}) {
		cases = append(cases, goldenCase{name: r.list + "_" + b[0], req: get(r.path+"?"+b[1], key)})
	}
	one := r.path + "/" + r.id
	return append(cases,
		goldenCase{name: r.list + "_unauthenticated", req: get(r.path, "")},
		goldenCase{name: r.list + "_forbidden_admin_token", req: get(r.path, f.adminToken)},
		goldenCase{name: r.get + "_sub_operator", req: get(r.path+"/"+r.childID+"?operatorId="+f.child.ID, key)},
		goldenCase{name: r.get + "_not_found_other_operator", req: get(one, f.otherKey)},
		goldenCase{name: r.get + "_invalid_id", req: get(r.path+"/"+r.invalidID, key)},
		goldenCase{name: r.get + "_unauthenticated", req: get(one, "")},
		goldenCase{name: r.get + "_forbidden_admin_token", req: get(one, f.adminToken)})
}

// reconIsolation: an operator never sees another's deposits or withdrawals (NOT_FOUND, never
// FORBIDDEN); a parent reads a sub-operator's by naming it, and not without.
func reconIsolation(t *testing.T, f *reconFixture) {
	t.Helper()
	env := f.env
	if got, want := getPage(t, env, "/deposits", f.key).ids(), depositIDs(f.opDeposits...); !slices.Equal(got, want) {
		t.Errorf("parent's deposits %v, want %v (own only)", got, want)
	}
	if got, want := getPage(t, env, "/deposits?operatorId="+f.child.ID, f.key).ids(), depositIDs(f.childDeposit); !slices.Equal(got, want) {
		t.Errorf("sub-operator's deposits %v, want %v", got, want)
	}
	if got, want := getPage(t, env, "/deposits", f.otherKey).ids(), depositIDs(f.otherDeposit); !slices.Equal(got, want) {
		t.Errorf("other operator's deposits %v, want %v", got, want)
	}
	if got, want := getPage(t, env, "/withdrawals", f.otherKey).ids(), withdrawalIDs(f.otherWdraw); !slices.Equal(got, want) {
		t.Errorf("other operator's withdrawals %v, want %v", got, want)
	}
	if got, want := getPage(t, env, "/withdrawals?operatorId="+f.child.ID, f.key).ids(), withdrawalIDs(f.childWithdrawal); !slices.Equal(got, want) {
		t.Errorf("sub-operator's withdrawals %v, want %v", got, want)
	}
	if got, want := getPage(t, env, "/withdrawals", f.childKey).ids(), withdrawalIDs(f.childWithdrawal); !slices.Equal(got, want) {
		t.Errorf("sub-operator's own withdrawals %v, want %v", got, want)
	}
	notFound := []request{
		{path: "/deposits/" + strconv.FormatInt(f.opDeposits[0], 10), bearer: f.otherKey},
		{path: "/deposits/" + strconv.FormatInt(f.opDeposits[0], 10), bearer: f.childKey},
		{path: "/deposits/" + strconv.FormatInt(f.childDeposit, 10), bearer: f.key}, // a sub-operator's is named
		{path: "/deposits/" + strconv.FormatInt(f.otherDeposit, 10) + "?operatorId=" + f.child.ID, bearer: f.key},
		{path: "/deposits?operatorId=" + f.other.ID, bearer: f.key},
		{path: "/deposits?operatorId=" + f.op.ID, bearer: f.childKey},
		{path: "/withdrawals/" + f.opWithdrawals[0], bearer: f.otherKey},
		{path: "/withdrawals/" + f.opWithdrawals[0], bearer: f.childKey},
		{path: "/withdrawals/" + f.childWithdrawal, bearer: f.key},
		{path: "/withdrawals/" + f.otherWdraw + "?operatorId=" + f.child.ID, bearer: f.key},
		{path: "/withdrawals?operatorId=" + f.other.ID, bearer: f.key},
		{path: "/withdrawals?operatorId=" + f.op.ID, bearer: f.childKey},
	}
	for _, r := range notFound {
		r.method = "GET"
		res := send(t, env, r)
		if _, data := decodeEnvelope(t, res); res.status != http.StatusNotFound || data.Code != "NOT_FOUND" {
			t.Errorf("GET %s: %d %s, want 404 NOT_FOUND", r.path, res.status, res.body)
		}
	}
}

// reconBadInput: each bad parameter is a 400 INVALID_ARGUMENT naming it, and changes nothing.
func reconBadInput(t *testing.T, f *reconFixture) {
	t.Helper()
	env := f.env
	wdCursor := getPage(t, env, "/withdrawals?limit=1", f.key).NextCursor
	depCursor := getPage(t, env, "/deposits?limit=1", f.key).NextCursor
	if wdCursor == nil || depCursor == nil {
		t.Fatal("no cursors")
	}
	unchanged := rowsUnchanged(t, env, "deposits", "withdrawals", "sessions", "operators")
	cases := []struct{ path, field string }{
		{"/deposits?status=DONE", "status"},
		{"/deposits?status=", "status"},
		{"/deposits?status=CREDITED,PENDING", "status"},
		{"/deposits?limit=0", "limit"},
		{"/deposits?limit=201", "limit"},
		{"/deposits?limit=ten", "limit"},
		{"/deposits?from=yesterday", "from"},
		{"/deposits?to=2026-13-01T00:00:00Z", "to"},
		{"/deposits?chainId=0", "chainId"},
		{"/deposits?chainId=eth", "chainId"},
		{"/deposits?cursor=xyz", "cursor"},
		{"/deposits?cursor=" + url.QueryEscape(*wdCursor), "cursor"},
		{"/deposits?cursor=" + strings.Repeat("a", 201), "cursor"},
		{"/deposits?operatorId=42", "operatorId"},
		{"/deposits?externalUserId=" + strings.Repeat("u", 129), "externalUserId"},
		{"/deposits?pageSize=2", "pageSize"},
		{"/deposits/abc", "depositId"},
		{"/deposits/0", "depositId"},
		{"/deposits/1?limit=2", "limit"},
		{"/deposits/1?operatorId=42", "operatorId"},
		{"/withdrawals?status=CREDITED", "status"},
		{"/withdrawals?limit=500", "limit"},
		{"/withdrawals?from=2026-01-31", "from"},
		{"/withdrawals?to=tomorrow", "to"},
		{"/withdrawals?chainId=-1", "chainId"},
		{"/withdrawals?cursor=xyz", "cursor"},
		{"/withdrawals?cursor=" + url.QueryEscape(*depCursor), "cursor"},
		{"/withdrawals?operatorId=not-a-uuid", "operatorId"},
		{"/withdrawals?statuses=PENDING", "statuses"},
		{"/withdrawals/not-a-uuid", "withdrawRequestId"},
		{"/withdrawals/" + f.opWithdrawals[0] + "?operatorId=42", "operatorId"},
		{"/withdrawals/" + f.opWithdrawals[0] + "?status=PENDING", "status"},
		// A filter given twice was read as its first value: the caller asking for two users
		// got one user's deposits as if they were all. Only status is repeatable.
		{"/deposits?externalUserId=recon-user&externalUserId=other-user", "externalUserId"},
		{"/deposits?chainId=1&chainId=1337", "chainId"},
		{"/deposits?limit=1&limit=2", "limit"},
		{"/deposits?from=2000-01-01T00:00:00Z&from=2100-01-01T00:00:00Z", "from"},
		{"/deposits?cursor=" + url.QueryEscape(*depCursor) + "&cursor=" + url.QueryEscape(*depCursor), "cursor"},
		{"/deposits/1?operatorId=" + f.op.ID + "&operatorId=" + f.op.ID, "operatorId"},
		{"/withdrawals?to=2100-01-01T00:00:00Z&to=2000-01-01T00:00:00Z", "to"},
	}
	for _, c := range cases {
		res := send(t, env, request{method: "GET", path: c.path, bearer: f.key})
		if msg, ok := invalidOn(t, res, c.field); !ok || !strings.Contains(msg, c.field) {
			t.Errorf("GET %s: %d %s, want 400 INVALID_ARGUMENT on %s", c.path, res.status, res.body, c.field)
		}
	}
	for _, c := range []struct{ path, field string }{
		{"/admin/withdrawals?externalUserId=recon-user&externalUserId=other-user", "externalUserId"},
		{"/admin/withdrawals?operatorId=" + f.op.ID + "&operatorId=" + f.other.ID, "operatorId"},
		{"/admin/withdrawals?limit=1&limit=2", "limit"},
	} {
		res := send(t, env, request{method: "GET", path: c.path, bearer: f.adminToken})
		if _, ok := invalidOn(t, res, c.field); !ok {
			t.Errorf("GET %s: %d %s, want 400 INVALID_ARGUMENT on %s", c.path, res.status, res.body, c.field)
		}
	}
	unchanged()
}
