-- Foundation: operators and their keys, sessions, depositors, panel admins, themes, rate limits.
-- Money is NUMERIC, never float. Every tenant row carries operator_id.

CREATE TABLE operators (
    id               uuid PRIMARY KEY,
    parent_id        uuid REFERENCES operators (id),
    name             text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    webhook_url      text NOT NULL,
    approval_mode    text NOT NULL DEFAULT 'SYNC' CHECK (approval_mode IN ('SYNC', 'EXTERNAL')),
    approval_enabled boolean NOT NULL DEFAULT false,
    per_tx_cap       numeric(38, 18) CHECK (per_tx_cap >= 0),
    daily_cap        numeric(38, 18) CHECK (daily_cap >= 0),
    fiat_currency    text NOT NULL DEFAULT 'USD' CHECK (fiat_currency ~ '^[A-Z]{3}$'),
    redirect_url     text,
    theme_slug       text,
    deposit_fee_bps  integer NOT NULL DEFAULT 0 CHECK (deposit_fee_bps BETWEEN 0 AND 10000),
    active           boolean NOT NULL DEFAULT true,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (parent_id IS DISTINCT FROM id)
);
CREATE INDEX operators_parent_idx ON operators (parent_id);

-- An operator key is the API credential and the webhook signing key: kept as a SHA-256
-- digest for lookup and sealed (AES-256-GCM under the master key) for signing.
-- expires_at is NULL for the current key and set on the previous one during a rotation.
CREATE TABLE operator_keys (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operator_id uuid NOT NULL REFERENCES operators (id),
    digest      bytea NOT NULL UNIQUE,
    sealed      bytea NOT NULL,
    prefix      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz
);
CREATE INDEX operator_keys_operator_idx ON operator_keys (operator_id);

CREATE TABLE sessions (
    id                 uuid PRIMARY KEY,
    operator_id        uuid NOT NULL REFERENCES operators (id),
    kind               text NOT NULL CHECK (kind IN ('DEPOSIT', 'WITHDRAW')),
    session_ref        text NOT NULL UNIQUE,
    external_user_id   text NOT NULL,
    lang               text NOT NULL,
    fiat_currency      text NOT NULL,
    user_balance       numeric(38, 18) NOT NULL,
    amount             numeric(38, 18) NOT NULL CHECK (amount > 0),
    email              text,
    operator_reference text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    expires_at         timestamptz NOT NULL,
    cancelled_at       timestamptz,
    UNIQUE (operator_id, operator_reference)
);
CREATE INDEX sessions_user_idx ON sessions (operator_id, external_user_id, created_at DESC);

CREATE TABLE depositors (
    operator_id      uuid NOT NULL REFERENCES operators (id),
    external_user_id text NOT NULL,
    email            text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operator_id, external_user_id)
);

-- Panel admins. operator_id NULL = service team (sees every operator).
CREATE TABLE admins (
    id            uuid PRIMARY KEY,
    email         text NOT NULL,
    password_hash text NOT NULL,
    totp_sealed   bytea,
    operator_id   uuid REFERENCES operators (id),
    active        boolean NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX admins_email_idx ON admins (lower(email));

-- Admin login tokens, stored as SHA-256 digests.
CREATE TABLE admin_sessions (
    digest       bytea PRIMARY KEY,
    admin_id     uuid NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX admin_sessions_admin_idx ON admin_sessions (admin_id);

CREATE TABLE themes (
    id          uuid PRIMARY KEY,
    operator_id uuid NOT NULL REFERENCES operators (id),
    slug        text NOT NULL CHECK (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'),
    name        text NOT NULL,
    style       jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (operator_id, slug)
);

-- Fixed-window counters shared by every replica (test webhooks, admin logins).
CREATE TABLE rate_limits (
    key          text NOT NULL,
    window_start timestamptz NOT NULL,
    hits         integer NOT NULL,
    PRIMARY KEY (key, window_start)
);
