-- BM25 at scale: posting lists cut into blocks per (term, ACL class), with statistics
-- maintained in the transactions that write, so a query neither counts the collection nor
-- reads every posting, and a caller's scores depend only on what the caller may read.
--
-- An ACL class is one (tenant, sorted group set, current-or-history) of a collection: every
-- chunk belongs to exactly one, a caller may read a class as a whole or not at all, and
-- N / avgdl / df are sums over the classes the caller may read.
CREATE TABLE bm25_classes (
    collection_id integer NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    tenant        text NOT NULL,
    class_id      bigserial,
    groups        text[] NOT NULL,
    is_current    boolean NOT NULL,
    n_chunks      bigint NOT NULL DEFAULT 0,
    sum_dl        bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (collection_id, tenant, class_id),
    UNIQUE (collection_id, tenant, groups, is_current)
);

-- The languages of each class's chunks (a query is analyzed in the languages of what
-- the caller may read, so invisible documents cannot change how a query is analyzed).
CREATE TABLE bm25_languages (
    collection_id integer NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    tenant        text NOT NULL,
    class_id      bigint NOT NULL,
    language      text NOT NULL,
    n_chunks      bigint NOT NULL,
    PRIMARY KEY (collection_id, tenant, class_id, language)
);

-- One row per (term, class): its document frequency and bounds of tf and dl over the
-- list (the bounds only ever widen: they stay valid bounds after deletes). The row is
-- also the lock that serializes every change to the list's blocks.
CREATE TABLE bm25_terms (
    collection_id integer NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    tenant        text NOT NULL,
    term          text NOT NULL,
    class_id      bigint NOT NULL,
    df            integer NOT NULL,
    max_tf        integer NOT NULL,
    min_dl        integer NOT NULL,
    max_span      bigint NOT NULL,      -- largest last_id - first_id of its blocks
    small_blocks  integer NOT NULL,     -- blocks below the compaction size
    PRIMARY KEY (collection_id, tenant, term, class_id)
);

-- The postings themselves (format: ragline.store.bm25_codec), at most 512 per row, sorted
-- by chunk id. The key's INCLUDE columns let a query plan which blocks to read from the
-- index alone.
CREATE TABLE bm25_blocks (
    collection_id integer NOT NULL REFERENCES collections (id) ON DELETE CASCADE,
    tenant        text NOT NULL,
    term          text NOT NULL,
    class_id      bigint NOT NULL,
    first_id      bigint NOT NULL,
    last_id       bigint NOT NULL,
    n             integer NOT NULL,
    max_tf        integer NOT NULL,
    min_dl        integer NOT NULL,
    data          bytea NOT NULL,
    PRIMARY KEY (collection_id, tenant, term, class_id, first_id) INCLUDE (last_id, n, max_tf, min_dl)
);
ALTER TABLE bm25_blocks ALTER COLUMN data SET STORAGE PLAIN;

-- The forward index: each chunk's distinct terms, sorted and separated by spaces (a term
-- never holds one), their frequencies as big-endian uint16 (what a delete or a permission
-- change must take out of the lists), and the class the chunk is indexed in.
ALTER TABLE chunks ADD COLUMN terms text NOT NULL DEFAULT '';
ALTER TABLE chunks ADD COLUMN tfs bytea NOT NULL DEFAULT '';
ALTER TABLE chunks ADD COLUMN bm25_class bigint;

UPDATE chunks c SET terms = f.terms, tfs = f.tfs
FROM (
    SELECT chunk_id, string_agg(term, ' ' ORDER BY term) AS terms,
           string_agg(int2send(least(tf, 32767)::smallint), ''::bytea ORDER BY term) AS tfs
    FROM postings GROUP BY chunk_id
) f
WHERE c.id = f.chunk_id;
DROP TABLE postings;

-- Collections whose blocks are built from the forward index after this migration (by
-- ragline.store.bm25.build_pending, in the migrating transaction).
CREATE TABLE bm25_pending (
    collection_id integer PRIMARY KEY REFERENCES collections (id) ON DELETE CASCADE
);
INSERT INTO bm25_pending SELECT id FROM collections;
