"""Traces of searches and asks: recorded by the :class:`~ragline.index.Index`, read back
per tenant. The trace contents are built in :mod:`ragline.core.trace`, stored by
:mod:`ragline.store.traces`."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .core.requests import principal_of
from .core.types import Answer, Principal

if TYPE_CHECKING:
    from .binding import Binding
    from .core.settings import Settings
    from .store.db import Database


EXPIRE_EVERY_S = 3600.0


class TraceRecorder:
    """Records the traces of an index's searches and asks and reads them back per tenant.
    ``binding`` says which collection they belong to; ``count_tokens`` is the
    generator's tokenizer (the embedder's for the extractive answerer)."""

    def __init__(self, settings: Settings, db: Database, binding: Binding) -> None:
        self.settings = settings
        self.db = db
        self.binding = binding
        self._expired: dict[tuple[int, str], float] = {}

    @property
    def collection(self) -> Any:
        return self.binding.collection

    def enabled(self, trace: bool | None) -> bool:
        return self.settings.traces if trace is None else trace

    def save(self, principal: Principal, record: dict[str, Any], key_id: int | None = None) -> str:
        from .store.traces import expire_traces, save_trace

        where, now = (self.collection.id, principal.tenant), time.monotonic()
        if now - self._expired.get(where, -EXPIRE_EVERY_S) >= EXPIRE_EVERY_S:
            # retention: the tenant's expired rows only (by index), at most hourly
            self._expired[where] = now
            expire_traces(self.db, self.settings.trace_retention_days, *where)
        trace_id = save_trace(self.db, self.collection.id, principal, record, key_id=key_id)
        if self.settings.otel_export:
            from .otel import export_spans

            export_spans({**record, "id": trace_id})
        return trace_id

    def trace(
        self,
        trace_id: str,
        *,
        tenant: str | None = "default",
        groups: Iterable[str] | str | None = None,
        admin: bool = True,
        key_id: int | None = None,
    ) -> dict[str, Any] | None:
        """A stored trace, if it belongs to ``tenant`` (``admin`` False: and was made with
        API key ``key_id`` — without a key, with exactly ``groups`` — and mentions only
        documents ``groups`` may read; ``tenant`` None: any tenant's, for the operator)."""
        if self.collection is None:
            return None
        from .store.traces import get_trace

        who = None if tenant is None else principal_of(tenant, groups)
        return get_trace(self.db, self.collection.id, trace_id, who, admin=admin, key_id=key_id)

    def traces(
        self,
        *,
        tenant: str | None = "default",
        groups: Iterable[str] | str | None = None,
        limit: int = 20,
        admin: bool = True,
        key_id: int | None = None,
    ) -> list[dict[str, Any]]:
        """Recent traces, newest first (``tenant`` None: every tenant's; ``admin`` False:
        as :meth:`trace` says)."""
        if self.collection is None:
            return []
        from .store.traces import recent_traces

        who = None if tenant is None else principal_of(tenant, groups)
        return recent_traces(
            self.db, self.collection.id, who, limit=limit, admin=admin, key_id=key_id
        )

    def answer(
        self,
        question: str,
        ctx: Any,
        answer: Answer,
        principal: Principal,
        filters: Any,
        t_gen: float,
        key_id: int | None = None,
        *,
        count_tokens: Any,
    ) -> Answer:
        from dataclasses import replace

        from .core.trace import add_answer, search_trace

        record = search_trace(
            ctx.search,
            principal,
            question=question,
            collection=self.collection.name,
            filters=filters,
            kind="ask",
        )
        record = add_answer(
            record,
            ctx,
            answer,
            generate_ms=(time.perf_counter() - t_gen) * 1000,
            count_tokens=count_tokens,
        )
        record["generation"]["model"] = self.settings.generator
        return replace(answer, trace_id=self.save(principal, record, key_id))
