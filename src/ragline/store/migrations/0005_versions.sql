-- Index versions: the parsed document is stored so a new version (another embedder or
-- chunking) can be built from the database alone; index_versions says which physical
-- collection serves a collection name (at most one active per name).
ALTER TABLE documents ADD COLUMN content jsonb;
CREATE TABLE index_versions (
    name          text NOT NULL,
    version       integer NOT NULL CHECK (version >= 1),
    collection_id integer NOT NULL UNIQUE REFERENCES collections (id) ON DELETE CASCADE,
    state         text NOT NULL CHECK (state IN ('building', 'ready', 'active', 'retired')),
    spec          jsonb NOT NULL DEFAULT '{}',
    created_at    timestamptz NOT NULL DEFAULT now(),
    built_at      timestamptz,
    activated_at  timestamptz,
    PRIMARY KEY (name, version)
);
CREATE UNIQUE INDEX index_versions_one_active ON index_versions (name) WHERE state = 'active';
