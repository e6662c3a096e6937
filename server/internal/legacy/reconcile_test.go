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
	cases := []goldenCase{
		{name: "deposits_list_ok", req: request{method: "GET", path: "/deposits", bearer: key}},
		{name: "deposits_list_filtered", req: request{method: "GET", bearer: key,
			path: "/deposits?status=credited,REORGED&chainId=1338&externalUserId=recon-user&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z"}},
		{name: "deposits_list_first_page", req: request{method: "GET", path: "/deposits?limit=1", bearer: key}},
		{name: "deposits_list_sub_operator", req: request{method: "GET", path: "/deposits?operatorId=" + f.child.ID, bearer: key}},
		{name: "deposits_list_not_found_other_operator", req: request{method: "GET", path: "/deposits?operatorId=" + f.op.ID, bearer: f.otherKey}},
		{name: "deposits_list_invalid_status", req: request{method: "GET", path: "/deposits?status=DONE", bearer: key}},
		{name: "deposits_list_invalid_limit", req: request{method: "GET", path: "/deposits?limit=201", bearer: key}},
		{name: "deposits_list_invalid_from", req: request{method: "GET", path: "/deposits?from=yesterday", bearer: key}},
		{name: "deposits_list_invalid_cursor", req: request{method: "GET", path: "/deposits?cursor=xyz", bearer: key}},
		{name: "deposits_list_unknown_parameter", req: request{method: "GET", path: "/deposits?sort=asc", bearer: key}},
		{name: "deposits_list_unauthenticated", req: request{method: "GET", path: "/deposits"}},
		{name: "deposits_list_forbidden_admin_token", req: request{method: "GET", path: "/deposits", bearer: f.adminToken}},
		{name: "deposits_list_method_not_allowed", req: request{method: "POST", path: "/deposits", bearer: key, body: `{}`}},

		{name: "deposit_get_credited", req: request{method: "GET", path: "/deposits/" + dep(0), bearer: key}},
		{name: "deposit_get_below_minimum", req: request{method: "GET", path: "/deposits/" + dep(1), bearer: key}},
		{name: "deposit_get_reorged", req: request{method: "GET", path: "/deposits/" + dep(3), bearer: key}},
		{name: "deposit_get_sub_operator", req: request{method: "GET", bearer: key,
			path: "/deposits/" + strconv.FormatInt(f.childDeposit, 10) + "?operatorId=" + f.child.ID}},
		{name: "deposit_get_not_found_other_operator", req: request{method: "GET", path: "/deposits/" + dep(0), bearer: f.otherKey}},
		{name: "deposit_get_not_found", req: request{method: "GET", path: "/deposits/999999", bearer: key}},
		{name: "deposit_get_invalid_id", req: request{method: "GET", path: "/deposits/abc", bearer: key}},
		{name: "deposit_get_unauthenticated", req: request{method: "GET", path: "/deposits/" + dep(0)}},
		{name: "deposit_get_forbidden_admin_token", req: request{method: "GET", path: "/deposits/" + dep(0), bearer: f.adminToken}},

		{name: "withdrawals_list_ok", req: request{method: "GET", path: "/withdrawals", bearer: key}},
		{name: "withdrawals_list_filtered", req: request{method: "GET", bearer: key,
			path: "/withdrawals?status=PENDING,completed&chainId=1337&externalUserId=recon-wd&from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z"}},
		{name: "withdrawals_list_first_page", req: request{method: "GET", path: "/withdrawals?limit=1", bearer: key}},
		{name: "withdrawals_list_sub_operator", req: request{method: "GET", path: "/withdrawals?operatorId=" + f.child.ID, bearer: key}},
		{name: "withdrawals_list_not_found_other_operator", req: request{method: "GET", path: "/withdrawals?operatorId=" + f.op.ID,
			bearer: f.otherKey}},
		{name: "withdrawals_list_invalid_status", req: request{method: "GET", path: "/withdrawals?status=CREDITED", bearer: key}},
		{name: "withdrawals_list_invalid_limit", req: request{method: "GET", path: "/withdrawals?limit=0", bearer: key}},
		{name: "withdrawals_list_invalid_cursor", req: request{method: "GET", path: "/withdrawals?cursor=xyz", bearer: key}},
		{name: "withdrawals_list_unknown_parameter", req: request{method: "GET", path: "/withdrawals?pageToken=x", bearer: key}},
		{name: "withdrawals_list_unauthenticated", req: request{method: "GET", path: "/withdrawals"}},
		{name: "withdrawals_list_forbidden_admin_token", req: request{method: "GET", path: "/withdrawals", bearer: f.adminToken}},

		{name: "withdrawal_get_ok", req: request{method: "GET", path: "/withdrawals/" + f.opWithdrawals[2], bearer: key}},
		{name: "withdrawal_get_sub_operator", req: request{method: "GET", bearer: key,
			path: "/withdrawals/" + f.childWithdrawal + "?operatorId=" + f.child.ID}},
		{name: "withdrawal_get_not_found_other_operator", req: request{method: "GET", path: "/withdrawals/" + f.opWithdrawals[0],
			bearer: f.otherKey}},
		{name: "withdrawal_get_invalid_id", req: request{method: "GET", path: "/withdrawals/not-a-uuid", bearer: key}},
		{name: "withdrawal_get_unauthenticated", req: request{method: "GET", path: "/withdrawals/" + f.opWithdrawals[0]}},
		{name: "withdrawal_get_forbidden_admin_token", req: request{method: "GET", path: "/withdrawals/" + f.opWithdrawals[0],
			bearer: f.adminToken}},
		{name: "withdrawal_get_method_not_allowed", req: request{method: "DELETE", path: "/withdrawals/" + f.opWithdrawals[0], bearer: key}},
	}
	runGolden(t, f.env, "recon_", cases)
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
	}
	for _, c := range cases {
		res := send(t, env, request{method: "GET", path: c.path, bearer: f.key})
		if msg, ok := invalidOn(t, res, c.field); !ok || !strings.Contains(msg, c.field) {
			t.Errorf("GET %s: %d %s, want 400 INVALID_ARGUMENT on %s", c.path, res.status, res.body, c.field)
		}
	}
	unchanged()
}
