-- The master key a sealed value is under, for custody's status and rotation statements
-- (store/dbsqlc/custody.sql): its key id in hex (secret.SealedHeader: format byte 2, then the
-- 8-byte key id), or 'v1' for values sealed before values named their key.
CREATE FUNCTION coffer_sealed_key_id(sealed bytea) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$
    SELECT CASE WHEN get_byte(sealed, 0) = 2 AND length(sealed) >= 9
        THEN encode(substring(sealed from 2 for 8), 'hex') ELSE 'v1' END
$$;
