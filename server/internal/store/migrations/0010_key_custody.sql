-- Key custody (issue 10).
--
-- The public half of the HD wallet: the deposit account's xpub (m/44'/60'/0') and the service
-- wallets' addresses, sealed under the master key (context "wallet_public") so it is
-- authenticated: API replicas derive deposit addresses from it without ever opening the seed,
-- and nobody who can write to the database but lacks the master key can substitute an xpub of
-- their own. Written by the first worker that opens the seed (NULL until then); every worker
-- checks it against the seed at start. `coffer keys rotate-master` re-seals both columns, the
-- only updates this table sees.
ALTER TABLE wallet_seed ADD COLUMN public_sealed bytea;

-- Master keys held by a KMS (COFFER_MASTER_KEY_URL, gocloud.dev/secrets): envelope encryption.
-- The master key is a random 32-byte data key; the KMS only ever wraps and unwraps it, so every
-- process needs just the KMS URL and permission to decrypt. key_id is secret.KeyID of the data
-- key (checked after unwrapping). A process seals under the newest key its KMS unwraps and opens
-- with every key its KMS unwraps; `coffer keys rotate-master` deletes the rows it has re-sealed
-- away from.
CREATE TABLE master_keys (
    key_id     text PRIMARY KEY,
    wrapped    bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Running Coffer processes and the master keys they hold, refreshed every few seconds:
-- `coffer keys rotate-master` refuses to re-seal under a key that a live process lacks (it could
-- no longer open the secrets) or does not seal with (it would keep sealing under the old key).
CREATE TABLE key_holders (
    process_id     uuid PRIMARY KEY,
    host           text NOT NULL,
    pid            integer NOT NULL,
    role           text NOT NULL,
    primary_key_id text NOT NULL,
    key_ids        text[] NOT NULL,
    started_at     timestamptz NOT NULL DEFAULT now(),
    seen_at        timestamptz NOT NULL DEFAULT now()
);
