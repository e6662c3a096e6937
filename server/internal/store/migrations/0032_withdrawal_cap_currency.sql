-- The currency a withdrawal's cap amount is in: the operator's platform currency when it was
-- submitted. The service team may change that currency (with the caps) while withdrawals wait
-- or within the daily cap's 24 hours; an amount in another currency is then converted, not
-- read as the new one. NULL for the withdrawals before this column: their amount is taken as
-- in the operator's currency, as before.
ALTER TABLE withdrawals ADD COLUMN cap_currency text;
