"""What a caller asks of an :class:`~ragline.index.Index`: one value per request.

Every face (CLI, HTTP, MCP, chat, eval) builds a :class:`SearchRequest` or an
:class:`AskRequest` from its wire format and hands it to the Index, instead of passing
the same ten keyword arguments through five methods. The values are immutable; the
search an ask makes is derived from it (:meth:`AskRequest.search`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Self

from .filters import Filters
from .types import Principal

FilterSpec = Mapping[str, Any] | Filters | None


def groups_of(groups: Iterable[str] | str | None) -> tuple[str, ...]:
    """Groups as a tuple: a comma-separated string (``"hr,legal"``) is split."""
    if isinstance(groups, str):
        return tuple(g.strip() for g in groups.split(",") if g.strip())
    return tuple(groups or ())


def principal_of(tenant: str, groups: Iterable[str] | str | None) -> Principal:
    return Principal(tenant=tenant, groups=groups_of(groups))


@dataclass(frozen=True, kw_only=True)
class _Request:
    """What searches and asks share: who asks, how, and reading the request's parts. Every
    field is keyword-only but the request's text (``query``, ``question``)."""

    tenant: str = "default"
    groups: tuple[str, ...] = ()
    k: int | None = None
    """Results to return (search; default: the ``top_k`` setting) or passages the answer
    reads (ask; default: the ``answer_passages`` setting)."""
    mode: str | None = None
    """bm25, vector, hybrid or rerank (default: rerank with a reranker, else hybrid)."""
    filters: FilterSpec = None
    history: tuple[Mapping[str, str], ...] = ()
    """Earlier turns of a conversation ({"role", "content"}): a follow-up is rewritten."""
    trace: bool | None = None
    """Store a trace (default: the ``traces`` setting)."""
    trace_key: int | None = None
    """The API key a stored trace belongs to (the faces pass the caller's)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", groups_of(self.groups))
        object.__setattr__(self, "history", tuple(self.history or ()))

    @property
    def principal(self) -> Principal:
        return Principal(tenant=self.tenant, groups=self.groups)

    def parsed_filters(self) -> Filters | None:
        f = self.filters
        return f if isinstance(f, Filters) or f is None else Filters.parse(f)

    @classmethod
    def of(cls, value: Self | str, **kw: Any) -> Self:
        """``value`` itself (with the fields in ``kw`` replaced) when it is a request, else
        a request of the text ``value`` with the keyword arguments ``kw`` (the Python API's
        form: ``index.search("vpn", tenant="acme")``). An unknown keyword is a TypeError."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(kw) - names)
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {', '.join(unknown)}")
        if isinstance(value, cls):
            return replace(value, **kw) if kw else value
        return cls(value, **kw)  # type: ignore[call-arg, arg-type]


@dataclass(frozen=True, kw_only=True)
class SearchRequest(_Request):
    """One search: the query, who asks (tenant, groups), and how."""

    query: str = field(kw_only=False)
    include_history: bool = False
    """Search every stored version, not only the current ones."""
    techniques: Mapping[str, bool] | None = None
    """Query techniques to force on or off (rewrite, multi_query, decompose, hyde)."""


@dataclass(frozen=True, kw_only=True)
class AskRequest(_Request):
    """One question to answer: the question, who asks, how, and the agent's budgets."""

    question: str = field(kw_only=False)
    agent: str | None = None
    """off, auto or on: the research loop (default: the ``agent`` setting)."""
    sources: Sequence[str] | None = None
    """Sources the agent may route to (each one the caller may read)."""
    budget: Any = None
    """An :class:`~ragline.agent.Budget` (default: the settings')."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sources is not None:
            object.__setattr__(self, "sources", tuple(self.sources))

    def search(self, k: int | None = None) -> SearchRequest:
        """The search this question makes (``k`` passages; never traced on its own)."""
        return SearchRequest(
            self.question,
            tenant=self.tenant,
            groups=self.groups,
            k=k if k is not None else self.k,
            mode=self.mode,
            filters=self.filters,
            history=self.history,
            trace=False,
        )
