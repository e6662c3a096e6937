package webhook

import (
	"context"
	"sync"
	"time"
)

// DefaultKeyCacheTTL is how long the delivery workers of one process reuse an operator's
// signing keys. A rotation or a revocation reaches the outbox within it (a rotated-out key
// stays valid for its grace period anyway).
const DefaultKeyCacheTTL = time.Second

// keyCache keeps operators' signing keys (decrypted) briefly: at volume, most attempts for
// one operator are signed without a query and a decryption.
type keyCache struct {
	source KeySource
	ttl    time.Duration

	mu      sync.Mutex
	entries map[string]cachedKeys
}

type cachedKeys struct {
	keys    [][]byte
	expires time.Time
}

const keyCacheMax = 10_000

// get returns the operator's valid signing keys, newest first.
func (c *keyCache) get(ctx context.Context, operatorID string) ([][]byte, error) {
	if c.ttl <= 0 {
		return c.source.SigningKeys(ctx, operatorID)
	}
	now := time.Now()
	c.mu.Lock()
	k, ok := c.entries[operatorID]
	c.mu.Unlock()
	if ok && now.Before(k.expires) {
		return k.keys, nil
	}
	keys, err := c.source.SigningKeys(ctx, operatorID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.entries == nil || len(c.entries) >= keyCacheMax {
		c.entries = make(map[string]cachedKeys)
	}
	c.entries[operatorID] = cachedKeys{keys: keys, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return keys, nil
}
