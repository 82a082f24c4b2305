"""The operator's door: API keys, index versions, upload/sync jobs, the installation secret,
rewriting the tables after purges, and the embedded server. Faces call these (through
``Index.admin`` or :meth:`Admin.open` when no model should be loaded) instead of reaching
into :mod:`ragline.store`."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .store.keys import ApiKey  # the record of a key, as the faces see it

if TYPE_CHECKING:
    from .core.settings import Settings
    from .store.collections import Collection
    from .store.db import Database
    from .store.server import ServerInfo
    from .store.versions import IndexVersion


__all__ = ["Admin", "ApiKey", "server_info", "start_server", "stop_server"]


class Admin:
    """Operator work on one database and collection name."""

    def __init__(self, db: Database, collection: str) -> None:
        self.db = db
        self.collection = collection

    @classmethod
    def open(cls, settings: Settings, *, max_size: int = 1) -> Admin:
        """The database alone (no model to load, whatever the collections were built
        with); close it with :meth:`close`."""
        from .store.db import resolve_database

        db = resolve_database(
            settings.database_url or settings.data_dir, schema=settings.db_schema, max_size=max_size
        )
        return cls(db, settings.collection)

    def close(self) -> None:
        self.db.close()

    def ping(self) -> None:
        """Raise when the database does not answer."""
        with self.db.connection() as conn:
            conn.execute("SELECT 1")

    # -- API keys -------------------------------------------------------------------
    def create_key(
        self,
        *,
        tenant: str,
        groups: Iterable[str] | str | None = None,
        admin: bool = False,
        name: str = "",
        rate_limit: int | None = None,
    ) -> tuple[str, ApiKey]:
        from .store.keys import create_key

        return create_key(
            self.db, tenant=tenant, groups=groups, admin=admin, name=name, rate_limit=rate_limit
        )

    def lookup_key(self, key: str) -> ApiKey | None:
        from .store.keys import lookup_key

        return lookup_key(self.db, key)

    def list_keys(self, tenant: str | None = None, *, revoked: bool = False) -> list[ApiKey]:
        from .store.keys import list_keys

        return list_keys(self.db, tenant, revoked=revoked)

    def revoke_key(self, key_id: int | str, tenant: str | None = None) -> bool:
        from .store.keys import revoke_key

        return revoke_key(self.db, key_id, tenant=tenant)

    def installation_secret(self, name: str = "ids") -> bytes:
        from .store.secrets import installation_secret

        return installation_secret(self.db, name)

    # -- index versions ---------------------------------------------------------------
    def versions(self, name: str | None = None) -> list[IndexVersion]:
        from .store.versions import list_versions

        return list_versions(self.db, name or self.collection)

    def version(self, version: int, name: str | None = None) -> IndexVersion:
        from .store.versions import get_version

        return get_version(self.db, name or self.collection, version)

    def counts(self, collection_id: int) -> tuple[int, int]:
        """(current documents, chunks) of one physical collection (an index version)."""
        from .store.collections import collection_counts

        return collection_counts(self.db, collection_id)

    def active(self) -> Collection | None:
        from .store.versions import active_collection

        return active_collection(self.db, self.collection)

    def refresh_bm25_tops(self, *, seconds: float | None = None) -> dict[str, Any]:
        """Compute the tops of every long BM25 list of the active index version that has
        none (an ingest refreshes those it changed within a tenth of its time; after an
        upgrade, deletes or a large ingest some may be left): what short queries decide
        from. ``seconds`` bounds the work; returns the lists done and the time taken."""
        import time

        from .store.bm25 import refresh_tops

        col = self.active()
        if col is None:
            return {"lists": 0, "seconds": 0.0}
        t = time.perf_counter()
        n = refresh_tops(self.db, col.id, seconds=seconds)
        return {"lists": n, "seconds": round(time.perf_counter() - t, 2)}

    def activate(self, version: int, *, force: bool = False) -> IndexVersion:
        from .store.versions import activate

        return activate(self.db, self.collection, version, force=force)

    def rollback(self) -> IndexVersion:
        from .store.versions import rollback

        return rollback(self.db, self.collection)

    def drop(self, version: int) -> None:
        from .store.versions import drop

        drop(self.db, self.collection, version)

    # -- jobs ---------------------------------------------------------------------------
    def jobs(self, tenant: str, limit: int = 50) -> list[dict[str, Any]]:
        from .store.jobs import list_jobs

        return list_jobs(self.db, tenant, limit)

    def job(self, job_id: int, tenant: str) -> dict[str, Any] | None:
        from .store.jobs import get_job

        return get_job(self.db, job_id, tenant)

    def create_job(
        self, tenant: str, kind: str, total: int, detail: dict[str, Any]
    ) -> dict[str, Any]:
        from .store.jobs import create_job

        return create_job(self.db, tenant, kind, total, detail)

    def update_job(self, job_id: int, **fields: Any) -> None:
        from .store.jobs import update_job

        update_job(self.db, job_id, **fields)

    def abandon_unfinished(self, before: Any = None) -> int:
        """Mark the jobs a previous server left running as failed (see store/jobs.py)."""
        from .store.jobs import abandon_unfinished

        return abandon_unfinished(self.db, before=before)

    def queue_counts(self) -> dict[str, int]:
        from .store.jobs import queue_counts

        return queue_counts(self.db)

    # -- erasure ------------------------------------------------------------------------
    def erase_dead_rows(self, *, max_bytes: int | None = None) -> dict[str, Any]:
        """Rewrite the tables that hold document text (see :mod:`ragline.store.erasure`)."""
        from .store.erasure import erase_dead_rows

        return erase_dead_rows(self.db, max_bytes=max_bytes)


# -- the embedded server (a data directory, no index) ------------------------------------
def start_server(data_dir: Path) -> str:
    from .store.server import ensure_server

    return ensure_server(data_dir)


def stop_server(data_dir: Path) -> bool:
    from .store.server import stop_server as stop

    return stop(data_dir)


def server_info(data_dir: Path) -> ServerInfo:
    from .store.server import server_info as info

    return info(data_dir)
