-- Admin login hardening (issue 10).
-- A TOTP code is single-use: the last accepted time step is remembered, and a code of that step
-- or an earlier one is refused.
ALTER TABLE admins ADD COLUMN totp_last_step bigint;

-- The client addresses (IPv4 address, IPv6 /64) each admin logged in from. They are exempt from
-- the per-account login ceiling, so attackers spread over many addresses cannot lock an admin
-- out of the places it usually logs in from.
CREATE TABLE admin_login_clients (
    admin_id      uuid NOT NULL REFERENCES admins (id) ON DELETE CASCADE,
    client        text NOT NULL,
    last_login_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (admin_id, client)
);
