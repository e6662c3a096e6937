-- When a session first handed out an address for a chain and currency. handed_at moves to the
-- latest handout; a session that shows the address again after a payment (the user asks again
-- while the payment is not yet seen) must still own that payment, so attribution also needs
-- the first one.
ALTER TABLE address_handouts ADD COLUMN first_handed_at timestamptz;
UPDATE address_handouts SET first_handed_at = handed_at;
ALTER TABLE address_handouts ALTER COLUMN first_handed_at SET DEFAULT now(), ALTER COLUMN first_handed_at SET NOT NULL;
