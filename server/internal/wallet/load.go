package wallet

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
)

// sealContext binds the sealed seed to its row: a ciphertext sealed for another purpose
// cannot be passed off as the seed.
const sealContext = "wallet_seed"

// Load opens the service's HD seed stored in PostgreSQL, creating it on first use. Processes
// starting together agree on one seed: each offers its own with INSERT … ON CONFLICT DO
// NOTHING and then uses whichever row exists. A seed that cannot be opened (a different
// COFFER_MASTER_KEY, or a damaged row) is an error; Load never replaces a stored seed.
func Load(ctx context.Context, pool *pgxpool.Pool, box *secret.Box) (*Keys, error) {
	q := store.New(pool)
	sealed, err := q.GetWalletSeed(ctx)
	if errors.Is(err, store.ErrNotFound) {
		fresh := secret.Random(SeedSize)
		_, err = q.InsertWalletSeed(ctx, box.Seal(fresh, sealContext))
		clear(fresh)
		if err != nil {
			return nil, fmt.Errorf("wallet: store HD seed: %w", err)
		}
		sealed, err = q.GetWalletSeed(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("wallet: read HD seed: %w", err)
	}
	seed, err := box.Open(sealed, sealContext)
	if err != nil {
		return nil, fmt.Errorf("wallet: cannot open the stored HD seed: is COFFER_MASTER_KEY the key it was sealed with? (%w)", err)
	}
	defer clear(seed)
	if len(seed) != SeedSize {
		return nil, fmt.Errorf("wallet: stored HD seed has %d bytes, want %d", len(seed), SeedSize)
	}
	return FromSeed(seed)
}
