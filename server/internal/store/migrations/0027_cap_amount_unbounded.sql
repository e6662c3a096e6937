-- A withdrawal's cap amount is its fiat amount converted to the operator's platform currency:
-- a session amount that fits numeric(38, 18) (20 integer digits) can exceed it once converted
-- (99999999999999999999 EUR is 1.09e20 USD), and the insert failed after the operator had
-- approved it. Unbounded, as amount_in_usd is; caps stay numeric(38, 18) and compare with it.
-- (Dropping the typmod of a numeric column does not rewrite the table.)
ALTER TABLE withdrawals ALTER COLUMN cap_amount TYPE numeric;
