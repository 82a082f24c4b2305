-- ragline schema v1: collections, documents, chunks, BM25 postings, embedding cache.
CREATE TABLE collections (
    id          serial PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'),
    embedder    text NOT NULL,
    dim         integer NOT NULL CHECK (dim > 0),
    analyzer    text NOT NULL,
    chunker     text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE documents (
    id            bigserial PRIMARY KEY,
    collection_id integer NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    doc_key       text NOT NULL,
    source_uri    text NOT NULL,
    title         text NOT NULL,
    media_type    text NOT NULL,
    content_hash  text NOT NULL,
    version       integer NOT NULL DEFAULT 1,
    is_current    boolean NOT NULL DEFAULT true,
    tenant        text NOT NULL,
    groups        text[] NOT NULL DEFAULT '{}',
    metadata      jsonb NOT NULL DEFAULT '{}',
    language      text,
    modified_at   timestamptz,
    ingested_at   timestamptz NOT NULL DEFAULT now(),
    n_chunks      integer NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX documents_current_key ON documents (collection_id, tenant, doc_key) WHERE is_current;

CREATE TABLE chunks (
    id            bigserial PRIMARY KEY,
    document_id   bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    collection_id integer NOT NULL,
    tenant        text NOT NULL,
    groups        text[] NOT NULL DEFAULT '{}',
    is_current    boolean NOT NULL DEFAULT true,
    ordinal       integer NOT NULL,
    heading_path  text[] NOT NULL DEFAULT '{}',
    page          integer,
    char_start    integer NOT NULL,
    char_end      integer NOT NULL,
    header        text NOT NULL DEFAULT '',
    text          text NOT NULL,
    token_count   integer NOT NULL,
    n_terms       integer NOT NULL,
    text_hash     text NOT NULL,
    embedding     vector          -- NULL until embedded (BM25-only ingest, backfilled later)
);
CREATE INDEX chunks_document ON chunks (document_id, ordinal);
CREATE INDEX chunks_scope ON chunks (collection_id, tenant) INCLUDE (n_terms) WHERE is_current;
CREATE INDEX chunks_groups ON chunks USING gin (groups);

-- BM25 postings: one row per (term, chunk) with the term frequency. Collection statistics
-- (N, avgdl, df) are computed from these rows inside each query's snapshot.
CREATE TABLE postings (
    collection_id integer NOT NULL,
    tenant        text NOT NULL,
    term          text NOT NULL,
    chunk_id      bigint NOT NULL REFERENCES chunks (id) ON DELETE CASCADE,
    tf            integer NOT NULL CHECK (tf > 0),
    PRIMARY KEY (collection_id, tenant, term, chunk_id)
);
CREATE INDEX postings_chunk ON postings (chunk_id);

-- Vectors by (model, text hash): unchanged text is never embedded twice.
CREATE TABLE embedding_cache (
    model_id   text NOT NULL,
    text_hash  text NOT NULL,
    embedding  vector NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (model_id, text_hash)
);
