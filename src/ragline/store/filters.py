"""The permission filter both retrieval legs put inside their SQL.

A caller is a :class:`~ragline.core.types.Principal` (tenant + groups). A chunk is
visible when it belongs to the caller's tenant, is the current version, and either has
no allowed groups (visible to the whole tenant) or shares a group with the caller.
If the principal is missing or malformed the query is refused — never run unfiltered.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import AccessError
from ..core.filters import KNOWN_KEYS, SHORT_TYPES, Filters
from ..core.types import Principal


def validate_principal(principal: Any) -> Principal:
    if not isinstance(principal, Principal):
        raise AccessError(
            "search refused: no caller identity was given (pass principal=Principal(tenant=..., groups=(...)))"
        )
    if not isinstance(principal.tenant, str) or not principal.tenant.strip():
        raise AccessError("search refused: the caller's tenant is empty or not a string")
    groups = principal.groups
    if isinstance(groups, (str, bytes)) or not all(
        isinstance(g, str) and g.strip() for g in groups
    ):
        raise AccessError(
            f"search refused: groups must be a sequence of non-empty strings, got {groups!r}"
        )
    return principal


def acl_sql(
    principal: Principal,
    alias: str = "c",
    *,
    include_history: bool = False,
    filters: Filters | None = None,
) -> tuple[str, dict[str, Any]]:
    """SQL condition and parameters restricting ``alias`` (a chunks row) to ``principal``.

    Only current versions qualify unless ``include_history`` (permissions apply either way).
    Metadata ``filters`` are ANDed in as a condition on the chunk's document.
    """
    p = validate_principal(principal)
    current = "" if include_history else f" AND {alias}.is_current"
    sql = (
        f"{alias}.tenant = %(acl_tenant)s{current} "
        f"AND ({alias}.groups = '{{}}'::text[] OR {alias}.groups && %(acl_groups)s::text[])"
    )
    params: dict[str, Any] = {"acl_tenant": p.tenant, "acl_groups": list(p.groups)}
    if filters is not None:
        cond, fparams = filters.sql("fd")
        sql += (
            f" AND EXISTS (SELECT 1 FROM documents fd WHERE fd.tenant = {alias}.tenant "
            f"AND fd.id = {alias}.document_id AND {cond})"
        )
        params.update(fparams)
    return sql, params


SHOWN_VALUES = 20
"""At most this many known values are listed in a filter error."""


def unmatched_filters(
    conn: Any, collection_id: int, principal: Principal, filters: Filters
) -> list[str]:
    """Why ``filters`` can match no current document ``principal`` may read: one line
    per key that is unknown or whose values were never seen, naming the known keys or
    values (of the caller's documents only: nothing about other tenants or groups).
    Empty when every key and value occurs somewhere, i.e. only their combination fails.
    Run only after a filtered search came back empty, so it costs the hot path nothing."""
    p = validate_principal(principal)
    scope = (
        "collection_id = %(cid)s AND tenant = %(t)s AND is_current "
        "AND (groups = '{}'::text[] OR groups && %(g)s::text[])"
    )
    base: dict[str, Any] = {"cid": collection_id, "t": p.tenant, "g": list(p.groups)}

    def exists(cond: str, **params: Any) -> bool:
        sql = f"SELECT EXISTS (SELECT 1 FROM documents WHERE {scope} AND {cond})"
        return bool(conn.execute(sql, {**base, **params}).fetchone()[0])

    def known(expr: str, **params: Any) -> str:
        rows = conn.execute(
            f"SELECT DISTINCT v FROM (SELECT {expr} AS v FROM documents WHERE {scope}) s "
            f"WHERE v IS NOT NULL ORDER BY 1 LIMIT {SHOWN_VALUES + 1}",
            {**base, **params},
        ).fetchall()
        values = [str(r[0]) for r in rows]
        more = ", …" if len(values) > SHOWN_VALUES else ""
        return ", ".join(values[:SHOWN_VALUES]) + more if values else "none"

    problems: list[str] = []
    if filters.languages and not exists("language = ANY(%(v)s)", v=list(filters.languages)):
        problems.append(
            f"language={'|'.join(filters.languages)} matches no document; "
            f"languages present: {known('language')}"
        )
    if filters.media_types and not exists("media_type = ANY(%(v)s)", v=list(filters.media_types)):
        short = ", ".join(sorted({k for k, v in SHORT_TYPES.items() if k != "text"}))
        problems.append(
            f"type={'|'.join(filters.media_types)} matches no document; types present: "
            f"{known('media_type')} (short names: {short})"
        )
    if filters.source_prefixes and not exists(
        "EXISTS (SELECT 1 FROM unnest(%(v)s::text[]) x WHERE starts_with(source_uri, x))",
        v=list(filters.source_prefixes),
    ):
        # the prefix is not echoed: a face may have resolved it under a server path
        problems.append("no document's source starts with the source filter's prefix")
    for key, values in sorted(filters.metadata.items()):
        if not exists("metadata ? %(k)s", k=key):
            keys = known("jsonb_object_keys(metadata)")
            problems.append(
                f"unknown filter key {key!r}; known keys: {', '.join(KNOWN_KEYS)}; "
                f"metadata keys: {keys}"
            )
        elif not exists("metadata ->> %(k)s = ANY(%(v)s)", k=key, v=list(values)):
            problems.append(
                f"{key}={'|'.join(values)} matches no document; values of {key!r}: "
                f"{known('metadata ->> %(k)s', k=key)}"
            )
    return problems
