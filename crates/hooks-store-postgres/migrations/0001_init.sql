-- The hooks, the queue, the sessions' state and the run log.

CREATE TABLE hooks (
    id                 text PRIMARY KEY,
    -- Hooks are listed in the order they were made, as in the JSON store.
    position           bigserial NOT NULL,
    name               text NOT NULL,
    event              text NOT NULL,
    delay_seconds      integer NOT NULL CHECK (delay_seconds >= 0),
    prompt_file        text NOT NULL,
    enabled            boolean NOT NULL,
    skip_cron          boolean NOT NULL,
    skip_subagents     boolean NOT NULL,
    max_context_k      integer NOT NULL CHECK (max_context_k >= 0),
    max_cost_usd       double precision NOT NULL DEFAULT 0 CHECK (max_cost_usd >= 0),
    created_at         timestamptz,
    last_status        text,
    -- The history: when each run started (as stored) and its session, oldest first.
    history_at         text[] NOT NULL DEFAULT '{}',
    history_session    text[] NOT NULL DEFAULT '{}'
);

CREATE TABLE pending (
    hook_id          text NOT NULL REFERENCES hooks (id) ON DELETE CASCADE,
    session_id       text NOT NULL,
    -- The host it was queued on: its transcript is there.
    host             text NOT NULL,
    due_at           timestamptz NOT NULL,
    queued_at        timestamptz,
    retries          integer NOT NULL DEFAULT 0,
    claim_owner      text,
    claim_expires_at timestamptz,
    waiting_reason   text,
    waiting_since    timestamptz,
    waiting_open     boolean,
    position         bigserial NOT NULL,
    PRIMARY KEY (hook_id, session_id),
    CHECK ((claim_owner IS NULL) = (claim_expires_at IS NULL))
);
CREATE INDEX pending_due ON pending (due_at);
CREATE INDEX pending_host_due ON pending (host, due_at);
CREATE INDEX pending_session ON pending (session_id);
-- A daemon asks between passes whether some entry waits for a conversation to close.
CREATE INDEX pending_waiting_open ON pending (session_id) WHERE waiting_open;
-- At most one claimed entry per session, across every host: the database enforces it.
CREATE UNIQUE INDEX pending_one_claim_per_session ON pending (session_id)
    WHERE claim_owner IS NOT NULL;

-- The once-per-(hook, session) stamps: never pruned with the queue, never cascaded.
CREATE TABLE stamps (
    session_id text NOT NULL,
    hook_id    text NOT NULL,
    at         timestamptz NOT NULL,
    PRIMARY KEY (session_id, hook_id)
);

CREATE TABLE sessions (
    session_id        text PRIMARY KEY,
    cwd               text,
    transcript_path   text,
    origin            text,
    lease_run_id      text,
    lease_hook_id     text,
    lease_owner       text,
    lease_host        text,
    lease_owner_pid   bigint,
    lease_owner_start bigint,
    lease_child_pid   bigint,
    lease_child_start bigint,
    lease_started_at  timestamptz,
    lease_expires_at  timestamptz,
    changed_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_leased ON sessions (session_id) WHERE lease_run_id IS NOT NULL;

CREATE TABLE runs (
    position                    bigserial PRIMARY KEY,
    run_id                      text UNIQUE,
    hook_id                     text NOT NULL,
    session_id                  text NOT NULL,
    owner                       text,
    pid                         bigint,
    pid_start                   bigint,
    started_at                  timestamptz NOT NULL,
    finished_at                 timestamptz,
    status                      text,
    exit_code                   integer,
    completed                   boolean,
    num_turns                   bigint,
    cost_usd                    double precision,
    input_tokens                bigint,
    cache_creation_input_tokens bigint,
    cache_read_input_tokens     bigint,
    output_tokens               bigint,
    has_usage                   boolean NOT NULL DEFAULT false,
    duration_ms                 bigint,
    cli_session_id              text,
    result_text                 text,
    estimated_cost_usd          double precision,
    model                       text
);
CREATE INDEX runs_hook ON runs (hook_id, position);
CREATE INDEX runs_session ON runs (session_id, position);
CREATE INDEX runs_started ON runs (started_at);

-- The daily budget: one row, or none.
CREATE TABLE budget (
    only_row       boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    daily_usd      double precision NOT NULL,
    time_zone      text,
    when_reached   text NOT NULL
);

-- A daemon listening on the channel hooks_app_queue learns of every change to the queue.
CREATE FUNCTION hooks_app_queue_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('hooks_app_queue', '');
    RETURN NULL;
END $$;
CREATE TRIGGER pending_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pending
    FOR EACH STATEMENT EXECUTE FUNCTION hooks_app_queue_changed();
