"""The default answerer: extractive, cited, abstaining; no language model needed.

:class:`ExtractiveAnswerer` splits the best retrieved passages into sentences (table
rows and list items stay whole), scores each sentence against the question, and
answers with the few best sentences, each followed by the ``[n]`` marker of its
passage. When the passages do not cover the question well enough it abstains with
:data:`~ragline.core.types.ABSTAIN_SENTENCE`.

Sentence score (higher is better):
    IDF-weighted coverage of the question's terms by the sentence (IDF over the
    candidate passages, plus a floor so a term present everywhere still counts),
    where codes and numbers of the question (``ERR_4021``, ``v2.3.1``, ``1973``) are
    matched exactly and weigh like the rarest term, and answer-type words ("how
    *many*", "what *year*") are not required; a table row also owns its header row's
    terms; plus a small share of the terms found only in the neighbouring sentences or
    the passage's title/headings; plus a bonus for higher-ranked passages; times a
    penalty for sentences that only echo the question. Further sentences must score
    close to the best one or cover a part of the question it leaves out; staying in
    the same passage, next to a picked sentence, is preferred. A picked table row
    brings its header row, an anaphoric sentence ("It was ...") its predecessor.

Evidence (in [0, 1], the abstention signal): the best sentence's coverage plus half of
what its neighbours and headings add, i.e. how much of the question one spot of the
sources speaks to; halved when the question is negated ("Which ... did not ...") but no
picked sentence contains a negation (English only). It deliberately ignores retrieval
scores, whose scale differs per retriever (BM25, cosine, RRF); the hits' order enters
only through the rank bonus. A question in two parts answered by two passages thus
gets about 0.5: coverage summed over several sentences separated SQuAD's answerable
from unanswerable questions much worse, so it is not used.

Calibration (``bench/extractive_squad.py``; SQuAD 2.0 dev subset: 320 passages, 2917
questions, 1477 unanswerable; BM25 top 5, gold passage retrieved for 92.5%; threshold
tuned on every 3rd question, numbers below on the other 1944; objective = mean of answer
recall on answerable questions and abstention F1 on unanswerable ones):

======================  ======  =========  =========  ==========  =======  ========  =========
setting                 recall  abstain P  abstain R  abstain F1  cite ok  accuracy  objective
======================  ======  =========  =========  ==========  =======  ========  =========
min_evidence = 0.55     0.657   0.641      0.449      0.528       0.772    0.550     0.593
min_evidence = 0.40     0.765   0.625      0.183      0.283       0.731    0.467     0.524
min_evidence = 0.70     0.480   0.598      0.678      0.636       0.830    0.581     0.558
always answer           0.834   --         0.000      0.000       0.696    0.407     0.417
always abstain          0.000   0.512      1.000      0.678       --       0.512     0.339
======================  ======  =========  =========  ==========  =======  ========  =========

(recall: a gold answer appears in the answer text; cite ok: share of citations, on
answered answerable questions, pointing at the gold passage or at a passage containing
a gold answer; accuracy: answerable answered correctly or unanswerable abstained;
"always answer" is this answerer with ``min_evidence=0``.) The objective is flat
between 0.5 and 0.65; raise ``min_evidence`` where a wrong answer costs more than a
missed one.

SQuAD 2's unanswerable questions were written to resemble their passage (swapped
entities, antonyms, inserted negations), so lexical coverage separates them only partly
(ROC AUC of the evidence: 0.65). Questions about things the documents never mention
usually share far fewer terms with the retrieved passages and fall well below the
threshold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..analysis.analyzer import Analyzer, get_analyzer, split_sentences
from ..core.errors import ConfigError
from ..core.types import ABSTAIN_SENTENCE, Answer, Hit
from .citations import render_cited

DEFAULT_MIN_EVIDENCE = 0.55
"""Calibrated on SQuAD 2.0 (see the module docstring)."""

IDF_FLOOR = 1.0
"""Added to every term's IDF so a question term present in every passage still counts."""
CODE_WEIGHT = 1.0
"""A code's weight as a multiple of the rarest question term's weight."""
CONTEXT_WEIGHT = 0.5
"""Share of a question term's weight the evidence earns when the term occurs only next
to the sentence (neighbouring sentences, the table's header row, title and headings)."""
SCORE_CONTEXT_WEIGHT = 0.3
"""The same share for ranking sentences: lower, so a sentence is chosen for its own words."""
RANK_BONUS = 0.1
"""Score bonus for a sentence of the best passage; ``RANK_BONUS / (rank + 1)`` below it."""
ECHO_PENALTY = (0.3,)
"""Score factor for sentences adding 0 (, 1, ...) terms beyond the question's own."""
EXTRA_MIN_RATIO = 0.7
"""A further sentence must score this share of the best sentence's score, or else ..."""
MIN_GAIN = 0.3
"""... cover at least this much of the question that the picked sentences do not."""
GAIN_WEIGHT = 0.5
"""Weight, when picking further sentences, of the question coverage they add."""
SAME_PASSAGE_BONUS = 0.08
"""Bonus, when picking further sentences, for staying in an already cited passage."""
ADJACENT_BONUS = 0.07
"""Further bonus for a sentence next to one already picked."""
DUPLICATE_JACCARD = 0.8
"""Sentences whose term sets overlap this much are near-duplicates; only one is kept."""
NEGATION_FACTOR = 0.5
"""Evidence factor when the question is negated ("... not ...") but no picked sentence is."""

# Per language: negation words (stop-word removal drops them, so they are matched apart)
# and answer-type words ("how *many*", "what *year*") that name the kind of answer
# rather than its content, so the sources need not contain them.
_NEGATION = {
    "english": re.compile(
        r"\b(?:not|never|no|none|nor|cannot|without|neither)\b|n't\b", re.IGNORECASE
    ),
}
_ANSWER_TYPE = {
    "english": re.compile(
        r"\b(how|what|which)\s+(?:long|many|much|often|far|old|big|large|tall|high|wide|deep"
        r"|soon|kinds?|types?|sorts?|years?|century|centuries|decades?|dates?|days?|months?)\b",
        re.IGNORECASE,
    ),
}
# A line kept whole instead of being split into sentences: list item, table row, heading.
_LINE_UNIT = re.compile(r"^\s*(?:[-*+•]\s|\d{1,3}[.)]\s|#{1,6}\s)")
_TABLE_ROW = re.compile(r"^\s*\||\t|\|[^|]+\|")
_TOKEN = re.compile(r"\w(?:[\w.\-/:]*\w)?")
_ANAPHORA = frozenset(
    [
        "it",
        "its",
        "this",
        "these",
        "those",
        "they",
        "their",
        "he",
        "she",
        "his",
        "her",
        "such",
        "that",
        "there",
    ]
)


@dataclass(frozen=True)
class _Unit:
    passage: int  # position of its passage among the hits considered
    position: int  # position of the sentence inside its passage
    text: str
    terms: frozenset[str]  # analyzer terms, plus a key per question code it contains
    header: int | None  # position of its table's header row, for table rows


def _split(text: str) -> list[tuple[str, int | None]]:
    """Units of ``text`` with, for table rows, the position of their header row."""
    units: list[tuple[str, int | None]] = []
    for para in re.split(r"\n\s*\n", text):
        prose: list[str] = []
        header: int | None = None  # header row of the table being read
        in_item = False  # an indented line right after a list item continues it
        for line in para.splitlines():
            is_row = bool(_TABLE_ROW.search(line))
            is_line = is_row or bool(_LINE_UNIT.search(line))
            if not is_line and in_item and line[:1].isspace() and line.strip():
                units[-1] = (units[-1][0] + " " + " ".join(line.split()), None)
                continue
            in_item = is_line and not is_row
            if not is_line:
                header = None
                if line.strip():
                    prose.append(line)
                continue
            if prose:
                units.extend((s, None) for s in split_sentences(" ".join(prose)))
                prose = []
            line = " ".join(line.split())
            if not any(ch.isalnum() for ch in line):  # |---|---| separator
                continue
            if not is_row:
                header = None
                units.append((line, None))
            elif header is None:
                header = len(units)
                units.append((line, None))
            else:
                units.append((line, header))
        if prose:
            units.extend((s, None) for s in split_sentences(" ".join(prose)))
    return units


def split_units(text: str) -> list[str]:
    """Sentences of ``text``; list items, table rows and headings stay one unit each."""
    return [u for u, _ in _split(text)]


def question_codes(question: str) -> list[str]:
    """Exact-match tokens of the question: codes, versions, numbers and acronyms."""
    shouting = sum(c.isupper() for c in question) > 0.5 * sum(c.isalpha() for c in question)
    out: list[str] = []
    for tok in _TOKEN.findall(question):
        is_code = any(c.isdigit() for c in tok) or "_" in tok
        is_acronym = not shouting and len(tok) >= 2 and tok.isalpha() and tok.isupper()
        if (is_code or is_acronym) and tok.casefold() not in out:
            out.append(tok.casefold())
    return out


def _code_pattern(code: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.\-])" + re.escape(code) + r"(?![\w]|[.\-]\w)", re.IGNORECASE)


class ExtractiveAnswerer:
    """Answers with the retrieved sentences that best cover the question, or abstains.

    ``max_sentences`` bounds the answer's length, ``max_passages`` how many of the
    best hits are read, ``min_evidence`` (in [0, 1]) the question coverage below which
    it abstains, ``language`` the analyzer (stemming, stop words) used for matching.
    Deterministic: the same question and hits always give the same answer.
    """

    name = "extractive"

    def __init__(
        self,
        max_sentences: int = 3,
        max_passages: int = 5,
        min_evidence: float = DEFAULT_MIN_EVIDENCE,
        language: str = "english",
    ) -> None:
        if max_sentences < 1:
            raise ConfigError(f"max_sentences must be at least 1, got {max_sentences}")
        if max_passages < 1:
            raise ConfigError(f"max_passages must be at least 1, got {max_passages}")
        if not 0.0 <= min_evidence <= 1.0:
            raise ConfigError(f"min_evidence must be between 0 and 1, got {min_evidence}")
        self.max_sentences = max_sentences
        self.max_passages = max_passages
        self.min_evidence = min_evidence
        self.language = language
        self._analyzer: Analyzer = get_analyzer(language)

    def answer(self, question: str, hits: Sequence[Hit]) -> Answer:
        """Cited sentences from ``hits`` (best first) answering ``question``, or abstention."""
        considered = _distinct(hits)[: self.max_passages]
        picked, evidence = self._select(question, considered)
        if not picked or evidence < self.min_evidence:
            return Answer(
                question=question,
                text=ABSTAIN_SENTENCE,
                citations=(),
                abstained=True,
                hits=tuple(considered),
                generator=self.name,
                evidence=evidence,
            )
        text, citations = render_cited([(u.text, considered[u.passage]) for u in picked])
        return Answer(
            question=question,
            text=text,
            citations=citations,
            abstained=False,
            hits=tuple(considered),
            generator=self.name,
            evidence=evidence,
        )

    # -- scoring -------------------------------------------------------------------

    def _question_keys(self, question: str) -> tuple[list[str], list[re.Pattern[str]]]:
        """The question's content terms and the patterns of its codes."""
        terms_of = self._analyzer.terms
        codes = question_codes(question)
        answer_type = _ANSWER_TYPE.get(self.language)
        text = answer_type.sub(r"\1", question) if answer_type else question
        # Words that make up a code are matched through the code, not as terms.
        code_words = {w for c in codes for w in terms_of(c)}
        terms = [t for t in dict.fromkeys(terms_of(text)) if t not in code_words]
        return terms, [_code_pattern(c) for c in codes]

    def _select(self, question: str, hits: Sequence[Hit]) -> tuple[list[_Unit], float]:
        """The sentences to answer with, in output order, and the evidence score."""
        if not hits:
            return [], 0.0
        q_terms, code_res = self._question_keys(question)
        if not q_terms and not code_res:
            return [], 0.0
        terms_of = self._analyzer.terms
        code_keys = [f"\0{j}" for j in range(len(code_res))]  # cannot collide with terms

        def keys_in(text: str) -> frozenset[str]:
            found = {k for k, rx in zip(code_keys, code_res) if rx.search(text)}
            return frozenset(terms_of(text)).union(found)

        passages = [
            [_Unit(p, i, s, keys_in(s), h) for i, (s, h) in enumerate(_split(hit.text))]
            for p, hit in enumerate(hits)
        ]
        headers = [keys_in(" ".join([hit.title, *hit.heading_path])) for hit in hits]

        # IDF over the passages; a passage contains a term if a unit or its header does.
        keys = q_terms + code_keys
        df = dict.fromkeys(keys, 0)
        for units, header in zip(passages, headers):
            present = header.union(*(u.terms for u in units))
            for k in keys:
                df[k] += k in present
        n = len(passages)
        weight = {k: math.log(1 + (n - df[k] + 0.5) / (df[k] + 0.5)) + IDF_FLOOR for k in keys}
        top = max(weight.values())
        for k in code_keys:
            weight[k] = CODE_WEIGHT * top
        total = sum(weight.values())

        def cov(found: Iterable[str]) -> float:
            return sum(weight[k] for k in found) / total

        key_set = frozenset(keys)
        q_set = frozenset(q_terms)
        evidence = 0.0
        scored: list[tuple[float, _Unit]] = []
        for p, units in enumerate(passages):
            for i, u in enumerate(units):
                own = u.terms & key_set
                if u.header is not None:  # a table row means what its header row says
                    own |= units[u.header].terms & key_set
                near = set(headers[p])
                if i > 0:
                    near |= units[i - 1].terms
                if i + 1 < len(units):
                    near |= units[i + 1].terms
                extra = (near & key_set) - own
                coverage = cov(own)
                evidence = max(evidence, coverage + CONTEXT_WEIGHT * cov(extra))
                if not own:
                    continue
                # A code counts only where it is written: its neighbours do not inherit it.
                context = SCORE_CONTEXT_WEIGHT * cov(k for k in extra if k in q_set)
                new_content = sum(1 for t in u.terms - key_set if not t.startswith("\0"))
                echo = ECHO_PENALTY[new_content] if new_content < len(ECHO_PENALTY) else 1.0
                scored.append(((coverage + context) * echo + RANK_BONUS / (p + 1), u))
        evidence = min(1.0, evidence)
        if not scored:
            return [], evidence

        scored.sort(key=lambda su: (-su[0], su[1].passage, su[1].position))
        picked = self._pick(scored, passages, key_set, cov)
        negation = _NEGATION.get(self.language)
        if (
            negation is not None
            and negation.search(question)
            and not any(negation.search(u.text) for u in picked)
        ):
            evidence *= NEGATION_FACTOR
        # Readable order: passages in the order they were first picked (the best
        # sentence's passage first), sentences in their order inside the passage.
        order = list(dict.fromkeys(u.passage for u in picked))
        picked.sort(key=lambda u: (order.index(u.passage), u.position))
        return picked, evidence

    def _pick(
        self,
        scored: list[tuple[float, _Unit]],
        passages: list[list[_Unit]],
        keys: frozenset[str],
        cov: Callable[[Iterable[str]], float],
    ) -> list[_Unit]:
        """Greedy choice of up to ``max_sentences`` coherent, non-duplicate sentences."""
        best_score, best = scored[0]
        picked = [best]
        covered = set(best.terms & keys)
        # The best sentence brings along what it needs to be understood: a table row its
        # header row, an anaphoric sentence ("It was ...") its predecessor.
        first_word = best.text.split(" ", 1)[0].strip("\"'(").casefold()
        if best.header is not None:
            picked.append(passages[best.passage][best.header])
        elif first_word in _ANAPHORA and best.position > 0:
            picked.append(passages[best.passage][best.position - 1])
        del picked[self.max_sentences :]
        while len(picked) < self.max_sentences:
            choice: tuple[float, int, int] | None = None
            chosen: _Unit | None = None
            for score, u in scored:
                gain = cov((u.terms & keys) - covered)
                if score < EXTRA_MIN_RATIO * best_score and gain < MIN_GAIN:
                    continue
                if any(u is q or _near_duplicate(u, q) for q in picked):
                    continue
                value = score + GAIN_WEIGHT * gain
                if any(q.passage == u.passage for q in picked):
                    value += SAME_PASSAGE_BONUS
                    if any(
                        q.passage == u.passage and abs(q.position - u.position) == 1 for q in picked
                    ):
                        value += ADJACENT_BONUS
                key = (value, -u.passage, -u.position)
                if choice is None or key > choice:
                    choice, chosen = key, u
            if chosen is None:
                break
            picked.append(chosen)
            covered |= chosen.terms & keys
        return picked


def _near_duplicate(a: _Unit, b: _Unit) -> bool:
    if a.text == b.text:
        return True
    if not a.terms or not b.terms:
        return False
    return len(a.terms & b.terms) / len(a.terms | b.terms) >= DUPLICATE_JACCARD


def _distinct(hits: Sequence[Hit]) -> list[Hit]:
    """``hits`` without repeated chunks, order kept."""
    seen: set[int] = set()
    out: list[Hit] = []
    for h in hits:
        if h.chunk_id not in seen:
            seen.add(h.chunk_id)
            out.append(h)
    return out
