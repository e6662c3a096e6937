-- A reorg after a credit (issue 11): a deposit past its confirmation depth (SWEEPING,
-- BELOW_MINIMUM or CREDITED) whose block left the chain. The rollback that finds it marks it
-- REORGED in its own transaction, records the incident, and takes a credited deposit's net
-- amount back out of its operator's available funds (a REORG entry). An engineer resolves it
-- (REINSTATE: it counts again; WRITE_OFF: the reversal stands), or the scanner does when the
-- same transfer is mined again and that block reaches the confirmation depth (REINCLUDED).
ALTER TABLE deposits
    DROP CONSTRAINT deposits_status_check,
    ADD CONSTRAINT deposits_status_check
        CHECK (status IN ('CONFIRMING', 'SWEEPING', 'BELOW_MINIMUM', 'CREDITED', 'ORPHANED', 'UNSWEEPABLE', 'REORGED'));

-- A reversal can leave available below zero when the operator already used the funds (a
-- shortfall the operator owes back; every debit is refused until it is covered). Only REORG
-- entries may do so: MoveFunds refuses any other debit that would.
ALTER TABLE operator_funds DROP CONSTRAINT operator_funds_available_check;

--   REORG      a credited deposit's block left the chain              available -
--   REINSTATE  a reorged deposit counts again (engineer or re-mined)  available +
ALTER TABLE fund_entries
    DROP CONSTRAINT fund_entries_kind_check,
    ADD CONSTRAINT fund_entries_kind_check
        CHECK (kind IN ('DEPOSIT', 'TREASURY', 'RESERVE', 'SETTLE', 'RELEASE', 'ADJUSTMENT', 'REORG', 'REINSTATE'));

-- One row per time a deposit's block left the chain after its confirmation depth. At most one
-- is open (unresolved) per deposit; a deposit reorged again after a resolution gets a new one.
CREATE TABLE deposit_reorgs (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    deposit_id       bigint NOT NULL REFERENCES deposits (id),
    chain_id         bigint NOT NULL,
    fork_block       bigint NOT NULL, -- the newest block the old and the new chain share
    block_number     bigint NOT NULL, -- where the deposit was
    block_hash       text NOT NULL,
    prior_status     text NOT NULL CHECK (prior_status IN ('SWEEPING', 'BELOW_MINIMUM', 'CREDITED')),
    reversed         numeric(78, 0) NOT NULL DEFAULT 0, -- taken out of the operator's available funds
    detected_at      timestamptz NOT NULL DEFAULT now(),
    -- The same transfer mined again in a new block (cleared if that block leaves the chain too).
    reincluded_block bigint,
    reincluded_hash  text,
    resolution       text CHECK (resolution IN ('REINSTATE', 'WRITE_OFF', 'REINCLUDED')),
    resolved_by      text,
    note             text NOT NULL DEFAULT '',
    resolved_at      timestamptz,
    CHECK ((resolution IS NULL) = (resolved_at IS NULL) AND (resolution IS NULL) = (resolved_by IS NULL))
);
CREATE UNIQUE INDEX deposit_reorgs_open_idx ON deposit_reorgs (deposit_id) WHERE resolution IS NULL;
CREATE INDEX deposit_reorgs_deposit_idx ON deposit_reorgs (deposit_id, id);
CREATE INDEX deposit_reorgs_reincluded_idx ON deposit_reorgs (chain_id, reincluded_block)
    WHERE resolution IS NULL AND reincluded_block IS NOT NULL;

-- Every action on a reorged deposit, never updated or deleted: DETECTED (the rollback),
-- REINCLUDED (the scanner), REINSTATE and WRITE_OFF (an engineer, note required).
CREATE TABLE deposit_reorg_actions (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reorg_id    bigint NOT NULL REFERENCES deposit_reorgs (id),
    deposit_id  bigint NOT NULL REFERENCES deposits (id),
    action      text NOT NULL CHECK (action IN ('DETECTED', 'REINCLUDED', 'REINSTATE', 'WRITE_OFF')),
    actor       text NOT NULL,
    note        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (action NOT IN ('REINSTATE', 'WRITE_OFF') OR length(note) > 0)
);
CREATE INDEX deposit_reorg_actions_reorg_idx ON deposit_reorg_actions (reorg_id, id);
