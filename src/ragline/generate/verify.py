"""Checking a generated answer against the sources it cites.

The answer is split into claims (sentences). Each claim's citation markers must name
sources that were provided; its support is the share of its content terms (stemmed,
stop words removed, numbers and codes kept exact) found in the text of the sources it
cites. A claim whose numbers or codes are missing from its sources is unsupported
whatever its word overlap, since a wrong number is the costliest wrong claim. The
grounded ratio — supported claims / claims — is the RAGAS-style faithfulness with this
lexical scorer standing in for the judge model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..analysis.analyzer import split_sentences
from ..core.types import ABSTAIN_SENTENCE, Hit
from .citations import MARKER, parse_markers, strip_markers

DEFAULT_SUPPORT_THRESHOLD = 0.6
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_FILLER = re.compile(
    r"^(?:note|however|in summary|to summarize|sources? (?:disagree|differ|conflict))\b", re.I
)


@dataclass(frozen=True)
class ClaimCheck:
    """One sentence of an answer and what the verifier found."""

    text: str
    cited: tuple[int, ...]  # source positions (1-based) the claim cites, valid ones only
    invalid: tuple[int, ...]  # markers naming no provided source
    support: float  # share of the claim's content terms found in its cited sources
    supported: bool
    missing_numbers: tuple[str, ...] = ()


def split_claims(answer: str) -> list[str]:
    """The sentences of ``answer``; a citation marker after a full stop stays with the
    sentence before it (``… months. [2] Next …``)."""
    out: list[str] = []
    for s in split_sentences(answer):
        s = s.strip()
        if not s:
            continue
        if out and MARKER.fullmatch(s.strip(" .")):
            out[-1] = f"{out[-1]} {s}"
            continue
        lead = re.match(r"^((?:\s*" + MARKER.pattern + r")+)\s*(.*)$", s)
        if out and lead:  # "[2] Next sentence" -> the marker closes the previous claim
            out[-1] = f"{out[-1]} {lead.group(1).strip()}"
            s = lead.group(lead.lastindex or 0).strip()
            if not s:
                continue
        out.append(s)
    return out


def check_claims(
    answer: str,
    sources: Sequence[Hit],
    terms: Callable[[str], list[str]],
    *,
    threshold: float = DEFAULT_SUPPORT_THRESHOLD,
) -> list[ClaimCheck]:
    """Score every claim of ``answer`` against the sources it cites (by 1-based position)."""
    source_terms = [set(terms(h.text + " " + h.title)) for h in sources]
    source_text = [" ".join(h.text.split()) for h in sources]
    checks: list[ClaimCheck] = []
    for claim in split_claims(answer):
        numbers = parse_markers(claim)
        valid = tuple(dict.fromkeys(n for n in numbers if 1 <= n <= len(sources)))
        invalid = tuple(dict.fromkeys(n for n in numbers if not 1 <= n <= len(sources)))
        body = strip_markers(claim).strip()
        if body == ABSTAIN_SENTENCE or _FILLER.match(body) and not valid:
            checks.append(ClaimCheck(claim, valid, invalid, 1.0, True))
            continue
        words = set(terms(body))
        if not valid or not words:
            checks.append(ClaimCheck(claim, valid, invalid, 0.0, False))
            continue
        pool = set().union(*(source_terms[n - 1] for n in valid))
        support = len(words & pool) / len(words)
        cited_text = " ".join(source_text[n - 1] for n in valid)
        missing = tuple(x for x in _NUMBER.findall(body) if x not in cited_text)
        ok = support >= threshold and not missing
        checks.append(ClaimCheck(claim, valid, invalid, round(support, 4), ok, missing))
    return checks


def grounded_ratio(checks: Sequence[ClaimCheck]) -> float:
    """Supported claims / claims (1.0 for an empty answer)."""
    return sum(c.supported for c in checks) / len(checks) if checks else 1.0
