package store

import "context"

// InsertWalletSeed stores the sealed HD seed unless a seed already exists; inserted reports
// whether this call stored it. Concurrent callers end up with one seed: read it back with
// GetWalletSeed.
func (q *Queries) InsertWalletSeed(ctx context.Context, sealed []byte) (inserted bool, err error) {
	tag, err := q.db.Exec(ctx, `INSERT INTO wallet_seed (id, sealed) VALUES (true, $1) ON CONFLICT (id) DO NOTHING`, sealed)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// GetWalletSeed returns the sealed HD seed, or ErrNotFound before the first InsertWalletSeed.
func (q *Queries) GetWalletSeed(ctx context.Context) ([]byte, error) {
	var sealed []byte
	err := q.db.QueryRow(ctx, `SELECT sealed FROM wallet_seed WHERE id`).Scan(&sealed)
	return sealed, notFound(err)
}

// GetWalletPublic returns the sealed public half of the HD wallet (the deposit account's xpub
// and the service wallets' addresses), or ErrNotFound while there is no seed or no worker has
// stored it yet.
func (q *Queries) GetWalletPublic(ctx context.Context) ([]byte, error) {
	var sealed []byte
	err := q.db.QueryRow(ctx, `SELECT public_sealed FROM wallet_seed WHERE id AND public_sealed IS NOT NULL`).Scan(&sealed)
	return sealed, notFound(err)
}

// SetWalletPublic stores the sealed public half unless one is stored. Every writer derives it
// from the one seed, so concurrent writers agree.
func (q *Queries) SetWalletPublic(ctx context.Context, sealed []byte) error {
	_, err := q.db.Exec(ctx, `UPDATE wallet_seed SET public_sealed = $1 WHERE id AND public_sealed IS NULL`, sealed)
	return err
}
