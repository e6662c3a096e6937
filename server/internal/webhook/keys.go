package webhook

import "time"

// DefaultKeyCacheTTL is how long a drain reuses its operator's signing keys and webhook URL
// (it loads them when it starts, then again after this long). A rotation, a revocation or a
// new URL reaches the outbox within it (a rotated-out key stays valid for its grace period
// anyway).
const DefaultKeyCacheTTL = time.Second

// destination is an operator's webhook URL and valid signing keys, newest first.
type destination struct {
	url  string
	keys [][]byte
}
