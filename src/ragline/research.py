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
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from .core.errors import ConfigError, NotFoundError
from .core.requests import AskRequest, principal_of
from .core.types import Answer, Hit, Principal

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

        principal = principal_of(tenant, groups)
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

        p = principal_of(tenant, groups)
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
    def research(self, req: AskRequest) -> Answer:
        """Answer ``req.question`` with the agent loop (``agent`` on, the default here),
        one-shot (off), or one-shot unless its evidence is weak or the question has several
        parts (auto). ``req.sources`` restricts routing to those names (each must be one
        the caller may read); ``req.budget`` is an :class:`~ragline.agent.Budget`
        (default: the settings')."""
        agent = req.agent or "on"
        if agent not in AGENT_MODES:
            raise ConfigError(f"agent must be one of {', '.join(AGENT_MODES)}, got {agent!r}")
        if not req.question or not req.question.strip():
            raise ConfigError("the question is empty; pass the text to ask")
        self.index.check_size(req.question, req.filters)
        question = req.question
        if req.history:  # a follow-up becomes standalone first (a no-op without a model)
            question = self.index.planner(rewrite=True).plan(question, req.history).question
        readable = self._routable(req)
        if agent == "off" and len(readable) <= 1:  # nothing to route between: plain ask
            *_, one = self.index.ask_stream(req, stream=False)
            return one
        if not readable or self.index.collection is None and all(c is None for _, _, c in readable):
            from .core.trace import nothing_ingested

            return nothing_ingested(question)
        run = _Run(self, req, question, readable, agent)
        if agent == "off":  # one-shot, routed: the best source(s) for the question, once
            return run.routed()
        seed = None
        if agent == "auto" and self.index.collection is not None:
            answered, seed = run.one_shot_if_enough()
            if answered is not None:
                return answered
        else:
            run.decision.update(loop=True, reason="agent = on")
        return run.loop(seed)

    def _routable(self, req: AskRequest) -> list[tuple[str, str, Any]]:
        """The sources the caller may read, restricted to ``req.sources`` (each of which
        must be one of them)."""
        readable = self._readable_sources(req.principal)
        if req.sources:
            known = {n for n, _, _ in readable}
            bad = [x for x in req.sources if x not in known]
            if bad:
                raise NotFoundError(
                    f"no source named {', '.join(map(repr, bad))} that you may search; "
                    f"yours: {', '.join(sorted(known)) or '(none)'}"
                )
            readable = [r for r in readable if r[0] in req.sources]
        return readable

    def _assemble(self, hits: Sequence[Hit], principal: Principal) -> Any:
        from .retrieve.context import assemble
        from .store.search import neighbor_chunks

        return assemble(
            list(hits),
            count_tokens=self.index._count_tokens,
            token_budget=self.index.settings.context_tokens,
            window=self.index.settings.context_window,
            max_per_doc=self.index.settings.context_max_per_doc,
            neighbors=lambda spots, w: neighbor_chunks(self.index.db, principal, spots, w),
            reorder=False,
        )


class _Run:
    """One research request: its searches, its answerer, and its trace."""

    def __init__(
        self,
        research: Research,
        req: AskRequest,
        question: str,
        readable: Sequence[tuple[str, str, Any]],
        agent: str,
    ) -> None:
        from .generate import DEFAULT_MIN_EVIDENCE

        self.research, self.index, self.req = research, research.index, req
        self.question, self.asked = question, req.question
        s = self.s = self.index.settings
        self.principal = req.principal
        self.params = self.index.search_params(req.parsed_filters())
        self.mode = req.mode or self.index.default_mode
        self.k = req.k or s.answer_passages
        self.cols = {n: c for n, _, c in readable}
        self.readable = readable
        self.own = s.collection
        self.min_ev = s.min_evidence if s.min_evidence is not None else DEFAULT_MIN_EVIDENCE
        # the one-shot answerer's own judgement (the collection's analysis and embedding):
        # a lexical gate of its own found a third of the multilingual set's inflected and
        # cross-language evidence weak, and looped where one-shot answered
        self.gate = self.index._generator(chat=None)
        self.t0 = time.perf_counter()
        self.contexts: list[Any] = []
        self.decision: dict[str, Any] = {"mode": agent}

    def search(self, query: str, source: str) -> list[Hit]:
        col = self.cols.get(source)
        if col is None:
            raise NotFoundError(f"source {source!r} holds nothing that can be searched")
        if source == self.own:
            searcher, mode = self.index.searcher, self.mode
        else:
            searcher, mode = self.research._source_searcher(source, col), "hybrid"
        return list(
            searcher.search(query, self.principal, k=self.k, mode=mode, params=self.params).hits
        )

    def presence(self, source: str, keys: list[str]) -> float:
        from .store.sources import term_presence

        col = self.cols.get(source)
        if col is None or not keys:
            return 0.0
        found = term_presence(self.index.db, col, self.principal, keys)
        return sum(t in found for t in keys) / len(keys)

    def infos(self) -> list[Any]:
        from .agent import SourceInfo
        from .store.sources import visible_size

        db, p = self.index.db, self.principal
        return [
            SourceInfo(n, d, chunks=0 if c is None else visible_size(db, c, p))
            for n, d, c in self.readable
        ]

    def terms(self) -> Any:
        from .analysis.analyzer import get_analyzer

        return get_analyzer(self.s.language).terms

    def answerer(self, chat: Any) -> Any:
        """An answerer over ``chat`` whose contexts this run keeps (for the trace)."""
        run = self

        class _Synth:
            def __init__(inner, chat: Any) -> None:
                inner.gen = run.index._generator(chat=chat)

            def answer(inner, q: str, hits: list[Hit]) -> Answer:
                ctx = run.research._assemble(hits, run.principal)
                run.contexts.append(ctx)
                return inner.gen.answer(q, list(ctx.passages))

        return _Synth if chat is _CLASS else _Synth(chat)

    def routed(self) -> Answer:
        """One-shot over the best source(s) for the question."""
        from .agent import heuristics as H

        order, scores = H.route(
            self.question, self.infos(), terms=self.terms(), presence=self.presence
        )
        order = order or [self.own]
        hits = _fused([self.search(self.question, src) for src in order], self.k, self.s.rrf_k)
        self.decision.update(
            loop=False,
            route={"sources": order, "scores": scores},
            reason=f"one-shot, routed to {', '.join(order)}",
        )
        a = self.answerer(self.index.chat).answer(self.question, hits)
        agent = {**self.decision, "stop_reason": "one_shot", "steps": len(order), "sources": order}
        a = replace(a, question=self.asked, agent=agent)
        return self.trace(self.asked, a, self.contexts[-1], None, hits)

    def one_shot_if_enough(self) -> tuple[Answer | None, Any]:
        """(the one-shot answer, None) when its evidence suffices and the question asks one
        thing, else (None, the seed the loop starts from)."""
        from .agent import heuristics as H

        hits = self.search(self.question, self.own)
        ev = self.gate.evidence(self.question, hits)
        parts = H.plan(self.question)
        self.decision.update(one_shot_evidence=round(ev, 4), parts=len(parts))
        if ev >= self.min_ev and len(parts) == 1:
            self.decision.update(
                loop=False,
                reason=f"one-shot evidence {ev:.2f} ≥ {self.min_ev:.2f} "
                "and the question asks one thing",
            )
            a = self.answerer(self.index.chat).answer(self.question, hits)
            calls = int(a.prompt_tokens is not None)
            a = replace(
                a,
                agent={
                    **self.decision,
                    "stop_reason": "one_shot",
                    "steps": 1,
                    "model_calls": calls,
                },
            )
            return self.trace(self.question, a, self.contexts[-1], None, hits), None
        why = [f"one-shot evidence {ev:.2f} < {self.min_ev:.2f}"] if ev < self.min_ev else []
        if len(parts) > 1:
            why.append(f"the question has {len(parts)} parts")
        self.decision.update(loop=True, reason="; ".join(why))
        return None, (self.question, self.own, hits)

    def loop(self, seed: Any) -> Answer:
        """The agent loop: plan, search, judge, rewrite, switch source, within budgets."""
        from .agent import AgentLoop, Budget

        s = self.s
        loop = AgentLoop(
            search=self.search,
            sources=self.infos(),
            gate=self.gate,
            terms=self.terms(),
            answerer=self.answerer(_CLASS),
            min_evidence=self.min_ev,
            budget=self.req.budget
            or Budget(
                max_steps=s.agent_max_steps,
                max_model_calls=s.agent_max_model_calls,
                max_tokens=s.agent_max_tokens,
                max_seconds=s.agent_max_seconds,
            ),
            chat=self.index.chat,
            presence=self.presence,
            max_evidence=max(self.k, s.answer_passages),
            partial_answers=s.agent_partial_answers,
            rewrite_margin=s.agent_rewrite_margin,
        )
        run = loop.run(self.question, seed=seed, decision=self.decision)
        ans = run.answer
        assert ans is not None
        a = replace(
            ans,
            question=self.asked,
            notes=(*run.notes, *ans.notes),
            agent={
                **self.decision,
                "stop_reason": run.stop_reason,
                **run.usage,
                "sources": sorted({k.source for k in run.evidence}),
            },
        )
        ctx = (
            _union(self.contexts) if self.contexts else self.research._assemble([], self.principal)
        )
        # the answer's passages: all of the final evidence the answerer read (its citations
        # point into it), not only the parts that were answered
        a = replace(a, hits=tuple({h.chunk_id: h for h in (*a.hits, *ctx.passages)}.values()))
        return self.trace(self.question, a, ctx, run, run.hits)

    def trace(
        self, question: str, answer: Answer, ctx: Any, run: Any, hits: Sequence[Hit]
    ) -> Answer:
        """The answer, with the id of its stored trace when traces are on."""
        index = self.index
        if not index.recorder.enabled(self.req.trace) or index.collection is None:
            return answer
        from .core.trace import add_answer, search_trace
        from .retrieve.search import SearchResult

        res = SearchResult(query=question, mode="agent", hits=tuple(hits))
        record = search_trace(
            res,
            self.principal,
            question=question,
            collection=index.collection.name,
            filters=self.req.filters,
            kind="ask",
        )
        record = add_answer(
            record,
            ctx,
            answer,
            generate_ms=(time.perf_counter() - self.t0) * 1000,
            count_tokens=index._count_tokens,
        )
        record["generation"]["model"] = self.s.generator
        record["agent"] = (
            run.to_dict()
            if run is not None
            else {"decision": dict(self.decision), "stop_reason": "one_shot"}
        )
        record["timings_ms"] = {"total": round((time.perf_counter() - self.t0) * 1000, 3)}
        return replace(
            answer, trace_id=index.recorder.save(self.principal, record, self.req.trace_key)
        )


_CLASS: Any = object()
"""``_Run.answerer(_CLASS)``: the answerer class itself (the loop builds one per model)."""


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
