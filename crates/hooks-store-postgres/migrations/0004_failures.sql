-- A conversation-failed hook's failures to follow up, and the failure a pending entry
-- follows up (NULL for a conversation-done entry).
ALTER TABLE hooks ADD COLUMN errors text[] NOT NULL DEFAULT '{rate_limit,overloaded,server_error}';
ALTER TABLE pending ADD COLUMN error text;
