-- A batched sweep skipped again and again (its address holds less than its deposits, or its
-- delegation keeps being lost) would otherwise join every next batch, each costing the gas
-- tank gas, forever. After its first three skips (a cleared or replaced delegation is
-- re-authorized by the very next batch) it waits before the next one: 5 s after the fourth
-- skip, doubling each time, at most 10 minutes. An engineer sees it in the log (an error from
-- the fourth skip on) and in `coffer ops batches`.
ALTER TABLE sweeps ADD COLUMN batch_after timestamptz;
