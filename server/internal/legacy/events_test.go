package legacy_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	cofferv1 "github.com/cofferhq/coffer/gen/go/coffer/v1"
	sdk "github.com/cofferhq/coffer/sdk/go/webhook"
	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// eventFixture: an operator with four events (delivered, dead, a failed synchronous test send,
// pending), a sub-operator of it with one and an unrelated operator with one.
type eventFixture struct {
	operators

	delivered, dead, syncTest, pending string
	childEvent, otherEvent             string
}

// insertEvent writes an event row in its own transaction (so the feed orders events as they
// are inserted) in the given delivery state; its body is a DEPOSIT or WITHDRAW_COMPLETE form.
func insertEvent(t *testing.T, env *apptest.Env, operatorID string, typ domain.EventType, state domain.DeliveryState, sync bool) string {
	t.Helper()
	id := uuid.NewString()
	var msg proto.Message
	if typ == "WITHDRAW_COMPLETE" {
		msg = &cofferv1.WithdrawCompleteEvent{Event: "WITHDRAW_COMPLETE", WithdrawRequestId: "6b000000-0000-4000-8000-000000000001",
			ExternalUserId: "feed-user", Type: "DIRECT_TRANSFER", Status: "COMPLETED", FiatAmount: "25.00", Test: sync}
	} else {
		ref := "order-7"
		msg = &cofferv1.DepositEvent{Event: "DEPOSIT", DepositId: 7, IdempotencyKey: "idem-7", ExternalUserId: "feed-user",
			Amount: "24900000", GrossAmount: "25000000", FeeAmount: "100000", ChainId: 1337,
			TransactionHash: new("0x" + strings.Repeat("7", 64)), OperatorReference: &ref, Test: sync}
	}
	body, err := sdk.Encode(msg)
	if err != nil {
		t.Fatal(err)
	}
	attempts, status := 0, 0
	switch state {
	case domain.DeliveryDelivered:
		attempts, status = 1, 200
	case domain.DeliveryDead:
		attempts, status = 5, 500
	case domain.DeliveryFailed:
		attempts, status = 1, 503
	case domain.DeliveryPending:
	}
	if _, err := env.Pool.Exec(t.Context(), `INSERT INTO webhook_events (id, operator_id, event_type, subject_id, test, sync, body,
		state, attempts, last_status, last_attempt_at, delivered_at, dead_at)
		VALUES ($1::uuid, $2, $3, $1::text, $4, $4, $5, $6, $7::int, NULLIF($8::int, 0), CASE WHEN $7::int > 0 THEN now() END,
			CASE WHEN $6::text = 'delivered' THEN now() END, CASE WHEN $6::text = 'dead' THEN now() END)`,
		id, operatorID, string(typ), sync, string(body), string(state), attempts, status); err != nil {
		t.Fatal(err)
	}
	return id
}

func newEventFixture(t *testing.T) *eventFixture {
	t.Helper()
	f := &eventFixture{operators: newOperators(t)}
	env := f.env
	f.delivered = insertEvent(t, env, f.op.ID, "DEPOSIT", domain.DeliveryDelivered, false)
	f.childEvent = insertEvent(t, env, f.child.ID, "DEPOSIT", domain.DeliveryDelivered, false)
	f.dead = insertEvent(t, env, f.op.ID, "WITHDRAW_COMPLETE", domain.DeliveryDead, false)
	f.otherEvent = insertEvent(t, env, f.other.ID, "DEPOSIT", domain.DeliveryDelivered, false)
	f.syncTest = insertEvent(t, env, f.op.ID, "DEPOSIT", domain.DeliveryFailed, true)
	f.pending = insertEvent(t, env, f.op.ID, "WITHDRAW_COMPLETE", domain.DeliveryPending, false)
	// An event shows in the feed once every transaction older than its own has ended, on the
	// whole cluster (other tests' included): wait for all of them.
	deadline := time.Now().Add(15 * time.Second)
	for _, c := range []struct {
		op domain.Operator
		n  int
	}{{f.op, 4}, {f.child, 1}, {f.other, 1}} {
		for {
			evs, _, err := env.Services.Webhooks.Feed(t.Context(), domain.Operators(c.op.ID), "", 200)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == c.n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the feed shows %d events of %s; want %d", len(evs), c.op.ID, c.n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return f
}

// feedItem is an item of GET /events.
type feedItem struct {
	EventID string `json:"eventId"`
	State   string `json:"state"`
}

func (it feedItem) id() string { return it.EventID }

// feedPage is data of GET /events.
type feedPage = page[feedItem]

func getFeed(t *testing.T, env *apptest.Env, path, bearer string) feedPage {
	t.Helper()
	p := getData[feedPage](t, env, path, bearer)
	if p.NextCursor == nil || *p.NextCursor == "" {
		t.Fatalf("GET %s: nextCursor is null", path)
	}
	return p
}

func TestEvents(t *testing.T) {
	f := newEventFixture(t)
	t.Run("golden", func(t *testing.T) { eventsGolden(t, f) })
	t.Run("paging", func(t *testing.T) {
		want := []string{f.delivered, f.dead, f.syncTest, f.pending}
		var got []string
		path := "/events?limit=3"
		for range 4 {
			p := getFeed(t, f.env, path, f.key)
			got = append(got, p.ids()...)
			path = "/events?limit=3&after=" + url.QueryEscape(*p.NextCursor)
			if len(p.Items) < 3 {
				// Caught up: the cursor stays where it is.
				again := getFeed(t, f.env, path, f.key)
				if len(again.Items) != 0 || *again.NextCursor != *p.NextCursor {
					t.Errorf("caught up: %v, cursor %q; want no events and cursor %q", again.ids(), *again.NextCursor, *p.NextCursor)
				}
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("feed by 3: %v; want %v", got, want)
		}
	})
	t.Run("isolation", func(t *testing.T) { eventsIsolation(t, f) })
	t.Run("bad input", func(t *testing.T) { eventsBadInput(t, f) })
	t.Run("redeliver", func(t *testing.T) { eventsRedeliver(t, f) })
	t.Run("rate limit", func(t *testing.T) { eventsRateLimit(t, f.env) })
}

func eventsGolden(t *testing.T, f *eventFixture) {
	t.Helper()
	key := f.key
	first := getFeed(t, f.env, "/events?limit=2", key)
	all := getFeed(t, f.env, "/events", key)
	list := []goldenCase{
		{name: "list_ok", req: request{method: "GET", path: "/events", bearer: key}},
		{name: "list_first_page", req: request{method: "GET", path: "/events?limit=2", bearer: key}},
		{name: "list_next_page", req: request{method: "GET", path: "/events?limit=2&after=" + url.QueryEscape(*first.NextCursor), bearer: key}},
		{name: "list_caught_up", req: request{method: "GET", path: "/events?after=" + url.QueryEscape(*all.NextCursor), bearer: key}},
		{name: "list_sub_operator", req: request{method: "GET", path: "/events?operatorId=" + f.child.ID, bearer: key}},
		{name: "list_not_found_other_operator", req: request{method: "GET", path: "/events?operatorId=" + f.op.ID, bearer: f.otherKey}},
		{name: "list_invalid_cursor", req: request{method: "GET", path: "/events?after=xyz", bearer: key}},
		{name: "list_invalid_limit", req: request{method: "GET", path: "/events?limit=201", bearer: key}},
		{name: "list_unknown_parameter", req: request{method: "GET", path: "/events?cursor=abc", bearer: key}},
		{name: "list_unauthenticated", req: request{method: "GET", path: "/events"}},
		{name: "list_forbidden_admin_token", req: request{method: "GET", path: "/events", bearer: f.adminToken}},
		{name: "list_method_not_allowed", req: request{method: "POST", path: "/events", bearer: key, body: `{}`}},

		{name: "redeliver_not_found_other_operator", req: request{method: "POST", path: "/events/" + f.delivered + "/redeliver", bearer: f.otherKey}},
		{name: "redeliver_not_found", req: request{method: "POST", path: "/events/" + unknownUUID + "/redeliver", bearer: key}},
		{name: "redeliver_invalid_id", req: request{method: "POST", path: "/events/abc/redeliver", bearer: key}},
		{name: "redeliver_synchronous", req: request{method: "POST", path: "/events/" + f.syncTest + "/redeliver", bearer: key}},
		{name: "redeliver_unauthenticated", req: request{method: "POST", path: "/events/" + f.delivered + "/redeliver"}},
		{name: "redeliver_forbidden_admin_token", req: request{method: "POST", path: "/events/" + f.delivered + "/redeliver", bearer: f.adminToken}},
		{name: "redeliver_method_not_allowed", req: request{method: "GET", path: "/events/" + f.delivered + "/redeliver", bearer: key}},
		{name: "redeliver_delivered", req: request{method: "POST", path: "/events/" + f.delivered + "/redeliver", bearer: key}},
		{name: "redeliver_dead", req: request{method: "POST", path: "/events/" + f.dead + "/redeliver", bearer: key, body: `{}`}},
		{name: "redeliver_pending", req: request{method: "POST", path: "/events/" + f.pending + "/redeliver", bearer: key}},
		{name: "redeliver_sub_operator", req: request{method: "POST", path: "/events/" + f.childEvent + "/redeliver", bearer: key,
			body: `{"operatorId":"` + f.child.ID + `"}`}},
	}
	runGolden(t, f.env, "events_", list)
}

// eventsIsolation: an operator's feed holds its own events only; a parent reads a
// sub-operator's by naming it; any other operator's feed or event is NOT_FOUND.
func eventsIsolation(t *testing.T, f *eventFixture) {
	t.Helper()
	env := f.env
	for _, c := range []struct {
		name, path, key string
		want            []string
	}{
		{"parent", "/events", f.key, []string{f.delivered, f.dead, f.syncTest, f.pending}},
		{"parent naming its sub-operator", "/events?operatorId=" + f.child.ID, f.key, []string{f.childEvent}},
		{"sub-operator", "/events", f.childKey, []string{f.childEvent}},
		{"other", "/events", f.otherKey, []string{f.otherEvent}},
	} {
		if got := getFeed(t, env, c.path, c.key).ids(); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v; want %v", c.name, got, c.want)
		}
	}
	jobs := env.Count(t, "river_job")
	for _, r := range []request{
		{method: "GET", path: "/events?operatorId=" + f.other.ID, bearer: f.key},
		{method: "GET", path: "/events?operatorId=" + f.op.ID, bearer: f.childKey},
		{method: "POST", path: "/events/" + f.otherEvent + "/redeliver", bearer: f.key},
		{method: "POST", path: "/events/" + f.childEvent + "/redeliver", bearer: f.key}, // a sub-operator's is named
		{method: "POST", path: "/events/" + f.delivered + "/redeliver", bearer: f.childKey},
		{method: "POST", path: "/events/" + f.otherEvent + "/redeliver", bearer: f.key, body: `{"operatorId":"` + f.child.ID + `"}`},
		{method: "POST", path: "/events/" + f.otherEvent + "/redeliver", bearer: f.key, body: `{"operatorId":"` + f.other.ID + `"}`},
	} {
		res := send(t, env, r)
		if _, data := decodeEnvelope(t, res); res.status != http.StatusNotFound || data.Code != "NOT_FOUND" {
			t.Errorf("%s %s: %d %s, want 404 NOT_FOUND", r.method, r.path, res.status, res.body)
		}
	}
	if n := env.Count(t, "river_job"); n != jobs {
		t.Errorf("refused redeliveries queued %d jobs", n-jobs)
	}
}

// eventsBadInput: each bad parameter is a 400 INVALID_ARGUMENT naming it, and changes nothing.
func eventsBadInput(t *testing.T, f *eventFixture) {
	t.Helper()
	env := f.env
	otherList := base64.RawURLEncoding.EncodeToString([]byte(`{"v":1,"l":"deposits","s":3}`))
	unchanged := rowsUnchanged(t, env, "webhook_events", "river_job", "rate_limits")
	states := getFeed(t, env, "/events", f.key)
	cases := []struct{ method, path, body, field string }{
		{"GET", "/events?after=xyz", "", "after"},
		{"GET", "/events?after=", "", "after"},
		{"GET", "/events?after=" + otherList, "", "after"},
		{"GET", "/events?after=" + strings.Repeat("a", 201), "", "after"},
		{"GET", "/events?limit=0", "", "limit"},
		{"GET", "/events?limit=201", "", "limit"},
		{"GET", "/events?limit=ten", "", "limit"},
		{"GET", "/events?operatorId=42", "", "operatorId"},
		{"GET", "/events?cursor=abc", "", "cursor"},
		{"GET", "/events?pageSize=2", "", "pageSize"},
		{"GET", "/events?limit=1&limit=2", "", "limit"},
		{"POST", "/events/abc/redeliver", "", "eventId"},
		{"POST", "/events/" + f.dead + "/redeliver", `{"operatorId":"42"}`, "operatorId"},
		{"POST", "/events/" + f.dead + "/redeliver", `{"eventId":"` + f.dead + `"}`, "eventId"},
		{"POST", "/events/" + f.dead + "/redeliver", `{"force":true}`, "force"},
		{"POST", "/events/" + f.dead + "/redeliver?operatorId=" + f.child.ID, "", "operatorId"},
	}
	for _, c := range cases {
		res := send(t, env, request{method: c.method, path: c.path, body: c.body, bearer: f.key})
		if _, ok := invalidOn(t, res, c.field); !ok {
			t.Errorf("%s %s %s: %d %s, want 400 INVALID_ARGUMENT on %s", c.method, c.path, c.body, res.status, res.body, c.field)
		}
	}
	unchanged()
	if after := getFeed(t, env, "/events", f.key); !slices.Equal(after.Items, states.Items) {
		t.Errorf("bad input changed the events: %v, before %v", after.Items, states.Items)
	}
}

// eventsRedeliver: a redelivery moves a delivered or dead event to PENDING, queued once; a
// pending one stays as it is, not queued again.
func eventsRedeliver(t *testing.T, f *eventFixture) {
	t.Helper()
	env := f.env
	op, key := env.Operator(t, domain.OperatorSettings{})
	delivered := insertEvent(t, env, op.ID, "DEPOSIT", domain.DeliveryDelivered, false)
	pending := insertEvent(t, env, op.ID, "DEPOSIT", domain.DeliveryPending, false)
	jobs := func(id string) int {
		var n int
		if err := env.Pool.QueryRow(t.Context(), `SELECT count(*) FROM webhook_queue WHERE event_id = $1`,
			id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		id   string
		jobs int
	}{{delivered, 1}, {pending, 0}, {delivered, 1}} {
		res := send(t, env, request{method: "POST", path: "/events/" + c.id + "/redeliver", bearer: key})
		e, _ := decodeEnvelope(t, res)
		var ev struct {
			State string `json:"state"`
		}
		if err := json.Unmarshal(e.Data, &ev); res.status != http.StatusOK || err != nil || ev.State != "PENDING" {
			t.Errorf("redeliver %s: %d %s", c.id, res.status, res.body)
		}
		if n := jobs(c.id); n != c.jobs {
			t.Errorf("redeliver %s: queued %d times; want %d", c.id, n, c.jobs)
		}
	}
}

// eventsRateLimit: ten redeliveries a minute per operator; the eleventh is 429 RATE_LIMITED
// with Retry-After, and queues nothing.
func eventsRateLimit(t *testing.T, env *apptest.Env) {
	t.Helper()
	op, key := env.Operator(t, domain.OperatorSettings{})
	var ids []string
	for range 11 {
		ids = append(ids, insertEvent(t, env, op.ID, "DEPOSIT", domain.DeliveryDelivered, false))
	}
	for i, id := range ids[:10] {
		if res := send(t, env, request{method: "POST", path: "/events/" + id + "/redeliver", bearer: key}); res.status != http.StatusOK {
			t.Fatalf("redelivery %d: %d %s", i+1, res.status, res.body)
		}
	}
	jobs := env.Count(t, "river_job")
	res := send(t, env, request{method: "POST", path: "/events/" + ids[10] + "/redeliver", bearer: key})
	checkGolden(t, "events_redeliver_rate_limited", res)
	if ra, err := strconv.Atoi(res.header.Get("Retry-After")); res.status != http.StatusTooManyRequests || err != nil || ra < 1 {
		t.Errorf("eleventh redelivery: %d Retry-After %q %s", res.status, res.header.Get("Retry-After"), res.body)
	}
	if n := env.Count(t, "river_job"); n != jobs {
		t.Errorf("the refused redelivery queued %d jobs", n-jobs)
	}
	var state string
	if err := env.Pool.QueryRow(t.Context(), "SELECT state FROM webhook_events WHERE id = $1", ids[10]).Scan(&state); err != nil || state != "delivered" {
		t.Errorf("refused event is %q (%v); want delivered", state, err)
	}
}
