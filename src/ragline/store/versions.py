"""Index versions: several builds of one collection (embedder, chunking, analyzer), one
active. Version 1 is the collection as first created (physical name = the collection
name); version k ≥ 2 lives in its own physical collection ``NAME--vk`` with its own
documents, chunks, postings and vectors, built from the stored documents beside the live
version. Which version answers queries is one row in ``index_versions``; switching it is
one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core.errors import ConfigError, NotFoundError
from .collections import _COLS, Collection, _row
from .db import Database

VERSION_SEPARATOR = "--v"


def version_collection_name(name: str, version: int) -> str:
    """The physical collection holding ``version`` of collection ``name``."""
    return name if version == 1 else f"{name}{VERSION_SEPARATOR}{version}"


@dataclass(frozen=True)
class IndexVersion:
    name: str
    version: int
    collection: Collection
    state: str
    spec: Mapping[str, Any]
    created_at: datetime
    built_at: datetime | None
    activated_at: datetime | None

    def to_dict(self, documents: int | None = None, chunks: int | None = None) -> dict[str, Any]:
        iso = lambda v: v.isoformat() if v else None  # noqa: E731
        return {
            "version": self.version,
            "state": self.state,
            "collection": self.collection.name,
            "embedder": self.collection.embedder,
            "chunker": self.collection.chunker,
            "analyzer": self.collection.analyzer,
            "documents": documents,
            "chunks": chunks,
            "created_at": iso(self.created_at),
            "built_at": iso(self.built_at),
            "activated_at": iso(self.activated_at),
        }


_VCOLS = "v.name, v.version, v.state, v.spec, v.created_at, v.built_at, v.activated_at"


def _version(r: Any) -> IndexVersion:
    col = _row(r[7:])
    return IndexVersion(r[0], r[1], col, r[2], dict(r[3] or {}), r[4], r[5], r[6])


def _select(where: str) -> str:
    cols = ", ".join(f"c.{c.strip()}" for c in _COLS.split(","))
    return (
        f"SELECT {_VCOLS}, {cols} FROM index_versions v JOIN collections c "
        f"ON c.id = v.collection_id WHERE {where}"
    )


def active_collection(db: Database, name: str) -> Collection | None:
    """The physical collection serving ``name``: its active version, else the collection
    of that name (a collection that never had a second version). One query: it runs
    before every search, to follow activations."""
    with db.connection() as conn:
        r = conn.execute(
            f"SELECT {_COLS} FROM collections WHERE id = coalesce("
            "(SELECT collection_id FROM index_versions WHERE name = %s AND state = 'active'), "
            "(SELECT id FROM collections WHERE name = %s))",
            (name, name),
        ).fetchone()
    return _row(r) if r else None


def register_first(db: Database, name: str) -> None:
    """Record the original collection as version 1 (active), once: when a second version
    is reserved (until then, reads show the collection as its version 1)."""
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO index_versions (name, version, collection_id, state, built_at, activated_at) "
            "SELECT %s, 1, id, 'active', created_at, created_at FROM collections WHERE name = %s "
            "AND NOT EXISTS (SELECT 1 FROM index_versions WHERE name = %s)",
            (name, name, name),
        )


def list_versions(db: Database, name: str) -> list[IndexVersion]:
    """Every version of ``name`` (reads only: a collection that never had a second version
    is its own version 1, active)."""
    with db.connection() as conn:
        rows = conn.execute(_select("v.name = %s ORDER BY v.version"), (name,)).fetchall()
        if rows:
            return [_version(r) for r in rows]
        r = conn.execute(
            f"SELECT {_COLS}, created_at FROM collections WHERE name = %s", (name,)
        ).fetchone()
    if r is None:
        return []
    n = len(_COLS.split(","))
    return [IndexVersion(name, 1, _row(r[:n]), "active", {}, r[n], r[n], r[n])]


def get_version(db: Database, name: str, version: int) -> IndexVersion:
    versions = list_versions(db, name)
    for v in versions:
        if v.version == version:
            return v
    known = ", ".join(str(v.version) for v in versions) or "none"
    raise NotFoundError(f"collection {name!r} has no index version {version} (versions: {known})")


def new_version(db: Database, name: str, spec: Mapping[str, Any]) -> int:
    """Reserve the next version number of ``name`` (the collection is created by the
    caller under :func:`version_collection_name`)."""
    register_first(db, name)
    with db.connection() as conn:
        r = conn.execute(
            "SELECT coalesce(max(version), 1) + 1 FROM index_versions WHERE name = %s", (name,)
        ).fetchone()
    return int(r[0])


def record_version(
    db: Database, name: str, version: int, collection_id: int, spec: Mapping[str, Any]
) -> None:
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO index_versions (name, version, collection_id, state, spec) "
            "VALUES (%s, %s, %s, 'building', %s::jsonb) ON CONFLICT (name, version) DO NOTHING",
            (name, version, collection_id, json.dumps(dict(spec))),
        )


def resumable(db: Database, name: str, spec: Mapping[str, Any]) -> IndexVersion | None:
    """A build of ``name`` with the same spec that is not serving: an unfinished one (a
    killed build resumes it) or a finished one that the live version moved ahead of (the
    build catches it up)."""
    for v in reversed(list_versions(db, name)):
        if v.state in ("building", "ready") and dict(v.spec) == dict(spec):
            return v
    return None


def mark_built(db: Database, name: str, version: int) -> None:
    with db.connection() as conn:
        conn.execute(
            "UPDATE index_versions SET state = 'ready', built_at = now() "
            "WHERE name = %s AND version = %s AND state = 'building'",
            (name, version),
        )


def behind(db: Database, live: Collection, target: Collection) -> int:
    """Current documents of ``live`` that ``target`` lacks or holds with other content,
    plus documents ``target`` still has that ``live`` deleted."""
    q = (
        "SELECT count(*) FROM ((SELECT tenant, doc_key, content_hash, groups FROM documents "
        "WHERE collection_id = %s AND is_current EXCEPT SELECT tenant, doc_key, content_hash, groups "
        "FROM documents WHERE collection_id = %s AND is_current) UNION ALL (SELECT tenant, doc_key, "
        "content_hash, groups FROM documents WHERE collection_id = %s AND is_current EXCEPT "
        "SELECT tenant, doc_key, content_hash, groups FROM documents WHERE collection_id = %s "
        "AND is_current)) d"
    )
    with db.connection() as conn:
        return int(conn.execute(q, (live.id, target.id, target.id, live.id)).fetchone()[0])


def activate(db: Database, name: str, version: int, *, force: bool = False) -> IndexVersion:
    """Make ``version`` serve ``name``, in one transaction: the active version becomes
    retired, the target active. Refused while the target is still building, or lags the
    live version (unless ``force``)."""
    target = get_version(db, name, version)
    if target.state == "active":
        return target
    if target.state == "building":
        raise ConfigError(
            f"index version {version} of {name!r} is still building; run `ragline index build` "
            "again to finish it (it resumes), then activate"
        )
    live = active_collection(db, name)
    if live is not None and not force:
        lag = behind(db, live, target.collection)
        if lag:
            raise ConfigError(
                f"index version {version} differs from the live version in {lag} document(s) "
                "(ingested or deleted since it was built); run `ragline index build` again to "
                "catch up, or pass --force"
            )
    with db.connection() as conn:
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('versions:' || %s, 0))", (name,)
        )
        conn.execute(
            "UPDATE index_versions SET state = 'retired' WHERE name = %s AND state = 'active'",
            (name,),
        )
        conn.execute(
            "UPDATE index_versions SET state = 'active', activated_at = now() "
            "WHERE name = %s AND version = %s",
            (name, version),
        )
    return get_version(db, name, version)


def rollback(db: Database, name: str) -> IndexVersion:
    """Re-activate the version that was active before the current one."""
    versions = list_versions(db, name)
    current = next((v for v in versions if v.state == "active"), None)
    previous = sorted(
        (v for v in versions if v.state == "retired" and v.activated_at is not None),
        key=lambda v: v.activated_at,  # type: ignore[arg-type, return-value]
    )
    if not previous:
        raise ConfigError(f"nothing to roll back to: no version of {name!r} was active before")
    target = previous[-1]
    with db.connection() as conn:
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('versions:' || %s, 0))", (name,)
        )
        if current is not None:
            conn.execute(
                "UPDATE index_versions SET state = 'ready', activated_at = NULL "
                "WHERE name = %s AND version = %s",
                (name, current.version),
            )
        conn.execute(
            "UPDATE index_versions SET state = 'active', activated_at = now() "
            "WHERE name = %s AND version = %s",
            (name, target.version),
        )
    return get_version(db, name, target.version)


def drop(db: Database, name: str, version: int) -> None:
    """Delete a version that is not active, with everything stored in it."""
    v = get_version(db, name, version)
    if v.state == "active":
        raise ConfigError(
            f"version {version} of {name!r} is the active one; activate another version first"
        )
    with db.connection() as conn:
        conn.execute(f"DROP INDEX IF EXISTS {v.collection.hnsw_index}")
        conn.execute("DELETE FROM collections WHERE id = %s", (v.collection.id,))


# -- document history of a version (index build copies the live version's) -------------
HISTORY_KEY = "ragline-history:{version}:{key}"


def history_key(key: str, version: int) -> str:
    """The scratch key an old version is ingested under before :func:`adopt_history`."""
    return HISTORY_KEY.format(version=version, key=key)


def document_versions(db: Database, collection: Collection) -> dict[tuple[str, str, int], Any]:
    """Every stored document version of ``collection`` by (tenant, key, version) (the
    parsed ``content`` of old versions only)."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT tenant, doc_key, version, id, is_current, groups, source_uri, content_hash, "
            "modified_at, ingested_at, metadata, CASE WHEN is_current THEN NULL ELSE content END "
            "FROM documents WHERE collection_id = %s",
            (collection.id,),
        ).fetchall()
    cols: tuple[str, ...] = (
        "id",
        "is_current",
        "groups",
        "source_uri",
        "content_hash",
        "modified_at",
    )
    cols = (*cols, "ingested_at", "metadata", "content")
    return {(r[0], r[1], r[2]): dict(zip(cols, r[3:])) for r in rows}


def renumber_current(
    db: Database,
    target: Collection,
    live: Mapping[tuple[str, str, int], Any],
    have: Mapping[tuple[str, str, int], Any],
) -> int:
    """Give each current document of ``target`` the version number it has in the live
    version (same content), so history numbers line up."""
    live_cur = {(t, k): (v, r["content_hash"]) for (t, k, v), r in live.items() if r["is_current"]}
    n = 0
    with db.connection() as conn:
        for (t, k, v), r in have.items():
            want = live_cur.get((t, k))
            if r["is_current"] and want and want[1] == r["content_hash"] and want[0] != v:
                conn.execute("UPDATE documents SET version = %s WHERE id = %s", (want[0], r["id"]))
                n += 1
    return n


def drop_versions(db: Database, target: Collection, ids: list[int]) -> None:
    """Delete document versions of ``target`` (and their BM25 postings)."""
    from .bm25_write import Changes
    from .writes import delete_versions

    if not ids:
        return
    with db.connection() as conn:
        tenants = conn.execute(
            "SELECT DISTINCT tenant FROM documents WHERE id = ANY(%s) ORDER BY 1", (ids,)
        ).fetchall()
        for (tenant,) in tenants:
            mine = [
                r[0]
                for r in conn.execute(
                    "SELECT id FROM documents WHERE id = ANY(%s) AND tenant = %s", (ids, tenant)
                )
            ]
            changes = Changes(target.id, tenant)
            delete_versions(conn, mine, changes)
            changes.apply(conn)


def adopt_history(
    db: Database, target: Collection, tenant: str, key: str, version: int, live: Mapping[str, Any]
) -> bool:
    """Turn the document ingested under :func:`history_key` into old version ``version``
    of ``key`` (not current: searched only with include_history), dated as the live one."""
    from .bm25_write import Changes
    from .writes import _relabel

    with db.connection() as conn:
        r = conn.execute(
            "SELECT id, groups FROM documents WHERE collection_id = %s AND tenant = %s "
            "AND doc_key = %s AND is_current",
            (target.id, tenant, history_key(key, version)),
        ).fetchone()
        if r is None:
            return False
        changes = Changes(target.id, tenant)
        _relabel(db, conn, target, tenant, [r[0]], list(r[1]), False, changes)  # history now
        conn.execute(
            "UPDATE documents SET doc_key = %s, version = %s, ingested_at = %s WHERE id = %s",
            (key, version, live["ingested_at"], r[0]),
        )
        changes.apply(conn)
    return True
