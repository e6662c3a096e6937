package custody

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// RotateOptions adjust Rotate.
type RotateOptions struct {
	// Progress, when set, is told of each value re-sealed.
	Progress func(column, pk string)
	// Failpoint (tests only) is called inside each value's transaction, after its UPDATE and
	// before its COMMIT, with the number of values this run has committed.
	Failpoint func(done int)
}

// Report is what a rotation did.
type Report struct {
	// Target is the id of the master key every secret is now sealed under.
	Target string
	// Resealed counts the values re-sealed by this run, per column ("table.column").
	Resealed map[string]int
	// DeletedKeys are KMS-wrapped master keys removed from master_keys: nothing is sealed
	// under them any more.
	DeletedKeys []string
}

// Total is the number of values re-sealed.
func (r Report) Total() int {
	n := 0
	for _, v := range r.Resealed {
		n += v
	}
	return n
}

// ErrHolders is returned when a live process does not seal under the new master key.
var ErrHolders = errors.New("not every running process holds the new master key")

// Rotate re-seals every sealed value under box's primary key, value by value, each in its own
// transaction with a compare-and-swap, so the service keeps running (a value changed meanwhile
// is simply looked at again) and a rotation killed at any point leaves each value under the old
// or the new key, both of which every process holds: running it again finishes the job. It
// refuses to start while a live process does not seal under the new key, since that process
// would keep sealing under the old one (and, lacking the new key, could not open what is
// re-sealed). When every value is under the new key, KMS-wrapped master keys other than the
// new one are deleted: the old key is no longer needed.
func Rotate(ctx context.Context, pool *pgxpool.Pool, box *secret.Box, opts RotateOptions) (Report, error) {
	target := box.PrimaryID()
	rep := Report{Target: target, Resealed: map[string]int{}}
	header, err := secret.SealedHeader(target)
	if err != nil {
		return rep, err
	}
	holders, err := LiveHolders(ctx, pool)
	if err != nil {
		return rep, err
	}
	var lagging []string
	for _, h := range holders {
		if h.PrimaryKeyID != target {
			lagging = append(lagging, fmt.Sprintf("%s pid %d (%s) seals with %s", h.Host, h.PID, h.Role, h.PrimaryKeyID))
		}
	}
	if len(lagging) > 0 {
		return rep, fmt.Errorf("%w (%s): deploy it to every replica as the master key, with the old one as the previous key, "+
			"then run this again:\n  %s", ErrHolders, target, strings.Join(lagging, "\n  "))
	}

	done := 0
	// A value sealed under the old key by a process that has just been replaced can appear
	// after its column was done: passes repeat until one finds nothing.
	for pass := 0; ; pass++ {
		found := 0
		for _, c := range sealedColumns() {
			for {
				n, err := resealBatch(ctx, pool, box, c, header, opts, &done, &rep)
				if err != nil {
					return rep, err
				}
				found += n
				if n == 0 {
					break
				}
			}
		}
		if found == 0 {
			break
		}
		if pass == 10 {
			return rep, errors.New("values keep appearing under an old master key: is a process still sealing with it? Run again once every replica has the new key")
		}
	}

	deleted, err := queries.DeleteMasterKeysExcept(ctx, pool, target)
	if err != nil {
		return rep, err
	}
	rep.DeletedKeys = append([]string{}, deleted...)
	return rep, nil
}

// resealBatch re-seals up to 100 values of a column that are not under the key of header, and
// returns how many it looked at.
func resealBatch(ctx context.Context, pool *pgxpool.Pool, box *secret.Box, c column, header []byte, opts RotateOptions,
	done *int, rep *Report) (int, error) {
	values, err := c.notUnder(ctx, pool, header)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c, err)
	}
	for _, v := range values {
		resealed, err := box.Reseal(v.Sealed, c.context(v.Arg))
		if err != nil {
			return 0, fmt.Errorf("%s %s (sealed under %s): %w", c, v.Pk, keyName(v.Sealed), err)
		}
		var swapped bool
		err = store.InTx(ctx, pool, func(tx pgx.Tx) error {
			n, err := c.reseal(ctx, tx, dbsqlc.ResealWalletSeedParams{Resealed: resealed, Pk: v.Pk, Sealed: v.Sealed})
			if err != nil {
				return err
			}
			swapped = n == 1
			if opts.Failpoint != nil {
				opts.Failpoint(*done)
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("%s %s: %w", c, v.Pk, err)
		}
		if swapped { // else it changed meanwhile: the next batch looks at it again if need be
			*done++
			rep.Resealed[c.String()]++
			if opts.Progress != nil {
				opts.Progress(c.String(), v.Pk)
			}
		}
	}
	return len(values), nil
}

func keyName(sealed []byte) string {
	if id := secret.SealedKeyID(sealed); id != "" {
		return "master key " + id
	}
	return "a master key, in the format without key ids"
}

// ColumnStatus counts a column's sealed values per master key id ("v1": the format without
// key ids).
type ColumnStatus struct {
	Column string
	ByKey  map[string]int
}

// Status is where the secrets stand: what each column is sealed under, the KMS-wrapped master
// keys stored, and the live processes with their keys.
type Status struct {
	Columns []ColumnStatus
	KMSKeys []string
	Holders []Holder
}

// Pending is the number of values not sealed under the key id.
func (s Status) Pending(keyID string) int {
	n := 0
	for _, c := range s.Columns {
		for k, v := range c.ByKey {
			if k != keyID {
				n += v
			}
		}
	}
	return n
}

// ReadStatus reads the Status.
func ReadStatus(ctx context.Context, pool *pgxpool.Pool) (Status, error) {
	var st Status
	for _, c := range sealedColumns() {
		keys, err := c.keys(ctx, pool)
		if err != nil {
			return st, fmt.Errorf("%s: %w", c, err)
		}
		cs := ColumnStatus{Column: c.String(), ByKey: map[string]int{}}
		for _, k := range keys {
			cs.ByKey[k.KeyID] = int(k.N)
		}
		st.Columns = append(st.Columns, cs)
	}
	keys, err := queries.MasterKeyIDs(ctx, pool)
	if err != nil {
		return st, err
	}
	st.KMSKeys = append([]string{}, keys...)
	st.Holders, err = LiveHolders(ctx, pool)
	return st, err
}
