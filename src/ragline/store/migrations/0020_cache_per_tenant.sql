-- The embedding cache is per tenant: a cache hit (no embedding work, "cached" in the
-- ingest report) must never tell one tenant that another holds the same text, and one
-- tenant's purge must not remove vectors another tenant's documents came from. Existing
-- entries go to every tenant whose chunks hold the text (an entry no chunk holds any more
-- is dropped: it is only a cache).
ALTER TABLE embedding_cache ADD COLUMN tenant text;
ALTER TABLE embedding_cache DROP CONSTRAINT embedding_cache_pkey;
INSERT INTO embedding_cache (model_id, tenant, text_hash, embedding, created_at)
SELECT DISTINCT ON (e.model_id, c.tenant, e.text_hash)
       e.model_id, c.tenant, e.text_hash, e.embedding, e.created_at
FROM embedding_cache e
JOIN collections col ON col.embedder = e.model_id
JOIN chunks c ON c.collection_id = col.id AND c.text_hash = e.text_hash
WHERE e.tenant IS NULL
ORDER BY e.model_id, c.tenant, e.text_hash;
DELETE FROM embedding_cache WHERE tenant IS NULL;
ALTER TABLE embedding_cache ALTER COLUMN tenant SET NOT NULL;
ALTER TABLE embedding_cache ADD PRIMARY KEY (model_id, tenant, text_hash);
