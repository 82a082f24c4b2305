-- BM25 reads postings by (collection, tenant, term) and needs chunk_id, tf and is_current:
-- a covering index lets both the df count and the scoring scan run index-only instead of
-- visiting one heap page per posting (a term's postings are scattered across the table).
CREATE INDEX IF NOT EXISTS postings_terms ON postings (collection_id, tenant, term)
    INCLUDE (chunk_id, tf, is_current);
