package webhook

import (
	"context"
	"sync"
	"time"
)

// DefaultKeyCacheTTL is how long the delivery workers of one process reuse an operator's
// signing keys and webhook URL. A rotation, a revocation or a new URL reaches the outbox
// within it (a rotated-out key stays valid for its grace period anyway).
const DefaultKeyCacheTTL = time.Second

// operatorCache keeps what delivering to an operator needs (its signing keys, decrypted, and
// its webhook URL) briefly: at volume, most attempts for one operator are signed and
// addressed without a query and a decryption.
type operatorCache struct {
	load func(ctx context.Context, operatorID string) (destination, error)
	ttl  time.Duration

	mu      sync.Mutex
	entries map[string]cachedDestination
}

// destination is an operator's webhook URL and valid signing keys, newest first.
type destination struct {
	url  string
	keys [][]byte
}

type cachedDestination struct {
	destination

	expires time.Time
}

const operatorCacheMax = 10_000

// get returns the operator's destination.
func (c *operatorCache) get(ctx context.Context, operatorID string) (destination, error) {
	if c.ttl <= 0 {
		return c.load(ctx, operatorID)
	}
	now := time.Now()
	c.mu.Lock()
	k, ok := c.entries[operatorID]
	c.mu.Unlock()
	if ok && now.Before(k.expires) {
		return k.destination, nil
	}
	d, err := c.load(ctx, operatorID)
	if err != nil {
		return d, err
	}
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= operatorCacheMax {
		c.entries = make(map[string]cachedDestination)
	}
	c.entries[operatorID] = cachedDestination{destination: d, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return d, nil
}
