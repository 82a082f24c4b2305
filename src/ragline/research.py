"""The agent's door on the :class:`~ragline.index.Index`: sources, routing and research.

``Index.research`` runs the loop of :mod:`ragline.agent` over the sources the caller may
read (the index's own collection, plus the collections declared sources that the
caller's groups may route to); every search runs under the caller's permission filter in
its source. ``agent = auto`` answers one-shot when the one-shot evidence is strong and
the question asks one thing, and enters the loop otherwise; the decision and its reason
are traced.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .core.errors import ConfigError, NotFoundError
from .core.filters import Filters
from .core.types import Answer, Hit, Principal
from .tracing import _principal

AGENT_MODES = ("off", "auto", "on")


class Research:
    """Sources and the agent loop of an :class:`~ragline.index.Index` (``index.researcher``;
    the index's ``research``, ``declare_source``, ``sources`` … delegate here)."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self._source_searchers: dict[int, Any] = {}

    # -- sources ----------------------------------------------------------------------
    def declare_source(
        self, name: str, description: str = "", *, groups: Iterable[str] | str = ()
    ) -> dict[str, Any]:
        """Declare collection ``name`` a source the agent may route to; ``groups`` (empty:
        every caller) may route to it. Its documents keep their own permissions."""
        from .store.sources import declare_source

        if isinstance(groups, str):
            groups = [g for g in groups.split(",") if g.strip()]
        row = declare_source(self.index.db, name, description, groups)
        return {"name": row.name, "description": row.description, "groups": list(row.groups)}

    def remove_source(self, name: str) -> None:
        from .store.sources import remove_source

        remove_source(self.index.db, name)

    def sources(
        self, *, tenant: str = "default", groups: Iterable[str] | str | None = None
    ) -> list[dict[str, Any]]:
        """The sources the caller may route to, with what they may read of each."""
        from .store.sources import visible_size

        principal = _principal(tenant, groups)
        out = []
        for name, desc, col in self._readable_sources(principal):
            out.append(
                {
                    "name": name,
                    "description": desc,
                    "chunks": 0 if col is None else visible_size(self.index.db, col, principal),
                    "own": name == self.index.settings.collection,
                }
            )
        return out

    def routes(self, *, tenant: str = "default", groups: Iterable[str] | str | None = None) -> bool:
        """Whether a one-shot ask of this caller is routed: the index's own collection is
        a declared source (the opt-in) and some other declared source is one the caller
        may route to (one small query)."""
        from .store.sources import list_sources

        p = _principal(tenant, groups)
        own = self.index.settings.collection
        rows = list_sources(self.index.db)
        return any(r.name == own for r in rows) and any(
            r.name != own and r.readable_by(p) for r in rows
        )

    def _readable_sources(self, principal: Principal) -> list[tuple[str, str, Any]]:
        """(name, description, physical collection or None) of every source the caller may
        route to: the index's own collection first."""
        from .store.sources import list_sources
        from .store.versions import active_collection

        own = self.index.settings.collection
        rows = {r.name: r for r in list_sources(self.index.db)}
        out = []
        mine = rows.get(own)
        if self.index.collection is not None or mine is not None:
            out.append((own, mine.description if mine else "", self.index.collection))
        for name, r in rows.items():
            if name == own or not r.readable_by(principal):
                continue
            out.append((name, r.description, active_collection(self.index.db, name)))
        return out

    def _source_searcher(self, name: str, collection: Any) -> Any:
        """A searcher over another source's collection (its own embedder when it was
        built with another model; cached per collection)."""
        from .binding import _embedder_for
        from .retrieve.search import HybridSearcher

        cache = self._source_searchers
        if collection.id not in cache:
            emb = self.index.embedder
            if emb is None or emb.model_id != collection.embedder:
                emb = _embedder_for(collection.embedder, self.index.settings.embed_threads)
            cache[collection.id] = HybridSearcher(
                self.index.db, collection, emb, self.index.analyzer
            )
        return cache[collection.id]

    # -- research ---------------------------------------------------------------------
    def research(
        self,
        question: str,
        *,
        tenant: str = "default",
        groups: Iterable[str] | str | None = None,
        agent: str = "on",
        sources: Sequence[str] | None = None,
        budget: Any = None,
        k: int | None = None,
        mode: str | None = None,
        filters: Mapping[str, Any] | Filters | None = None,
        trace: bool | None = None,
        trace_key: int | None = None,
        history: Sequence[Mapping[str, str]] = (),
    ) -> Answer:
        """Answer ``question`` with the agent loop (``agent`` on), one-shot (off), or
        one-shot unless its evidence is weak or the question has several parts (auto).
        ``sources`` restricts routing to those names (each must be one the caller may
        read); ``budget`` is an :class:`~ragline.agent.Budget` (default: the settings')."""
        from .agent import AgentLoop, Budget, SourceInfo
        from .agent import heuristics as H
        from .analysis.analyzer import get_analyzer
        from .generate import DEFAULT_MIN_EVIDENCE, ExtractiveAnswerer
        from .retrieve.search import SearchParams
        from .store.sources import term_presence, visible_size

        if agent not in AGENT_MODES:
            raise ConfigError(f"agent must be one of {', '.join(AGENT_MODES)}, got {agent!r}")
        if not question or not question.strip():
            raise ConfigError("the question is empty; pass the text to ask")
        self.index.check_size(question, filters)
        asked = question
        if history:  # a follow-up becomes standalone first (a no-op without a model)
            question = self.index.planner(rewrite=True).plan(question, history).question
        s = self.index.settings
        principal = _principal(tenant, groups)
        self.index._refresh()
        readable = self._readable_sources(principal)
        if sources:
            known = {n for n, _, _ in readable}
            bad = [x for x in sources if x not in known]
            if bad:
                raise NotFoundError(
                    f"no source named {', '.join(map(repr, bad))} that you may search; "
                    f"yours: {', '.join(sorted(known)) or '(none)'}"
                )
            readable = [r for r in readable if r[0] in sources]
        if agent == "off" and len(readable) <= 1:  # nothing to route between: plain ask
            *_, one = self.index.ask_stream(
                asked,
                tenant=tenant,
                groups=groups,
                k=k,
                mode=mode,
                filters=filters,
                history=history,
                stream=False,
                trace=trace,
                trace_key=trace_key,
            )
            return one
        if not readable or self.index.collection is None and all(c is None for _, _, c in readable):
            from .core.trace import nothing_ingested

            return nothing_ingested(question)
        filt = (
            filters if isinstance(filters, Filters) or filters is None else Filters.parse(filters)
        )
        params = SearchParams(
            depth=s.rrf_depth,
            rrf_k=s.rrf_k,
            ef_search=s.ef_search,
            dedup_threshold=s.dedup_threshold,
            query_languages=s.query_languages,
            filters=filt,
        )
        mode = mode or ("rerank" if s.reranker else "hybrid")
        k = k or s.answer_passages
        cols = {n: c for n, _, c in readable}
        own = s.collection

        def search(query: str, source: str) -> list[Hit]:
            col = cols.get(source)
            if col is None:
                raise NotFoundError(f"source {source!r} holds nothing that can be searched")
            searcher = self.index.searcher if source == own else self._source_searcher(source, col)
            m = mode if source == own else "hybrid"
            return list(searcher.search(query, principal, k=k, mode=m, params=params).hits)

        def presence(source: str, keys: list[str]) -> float:
            col = cols.get(source)
            if col is None or not keys:
                return 0.0
            found = term_presence(self.index.db, col, principal, keys)
            return sum(t in found for t in keys) / len(keys)

        infos = [
            SourceInfo(n, d, chunks=0 if c is None else visible_size(self.index.db, c, principal))
            for n, d, c in readable
        ]
        min_ev = s.min_evidence if s.min_evidence is not None else DEFAULT_MIN_EVIDENCE
        gate = ExtractiveAnswerer(language=s.language, min_evidence=min_ev)
        terms = get_analyzer(s.language).terms
        t0 = time.perf_counter()
        contexts: list[Any] = []

        class _Synth:
            def __init__(inner, chat: Any) -> None:
                inner.gen = self.index._generator(chat=chat)

            def answer(inner, q: str, hits: list[Hit]) -> Answer:
                ctx = self._assemble(hits, principal)
                contexts.append(ctx)
                return inner.gen.answer(q, list(ctx.passages))

        decision: dict[str, Any] = {"mode": agent}
        seed = None
        if agent == "off":  # one-shot, routed: the best source(s) for the question, once
            order, scores = H.route(question, infos, terms=terms, presence=presence)
            order = order or [own]
            found = [search(question, src) for src in order]
            hits = _fused(found, k, s.rrf_k)
            decision.update(
                loop=False,
                route={"sources": order, "scores": scores},
                reason=f"one-shot, routed to {', '.join(order)}",
            )
            a = _Synth(self.index.chat).answer(question, hits)
            a = replace(
                a,
                question=asked,
                agent={
                    **decision,
                    "stop_reason": "one_shot",
                    "steps": len(order),
                    "sources": order,
                },
            )
            return self._trace_research(
                asked,
                a,
                contexts[-1],
                None,
                principal,
                filters,
                t0,
                trace,
                trace_key,
                decision,
                hits,
            )
        if agent == "auto" and self.index.collection is not None:
            hits = search(question, own)
            ev = gate.evidence(question, hits)
            parts = H.plan(question)
            decision.update(one_shot_evidence=round(ev, 4), parts=len(parts))
            if ev >= min_ev and len(parts) == 1:
                decision.update(
                    loop=False,
                    reason=f"one-shot evidence {ev:.2f} ≥ {min_ev:.2f} "
                    "and the question asks one thing",
                )
                a = _Synth(self.index.chat).answer(question, hits)
                a = replace(
                    a,
                    agent={
                        **decision,
                        "stop_reason": "one_shot",
                        "steps": 1,
                        "model_calls": int(a.prompt_tokens is not None),
                    },
                )
                return self._trace_research(
                    question,
                    a,
                    contexts[-1],
                    None,
                    principal,
                    filters,
                    t0,
                    trace,
                    trace_key,
                    decision,
                    hits,
                )
            why = [f"one-shot evidence {ev:.2f} < {min_ev:.2f}"] if ev < min_ev else []
            if len(parts) > 1:
                why.append(f"the question has {len(parts)} parts")
            decision.update(loop=True, reason="; ".join(why))
            seed = (question, own, hits)
        else:
            decision.update(loop=True, reason="agent = on")
        loop = AgentLoop(
            search=search,
            sources=infos,
            gate=gate,
            terms=terms,
            answerer=_Synth,
            min_evidence=min_ev,
            budget=budget
            or Budget(
                max_steps=s.agent_max_steps,
                max_model_calls=s.agent_max_model_calls,
                max_tokens=s.agent_max_tokens,
                max_seconds=s.agent_max_seconds,
            ),
            chat=self.index.chat,
            presence=presence,
            max_evidence=max(k, s.answer_passages),
            partial_answers=s.agent_partial_answers,
            rewrite_margin=s.agent_rewrite_margin,
        )
        run = loop.run(question, seed=seed, decision=decision)
        ans = run.answer
        assert ans is not None
        a = replace(
            ans,
            question=asked,
            notes=(*run.notes, *ans.notes),
            agent={
                **decision,
                "stop_reason": run.stop_reason,
                **run.usage,
                "sources": sorted({k.source for k in run.evidence}),
            },
        )
        ctx = _union(contexts) if contexts else self._assemble([], principal)
        # the answer's passages: all of the final evidence the answerer read (its citations
        # point into it), not only the parts that were answered
        a = replace(a, hits=tuple({h.chunk_id: h for h in (*a.hits, *ctx.passages)}.values()))
        return self._trace_research(
            question, a, ctx, run, principal, filters, t0, trace, trace_key, decision, run.hits
        )

    def _assemble(self, hits: Sequence[Hit], principal: Principal) -> Any:
        from .retrieve.context import assemble
        from .store.search import neighbor_chunks

        count = (
            self.index.chat.count_tokens if self.index.chat else self.index.embedder.count_tokens
        )
        return assemble(
            list(hits),
            count_tokens=count,
            token_budget=self.index.settings.context_tokens,
            window=self.index.settings.context_window,
            max_per_doc=self.index.settings.context_max_per_doc,
            neighbors=lambda spots, w: neighbor_chunks(self.index.db, principal, spots, w),
            reorder=False,
        )

    def _trace_research(
        self,
        question: str,
        answer: Answer,
        ctx: Any,
        run: Any,
        principal: Principal,
        filters: Any,
        t0: float,
        trace: bool | None,
        trace_key: int | None,
        decision: Mapping[str, Any],
        hits: Sequence[Hit],
    ) -> Answer:
        if not self.index.recorder.enabled(trace) or self.index.collection is None:
            return answer
        from .core.trace import add_answer, search_trace
        from .retrieve.search import SearchResult

        res = SearchResult(query=question, mode="agent", hits=tuple(hits))
        record = search_trace(
            res,
            principal,
            question=question,
            collection=self.index.collection.name,
            filters=filters,
            kind="ask",
        )
        count = (
            self.index.chat.count_tokens if self.index.chat else self.index.embedder.count_tokens
        )
        record = add_answer(
            record, ctx, answer, generate_ms=(time.perf_counter() - t0) * 1000, count_tokens=count
        )
        record["generation"]["model"] = self.index.settings.generator
        record["agent"] = (
            run.to_dict()
            if run is not None
            else {"decision": dict(decision), "stop_reason": "one_shot"}
        )
        record["timings_ms"] = {"total": round((time.perf_counter() - t0) * 1000, 3)}
        tid = self.index.recorder.save(principal, record, trace_key)
        return replace(answer, trace_id=tid)


def _union(contexts: Sequence[Any]) -> Any:
    """One context of several (an answer written in parts reads one per part)."""
    if len(contexts) == 1:
        return contexts[0]
    seen: dict[int, Hit] = {}
    expanded: dict[int, tuple[int, ...]] = {}
    for c in contexts:
        for h in c.passages:
            seen.setdefault(h.chunk_id, h)
        expanded.update(c.expanded)
    return replace(
        contexts[-1],
        passages=tuple(seen.values()),
        tokens=sum(c.tokens for c in contexts),
        expanded=expanded,
        dropped=tuple(dict.fromkeys(d for c in contexts for d in c.dropped)),
    )


def _fused(results: Sequence[Sequence[Hit]], k: int, rrf_k: int) -> list[Hit]:
    """The hits of several sources' searches in one list by RRF over their ranks."""
    if len(results) == 1:
        return list(results[0])
    from .retrieve.fusion import reciprocal_rank_fusion

    by_id = {h.chunk_id: h for r in results for h in r}
    ranked = reciprocal_rank_fusion(
        {str(i): [h.chunk_id for h in r] for i, r in enumerate(results)}, k=rrf_k
    )
    return [replace(by_id[cid], rank=i, score=sc) for i, (cid, sc) in enumerate(ranked[:k], 1)]
