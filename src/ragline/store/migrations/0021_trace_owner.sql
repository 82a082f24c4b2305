-- A trace belongs to the API key that made it (NULL: made without a key, at the command
-- line or in Python): a reader key reads only its own traces, the tenant's admin keys all
-- of the tenant's.
ALTER TABLE traces ADD COLUMN key_id integer;
CREATE INDEX traces_key ON traces (collection_id, key_id, created_at DESC);

-- A trace never outlives a document version it mentions: the trace holds the answer and
-- citations (document text), so whenever a document row goes (delete, purge, a sync
-- removing it, a re-ingest replacing it, old versions pruned), the traces citing it go too.
CREATE FUNCTION erase_traces_of_deleted_documents() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM traces t
    WHERE t.document_ids && (SELECT coalesce(array_agg(g.id), '{}') FROM gone g);
    RETURN NULL;
END
$$;
CREATE TRIGGER documents_erase_traces AFTER DELETE ON documents
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
    EXECUTE FUNCTION erase_traces_of_deleted_documents();
