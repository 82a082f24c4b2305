-- Each large posting list (term, class) may carry its best postings ("top": one block in
-- the bm25_codec format, ids sorted) and the (tf, dl) Pareto frontier of the rest
-- ("top_rest": int32 pairs), so that a short query can find its top k from a few
-- hundred postings instead of whole lists (ragline.store.bm25_topk.top_k_from_tops).
-- Every change to the list clears them in the statement that changes its statistics
-- (ragline.store.bm25_write), so a query never uses stale ones; ragline.store.bm25.
-- refresh_tops computes them again, after an ingest.
ALTER TABLE bm25_terms ADD COLUMN top bytea, ADD COLUMN top_rest bytea;
