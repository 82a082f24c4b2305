"""The permission filter both retrieval legs put inside their SQL.

A caller is a :class:`~ragline.core.types.Principal` (tenant + groups). A chunk is
visible when it belongs to the caller's tenant, is the current version, and either has
no allowed groups (visible to the whole tenant) or shares a group with the caller.
If the principal is missing or malformed the query is refused — never run unfiltered.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import AccessError
from ..core.filters import Filters
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
