"""API keys: each maps to a tenant, groups and an admin flag; only a hash is stored.

A key is ``rl_`` + 32 random URL-safe bytes. Its SHA-256 is what the database holds (a
key has 256 bits of entropy, so a fast hash is enough; no salt needed), and lookups are by
that hash, so a database dump reveals no usable key.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..core.errors import ConfigError
from ..core.types import Principal
from .db import Database

KEY_PREFIX = "rl_"


@dataclass(frozen=True)
class ApiKey:
    id: int
    prefix: str
    name: str
    tenant: str
    groups: tuple[str, ...]
    admin: bool
    rate_limit: int | None
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def principal(self) -> Principal:
        return Principal(tenant=self.tenant, groups=self.groups)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prefix": self.prefix,
            "name": self.name,
            "tenant": self.tenant,
            "groups": list(self.groups),
            "admin": self.admin,
            "rate_limit": self.rate_limit,
            "created_at": self.created_at.isoformat(),
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
        }


_COLS = "id, prefix, name, tenant, groups, admin, rate_limit, created_at, revoked_at"


def _key(row: Any) -> ApiKey:
    return ApiKey(row[0], row[1], row[2], row[3], tuple(row[4]), row[5], row[6], row[7], row[8])


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _clean_groups(groups: Iterable[str] | str | None) -> list[str]:
    if isinstance(groups, str):
        groups = groups.split(",")
    out = sorted({g.strip() for g in groups or () if g and g.strip()})
    return out


def create_key(
    db: Database,
    *,
    tenant: str,
    groups: Iterable[str] | str | None = None,
    admin: bool = False,
    name: str = "",
    rate_limit: int | None = None,
) -> tuple[str, ApiKey]:
    """A new key (returned once, in clear) and its stored record."""
    tenant = (tenant or "").strip()
    if not tenant:
        raise ConfigError("a key needs a tenant: pass --tenant NAME")
    if rate_limit is not None and rate_limit <= 0:
        raise ConfigError(
            f"rate limit must be a positive number of requests per minute, got {rate_limit}"
        )
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    with db.connection() as conn:
        row = conn.execute(
            f"INSERT INTO api_keys (key_hash, prefix, name, tenant, groups, admin, rate_limit) "
            f"VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING {_COLS}",
            (hash_key(key), key[:10], name, tenant, _clean_groups(groups), admin, rate_limit),
        ).fetchone()
    return key, _key(row)


def lookup_key(db: Database, key: str) -> ApiKey | None:
    """The live (not revoked) key record for ``key``, or None."""
    if not key or not key.startswith(KEY_PREFIX) or len(key) > 200:
        return None
    with db.connection() as conn:
        row = conn.execute(
            f"SELECT {_COLS} FROM api_keys WHERE key_hash = %s AND revoked_at IS NULL",
            (hash_key(key),),
        ).fetchone()
    return _key(row) if row else None


def list_keys(db: Database, tenant: str | None = None, *, revoked: bool = False) -> list[ApiKey]:
    cond = "" if revoked else " AND revoked_at IS NULL"
    with db.connection() as conn:
        if tenant is None:
            rows = conn.execute(f"SELECT {_COLS} FROM api_keys WHERE true{cond} ORDER BY id")
        else:
            rows = conn.execute(
                f"SELECT {_COLS} FROM api_keys WHERE tenant = %s{cond} ORDER BY id", (tenant,)
            )
        return [_key(r) for r in rows]


def revoke_key(db: Database, key_id: int | str, tenant: str | None = None) -> bool:
    """Revoke by id or by prefix (``rl_AbCd12``); ``tenant`` limits it to that tenant's keys."""
    ident = str(key_id).strip()
    where = "prefix = %s" if ident.startswith(KEY_PREFIX) else "id = %s"
    if where == "id = %s" and not ident.isdigit():
        raise ConfigError(f"{ident!r} is not a key id or prefix (see: ragline keys list)")
    params: list[Any] = [ident if where.startswith("prefix") else int(ident)]
    if tenant is not None:
        where += " AND tenant = %s"
        params.append(tenant)
    with db.connection() as conn:
        n = conn.execute(
            f"UPDATE api_keys SET revoked_at = now() WHERE {where} AND revoked_at IS NULL", params
        ).rowcount
    return n > 0
