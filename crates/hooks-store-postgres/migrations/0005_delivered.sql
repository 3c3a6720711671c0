-- A run delivered into the conversation a person has open in the TUI, rather than resumed.
ALTER TABLE runs ADD COLUMN delivered boolean NOT NULL DEFAULT false;
