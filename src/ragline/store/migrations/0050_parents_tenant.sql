-- Parent passages carry their document's tenant, like every other row derived from a
-- document: on Citus (ragline.store.distribution) every table that holds a tenant's data is
-- distributed by tenant and co-located, and a join routes to one shard only when both sides
-- say the tenant.
ALTER TABLE chunk_parents ADD COLUMN tenant text;
UPDATE chunk_parents p SET tenant = d.tenant FROM documents d WHERE d.id = p.document_id;
ALTER TABLE chunk_parents ALTER COLUMN tenant SET NOT NULL;
