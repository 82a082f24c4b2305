"""Per-installation secrets kept in the database (made by migration 0022)."""

from __future__ import annotations

from .db import Database


def installation_secret(db: Database, name: str = "ids") -> bytes:
    """The secret ``name`` of this installation (schema)."""
    with db.connection() as conn:
        row = conn.execute(
            "SELECT value FROM installation_secrets WHERE name = %s", (name,)
        ).fetchone()
    if row is None:  # pragma: no cover - the migration inserts it
        from ..core.errors import StoreError

        raise StoreError(f"the installation secret {name!r} is missing; run the migrations")
    return bytes(row[0])
