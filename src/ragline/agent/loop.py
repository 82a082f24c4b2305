"""The agent loop: plan → search → judge → rewrite / switch source → … → synthesize.

One run keeps, per sub-question, the evidence it found with its provenance (source,
step, query), the queries and sources it tried (a query is never searched twice in one
source: queries compare by their analyzed terms), and the judge's last verdict. It stops
when every sub-question has enough evidence, when nothing new is left to try, or at a
budget (:mod:`ragline.agent.budget`); the stop reason, each step and each model call are
recorded for the trace. The answer is written from the evidence of all steps by the
configured answerer (its citation and grounding checks unchanged).

The loop is pure logic over injected callables (``search``, the answerers, the gate), so
the budgets and the bad-input behaviour are tested without a database.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.errors import RaglineError
from ..core.types import Answer, Hit
from . import heuristics as H
from .budget import Budget, BudgetExhausted, Meter, MeteredChat
from .llm_steps import LLMSteps
from .synthesis import merge_answers

Search = Callable[[str, str], Sequence[Hit]]
"""``search(query, source)`` → the caller's permitted hits of ``source``, best first."""


@dataclass(frozen=True)
class Kept:
    """One passage of evidence and where it came from."""

    hit: Hit
    source: str
    step: int
    query: str
    sub_question: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.hit.chunk_id,
            "document_id": self.hit.document_id,
            "doc_key": self.hit.doc_key,
            "source": self.source,
            "step": self.step,
            "query": self.query,
            "sub_question": self.sub_question,
        }


@dataclass(frozen=True)
class AgentRun:
    """What a run did and found; ``answer`` is the synthesized (checked) answer."""

    question: str
    sub_questions: tuple[str, ...]
    steps: tuple[Mapping[str, Any], ...]
    evidence: tuple[Kept, ...]
    stop_reason: str
    notes: tuple[str, ...]
    usage: Mapping[str, Any]
    budget: Budget
    answer: Answer | None = None
    decision: Mapping[str, Any] = field(default_factory=dict)

    @property
    def hits(self) -> list[Hit]:
        return [k.hit for k in self.evidence]

    def to_dict(self) -> dict[str, Any]:
        docs = sorted(
            {int(k["document_id"]) for s in self.steps for k in s.get("kept", ())}
            | {int(k["document_id"]) for s in self.steps for k in s.get("dropped", ())}
            | {k.hit.document_id for k in self.evidence}
        )
        return {
            "question": self.question,
            "decision": dict(self.decision),
            "sub_questions": list(self.sub_questions),
            "stop_reason": self.stop_reason,
            "notes": list(self.notes),
            "budget": self.budget.to_dict(),
            "usage": dict(self.usage),
            "steps": [dict(s) for s in self.steps],
            "evidence": [k.to_dict() for k in self.evidence],
            "sources": sorted({k.source for k in self.evidence}),
            "documents": docs,
        }


@dataclass
class _Need:
    """Mutable state of one sub-question during a run."""

    index: int
    question: str
    query: str
    sources: list[str]
    kept: list[Kept] = field(default_factory=list)
    tried: list[tuple[str, str]] = field(default_factory=list)
    verdict: H.Verdict | None = None
    done: bool = False
    exhausted: str | None = None
    steps: int = 0
    missing_text: str = ""

    def tried_keys(self, terms: H.Terms) -> set[tuple[frozenset[str], str]]:
        return {(frozenset(terms(q)), s) for q, s in self.tried}


_STOP_TEXT = {
    "enough": "the evidence was judged sufficient",
    "steps": "the step budget ({max_steps}) was spent",
    "model_calls": "the model-call budget ({max_model_calls}) was spent",
    "tokens": "the token budget ({max_tokens}) was spent",
    "time": "the time budget ({max_seconds} s) was spent",
    "exhausted": "nothing new was left to search",
}


class AgentLoop:
    """One configured loop; :meth:`run` is reentrant (all state is per run)."""

    def __init__(
        self,
        *,
        search: Search,
        sources: Sequence[H.SourceInfo],
        gate: Any,
        terms: H.Terms,
        answerer: Callable[[Any], Any],
        min_evidence: float,
        budget: Budget = Budget(),
        chat: Any = None,
        presence: Callable[[str, list[str]], float] | None = None,
        keep_per_step: int = 3,
        max_evidence: int = 5,
        partial_answers: bool = False,
        rewrite_margin: float = 0.1,
    ) -> None:
        """``partial_answers``: a question in parts whose whole answer abstains is answered
        part by part, the parts the evidence does not answer named in the notes (False:
        only when every part is answered, else the abstention)."""
        self.search = search
        self.sources = list(sources)
        self.gate = gate
        self.terms = terms
        self.answerer = answerer
        self.min_evidence = min_evidence
        self.budget = budget
        self.chat = chat
        self.presence = presence
        self.keep_per_step = keep_per_step
        self.max_evidence = max_evidence
        self.partial_answers = partial_answers
        self.rewrite_margin = rewrite_margin

    # -- the run --------------------------------------------------------------------
    def run(
        self,
        question: str,
        *,
        seed: tuple[str, str, Sequence[Hit]] | None = None,
        decision: Mapping[str, Any] | None = None,
    ) -> AgentRun:
        """Research ``question``; ``seed`` = (query, source, hits) of a search already
        made (agent=auto's one-shot), counted as the first step."""
        meter = Meter(self.budget)
        steps: list[dict[str, Any]] = []
        notes: list[str] = []
        calls: list[dict[str, Any]] = []
        no_model = self.budget.max_model_calls == 0 or self.budget.max_tokens == 0
        chat = MeteredChat(self.chat, meter) if self.chat is not None and not no_model else None
        llm = LLMSteps(chat, calls.append) if chat is not None else None

        def llm_step(name: str, fn: Callable[[], Any]) -> Any:
            if llm is None:
                return None
            before = len(calls)
            out = fn()
            for c in calls[before:]:
                if not c["ok"] and "budget" not in c:
                    notes.append(f"model output unusable for {name} ({c['error']})")
            if out is None and calls[before:]:
                notes.append(f"{name}: used the no-LLM step instead")
            return out

        # plan
        t = time.perf_counter()
        subqs = llm_step("plan", lambda: llm.plan(question)) if llm else None
        by = "model" if subqs else "heuristic"
        if not subqs:
            subqs = H.plan(question)
        steps.append(
            {
                "kind": "plan",
                "by": by,
                "sub_questions": list(subqs),
                "ms": _ms(t),
                "model_calls": _drain(calls),
            }
        )
        needs = [
            _Need(i, q, q, self._route(q, llm_step, llm, steps, calls)) for i, q in enumerate(subqs)
        ]
        if seed is not None and needs:
            q, src, hits = seed
            self._absorb(
                needs[0], q, src, list(hits), meter, steps, llm, llm_step, calls, seeded=True
            )

        stop: str | None = None
        while stop is None:
            active = [n for n in needs if not n.done and n.exhausted is None]
            if not active:
                stop = "enough" if all(n.done for n in needs) else "exhausted"
                break
            if meter.refused:  # a model call was refused: the model budget is spent
                stop = meter.refused[0]
                break
            if meter.out_of_time() and meter.steps > 0:  # the first search always runs
                stop = "time"
                break
            if meter.out_of_steps():
                stop = "steps"
                break
            need = min(active, key=lambda n: (n.steps, n.index))
            if not need.sources:
                need.exhausted = "no source left to search"
                continue
            source = need.sources[0]
            if (frozenset(self.terms(need.query)), source) in need.tried_keys(self.terms):
                if not self._next_query(need, meter, steps, llm, llm_step, calls):
                    continue
                source = need.sources[0]
            t = time.perf_counter()
            try:
                hits = list(self.search(need.query, source))
            except RaglineError as exc:
                meter.steps += 1
                need.steps += 1
                need.tried.append((need.query, source))
                notes.append(f"source {source!r} could not be searched: {exc}")
                steps.append(
                    {
                        "kind": "search",
                        "sub_question": need.index,
                        "query": need.query,
                        "source": source,
                        "error": str(exc),
                        "ms": _ms(t),
                    }
                )
                for n in needs:  # an unreadable source is dropped for the whole run
                    n.sources = [s for s in n.sources if s != source]
                continue
            self._absorb(need, need.query, source, hits, meter, steps, llm, llm_step, calls, t=t)
            if need.done or meter.out_of_steps() or meter.out_of_time():
                continue
            self._next_move(need, meter, steps, llm, llm_step, calls)

        if stop != "enough":
            missing = sorted(
                {m for n in needs if not n.done for m in (n.verdict.missing if n.verdict else ())}
            )
            text = _STOP_TEXT.get(stop, stop).format(**self.budget.to_dict())
            note = f"agent stopped after {meter.steps} step(s): {text}"
            if missing:
                note += "; still missing: " + ", ".join(missing[:10])
            notes.insert(0, note)
        if seed is not None and not any(n.done for n in needs):
            # the loop found nothing the judge calls enough: answer from what one-shot read
            # (all of it: its fourth and fifth passages, not the loop's guesses)
            q, src, hits = seed
            evidence = [Kept(h, src, 1, q, 0) for h in list(hits)[: self.max_evidence]]
            notes.append("no step found enough evidence: the answer reads the one-shot passages")
        else:
            evidence = _interleave(needs, self.max_evidence, seeded=seed is not None)
        answer = self._synthesize(question, needs, evidence, chat, meter, steps, notes, calls)
        return AgentRun(
            question=question,
            sub_questions=tuple(subqs),
            steps=tuple(steps),
            evidence=tuple(evidence),
            stop_reason=stop,
            notes=tuple(dict.fromkeys(notes)),
            usage=meter.usage(),
            budget=self.budget,
            answer=answer,
            decision=dict(decision or {}),
        )

    # -- the steps --------------------------------------------------------------------
    def _route(self, q: str, llm_step: Any, llm: Any, steps: list, calls: list) -> list[str]:
        names = [s.name for s in self.sources]
        if len(names) <= 1:
            return names
        t = time.perf_counter()
        picked = llm_step("route", lambda: llm.route(q, self.sources)) if llm else None
        order, scores = H.route(
            q, self.sources, terms=self.terms, presence=self.presence, max_sources=len(names)
        )
        by = "model" if picked else "heuristic"
        first = picked or order[:2]
        rest = [n for n in order if n not in first]  # a switch may still reach these
        steps.append(
            {
                "kind": "route",
                "question": q,
                "by": by,
                "sources": first,
                "scores": scores,
                "ms": _ms(t),
                "model_calls": _drain(calls),
            }
        )
        return [*first, *rest]

    def _absorb(
        self,
        need: _Need,
        query: str,
        source: str,
        hits: list[Hit],
        meter: Meter,
        steps: list,
        llm: Any,
        llm_step: Any,
        calls: list,
        *,
        seeded: bool = False,
        t: float | None = None,
    ) -> None:
        t = t or time.perf_counter()
        meter.steps += 1
        need.steps += 1
        need.tried.append((query, source))
        have = {k.hit.chunk_id for n in [need] for k in n.kept}
        keys = set(H.key_terms(f"{need.question} {query}", self.terms))
        fresh = [h for h in hits if h.chunk_id not in have]

        def relevance(h: Hit) -> float:
            found = set(self.terms(" ".join((h.title, *h.heading_path, h.text))))
            return len(keys & found) / max(len(keys), 1)

        rel = {h.chunk_id: relevance(h) for h in fresh}
        # the search's own order (hybrid: it sees paraphrases), passages sharing no key term
        # out; except the seed, the one-shot search of the question itself: what one-shot
        # would have answered from is kept as ranked (an inflected or cross-language match
        # shares no key term, and dropping it lost evidence one-shot had)
        kept = [h for h in fresh if seeded or rel[h.chunk_id] > 0][: self.keep_per_step]
        kept_ids = {h.chunk_id for h in kept}
        dropped = [h for h in hits if h.chunk_id not in kept_ids]
        step_no = meter.steps
        need.kept += [Kept(h, source, step_no, query, need.index) for h in kept]
        verdict = H.judge(
            need.question,
            [k.hit for k in need.kept],
            gate=self.gate,
            terms=self.terms,
            min_evidence=self.min_evidence,
        )
        if llm is not None and not verdict.enough and need.kept:
            said = llm_step("judge", lambda: llm.judge(need.question, [k.hit for k in need.kept]))
            if said is not None:
                enough, missing = said
                need.missing_text = missing
                if enough and verdict.evidence >= self.min_evidence / 2:
                    verdict = replace(
                        verdict,
                        enough=True,
                        by="model",
                        reason=f"the model judged it enough ({verdict.reason})",
                    )
        need.verdict = verdict
        need.done = verdict.enough
        steps.append(
            {
                "kind": "search",
                "sub_question": need.index,
                "query": query,
                "source": source,
                "seeded": seeded,
                "kept": [
                    Kept(h, source, step_no, query, need.index).to_dict()
                    | {"relevance": round(rel[h.chunk_id], 3)}
                    for h in kept
                ],
                "dropped": [
                    {
                        "chunk_id": h.chunk_id,
                        "document_id": h.document_id,
                        "doc_key": h.doc_key,
                        "why": "already kept"
                        if h.chunk_id in have
                        else (
                            "shares no key term"
                            if rel.get(h.chunk_id, 0) == 0
                            else "lower relevance"
                        ),
                    }
                    for h in dropped
                ],
                "verdict": verdict.to_dict(),
                "ms": _ms(t),
                "model_calls": _drain(calls),
                "usage": meter.usage(),
            }
        )

    def _next_move(
        self, need: _Need, meter: Meter, steps: list, llm: Any, llm_step: Any, calls: list
    ) -> None:
        """After a weak search: switch to the next source when this one found (almost)
        nothing, else rewrite the query."""
        v = need.verdict
        weak = v is None or v.evidence < self.min_evidence / 2
        tried_here = {s for _, s in need.tried}
        if weak and len(need.sources) > 1 and need.sources[1] not in tried_here:
            old = need.sources.pop(0)
            need.sources.append(old)
            steps.append(
                {
                    "kind": "switch",
                    "sub_question": need.index,
                    "from": old,
                    "to": need.sources[0],
                    "why": v.reason if v else "no evidence",
                }
            )
            return
        self._next_query(need, meter, steps, llm, llm_step, calls)

    def _next_query(
        self, need: _Need, meter: Meter, steps: list, llm: Any, llm_step: Any, calls: list
    ) -> bool:
        t = time.perf_counter()
        tried_here = [q for q, s in need.tried if s == need.sources[0]]
        all_tried = [q for q, _ in need.tried]
        q = None
        by = "heuristic"
        if llm is not None:
            q = llm_step(
                "rewrite", lambda: llm.rewrite(need.question, need.missing_text, all_tried)
            )
            if q is not None and frozenset(self.terms(q)) in {
                frozenset(self.terms(x)) for x in tried_here
            }:
                q = None  # same terms as a query tried: the model looped
                steps.append({"kind": "note", "text": "the model's rewrite repeats a query tried"})
            by = "model" if q else by
        why = "written by the model"
        if q is None:
            q, why = H.rewrite(
                need.question,
                need.verdict or H.Verdict(False, 0, 0),
                [k.hit for k in need.kept],
                tried_here,
                terms=self.terms,
            )
        if q is None:  # this source is spent for the need: the next one, if any
            tried_srcs = {s for _, s in need.tried}
            left = [s for s in need.sources if s not in tried_srcs]
            if left:
                need.sources = [*left, *[s for s in need.sources if s not in left]]
                need.query = need.question
                steps.append(
                    {
                        "kind": "switch",
                        "sub_question": need.index,
                        "to": left[0],
                        "why": why,
                        "ms": _ms(t),
                    }
                )
                return True
            need.exhausted = why
            steps.append(
                {
                    "kind": "rewrite",
                    "sub_question": need.index,
                    "query": None,
                    "why": why,
                    "ms": _ms(t),
                    "model_calls": _drain(calls),
                }
            )
            return False
        need.query = q
        steps.append(
            {
                "kind": "rewrite",
                "sub_question": need.index,
                "query": q,
                "by": by,
                "why": why,
                "ms": _ms(t),
                "model_calls": _drain(calls),
            }
        )
        return True

    def _synthesize(
        self,
        question: str,
        needs: list[_Need],
        evidence: list[Kept],
        chat: Any,
        meter: Meter,
        steps: list,
        notes: list[str],
        calls: list,
    ) -> Answer:
        t = time.perf_counter()
        hits = [k.hit for k in evidence]
        how = "whole question"
        answer = self._answer(question, hits, chat, notes)

        def covers_every_part(a: Answer) -> bool:  # each answered part has a cited passage
            cited = {c.chunk_id for c in a.citations}
            return all(cited & {k.hit.chunk_id for k in n.kept} for n in needs if n.done)

        if (
            (answer.abstained or not covers_every_part(answer))
            and len(needs) > 1
            and any(n.done for n in needs)
        ):
            # one answer per part with enough evidence; the others are said to be missing
            final = [k.hit for k in evidence]

            def share(n: _Need) -> list[Hit]:  # a part's share of the final evidence
                mine = {k.hit.chunk_id for k in n.kept}
                return [h for h in final if h.chunk_id in mine]

            parts = [
                (n, self._answer(n.question, share(n), chat, notes))
                for n in needs
                if n.done and share(n)
            ]
            answered = [(n, p) for n, p in parts if not p.abstained]
            if not self.partial_answers and len(answered) < len(needs):
                answered = []
            if answered:
                answer = merge_answers(question, [p for _, p in answered])
                how = "one part per sub-question"
                got = {n.index for n, _ in answered}
                for n in needs:
                    if n.index not in got:
                        notes.append(f"not answered: {n.question!r} (the sources found do not say)")
        searched_again = any(n.steps > 1 for n in needs)
        bar = self.min_evidence + self.rewrite_margin
        if searched_again and not answer.abstained and answer.evidence < bar:
            # every further search is another chance of a passage that merely resembles
            # the question: evidence found after rewriting must clear a higher bar
            notes.append(
                f"evidence {answer.evidence:.2f} found after rewriting is below "
                f"{bar:.2f} (the threshold plus the rewrite margin)"
            )
            answer = Answer.abstention(
                question, answer.hits, generator=answer.generator, evidence=answer.evidence
            )
            how += ", abstained: below the rewrite margin"
        steps.append(
            {
                "kind": "synthesize",
                "how": how,
                "abstained": answer.abstained,
                "evidence": round(answer.evidence, 4),
                "passages": len(hits),
                "ms": _ms(t),
                "usage": meter.usage(),
            }
        )
        return answer

    def _answer(self, question: str, hits: list[Hit], chat: Any, notes: list[str]) -> Answer:
        try:
            return self.answerer(chat).answer(question, hits)
        except BudgetExhausted as exc:
            notes.append(f"the answer was written without the model: {exc}")
            return self.answerer(None).answer(question, hits)


def _drain(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = list(calls)
    calls.clear()
    return out


def _ms(t: float) -> float:
    return round((time.perf_counter() - t) * 1000, 2)


def _interleave(needs: Sequence[_Need], limit: int, seeded: bool = False) -> list[Kept]:
    """The final evidence: round robin over (sub-question, step) groups, best first in
    each, so every hop and every part reaches the answerer. A seed (the one-shot search
    ``agent = auto`` started from) leads whole: the loop adds to what one-shot would have
    read instead of pushing its second and third passage out behind later steps' best."""
    groups: list[list[Kept]] = []
    for n in needs:
        by_step: dict[int, list[Kept]] = {}
        for k in n.kept:
            by_step.setdefault(k.step, []).append(k)
        groups += list(by_step.values())
    out: list[Kept] = []
    seen: set[int] = set()
    if seeded and groups:
        for k in groups.pop(0)[:limit]:
            if k.hit.chunk_id not in seen:
                out.append(k)
                seen.add(k.hit.chunk_id)
    i = 0
    while len(out) < limit and any(i < len(g) for g in groups):
        for g in groups:
            if i < len(g) and g[i].hit.chunk_id not in seen and len(out) < limit:
                out.append(g[i])
                seen.add(g[i].hit.chunk_id)
        i += 1
    return out
