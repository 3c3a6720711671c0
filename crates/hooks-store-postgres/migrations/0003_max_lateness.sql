-- A hook's limit on lateness, in seconds: an entry found later than that past its due
-- time is skipped (0: no limit).
ALTER TABLE hooks ADD COLUMN max_lateness_s integer NOT NULL DEFAULT 0;
