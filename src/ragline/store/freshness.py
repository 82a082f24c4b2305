"""Freshness of an index: how long sources wait to be indexed, what changed since, what
failed and what disappeared."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .collections import Collection
from .db import Database


def record_outcome(
    db: Database,
    collection: Collection,
    tenant: str,
    failed: Iterable[tuple[str, str]],
    succeeded: Iterable[str],
) -> None:
    """Remember each source's last failure (source, reason); forget it once it succeeds."""
    failed = list(failed)
    ok = list(succeeded)
    if not failed and not ok:
        return
    with db.connection() as conn:
        if ok:
            conn.execute(
                "DELETE FROM source_failures WHERE collection_id = %s AND tenant = %s "
                "AND source = ANY(%s)",
                (collection.id, tenant, ok),
            )
        for source, reason in failed:
            conn.execute(
                "INSERT INTO source_failures (collection_id, tenant, source, reason) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (collection_id, tenant, source) "
                "DO UPDATE SET reason = EXCLUDED.reason, failed_at = EXCLUDED.failed_at",
                (collection.id, tenant, source, reason[:2000]),
            )


def _local_file(source: str) -> Path | None:
    """The file a source names, or None for sources this machine cannot check
    (BEIR records, uploads, URLs)."""
    if source.startswith(("beir:", "upload:")) or "://" in source:
        return None
    return Path(source)


def _gone(source: str) -> bool:
    path = _local_file(source)
    try:
        return path is not None and not path.exists()
    except OSError:
        return False


def _pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p * (len(s) - 1))))]


def freshness(
    db: Database, collection: Collection, *, check_sources: bool = True
) -> dict[str, Any]:
    """Lag (indexed − source modified) distribution, the oldest source change not yet
    indexed, sources whose last ingest failed, and documents whose source file is gone.
    ``check_sources`` stats each file source (skip it on huge collections)."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT doc_key, source_uri, coalesce(source_mtime, modified_at), ingested_at FROM documents "
            "WHERE collection_id = %s AND is_current",
            (collection.id,),
        ).fetchall()
        failures = conn.execute(
            "SELECT tenant, source, reason, failed_at FROM source_failures "
            "WHERE collection_id = %s ORDER BY failed_at DESC",
            (collection.id,),
        ).fetchall()
    lags = [
        (ing - mod).total_seconds() for _k, _u, mod, ing in rows if mod is not None and ing >= mod
    ]
    pending: list[tuple[datetime, str]] = []
    missing: list[str] = []
    if check_sources:
        for key, uri, modified, ingested in rows:
            path = _local_file(uri)
            if path is None:
                continue
            try:
                mtime = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
            except FileNotFoundError:
                missing.append(key)
                continue
            except OSError:
                continue
            if mtime > (modified or ingested):  # changed since the version indexed
                pending.append((mtime, key))
    oldest = min(pending) if pending else None
    # a failed source that no longer exists is no longer waiting for anything
    failures = [f for f in failures if not _gone(f[1])]
    return {
        "lag_seconds": {
            "documents": len(lags),
            "p50": round(_pct(lags, 0.5), 1) if lags else None,
            "p90": round(_pct(lags, 0.9), 1) if lags else None,
            "max": round(max(lags), 1) if lags else None,
        },
        "pending_changes": len(pending),
        "oldest_pending_change": {"source": oldest[1], "modified_at": oldest[0].isoformat()}
        if oldest
        else None,
        "failed_sources": [
            {"tenant": t, "source": s, "reason": r, "failed_at": f.isoformat()}
            for t, s, r, f in failures
        ],
        "missing_sources": sorted(missing),
    }
