"""Named collections: each fixes its embedding model, analyzer and chunker.

A collection's vectors are indexed by a partial HNSW index of its own
(``chunks_hnsw_<id>``, cosine, m=16, ef_construction=64), so collections with models of
different dimensions share one ``chunks`` table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core.errors import ConfigError, ModelMismatchError, NotFoundError
from .db import Database

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64


@dataclass(frozen=True)
class Collection:
    id: int
    name: str
    embedder: str
    dim: int
    analyzer: str
    chunker: str

    @property
    def hnsw_index(self) -> str:
        return f"chunks_hnsw_{self.id}"


def _row(r: Any) -> Collection:
    return Collection(id=r[0], name=r[1], embedder=r[2], dim=r[3], analyzer=r[4], chunker=r[5])


_COLS = "id, name, embedder, dim, analyzer, chunker"


def get_collection(db: Database, name: str) -> Collection:
    with db.connection() as conn:
        r = conn.execute(f"SELECT {_COLS} FROM collections WHERE name = %s", (name,)).fetchone()
        if r is None:
            names = [x[0] for x in conn.execute("SELECT name FROM collections ORDER BY name")]
            raise NotFoundError(
                f"no collection named {name!r}; existing: {', '.join(names) or '(none yet: ingest something first)'}"
            )
        return _row(r)


def find_collection(db: Database, name: str) -> Collection | None:
    with db.connection() as conn:
        r = conn.execute(f"SELECT {_COLS} FROM collections WHERE name = %s", (name,)).fetchone()
        return _row(r) if r else None


def list_collections(db: Database) -> list[Collection]:
    with db.connection() as conn:
        return [_row(r) for r in conn.execute(f"SELECT {_COLS} FROM collections ORDER BY name")]


def ensure_collection(
    db: Database, name: str, *, embedder: str, dim: int, analyzer: str, chunker: str
) -> Collection:
    """Return collection ``name``, creating it (and its HNSW index) on first use.

    Using an existing collection with another embedding model is an error: its stored
    vectors would be meaningless to the new model.
    """
    if not _NAME.match(name):
        raise ConfigError(
            f"invalid collection name {name!r}: use 1-64 letters, digits, '_', '.', '-', starting with a letter or digit"
        )
    with db.connection() as conn:
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('collection:' || %s, 0))", (name,)
        )
        r = conn.execute(f"SELECT {_COLS} FROM collections WHERE name = %s", (name,)).fetchone()
        if r is None:
            r = conn.execute(
                "INSERT INTO collections (name, embedder, dim, analyzer, chunker) "
                f"VALUES (%s, %s, %s, %s, %s) RETURNING {_COLS}",
                (name, embedder, dim, analyzer, chunker),
            ).fetchone()
            col = _row(r)
            conn.execute(
                f"CREATE INDEX {col.hnsw_index} ON chunks USING hnsw "
                f"((embedding::vector({dim})) vector_cosine_ops) "
                f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) "
                f"WHERE collection_id = {col.id}"
            )
            return col
        col = _row(r)
    if col.embedder != embedder or col.dim != dim:
        raise ModelMismatchError(
            f"collection {name!r} was built with embedder {col.embedder!r} ({col.dim}-d); "
            f"it cannot be used with {embedder!r} ({dim}-d). Use that embedder, or ingest into "
            "another collection (--collection NAME)"
        )
    if col.analyzer != analyzer:
        raise ConfigError(
            f"collection {name!r} was indexed with analyzer {col.analyzer!r}, this ragline uses "
            f"{analyzer!r}; its BM25 terms would not match. Ingest into a new collection "
            "(--collection NAME) or delete the old one"
        )
    return col
