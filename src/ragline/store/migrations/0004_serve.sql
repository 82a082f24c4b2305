-- Serving: API keys (stored hashed), query traces, background ingest jobs.
CREATE TABLE api_keys (
    id          serial PRIMARY KEY,
    key_hash    text NOT NULL UNIQUE,          -- sha256 of the whole key; the key is never stored
    prefix      text NOT NULL,                 -- first characters, to tell keys apart in listings
    name        text NOT NULL DEFAULT '',
    tenant      text NOT NULL,
    groups      text[] NOT NULL DEFAULT '{}',
    admin       boolean NOT NULL DEFAULT false,
    rate_limit  integer,                       -- requests per minute; NULL: the server default
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant);

-- One row per search / ask: every stage's candidates, scores and timings (payload), the
-- caller's tenant and groups, and the documents it mentions (erased with them on purge).
CREATE TABLE traces (
    id            text PRIMARY KEY,
    collection_id integer NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    tenant        text NOT NULL,
    groups        text[] NOT NULL DEFAULT '{}',
    kind          text NOT NULL,
    question      text NOT NULL,
    document_ids  bigint[] NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    payload       jsonb NOT NULL
);
CREATE INDEX traces_recent ON traces (collection_id, tenant, created_at DESC);
CREATE INDEX traces_documents ON traces USING gin (document_ids);

-- Background ingest jobs (uploads, folder syncs) with their progress.
CREATE TABLE ingest_jobs (
    id            bigserial PRIMARY KEY,
    collection_id integer,
    tenant        text NOT NULL,
    kind          text NOT NULL,
    status        text NOT NULL DEFAULT 'queued',  -- queued | running | done | failed
    total         integer NOT NULL DEFAULT 0,
    done          integer NOT NULL DEFAULT 0,
    failed        integer NOT NULL DEFAULT 0,
    detail        jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz
);
CREATE INDEX ingest_jobs_tenant ON ingest_jobs (tenant, id DESC);
