-- Version history: postings remember whether their chunk is the current version, so
-- BM25 statistics cover current chunks only while old versions stay searchable on request.
ALTER TABLE postings ADD COLUMN is_current boolean NOT NULL DEFAULT true;
CREATE INDEX documents_history ON documents (collection_id, tenant, doc_key, version);
