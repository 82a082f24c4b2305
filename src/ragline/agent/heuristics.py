"""The agent's steps without a language model: plan, judge, rewrite, route.

* **plan** — decomposition by the question's own structure: several questions in one
  ("…? And …?"), clauses joined by "and"/"also"/";" each with its own question word, and
  "compare / difference between X and Y" into one question per side; else one question;
* **judge** — the evidence gate of the extractive answerer (how much of the question one
  spot of the passages covers, :meth:`~ragline.generate.ExtractiveAnswerer.evidence`)
  plus the coverage of the question's key terms by all the evidence kept so far; the
  gaps are the key terms no kept passage holds;
* **rewrite** — relevance feedback: the missing key terms, joined by the bridge terms of
  the best kept passages (their rarer words, names first, not in the question), so the
  next search looks for what the first hop did not find, next to what it did;
* **route** — source descriptions and statistics: the share of the question's terms in a
  source's name and description, plus the share of them that occur in its documents the
  caller may read.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.types import Hit

Terms = Callable[[str], list[str]]

_QWORDS = (
    r"what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|"
    r"could|should|would|will|has|have|had|name|list|give|tell"
)
_SPLIT = re.compile(rf"\s*(?:;|,?\s+and\s+(?:also\s+)?|,?\s+also\s+)(?=(?:{_QWORDS})\b)", re.I)
_COMPARE = re.compile(
    r"^(?:compare|what\s+is\s+the\s+difference\s+between|how\s+do(?:es)?)\s+(.+?)\s+"
    r"(?:and|with|versus|vs\.?)\s+(.+?)(?:\s+(?:differ|compare))?\W*$",
    re.I,
)
_NAME = re.compile(r"\b[A-Z][\w'’-]*(?:\s+(?:of|de|la|von|van|the)?\s*[A-Z][\w'’-]*)*")
MAX_SUBQUESTIONS = 4


def plan(question: str) -> list[str]:
    """Sub-questions of ``question`` by its structure (itself when it asks one thing)."""
    q = " ".join(question.split())
    parts = [p.strip() for p in re.split(r"(?<=\?)\s+", q) if p.strip()]
    out: list[str] = []
    for p in parts:
        m = _COMPARE.match(p)
        if m:
            a, b = m.group(1).strip(), m.group(2).strip()
            out += [f"What is {a}?", f"What is {b}?"]
            continue
        pieces = [s.strip(" ,;") for s in _SPLIT.split(p) if s.strip(" ,;")]
        out += pieces if all(len(s.split()) >= 3 for s in pieces) else [p]
    out = [s if s.endswith("?") or not q.endswith("?") else s + "?" for s in out]
    out = list(dict.fromkeys(out))[:MAX_SUBQUESTIONS]
    return out or [q]


def key_terms(question: str, terms: Terms) -> list[str]:
    """The question's distinct content terms (the analyzer drops stop words)."""
    return list(dict.fromkeys(terms(question)))


def coverage(keys: Sequence[str], hits: Sequence[Hit], terms: Terms) -> tuple[float, list[str]]:
    """Share of ``keys`` that occur in some hit (title and headings included), and the
    keys that occur in none."""
    if not keys:
        return 1.0, []
    seen: set[str] = set()
    for h in hits:
        seen.update(terms(" ".join((h.title, *h.heading_path, h.text))))
    missing = [k for k in keys if k not in seen]
    return 1 - len(missing) / len(keys), missing


@dataclass(frozen=True)
class Verdict:
    """The judge's decision on the evidence for one (sub-)question."""

    enough: bool
    evidence: float
    coverage: float
    missing: tuple[str, ...] = ()
    reason: str = ""
    by: str = "heuristic"

    def to_dict(self) -> dict[str, Any]:
        return {
            "enough": self.enough,
            "evidence": round(self.evidence, 4),
            "coverage": round(self.coverage, 4),
            "missing": list(self.missing),
            "reason": self.reason,
            "by": self.by,
        }


def judge(
    question: str,
    hits: Sequence[Hit],
    *,
    gate: Any,
    terms: Terms,
    min_evidence: float,
    min_coverage: float = 0.85,
) -> Verdict:
    """Enough when one spot answers (the gate's evidence reaches ``min_evidence``), or
    when the kept passages together hold ``min_coverage`` of the key terms and the gate
    sees at least part of the question answered (a question answered by two passages
    scores about half on the gate)."""
    if not hits:
        return Verdict(False, 0.0, 0.0, tuple(key_terms(question, terms)), "no evidence yet")
    ev = float(gate.evidence(question, list(hits)))
    cov, missing = coverage(key_terms(question, terms), hits, terms)
    if ev >= min_evidence:
        return Verdict(True, ev, cov, tuple(missing), f"evidence {ev:.2f} ≥ {min_evidence:.2f}")
    if cov >= min_coverage and ev >= min_evidence / 2:
        return Verdict(
            True, ev, cov, tuple(missing), f"passages together cover {cov:.0%} of the key terms"
        )
    why = f"evidence {ev:.2f} < {min_evidence:.2f}"
    if missing:
        why += "; missing: " + ", ".join(missing[:8])
    return Verdict(False, ev, cov, tuple(missing), why)


def _words_of(text: str) -> list[str]:
    return re.findall(r"[\w'’-]+", text)


def rewrite(
    question: str,
    verdict: Verdict,
    kept: Sequence[Hit],
    tried: Sequence[str],
    *,
    terms: Terms,
    df: Mapping[str, int] | None = None,
    n_feedback: int = 4,
) -> tuple[str | None, str]:
    """A new query for ``question`` from what was learned, never one of ``tried``
    (compared by their terms); (None, why) when no new query can be made.

    Candidates, in order: the missing key terms with the bridge terms of the best kept
    passages; the question with those bridge terms; the missing terms alone; the
    question's rarest terms."""
    tried_keys = {frozenset(terms(t)) for t in tried}
    qkeys = key_terms(question, terms)
    qset = set(qkeys)
    bridge = _feedback_terms(question, kept, terms, qset, n_feedback)
    missing = [w for w in _words_of(question) if set(terms(w)) & set(verdict.missing)]
    missing = list(dict.fromkeys(missing))
    cands: list[tuple[str, str]] = []
    if missing and bridge:
        cands.append((" ".join([*missing, *bridge]), "missing terms + feedback from kept passages"))
    if bridge:
        cands.append((f"{question} {' '.join(bridge)}", "question + feedback from kept passages"))
    if missing:
        cands.append((" ".join(missing), "the missing terms alone"))
    if len(missing) >= 4:  # widen: search for each half of what is missing
        half = len(missing) // 2
        cands.append((" ".join(missing[:half]), "the first half of the missing terms"))
        cands.append((" ".join(missing[half:]), "the second half of the missing terms"))
    names = [w for w in dict.fromkeys(_NAME.findall(question)[1:]) if terms(w)]
    if names:
        cands.append((" ".join(names), "the names in the question"))
    if df:
        rare = sorted(qkeys, key=lambda t: df.get(t, 0))[: max(2, len(qkeys) // 2)]
        words = [w for w in _words_of(question) if set(terms(w)) & set(rare)]
        if words:
            cands.append((" ".join(dict.fromkeys(words)), "the question's rarest terms"))
    for q, why in cands:
        key = frozenset(terms(q))
        if key and key not in tried_keys:
            return q, why
    return None, "every rewrite would repeat a query already tried"


def _feedback_terms(
    question: str, kept: Sequence[Hit], terms: Terms, qset: set[str], n: int
) -> list[str]:
    """Words of the best kept passages worth searching next (names first, then words
    frequent in the kept passages but rare across them), none of the question's."""
    if not kept:
        return []
    top = list(kept[:3])
    counts: dict[str, float] = {}
    docs_with: Counter[str] = Counter()
    surface: dict[str, str] = {}
    for rank, h in enumerate(top):
        seen: set[str] = set()
        for w in _words_of(h.text):
            ts = terms(w)
            if not ts or ts[0] in qset or len(w) < 3 or w.isdigit():
                continue
            t = ts[0]
            counts[t] = counts.get(t, 0.0) + 1.0 / (rank + 1)
            seen.add(t)
            surface.setdefault(t, w)
        docs_with.update(seen)
    names: list[str] = []
    for m in _NAME.finditer(top[0].text):
        ts = [t for t in terms(m.group(0)) if t not in qset]
        if ts and m.start() > 0 and m.group(0) not in names:
            names.append(m.group(0))
    scored = sorted(counts, key=lambda t: -counts[t] * math.log(1 + len(top) / docs_with[t]))
    out = [*names[: max(1, n // 2)]]
    for t in scored:
        if len(out) >= n:
            break
        w = surface[t]
        if not any(set(terms(w)) <= set(terms(o)) for o in out):
            out.append(w)
    return out[:n]


@dataclass(frozen=True)
class SourceInfo:
    """A source the caller may search, as the router sees it."""

    name: str
    description: str = ""
    documents: int = 0
    chunks: int = 0
    stats: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "documents": self.documents,
            "chunks": self.chunks,
        }


def route(
    question: str,
    sources: Sequence[SourceInfo],
    *,
    terms: Terms,
    presence: Callable[[str, list[str]], float] | None = None,
    exclude: Sequence[str] = (),
    max_sources: int = 2,
) -> tuple[list[str], dict[str, float]]:
    """The sources to search for ``question``, best first, with each one's score:
    0.5 × the share of the question's terms in the source's name and description
    + 0.5 × the share of them present in its documents the caller may read
    (``presence``); sources without documents score 0. Sources scoring under half the
    best are left out."""
    keys = key_terms(question, terms)
    scores: dict[str, float] = {}
    for s in sources:
        if s.name in exclude:
            continue
        if s.chunks == 0 and s.documents == 0 and s.stats.get("known", True):
            scores[s.name] = 0.0
            continue
        desc = set(terms(f"{s.name.replace('-', ' ').replace('_', ' ')} {s.description}"))
        d = sum(k in desc for k in keys) / len(keys) if keys else 0.0
        p = presence(s.name, keys) if presence and keys else 0.0
        scores[s.name] = round(0.5 * d + 0.5 * p, 4)
    if not scores:
        return [], scores
    best = max(scores.values())
    picked = sorted(
        (n for n, v in scores.items() if v > 0 and v >= best / 2), key=lambda n: -scores[n]
    )
    if not picked:  # nothing stands out: the largest source first
        picked = sorted(scores, key=lambda n: -next(s.chunks for s in sources if s.name == n))[:1]
    return picked[:max_sources], scores
