-- The ingest queue: work any number of `ragline worker` processes share through the
-- database. A task is claimed with FOR UPDATE SKIP LOCKED, kept alive by heartbeats and
-- reclaimed when its worker stops beating (killed, machine gone). A task belongs to a job
-- (ingest_jobs, its progress) and to the tenant whose documents it writes. Files to ingest
-- travel in ingest_files (their bytes), so a worker needs no access to the machine that
-- enqueued them; they are deleted when the task ends.
CREATE TABLE ingest_tasks (
    tenant        text NOT NULL,
    id            bigserial,
    job_id        bigint,
    collection    text NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('files', 'sync', 'vectors')),
    groups        text[] NOT NULL DEFAULT '{}',
    spec          jsonb NOT NULL DEFAULT '{}',
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'done', 'failed')),
    attempts      integer NOT NULL DEFAULT 0,
    worker        text,
    heartbeat_at  timestamptz,
    claimed_at    timestamptz,
    finished_at   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    report        jsonb,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX ingest_tasks_open ON ingest_tasks (id) WHERE status IN ('queued', 'running');
CREATE INDEX ingest_tasks_job ON ingest_tasks (tenant, job_id);

CREATE TABLE ingest_files (
    tenant      text NOT NULL,
    task_id     bigint NOT NULL,
    ordinal     integer NOT NULL,
    name        text NOT NULL,           -- the file name (its suffix picks the parser)
    doc_key     text NOT NULL,
    source_uri  text NOT NULL,
    content     bytea NOT NULL,
    PRIMARY KEY (tenant, task_id, ordinal),
    FOREIGN KEY (tenant, task_id) REFERENCES ingest_tasks (tenant, id) ON DELETE CASCADE
);
