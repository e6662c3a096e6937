package admin

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"golang.org/x/crypto/argon2"
	"golang.org/x/sync/semaphore"

	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/secret"
)

// argon2id parameters (OWASP's minimum recommendation: 19 MiB, 2 passes, 1 lane).
const (
	argonTime    = 2
	argonMemory  = 19 * 1024 // KiB
	argonThreads = 1
	argonKeyLen  = 32
)

// HashMemoryPerHash is what one password hash holds while it runs, in bytes.
const HashMemoryPerHash = argonMemory << 10

// dummyHash is checked when the email is unknown, so an unknown email costs the same hash
// (and waits for the same hashing capacity) as a known one: response time does not tell which
// emails exist. Its key matches no password.
func dummyHash() string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(make([]byte, 16)), base64.RawStdEncoding.EncodeToString(make([]byte, argonKeyLen)))
}

// HashPassword returns an argon2id hash in the PHC string format. It does not wait for the
// hashing capacity: Service.Create does.
func HashPassword(password string) string {
	salt := secret.Random(16)
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// phc is a parsed argon2id hash.
type phc struct {
	mem, time  uint32
	threads    uint8
	salt, want []byte
}

func parseHash(hash string) (phc, error) {
	var h phc
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return h, errors.New("not an argon2id hash")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return h, errors.New("unsupported argon2 version")
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &h.mem, &h.time, &h.threads); err != nil {
		return h, errors.New("malformed argon2 parameters")
	}
	var err error
	if h.salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil {
		return h, err
	}
	if h.want, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil {
		return h, err
	}
	return h, nil
}

func (h phc) check(password string) bool {
	got := argon2.IDKey([]byte(password), h.salt, h.time, h.mem, h.threads, uint32(len(h.want))) //nolint:gosec // a hash is 32 bytes
	return subtle.ConstantTimeCompare(got, h.want) == 1
}

// CheckPassword verifies a password against a PHC argon2id hash in constant time. It does not
// wait for the hashing capacity: Service.Login does.
func CheckPassword(hash, password string) (bool, error) {
	h, err := parseHash(hash)
	if err != nil {
		return false, err
	}
	return h.check(password), nil
}

// hashGate bounds the memory that password hashes hold at once: each hash takes its argon2
// memory (KiB) from a budget, and waits for room. Without it every login arriving at once
// holds 19 MiB, and 100 parallel logins with random emails grew a process by 1.8 GiB.
type hashGate struct {
	sem    *semaphore.Weighted
	budget int64  // KiB
	onRun  func() // tests count the hashes that ran
}

func newHashGate(budgetBytes int64) *hashGate {
	budget := max(budgetBytes>>10, argonMemory) // room for one hash at least
	return &hashGate{sem: semaphore.NewWeighted(budget), budget: budget}
}

// errHashBusy answers a login that waited its turn to hash in vain: the process is at its
// hashing capacity (a flood of logins), not this client's fault, hence UNAVAILABLE.
func errHashBusy() error {
	e := fault.New(fault.Unavailable, "too many logins at once; try again in a moment")
	e.RetryAfter = 1
	return e
}

// run runs fn once mem KiB fit in the budget, waiting at most wait (0: as long as ctx lives).
func (g *hashGate) run(ctx context.Context, mem uint32, wait time.Duration, fn func()) error {
	weight := min(int64(mem), g.budget) // a hash larger than the budget runs alone
	parent := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	if err := g.sem.Acquire(ctx, weight); err != nil {
		if parent.Err() != nil {
			return parent.Err()
		}
		return errHashBusy()
	}
	defer g.sem.Release(weight)
	if g.onRun != nil {
		g.onRun()
	}
	fn()
	// The hash's memory is garbage now, and the heap would grow by twice the budget before the
	// collector ran on its own (100 parallel logins: +97 MiB for a 38 MiB budget). Collecting
	// before the room is given back lets the next hash reuse it; a collection of this small
	// heap costs ~1% of a hash.
	runtime.GC()
	return nil
}
