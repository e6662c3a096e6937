package domain

import (
	"time"

	"github.com/shopspring/decimal"
)

// WalletThreshold is a service wallet's low-balance threshold in one asset, in token units,
// with who set it and why (wallet_thresholds; the newest row of a key is in force).
type WalletThreshold struct {
	ChainID  int64
	Wallet   string // checksummed address
	Currency string
	// Amount is the threshold; Removed means the row removed the key's threshold.
	Amount  decimal.Decimal
	Removed bool
	SetBy   Actor
	Reason  string
	SetAt   time.Time
}
