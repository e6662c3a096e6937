-- name: InsertWalletSeed :execrows
INSERT INTO wallet_seed (id, sealed) VALUES (true, @sealed) ON CONFLICT (id) DO NOTHING;

-- name: GetWalletSeed :one
SELECT sealed FROM wallet_seed WHERE id;

-- name: GetWalletPublic :one
SELECT public_sealed::bytea FROM wallet_seed WHERE id AND public_sealed IS NOT NULL;

-- name: SetWalletPublic :exec
UPDATE wallet_seed SET public_sealed = @public_sealed WHERE id AND public_sealed IS NULL;
