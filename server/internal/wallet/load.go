package wallet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
)

// Seal contexts bind the sealed seed and the sealed public record to their columns: a
// ciphertext sealed for another purpose cannot be passed off as either.
const (
	SeedContext   = "wallet_seed"
	PublicContext = "wallet_public"
)

// sealContext is the seed's context (kept under its old name for the tests).
const sealContext = SeedContext

// ErrNoPublic is returned by LoadPublic while the database holds no public wallet record: no
// worker has created the wallet yet, or none has run since the upgrade that added the record.
var ErrNoPublic = errors.New("wallet: the database holds no HD wallet public keys yet: start a worker " +
	"(`coffer serve --role worker` or `--role all`) once, which creates the wallet or records its public keys; API replicas never open the seed")

// Load opens the service's HD seed stored in PostgreSQL, creating it on first use (workers and
// the `all` role only: API replicas use LoadPublic). Processes starting together agree on one
// seed: each offers its own with INSERT … ON CONFLICT DO NOTHING and then uses whichever row
// exists. A seed that cannot be opened (a different master key, or a damaged row) is an error;
// Load never replaces a stored seed. It also stores the wallet's public record for API replicas
// when it is missing, and refuses to start when the stored one does not match the seed.
func Load(ctx context.Context, pool *pgxpool.Pool, box *secret.Box) (*Keys, error) {
	q := store.New(pool)
	sealed, err := q.GetWalletSeed(ctx)
	if errors.Is(err, store.ErrNotFound) {
		fresh := secret.Random(SeedSize)
		_, err = q.InsertWalletSeed(ctx, box.Seal(fresh, SeedContext))
		clear(fresh)
		if err != nil {
			return nil, fmt.Errorf("wallet: store HD seed: %w", err)
		}
		sealed, err = q.GetWalletSeed(ctx)
	}
	seed, err := openStored(box, sealed, err, SeedContext, "HD seed")
	if err != nil {
		return nil, err
	}
	defer clear(seed)
	if len(seed) != SeedSize {
		return nil, fmt.Errorf("wallet: stored HD seed has %d bytes, want %d", len(seed), SeedSize)
	}
	keys, err := FromSeed(seed)
	if err != nil {
		return nil, err
	}
	if err := q.SetWalletPublic(ctx, box.Seal(keys.Public().MarshalRecord(), PublicContext)); err != nil {
		return nil, fmt.Errorf("wallet: store the public keys: %w", err)
	}
	stored, err := LoadPublic(ctx, pool, box)
	if err != nil {
		return nil, err
	}
	if stored.Record() != keys.Public().Record() {
		return nil, errors.New("wallet: the stored public keys (deposit xpub, service wallet addresses) do not match the HD seed: " +
			"API replicas would hand out addresses this seed does not control; refusing to start (if the record alone is damaged, set wallet_seed.public_sealed to NULL and a worker writes it again)")
	}
	return keys, nil
}

// LoadPublic reads the public half of the HD wallet (API replicas): it never reads the seed.
func LoadPublic(ctx context.Context, pool *pgxpool.Pool, box *secret.Box) (*Public, error) {
	sealed, err := store.New(pool).GetWalletPublic(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNoPublic
	}
	raw, err := openStored(box, sealed, err, PublicContext, "public keys")
	if err != nil {
		return nil, err
	}
	return ParsePublic(raw)
}

// openStored opens a sealed wallet column (the seed, the public record) as the store read it,
// err being the read's error; what names it in the errors.
func openStored(box *secret.Box, sealed []byte, err error, sealedFor, what string) ([]byte, error) {
	if err != nil {
		return nil, fmt.Errorf("wallet: read the %s: %w", what, err)
	}
	opened, err := box.Open(sealed, sealedFor)
	if err != nil {
		return nil, fmt.Errorf("wallet: cannot open the stored %s: is the master key (COFFER_MASTER_KEY, _FILE or _URL) the one it was sealed with? (%w)", what, err)
	}
	return opened, nil
}

// AwaitPublic is LoadPublic for API replicas starting beside workers, in any order: while no
// worker has stored the public record it waits, polling every poll and saying so in the log,
// until the record exists or ctx ends (then ErrNoPublic with ctx's error). An orchestrator
// starting every replica at once thus needs no ordering and sees no crash loop; the replica
// answers nothing meanwhile, so its readiness check fails.
func AwaitPublic(ctx context.Context, pool *pgxpool.Pool, box *secret.Box, log *slog.Logger, poll time.Duration) (*Public, error) {
	const remindEvery = 30 * time.Second
	var lastSaid time.Time
	for {
		p, err := LoadPublic(ctx, pool, box)
		if !errors.Is(err, ErrNoPublic) {
			return p, err
		}
		if time.Since(lastSaid) >= remindEvery {
			log.Warn("waiting for a worker to create the HD wallet (or record its public keys): start one " +
				"(`coffer serve --role worker` or `--role all`); API replicas never open the seed")
			lastSaid = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (%w)", ErrNoPublic, context.Cause(ctx))
		case <-time.After(poll):
		}
	}
}

// LoadPublicOrCreate is LoadPublic for the service team's CLI: on a database with no wallet
// yet it creates one (as a worker would) and keeps only its public half.
func LoadPublicOrCreate(ctx context.Context, pool *pgxpool.Pool, box *secret.Box) (*Public, error) {
	p, err := LoadPublic(ctx, pool, box)
	if !errors.Is(err, ErrNoPublic) {
		return p, err
	}
	keys, err := Load(ctx, pool, box)
	if err != nil {
		return nil, err
	}
	return keys.Public(), nil
}
