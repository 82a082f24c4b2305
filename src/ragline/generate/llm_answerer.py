"""Answers written by a language model, checked before they are returned.

1. **Before generation:** the evidence score of :class:`ExtractiveAnswerer` (how much
   of the question the best passages cover, calibrated on SQuAD 2.0) gates the call:
   below ``min_evidence`` (default 0.35) the answer is the abstention sentence and no
   model is called.
2. **Prompt:** :func:`~ragline.generate.prompt.build_prompt` (delimited, neutralized
   sources; rules to cite and to abstain).
3. **After generation:** the model's own abstention is recognised; links and images are
   removed; markers naming no source are dropped; each claim is scored against its cited
   sources (:mod:`~ragline.generate.verify`); unsupported claims are kept, marked
   (``unsupported="mark"``, the default, appends ``[unsupported]``) or dropped
   (``"drop"``); when nothing supported remains the answer abstains. Citations are
   renumbered 1..m in order of first use.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..analysis.analyzer import get_analyzer
from ..core.errors import ConfigError
from ..core.types import ABSTAIN_SENTENCE, Answer, Hit
from .citations import renumber_markers
from .extractive import ExtractiveAnswerer, _distinct, below
from .llm import AnthropicChat, ChatModel, Document
from .prompt import SYSTEM_PROMPT, StreamSanitizer, build_prompt, neutralize, sanitize_output
from .verify import DEFAULT_SUPPORT_THRESHOLD, ClaimCheck, check_claims, grounded_ratio

UNSUPPORTED_MODES = ("keep", "mark", "drop")
DEFAULT_LLM_MIN_EVIDENCE = 0.35
"""The pre-generation gate for LLMs sits below the extractive answerer's 0.55: a model
can bridge paraphrases the lexical evidence misses and abstains on its own, so the gate
only has to stop calls on context that shares little with the question."""
UNSUPPORTED_MARK = " [unsupported]"
_ABSTAIN_PREFIX = re.compile(r"^\W*the sources do not (?:contain|answer|say|mention)", re.I)


def is_abstention(text: str) -> bool:
    """Whether a model's reply is (or starts with) the abstention sentence."""
    t = " ".join(text.split())
    return ABSTAIN_SENTENCE.lower() in t.lower() or bool(_ABSTAIN_PREFIX.match(t))


class LLMAnswerer:
    """A :class:`~ragline.core.protocols.Generator` backed by a :class:`ChatModel`."""

    def __init__(
        self,
        chat: ChatModel,
        *,
        language: str = "english",
        min_evidence: float = DEFAULT_LLM_MIN_EVIDENCE,
        support_threshold: float = DEFAULT_SUPPORT_THRESHOLD,
        unsupported: str = "mark",
        max_passages: int = 5,
        max_tokens: int = 512,
        native_citations: bool = False,
        analyzer: Any = None,
        embedder: Any = None,
    ) -> None:
        if unsupported not in UNSUPPORTED_MODES:
            raise ConfigError(
                f"unsupported must be one of {', '.join(UNSUPPORTED_MODES)}, got {unsupported!r}"
            )
        self.chat = chat
        self.name = chat.name
        self.min_evidence = min_evidence
        self.support_threshold = support_threshold
        self.unsupported = unsupported
        self.max_passages = max_passages
        self.max_tokens = max_tokens
        self.native_citations = native_citations and isinstance(chat, AnthropicChat)
        self._gate = ExtractiveAnswerer(
            max_passages=max_passages,
            min_evidence=min_evidence,
            language=language,
            analyzer=analyzer,
            embedder=embedder,
        )
        self._analyzer = get_analyzer(language)

    # -- one call ------------------------------------------------------------------
    def _abstain(self, question: str, hits: Sequence[Hit], evidence: float, note: str) -> Answer:
        return Answer.abstention(
            question, list(hits), generator=self.name, evidence=evidence, notes=(note,)
        )

    def _gated(self, question: str, hits: Sequence[Hit]) -> tuple[list[Hit], float, Answer | None]:
        sources = _distinct(hits)[: self.max_passages]
        evidence = self._gate.evidence(question, sources)
        if not sources or evidence < self.min_evidence:
            note = (
                f"abstained before generation: evidence {below(evidence, self.min_evidence)}"
                if sources
                else "abstained before generation: no permitted passage was retrieved"
            )
            return sources, evidence, self._abstain(question, sources, evidence, note)
        return sources, evidence, None

    can_stream = True

    def answer(
        self, question: str, hits: Sequence[Hit], *, history: Sequence[Mapping[str, str]] = ()
    ) -> Answer:
        sources, evidence, early = self._gated(question, hits)
        if early is not None:
            return early
        if self.native_citations:
            assert isinstance(self.chat, AnthropicChat)
            raw = self.chat.complete_with_citations(
                SYSTEM_PROMPT,
                [Document(h.title or h.doc_key, neutralize(h.text)) for h in sources],
                question,
                max_tokens=self.max_tokens,
            )
        else:
            prompt = build_prompt(question, sources, history=history)
            t0 = time.perf_counter()
            raw = self.chat.complete(prompt.messages, max_tokens=self.max_tokens)
            return self.finish(
                question,
                sources,
                raw,
                evidence,
                prompt_tokens=self._prompt_tokens(prompt),
                generation_ms=1000 * (time.perf_counter() - t0),
            )
        return self.finish(question, sources, raw, evidence)

    def _prompt_tokens(self, prompt: Any) -> int:
        """The prompt's size in the generator's tokens (recorded in the trace)."""
        return sum(self.chat.count_tokens(m["content"]) for m in prompt.messages)

    def stream(
        self, question: str, hits: Sequence[Hit], *, history: Sequence[Mapping[str, str]] = ()
    ) -> Iterator[str | Answer]:
        """The model's text as it arrives (already stripped of links), then the checked
        :class:`Answer` (citations resolved at the end)."""
        sources, evidence, early = self._gated(question, hits)
        if early is not None:
            yield early.text
            yield early
            return
        prompt = build_prompt(question, sources, history=history)
        parts: list[str] = []
        clean = StreamSanitizer()
        t0 = time.perf_counter()
        for piece in self.chat.stream(prompt.messages, max_tokens=self.max_tokens):
            parts.append(piece)
            out = clean.feed(piece)
            if out:
                yield out
        tail = clean.flush()
        if tail:
            yield tail
        yield self.finish(
            question,
            sources,
            "".join(parts),
            evidence,
            prompt_tokens=self._prompt_tokens(prompt),
            generation_ms=1000 * (time.perf_counter() - t0),
        )

    # -- checking ------------------------------------------------------------------
    def finish(
        self,
        question: str,
        sources: Sequence[Hit],
        raw: str,
        evidence: float,
        *,
        prompt_tokens: int | None = None,
        generation_ms: float | None = None,
    ) -> Answer:
        """Turn the model's raw reply into a checked :class:`Answer`, with the call's size
        and time (``generation_ms``) when known."""
        answer = self._checked(question, sources, raw, evidence)
        if prompt_tokens:
            answer = replace(answer, prompt_tokens=prompt_tokens)
        if generation_ms is not None:
            answer = replace(
                answer,
                completion_tokens=self.chat.count_tokens(raw),
                generation_ms=round(generation_ms, 1),
            )
        return answer

    def _checked(self, question: str, sources: Sequence[Hit], raw: str, evidence: float) -> Answer:
        text = sanitize_output(raw).strip()
        if not text or is_abstention(text) and len(text) < 2 * len(ABSTAIN_SENTENCE):
            return self._abstain(
                question, sources, evidence, "the model said the sources do not answer"
            )
        checks = check_claims(text, sources, self._analyzer.terms, threshold=self.support_threshold)
        notes: list[str] = []
        invalid = sorted({n for c in checks for n in c.invalid})
        if invalid:
            notes.append(f"removed citation(s) to no provided source: {invalid}")
        kept: list[str] = []
        for c in checks:
            claim = c.text
            if not c.supported and self.unsupported == "drop":
                continue
            if not c.supported and self.unsupported == "mark":
                claim = claim.rstrip() + UNSUPPORTED_MARK
            kept.append(claim)
        dropped = len(checks) - len(kept)
        if dropped:
            notes.append(f"dropped {dropped} unsupported claim(s)")
        if not any(c.supported for c in checks):
            notes.append("no claim is supported by its cited sources")
            if self.unsupported == "drop" or not kept:
                return Answer.abstention(
                    question,
                    list(sources),
                    generator=self.name,
                    evidence=evidence,
                    grounded_ratio=0.0,
                    claims=tuple(checks),
                    notes=tuple(notes),
                )
        versions = _superseded(sources, checks)
        if versions:
            notes.append(versions)
        final, citations = renumber_markers(" ".join(kept), sources)
        return Answer(
            question=question,
            text=final,
            citations=citations,
            abstained=False,
            hits=tuple(sources),
            generator=self.name,
            evidence=evidence,
            grounded_ratio=round(grounded_ratio(checks), 4),
            claims=tuple(checks),
            notes=tuple(notes),
        )


def _superseded(sources: Sequence[Hit], checks: Sequence[ClaimCheck]) -> str:
    """A note when the answer cites an older version of a document that a newer provided
    source supersedes (the prompt tells the model to prefer the newer one)."""
    cited = {n for c in checks for n in c.cited}
    latest: dict[str, int] = {}
    for h in sources:
        v = int((h.metadata or {}).get("version") or 0)
        latest[h.doc_key] = max(latest.get(h.doc_key, 0), v)
    old = [
        sources[n - 1]
        for n in sorted(cited)
        if int((sources[n - 1].metadata or {}).get("version") or 0) < latest[sources[n - 1].doc_key]
    ]
    if not old:
        return ""
    titles = ", ".join(sorted({h.title or h.doc_key for h in old}))
    return f"the sources disagree: the answer cites an older version of {titles}"


def answer_kwargs(settings: Any) -> dict[str, Any]:
    """LLMAnswerer options from :class:`~ragline.core.settings.Settings`."""
    out: dict[str, Any] = {"language": settings.language}
    if settings.min_evidence is not None:
        out["min_evidence"] = settings.min_evidence
    return out
