-- How often a hook follows up one conversation: once, or each of its tasks.
ALTER TABLE hooks ADD COLUMN repeat text NOT NULL DEFAULT 'once';
