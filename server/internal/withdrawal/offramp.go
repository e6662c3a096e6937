package withdrawal

import (
	"context"
	"log/slog"
	"math/big"
	"sync"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/shopspring/decimal"
)

// OffRamp is a provider that turns crypto into fiat for the user (type OFF_RAMP): Coffer pays
// the crypto to the address the provider gives for the order, and tells the provider once the
// payout confirmed; the provider pays the user in fiat.
type OffRamp interface {
	// Name identifies the provider (stored on the withdrawal).
	Name() string
	// Open places an order and says where to pay it.
	Open(ctx context.Context, o OffRampOrder) (OffRampOpened, error)
	// Paid tells the provider the order's crypto arrived (the payout confirmed). It is called
	// at least once per order; providers treat repeats as no-ops.
	Paid(ctx context.Context, ref string, txHash common.Hash) error
}

// OffRampOrder is a withdrawal to sell.
type OffRampOrder struct {
	WithdrawalID string
	ChainID      int64
	Currency     string
	Units        *big.Int
	FiatAmount   decimal.Decimal
	FiatCurrency string
	// UserAddress is what the user entered (a provider may use it as a refund address).
	UserAddress string
}

// OffRampOpened is the provider's answer.
type OffRampOpened struct {
	PayTo common.Address
	Ref   string
}

// DevOffRamp is `coffer dev`'s off-ramp provider: it collects on the dev chain at a fixed
// address nobody in Coffer holds the key of, and records the orders it was paid for.
type DevOffRamp struct {
	Log *slog.Logger

	paid   sync.Map // order ref → the payout's transaction hash
	opened atomic.Int64
}

// DevOffRampAddress is where the dev provider collects.
func DevOffRampAddress() common.Address {
	return common.BytesToAddress(crypto.Keccak256([]byte("coffer dev off-ramp"))[12:])
}

// Name implements OffRamp.
func (*DevOffRamp) Name() string { return "dev" }

// Open implements OffRamp.
func (d *DevOffRamp) Open(_ context.Context, o OffRampOrder) (OffRampOpened, error) {
	d.opened.Add(1)
	return OffRampOpened{PayTo: DevOffRampAddress(), Ref: "dev-" + o.WithdrawalID}, nil
}

// Paid implements OffRamp.
func (d *DevOffRamp) Paid(_ context.Context, ref string, txHash common.Hash) error {
	if _, again := d.paid.Swap(ref, txHash); !again && d.Log != nil {
		d.Log.Info("dev off-ramp: order paid, fiat released to the user", "ref", ref, "tx", txHash)
	}
	return nil
}

// PaidOrder reports whether the dev provider was told an order was paid, and by which transaction.
func (d *DevOffRamp) PaidOrder(ref string) (common.Hash, bool) {
	v, ok := d.paid.Load(ref)
	h, _ := v.(common.Hash) // the zero hash when not paid
	return h, ok
}

// OrdersOpened is how many orders the dev provider opened: each stays open at the provider,
// paid or not (the OffRamp interface has no cancel).
func (d *DevOffRamp) OrdersOpened() int64 { return d.opened.Load() }
