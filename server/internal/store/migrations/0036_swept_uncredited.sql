-- The written-off deposits a finished sweep moved money for in their name without crediting
-- them (deposit.leaveFinishedSweep: its signed transfer, or its batch, mined with what was at
-- the address, a later payment's money). One whose payment is mined again and written off
-- again is not swept anew when that sweep was batched (deposit.sweepWrittenOff): nothing is
-- carried for a batch, so its new sweep would have the gas tank make up the value the old one
-- took (an unbatched sweep's carry stands for it).
CREATE TABLE swept_uncredited (
    deposit_id bigint NOT NULL REFERENCES deposits (id),
    sweep_id   bigint NOT NULL REFERENCES sweeps (id),
    PRIMARY KEY (deposit_id, sweep_id)
);
