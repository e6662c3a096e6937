-- One spelling for the approval mode: withdrawals kept it in lower case ('sync', 'external')
-- while operators keep 'SYNC' and 'EXTERNAL' (DESIGN.md). Both now use the operators' spelling,
-- which the Go type coffer.ApprovalMode names.
ALTER TABLE withdrawals DROP CONSTRAINT withdrawals_approval_mode_check;
UPDATE withdrawals SET approval_mode = upper(approval_mode);
ALTER TABLE withdrawals ADD CONSTRAINT withdrawals_approval_mode_check CHECK (approval_mode IN ('SYNC', 'EXTERNAL'));
