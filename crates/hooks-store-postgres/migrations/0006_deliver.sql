-- Whether a hook's follow-up may go into a conversation still open in a TUI: auto (where
-- the agent offers a way in) or closed (always resumed after the close).
ALTER TABLE hooks ADD COLUMN deliver text NOT NULL DEFAULT 'auto';
