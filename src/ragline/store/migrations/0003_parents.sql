-- Parent–child chunking: the parent passages children point to. A parent is never
-- embedded or indexed for BM25; hydration hands its text to the generator instead of
-- the child's.
CREATE TABLE chunk_parents (
    document_id  bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    ordinal      integer NOT NULL,
    heading_path text[] NOT NULL DEFAULT '{}',
    page         integer,
    char_start   integer NOT NULL,
    char_end     integer NOT NULL,
    header       text NOT NULL DEFAULT '',
    text         text NOT NULL,
    token_count  integer NOT NULL,
    PRIMARY KEY (document_id, ordinal)
);
ALTER TABLE chunks ADD COLUMN parent_ordinal integer;
