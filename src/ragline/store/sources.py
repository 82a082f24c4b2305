"""Sources: collections declared searchable by the agent, with a description and the
groups that may route to them; and the statistics the router reads (what the caller may
read of a source, and which query terms occur in it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core.errors import ConfigError, NotFoundError
from ..core.types import Principal
from .collections import _NAME, Collection
from .db import Database
from .filters import validate_principal


@dataclass(frozen=True)
class SourceRow:
    name: str
    description: str
    groups: tuple[str, ...]

    def readable_by(self, principal: Principal) -> bool:
        """Whether ``principal`` may route to this source (no groups: everyone)."""
        return not self.groups or bool(set(self.groups) & set(principal.groups))


def declare_source(
    db: Database, name: str, description: str = "", groups: Iterable[str] = ()
) -> SourceRow:
    """Declare (or re-describe) collection ``name`` a source."""
    if not _NAME.match(name):
        raise ConfigError(
            f"invalid source name {name!r}: a collection name (1-64 letters, digits, '_', '.', '-')"
        )
    if len(description) > 2000:
        raise ConfigError("a source description holds at most 2000 characters")
    g = sorted({x.strip() for x in groups if x.strip()})
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO sources (name, description, groups) VALUES (%s, %s, %s) "
            "ON CONFLICT (name) DO UPDATE SET description = EXCLUDED.description, "
            "groups = EXCLUDED.groups, updated_at = now()",
            (name, " ".join(description.split()), g),
        )
    return SourceRow(name, " ".join(description.split()), tuple(g))


def remove_source(db: Database, name: str) -> None:
    with db.connection() as conn:
        if conn.execute("DELETE FROM sources WHERE name = %s", (name,)).rowcount == 0:
            raise NotFoundError(f"no source named {name!r} (list them: ragline source list)")


def list_sources(db: Database) -> list[SourceRow]:
    with db.connection() as conn:
        return [
            SourceRow(r[0], r[1], tuple(r[2]))
            for r in conn.execute("SELECT name, description, groups FROM sources ORDER BY name")
        ]


def visible_size(db: Database, collection: Collection, principal: Principal) -> int:
    """Current chunks of ``collection`` that ``principal`` may read (from the BM25 class
    statistics: no scan)."""
    p = validate_principal(principal)
    with db.connection() as conn:
        r = conn.execute(
            "SELECT coalesce(sum(n_chunks), 0) FROM bm25_classes WHERE collection_id = %s "
            "AND tenant = %s AND is_current AND (groups = '{}' OR groups && %s::text[])",
            (collection.id, p.tenant, list(p.groups)),
        ).fetchone()
    return int(r[0]) if r else 0


def term_presence(
    db: Database, collection: Collection, principal: Principal, terms: Sequence[str]
) -> dict[str, int]:
    """Document frequency of each of ``terms`` among the chunks ``principal`` may read
    (terms absent from the result occur in none of them)."""
    p = validate_principal(principal)
    if not terms:
        return {}
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT t.term, sum(t.df) FROM bm25_terms t JOIN bm25_classes c "
            "ON c.collection_id = t.collection_id AND c.tenant = t.tenant "
            "AND c.class_id = t.class_id "
            "WHERE t.collection_id = %s AND t.tenant = %s AND t.term = ANY(%s) "
            "AND c.is_current AND (c.groups = '{}' OR c.groups && %s::text[]) "
            "GROUP BY t.term",
            (collection.id, p.tenant, list(dict.fromkeys(terms)), list(p.groups)),
        ).fetchall()
    return {str(t): int(n) for t, n in rows if n}
