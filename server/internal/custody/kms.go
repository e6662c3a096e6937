package custody

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"gocloud.dev/secrets"

	"github.com/cofferhq/coffer/server/internal/secret"
	"github.com/cofferhq/coffer/server/internal/store"
	"github.com/cofferhq/coffer/server/internal/store/dbsqlc"
)

// createLock serialises the creation of the first KMS-wrapped master key by replicas starting
// together on a fresh database.
const createLock = 0x636f66666572 + 1

// OpenBox resolves the sources into the Box every sealed value goes through: it seals under
// the primary master key and opens with it and with the previous one. A KMS source gives
// every master key stored in PostgreSQL that its KMS unwraps, the newest first; on a fresh
// database (no master key stored, nothing sealed yet) the first process creates one.
func OpenBox(ctx context.Context, pool *pgxpool.Pool, src Sources) (*secret.Box, error) {
	primary, err := resolve(ctx, pool, src.Primary, true)
	if err != nil {
		return nil, fmt.Errorf("master key: %w", err)
	}
	var previous [][]byte
	if !src.Previous.IsZero() {
		// A previous KMS that unwraps nothing is no error: once a rotation has deleted the
		// old wrapped key, replicas still configured with it must keep starting. (The Box then
		// holds one key fewer; the app logs it.)
		if previous, err = resolve(ctx, pool, src.Previous, false); err != nil && src.Previous.URL == "" {
			return nil, fmt.Errorf("previous master key: %w", err)
		}
	}
	defer func() {
		for _, k := range append(primary, previous...) {
			clear(k)
		}
	}()
	return secret.NewBox(primary[0], append(primary[1:], previous...)...)
}

// resolve returns the keys of one source, the one to seal with first.
func resolve(ctx context.Context, pool *pgxpool.Pool, s Source, create bool) ([][]byte, error) {
	if s.URL == "" {
		if len(s.Key) != secret.KeySize {
			return nil, fmt.Errorf("must be %d bytes", secret.KeySize)
		}
		return [][]byte{append([]byte(nil), s.Key...)}, nil
	}
	keeper, err := secrets.OpenKeeper(ctx, s.URL)
	if err != nil {
		return nil, fmt.Errorf("open KMS %s: %w", redact(s.URL), err)
	}
	defer keeper.Close()
	keys, err := unwrapAll(ctx, pool, keeper)
	if err != nil || len(keys) > 0 || !create {
		if err == nil && len(keys) == 0 {
			err = errors.New("the KMS unwraps none of the master keys stored in PostgreSQL")
		}
		return keys, err
	}
	// Nothing this KMS unwraps: create the first master key, but only on a fresh database, so a
	// KMS outage or a wrong URL never silently starts a second master key.
	err = store.InTx(ctx, pool, func(tx pgx.Tx) error {
		if err := queries.LockMasterKeyCreation(ctx, tx, createLock); err != nil {
			return err
		}
		stored, err := queries.CountMasterKeys(ctx, tx)
		if err != nil {
			return err
		}
		if stored > 0 {
			return nil // another replica created it meanwhile, or the KMS cannot unwrap them: re-read below
		}
		sealed, err := countSealed(ctx, tx)
		if err != nil {
			return err
		}
		if sealed > 0 {
			return fmt.Errorf("the database holds %d sealed secrets and no master key this KMS unwraps: "+
				"to move to this KMS create a master key with `coffer keys new-master --kms-url URL`, then rotate (README: Key custody)", sealed)
		}
		_, err = storeNewKey(ctx, tx, keeper)
		return err
	})
	if err != nil {
		return nil, err
	}
	if keys, err = unwrapAll(ctx, pool, keeper); err == nil && len(keys) == 0 {
		err = errors.New("the KMS unwraps none of the master keys stored in PostgreSQL")
	}
	return keys, err
}

// unwrapAll unwraps every stored master key the keeper can, newest first. A key that unwraps
// but does not match its id is an error (a tampered row); one that does not unwrap belongs to
// another KMS key (or the KMS failed: then none unwraps and the caller reports it).
func unwrapAll(ctx context.Context, pool *pgxpool.Pool, keeper *secrets.Keeper) ([][]byte, error) {
	all, err := queries.MasterKeys(ctx, pool)
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	var lastErr error
	for _, r := range all {
		k, err := keeper.Decrypt(ctx, r.Wrapped)
		if err != nil {
			lastErr = err
			continue
		}
		if len(k) != secret.KeySize || secret.KeyID(k) != r.KeyID {
			return nil, fmt.Errorf("stored master key %s does not match its id: the row was altered", r.KeyID)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 && lastErr != nil {
		return nil, fmt.Errorf("the KMS unwraps none of the %d master keys stored in PostgreSQL (KMS unreachable, or not the KMS key they were wrapped with?): %w", len(all), lastErr)
	}
	return keys, nil
}

// NewKMSKey creates a master key, wraps it with the KMS at url and stores it: processes
// configured with that URL seal under it from their next start (the newest key their KMS
// unwraps). It returns the key's id.
func NewKMSKey(ctx context.Context, pool *pgxpool.Pool, url string) (string, error) {
	keeper, err := secrets.OpenKeeper(ctx, url)
	if err != nil {
		return "", fmt.Errorf("open KMS %s: %w", redact(url), err)
	}
	defer keeper.Close()
	var id string
	err = store.InTx(ctx, pool, func(tx pgx.Tx) error {
		id, err = storeNewKey(ctx, tx, keeper)
		return err
	})
	return id, err
}

func storeNewKey(ctx context.Context, tx pgx.Tx, keeper *secrets.Keeper) (string, error) {
	key := secret.Random(secret.KeySize)
	defer clear(key)
	wrapped, err := keeper.Encrypt(ctx, key)
	if err != nil {
		return "", fmt.Errorf("wrap a new master key with the KMS: %w", err)
	}
	id := secret.KeyID(key)
	return id, queries.InsertMasterKey(ctx, tx, dbsqlc.InsertMasterKeyParams{KeyID: id, Wrapped: wrapped})
}

// redact keeps a base64key:// URL's key (the whole secret) out of messages.
func redact(url string) string {
	if len(url) > len("base64key://") && url[:len("base64key://")] == "base64key://" {
		return "base64key://…"
	}
	return url
}
