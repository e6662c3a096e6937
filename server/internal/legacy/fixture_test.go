package legacy_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/cofferhq/coffer/server/internal/apptest"
	"github.com/cofferhq/coffer/server/internal/domain"
)

// operators is the cast of the operator API's tests: an operator, a sub-operator of it and an
// unrelated operator, each with its API key, and an admin's token.
type operators struct {
	env                                 *apptest.Env
	op, child, other                    domain.Operator
	key, childKey, otherKey, adminToken string
}

func newOperators(t *testing.T) operators {
	t.Helper()
	o := operators{env: apptest.StartAPI(t)}
	o.op, o.key = o.env.Operator(t, domain.OperatorSettings{})
	o.child, o.childKey = o.env.Operator(t, domain.OperatorSettings{ParentID: &o.op.ID})
	o.other, o.otherKey = o.env.Operator(t, domain.OperatorSettings{})
	_, o.adminToken = o.env.Admin(t, "")
	return o
}

// runGolden sends each case and checks its envelope and its golden file prefix+name.
func runGolden(t *testing.T, env *apptest.Env, prefix string, cases []goldenCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := send(t, env, c.req)
			checkEnvelopeShape(t, c.req, res)
			checkGolden(t, prefix+c.name, res)
		})
	}
}

// getData GETs path, which must answer 200, and decodes its envelope's data.
func getData[T any](t *testing.T, env *apptest.Env, path, bearer string) T {
	t.Helper()
	res := send(t, env, request{method: "GET", path: path, bearer: bearer})
	if res.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, res.status, res.body)
	}
	e, _ := decodeEnvelope(t, res)
	var data T
	if err := json.Unmarshal(e.Data, &data); err != nil {
		t.Fatal(err)
	}
	return data
}

// invalidOn reports whether res is a 400 INVALID_ARGUMENT error on field, and its message.
func invalidOn(t *testing.T, res response, field string) (message string, ok bool) {
	t.Helper()
	e, data := decodeEnvelope(t, res)
	return e.Message, res.status == http.StatusBadRequest && e.Status == "error" && data.Code == "INVALID_ARGUMENT" && data.Field == field
}

// page is data of a list answer: its items and the next page's cursor.
type page[T interface{ id() string }] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"nextCursor"`
}

// ids are the ids of a page's items.
func (p page[T]) ids() []string {
	var out []string
	for _, it := range p.Items {
		out = append(out, it.id())
	}
	return out
}

// rowsUnchanged counts the rows of tables now; the check it returns reports each table whose
// count has changed since.
func rowsUnchanged(t *testing.T, env *apptest.Env, tables ...string) (check func()) {
	t.Helper()
	before := map[string]int{}
	for _, table := range tables {
		before[table] = env.Count(t, table)
	}
	return func() {
		t.Helper()
		for _, table := range tables {
			if n := env.Count(t, table); n != before[table] {
				t.Errorf("%s: %d rows after bad input, %d before", table, n, before[table])
			}
		}
	}
}
