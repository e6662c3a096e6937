package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/cofferhq/coffer/server/internal/fault"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Limits are the login limits, each over a sliding Window. Every attempt is counted before
// its password is checked, in PostgreSQL (so they hold across API replicas, and N parallel
// guesses cannot get past them); a failed attempt stays counted, any other outcome (success,
// missing TOTP code, no hashing capacity, an error) gives its count back.
//
// The hard limit is per (account, client): an attacker hammering an admin's email from its
// own address locks out only itself, never the admin logging in from elsewhere. Per client
// across accounts, a looser limit stops one address spraying many emails. Per account across
// clients, a ceiling stops guessing spread over many addresses (IPv6 /64s are cheap); it does
// not apply to clients the admin logged in from within KnownClientFor, so even a distributed
// attack cannot lock an admin out of the places it usually logs in from.
type Limits struct {
	Window           time.Duration
	PerAccountClient int
	PerClient        int
	PerAccount       int
	KnownClientFor   time.Duration
}

// DefaultLimits are the production limits.
func DefaultLimits() Limits {
	return Limits{Window: 15 * time.Minute, PerAccountClient: 10, PerClient: 50, PerAccount: 100,
		KnownClientFor: 30 * 24 * time.Hour}
}

// attempt is a login attempt's counts, one per limit it passed.
type attempt struct {
	q      *store.Queries
	window time.Duration
	keys   []string
	resets []time.Time
}

// refund gives the attempt's counts back, in the windows they were counted in. It runs even
// when the request was cancelled.
func (a *attempt) refund(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for i, key := range a.keys {
		a.q.UnhitRateLimit(ctx, key, a.window, a.resets[i]) //nolint:errcheck // a lost refund only delays the next login
	}
}

// accountKey names an email in limit keys: a digest, so that the emails attackers try are not
// stored, and lengths are bounded.
func accountKey(email string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(email)))
	return hex.EncodeToString(sum[:16])
}

// countAttempt counts a login attempt against each limit, narrowest first, and refuses it
// (RATE_LIMITED, with the counts it took given back) at the first one it exceeds. Narrowest
// first means a client refused for one account never reaches that account's ceiling, which
// others share.
func (s *Service) countAttempt(ctx context.Context, q *store.Queries, email, client string, known bool) (*attempt, error) {
	type limit struct {
		key string
		max int
	}
	account := accountKey(email)
	limits := []limit{
		{"admin-login:account-client:" + account + ":" + client, s.limits.PerAccountClient},
		{"admin-login:client:" + client, s.limits.PerClient},
	}
	if !known {
		limits = append(limits, limit{"admin-login:account:" + account, s.limits.PerAccount})
	}
	att := &attempt{q: q, window: s.limits.Window}
	for _, l := range limits {
		h, err := q.HitSlidingRateLimit(ctx, l.key, s.limits.Window)
		if err != nil {
			att.refund(ctx)
			return nil, fault.Wrap(err, "count login attempt")
		}
		att.keys, att.resets = append(att.keys, l.key), append(att.resets, h.ResetAt)
		if h.Hits(s.limits.Window) > l.max {
			att.refund(ctx)
			e := fault.New(fault.RateLimited, "too many failed logins; try again later")
			e.RetryAfter = h.RetryAfterSeconds(s.limits.Window, l.max)
			return nil, e
		}
	}
	return att, nil
}
