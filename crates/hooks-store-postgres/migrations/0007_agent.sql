-- The one agent whose conversations a hook follows up (claude, codex, …); NULL: every
-- agent's.
ALTER TABLE hooks ADD COLUMN agent text;
