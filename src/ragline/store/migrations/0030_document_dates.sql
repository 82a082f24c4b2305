-- Document dates: modified_at is the document's own date (front matter, PDF/DOCX
-- properties, HTML meta) when it states one; source_mtime is the source file's
-- modification time, which freshness compares against. Rows stored before this kept
-- the file's mtime in modified_at.
ALTER TABLE documents ADD COLUMN source_mtime timestamptz;
UPDATE documents SET source_mtime = modified_at WHERE source_mtime IS NULL;
