package custody

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/admin"
	"github.com/cofferhq/coffer/server/internal/custody/custodytest"
	"github.com/cofferhq/coffer/server/internal/operator"
	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/testdb"
	"github.com/cofferhq/coffer/server/internal/testfactory"
)

func TestMain(m *testing.M) { os.Exit(testdb.Main(m)) }

// TestEverySealedColumnIsRotated: every bytea column named *sealed in the schema is one the
// rotation re-seals, so a secret added later cannot be forgotten by it.
func TestEverySealedColumnIsRotated(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	inSchema := testfactory.Column[string](context.Background(), t, pool, `SELECT table_name || '.' || column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND data_type = 'bytea' AND column_name LIKE '%sealed' ORDER BY 1`)
	var listed []string
	for _, c := range sealedColumns() {
		listed = append(listed, c.String())
	}
	slices.Sort(listed)
	if !slices.Equal(inSchema, listed) {
		t.Fatalf("sealed columns in the schema %v, rotated %v", inSchema, listed)
	}
}

// values is the number of sealed values of the fixtures here (3 operators).
var values = custodytest.Values(3)

func populate(t *testing.T, pool *pgxpool.Pool, box *secret.Box, legacyKey []byte) *custodytest.Fixture {
	t.Helper()
	return custodytest.Populate(t, pool, box, 3, legacyKey)
}

func exec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	custodytest.Exec(t, pool, sql, args...)
}

func newKey() []byte { return secret.Random(secret.KeySize) }

func box(t *testing.T, primary []byte, others ...[]byte) *secret.Box {
	t.Helper()
	b, err := secret.NewBox(primary, others...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rotation is a database of secrets sealed under an old key, and the boxes of a rotation to a
// new one: the old key's, both keys' (the new one primary), the new key's.
type rotation struct {
	pool                 *pgxpool.Pool
	oldKey, newKey       []byte
	oldBox, both, newBox *secret.Box
	secrets              *custodytest.Fixture
}

// setupRotation fills a fresh database with secrets under the old key, some in version 1
// (sealed by the raw old key) when v1 is set.
func setupRotation(t *testing.T, v1 bool) rotation {
	t.Helper()
	r := rotation{pool: testdb.New(t), oldKey: newKey(), newKey: newKey()}
	r.oldBox, r.both, r.newBox = box(t, r.oldKey), box(t, r.newKey, r.oldKey), box(t, r.newKey)
	var legacyKey []byte
	if v1 {
		legacyKey = r.oldKey
	}
	r.secrets = populate(t, r.pool, r.oldBox, legacyKey)
	return r
}

// TestRotate: a rotation moves every secret, version-1 values included, under the new key
// while the old key keeps opening what is not moved yet; a second run finds nothing to do; the
// old key is then useless and unneeded.
func TestRotate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := setupRotation(t, true)
	if err := r.secrets.Check(r.oldBox); err != nil {
		t.Fatal(err)
	}
	st, err := ReadStatus(ctx, r.pool)
	if err != nil || st.Pending(secret.KeyID(r.newKey)) != values || st.Columns[0].ByKey["v1"] != 1 {
		t.Fatalf("status before: %+v %v", st, err)
	}
	if err := r.secrets.Check(r.newBox); err == nil {
		t.Fatal("the new key opens secrets before the rotation")
	}

	rep, err := Rotate(ctx, r.pool, r.both, RotateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total() != values || rep.Target != secret.KeyID(r.newKey) || rep.Resealed["operator_keys.sealed"] != 4 {
		t.Fatalf("report %+v", rep)
	}
	if err := r.secrets.Check(r.newBox); err != nil {
		t.Fatalf("after the rotation, the new key alone: %v", err)
	}
	if err := r.secrets.Check(r.oldBox); err == nil {
		t.Fatal("the old key still opens the secrets")
	}
	if st, _ := ReadStatus(ctx, r.pool); st.Pending(secret.KeyID(r.newKey)) != 0 {
		t.Fatalf("pending after: %+v", st)
	}
	if rep, err := Rotate(ctx, r.pool, r.both, RotateOptions{}); err != nil || rep.Total() != 0 {
		t.Fatalf("second run: %+v %v", rep, err)
	}
}

// TestRotateOnline: running processes keep working through a rotation. A live process that
// does not seal under the new key stops it before anything is re-sealed; values written while
// it runs (a new operator key sealed by an up-to-date replica, one sealed under the old key by
// a straggler) end under the new key too, and a value changed between read and write is not
// overwritten.
func TestRotateOnline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := setupRotation(t, false)

	// A replica still sealing with the old key: refused, nothing touched.
	lagging, cancel := context.WithCancel(ctx)
	done, err := Announce(lagging, r.pool, r.oldBox, "api", discard())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Rotate(ctx, r.pool, r.both, RotateOptions{}); !errors.Is(err, ErrHolders) || !strings.Contains(err.Error(), secret.KeyID(r.oldKey)) {
		t.Fatalf("with a lagging replica: %v", err)
	}
	if st, _ := ReadStatus(ctx, r.pool); st.Pending(secret.KeyID(r.newKey)) != values {
		t.Fatal("a refused rotation re-sealed something")
	}
	cancel()
	<-done
	// The replica restarted with the new key (and the old one): the rotation runs, while
	// processes keep opening and sealing.
	upToDate, cancel2 := context.WithCancel(ctx)
	defer cancel2()
	if _, err := Announce(upToDate, r.pool, r.both, "api", discard()); err != nil {
		t.Fatal(err)
	}
	ops := operator.New(r.pool, r.both)
	var opID string
	for id := range r.secrets.Operators {
		opID = id
		break
	}
	var mu sync.Mutex
	steps := 0
	rep, err := Rotate(ctx, r.pool, r.both, RotateOptions{Failpoint: func(int) {
		mu.Lock()
		defer mu.Unlock()
		steps++
		if err := r.secrets.Check(r.both); err != nil { //nolint:contextcheck // the failpoint has no context; Check uses its own
			t.Errorf("mid-rotation, a process with r.both keys: %v", err)
		}
		switch steps {
		case 2: // an operator key rotation on an up-to-date replica
			next, _, err := ops.RotateKey(ctx, opID, time.Hour)
			if err != nil {
				t.Error(err)
			}
			r.secrets.Operators[opID] = append([][]byte{[]byte(next)}, r.secrets.Operators[opID]...)
		case 3: // a straggler seals a TOTP secret under the old key (another connection: it commits)
			var id string
			r.pool.QueryRow(ctx, `SELECT id::text FROM admins WHERE totp_sealed IS NULL`).Scan(&id) //nolint:errcheck
			s := secret.Random(20)
			if _, err := r.pool.Exec(ctx, `UPDATE admins SET totp_sealed = $1 WHERE id = $2`, r.oldBox.Seal(s, admin.TOTPContext(id)), id); err != nil {
				t.Error(err)
			}
			r.secrets.TOTP[id] = s
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.secrets.Check(r.newBox); err != nil {
		t.Fatalf("after the rotation, the new key alone: %v", err)
	}
	if rep.Total() < values+1 {
		t.Fatalf("report %+v", rep)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestOpenBoxKMS: a KMS source (gocloud's local keeper here) gives master keys stored wrapped in
// PostgreSQL: the first process on a fresh database creates one, replicas starting together
// agree on it, a new one takes over sealing while the old one still opens, and a KMS that
// unwraps nothing is an error rather than a new key.
func TestOpenBoxKMS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	kmsA, kmsB := localKMS(t), localKMS(t)

	// Replicas starting together on a fresh database.
	boxes := make([]*secret.Box, 6)
	errs := make([]error, len(boxes))
	var wg sync.WaitGroup
	for i := range boxes {
		wg.Go(func() { boxes[i], errs[i] = OpenBox(ctx, pool, Sources{Primary: Source{URL: kmsA}}) })
	}
	wg.Wait()
	for i, b := range boxes {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if b.PrimaryID() != boxes[0].PrimaryID() || len(b.KeyIDs()) != 1 {
			t.Fatalf("replica %d: %v vs %v", i, b.KeyIDs(), boxes[0].KeyIDs())
		}
	}
	k1 := boxes[0].PrimaryID()
	var stored []byte
	if err := pool.QueryRow(ctx, `SELECT wrapped FROM master_keys WHERE key_id = $1`, k1).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	sealed := boxes[0].Seal([]byte("operator key"), "ctx")

	// Another KMS key unwraps nothing: an error naming the cause, no second master key.
	if _, err := OpenBox(ctx, pool, Sources{Primary: Source{URL: kmsB}}); err == nil || !strings.Contains(err.Error(), "unwraps none") {
		t.Fatalf("another KMS: %v", err)
	}
	// A database with secrets but no master key stored: no key is created behind the operator's back.
	empty := testdb.New(t)
	populate(t, empty, box(t, newKey()), nil)
	if _, err := OpenBox(ctx, empty, Sources{Primary: Source{URL: kmsA}}); err == nil || !strings.Contains(err.Error(), "coffer keys new-master") {
		t.Fatalf("database with secrets: %v", err)
	}

	// A new master key under another KMS key: it seals, the previous KMS still opens.
	k2, err := NewKMSKey(ctx, pool, kmsB)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := OpenBox(ctx, pool, Sources{Primary: Source{URL: kmsB}, Previous: Source{URL: kmsA}})
	if err != nil {
		t.Fatal(err)
	}
	if rotated.PrimaryID() != k2 || !slices.Equal(rotated.KeyIDs(), []string{k2, k1}) {
		t.Fatalf("after new-master: %v, want %s then %s", rotated.KeyIDs(), k2, k1)
	}
	if pt, err := rotated.Open(sealed, "ctx"); err != nil || string(pt) != "operator key" {
		t.Fatalf("old value: %q %v", pt, err)
	}
	// A new master key under the same KMS key: the newest seals, the older still opens.
	k3, err := NewKMSKey(ctx, pool, kmsA)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := OpenBox(ctx, pool, Sources{Primary: Source{URL: kmsA}}); err != nil || !slices.Equal(b.KeyIDs(), []string{k3, k1}) {
		t.Fatalf("same KMS: %v %v", b, err)
	}

	// A rotation deletes the wrapped keys it moved away from.
	rotated, _ = OpenBox(ctx, pool, Sources{Primary: Source{URL: kmsB}, Previous: Source{URL: kmsA}})
	rep, err := Rotate(ctx, pool, rotated, RotateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rep.DeletedKeys)
	want := []string{k1, k3}
	slices.Sort(want)
	if !slices.Equal(rep.DeletedKeys, want) {
		t.Fatalf("deleted %v, want %v", rep.DeletedKeys, want)
	}
	if _, err := OpenBox(ctx, pool, Sources{Primary: Source{URL: kmsA}}); err == nil {
		t.Fatal("the old KMS still gives a master key")
	}

	// A row whose wrapped key is not the key its id names.
	exec(t, pool, `INSERT INTO master_keys (key_id, wrapped) VALUES ('0000000000000000', $1)`, stored)
	if _, err := OpenBox(ctx, pool, Sources{Primary: Source{URL: kmsA}}); err == nil || !strings.Contains(err.Error(), "does not match its id") {
		t.Fatalf("altered row: %v", err)
	}
}

// localKMS is a gocloud local keeper URL with a fresh key.
func localKMS(t *testing.T) string {
	t.Helper()
	return "base64key://" + base64.URLEncoding.EncodeToString(secret.Random(32))
}
