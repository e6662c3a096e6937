package store

import "context"

// InsertWalletSeed stores the sealed HD seed unless a seed already exists; inserted reports
// whether this call stored it. Concurrent callers end up with one seed: read it back with
// GetWalletSeed.
func (q *Queries) InsertWalletSeed(ctx context.Context, sealed []byte) (inserted bool, err error) {
	n, err := sqlc.InsertWalletSeed(ctx, q.db, sealed)
	if err != nil {
		return false, err
	}
	return n == 1, nil
}

// GetWalletSeed returns the sealed HD seed, or ErrNotFound before the first InsertWalletSeed.
func (q *Queries) GetWalletSeed(ctx context.Context) ([]byte, error) {
	sealed, err := sqlc.GetWalletSeed(ctx, q.db)
	return sealed, notFound(err)
}

// GetWalletPublic returns the sealed public half of the HD wallet (the deposit account's xpub
// and the service wallets' addresses), or ErrNotFound while there is no seed or no worker has
// stored it yet.
func (q *Queries) GetWalletPublic(ctx context.Context) ([]byte, error) {
	sealed, err := sqlc.GetWalletPublic(ctx, q.db)
	return sealed, notFound(err)
}

// SetWalletPublic stores the sealed public half unless one is stored. Every writer derives it
// from the one seed, so concurrent writers agree.
func (q *Queries) SetWalletPublic(ctx context.Context, sealed []byte) error {
	return sqlc.SetWalletPublic(ctx, q.db, sealed)
}
