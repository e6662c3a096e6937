-- The operator's deposit fee on a deposit, fixed when the first transaction sweeping it is
-- signed (a top-up sweep's transfers, or the batch it joins): the credit charges this fee, the
-- one the chain moved to the fee address, whatever the operator's fee is by then. NULL until
-- then (the fee is read from the operator).
ALTER TABLE deposits ADD COLUMN signed_fee numeric(78, 0) CHECK (signed_fee >= 0 AND signed_fee <= gross_amount);
