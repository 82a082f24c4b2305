-- Freshness: the last failed ingest of each source (cleared when it next succeeds).
CREATE TABLE source_failures (
    collection_id integer NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    tenant        text NOT NULL,
    source        text NOT NULL,
    reason        text NOT NULL,
    failed_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (collection_id, tenant, source)
);
