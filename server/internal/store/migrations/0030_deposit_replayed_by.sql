-- Who entered a deposit as a missed-deposit replay (an audit actor: admin:<admin id> for the
-- panel, service-team:ops-api or service-team:cli:<user> otherwise); null for the deposits the
-- scanner found and for replays recorded before this column. Adding a nullable column with no
-- default rewrites nothing.
ALTER TABLE deposits ADD COLUMN replayed_by text;
