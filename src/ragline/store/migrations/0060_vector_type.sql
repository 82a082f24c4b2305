-- The type a collection's HNSW index reads the embedding as: 'halfvec' (16-bit floats:
-- about half the index's bytes, the same recall measured at 100k chunks) for collections
-- created from now on; the collections that exist keep the float32 'vector' index they
-- were built with, since a query must use the expression of the index it wants.
ALTER TABLE collections ADD COLUMN vector_type text NOT NULL DEFAULT 'vector'
    CHECK (vector_type IN ('vector', 'halfvec'));
