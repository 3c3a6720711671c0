-- What a pending entry waits for, as a kind: code decides by it, never by the words shown
-- to people. A limit's attempts and the deliveries never taken are counted apart from the
-- looks that found an entry not ready (`retries`): each has its own cap.
ALTER TABLE pending ADD COLUMN waiting_kind text;
ALTER TABLE pending ADD COLUMN attempts integer NOT NULL DEFAULT 0;
ALTER TABLE pending ADD COLUMN not_taken integer NOT NULL DEFAULT 0;

-- Waits stored before kinds were are read from their words once, as
-- `WaitKind::of_legacy` reads an older JSON file.
UPDATE pending SET waiting_kind = CASE
    WHEN waiting_reason LIKE 'not taken by the open conversation%' THEN 'not-taken'
    WHEN waiting_open THEN 'open'
    WHEN waiting_reason LIKE 'rate limited%' THEN 'limit'
    WHEN waiting_reason LIKE 'waits for the turn to end%' THEN 'turn'
    WHEN waiting_reason LIKE 'conversation still being written to%' THEN 'quiet'
    WHEN waiting_reason LIKE 'paused%' THEN 'paused'
    WHEN waiting_reason LIKE 'daily budget: %' THEN 'budget'
    WHEN waiting_reason LIKE 'a follow-up is running%' THEN 'running'
    ELSE 'not-ready'
END
WHERE waiting_reason IS NOT NULL;

-- An entry a limit put back counted its attempts in `retries`.
UPDATE pending SET attempts = retries, retries = 0 WHERE waiting_kind = 'limit';
UPDATE pending SET not_taken = 1 WHERE waiting_kind = 'not-taken';
