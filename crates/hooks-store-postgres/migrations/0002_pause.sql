-- Follow-ups paused for every host sharing the database: one row, or none.
CREATE TABLE pause (
    only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    since      timestamptz NOT NULL,
    until      timestamptz,
    paused_by  text NOT NULL
);

-- Pausing and unpausing wake the daemons as a change to the queue does.
CREATE TRIGGER pause_changed AFTER INSERT OR UPDATE OR DELETE ON pause
    FOR EACH STATEMENT EXECUTE FUNCTION hooks_app_queue_changed();
