"""The offline path: files → parse → chunk → embed (cached) → store, one transaction per document."""
