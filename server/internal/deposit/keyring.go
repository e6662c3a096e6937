package deposit

import (
	"context"
	"crypto/ecdsa"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/store"
)

// KeyRing gives the transaction engine the key of any address Coffer controls: the service
// wallets, and deposit and token-deposit addresses (re-derived from their index after a
// restart). Only workers
// have one (wallet.Keys, from the seed); the API role's engine has chaintx.NoKeys.
type KeyRing struct {
	Keys interface {
		Deposit(i uint32) (*ecdsa.PrivateKey, common.Address, error)
		TokenDeposit(i uint32) (*ecdsa.PrivateKey, common.Address, error)
		Signer(addr common.Address) (*ecdsa.PrivateKey, bool)
	}
	Pool *pgxpool.Pool
}

// Key implements chaintx.Keys.
func (k KeyRing) Key(ctx context.Context, addr common.Address) (*ecdsa.PrivateKey, error) {
	if key, ok := k.Keys.Signer(addr); ok {
		return key, nil
	}
	owner, err := store.New(k.Pool).DepositAddressByAddress(ctx, addr.Hex())
	if err != nil {
		return nil, fmt.Errorf("%s is not an address of this service: %w", addr.Hex(), err)
	}
	derive, what := k.Keys.Deposit, "deposit"
	if owner.Token {
		derive, what = k.Keys.TokenDeposit, "token-deposit"
	}
	key, derived, err := derive(owner.Index)
	if err != nil {
		return nil, err
	}
	if derived != addr {
		return nil, fmt.Errorf("%s index %d derives %s, not %s: wrong seed for this database", what, owner.Index, derived.Hex(), addr.Hex())
	}
	return key, nil
}
