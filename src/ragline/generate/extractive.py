"""The default answerer: extractive, cited, abstaining; no language model needed.

:class:`ExtractiveAnswerer` splits the best retrieved passages into units (sentences;
list items, table rows and heading lines stay whole: :mod:`ragline.generate.units`),
scores each unit that can answer on its own against the question, and answers with the
few best, the best first, each followed by the ``[n]`` marker of its passage. When the
passages do not cover the question well enough it abstains with
:data:`~ragline.core.types.ABSTAIN_SENTENCE`.

Units of structured text: a table row owns its header row's terms and reads with the
column names ("ERR_4021 — Meaning: Charging contact fault; Fix: Clean ..."); a row of
a chunk cut inside a table borrows the header row of another retrieved part of that
table (same document and heading path, same number of columns). A list item owns the
terms of the lead-in line that introduces its list ("... are covered by a per diem:"),
and that line is quoted before it. Header rows, lead-in lines, questions (FAQ titles)
and lines repeating the passage's headings never answer on their own; other
heading-like lines (short, unpunctuated) only reluctantly (:data:`HEADING_FACTOR`).

Unit score (higher is better):
    IDF-weighted coverage of the question's keys by the unit and what it owns (IDF over
    the candidate passages, plus a floor so a term present everywhere still counts).
    Keys are the question's terms, where a variant counts as the term ("full" and
    "fully", "respond" and "response", "nine" and "9": :func:`~.cues.is_variant`); its
    codes and numbers (``ERR_4021``, ``X-570``, ``v2.3.1``, ``$5,000``), matched
    literally (a number also inside a stated range, "from $2,000.01 to $10,000") and
    weighing like the rarest term; and, when the wording names one, the answer type
    ("how long" wants a duration, "how many / much" a quantity, "when" a date or time,
    "what year" a year, "who" a name the question does not contain), weighing like a
    mean term, while the type words themselves are not required. Plus a small share of
    the terms found only in the neighbouring sentences or the headings above; plus a
    bonus for higher-ranked passages; times a penalty for sentences that only echo the
    question. A further unit must add an answer-bearing fact: cover a part of the question
    the picked ones leave out (its headings counting a little) while scoring at least half
    the best, or sit in an already cited passage scoring close to the best; staying in
    the same passage, next to a picked unit, is preferred. Where a unit has a question
    term only as a variant ("ducklings" for "ducks") it scores a little less than one
    with the question's own form. An anaphoric sentence ("It was ...") brings its predecessor.

Evidence (in [0, 1], the abstention signal): the best unit's coverage plus half of
what its neighbours and headings add, i.e. how much of the question one spot of the
sources speaks to; halved when the question is negated ("Which ... did not ...") but no
picked sentence contains a negation (English only), and halved when a code of the
question (``v2.5.0``) occurs in none of the passages. It deliberately ignores retrieval
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
min_evidence = 0.55     0.686   0.653      0.424      0.514       0.759    0.551     0.600
min_evidence = 0.40     0.776   0.650      0.185      0.288       0.721    0.473     0.532
min_evidence = 0.70     0.527   0.618      0.652      0.634       0.802    0.591     0.581
always answer           0.842   --         0.000      0.000       0.691    0.410     0.421
always abstain          0.000   0.512      1.000      0.678       --       0.512     0.339
======================  ======  =========  =========  ==========  =======  ========  =========

Issue 17 (a further sentence only when it adds a fact; see bench/README.md): at 0.55
held-out recall 0.666, abstain F1 0.516, cite ok 0.861 (was 0.685 / 0.513 / 0.759).
Passages are read in their documents' languages when the collection's analyzer is given.

(recall: a gold answer appears in the answer text; cite ok: share of citations, on
answered answerable questions, pointing at the gold passage or at a passage containing
a gold answer; accuracy: answerable answered correctly or unanswerable abstained;
"always answer" is this answerer with ``min_evidence=0``.) The objective is flat
between 0.55 and 0.65; raise ``min_evidence`` where a wrong answer costs more than a
missed one. :data:`MISSING_CODE_FACTOR` was chosen on the tuning questions too (flat
between 0.3 and 0.9; the evidence's ROC AUC there is highest from 0.7 down).

SQuAD 2's unanswerable questions were written to resemble their passage (swapped
entities, antonyms, inserted negations), so lexical coverage separates them only partly
(ROC AUC of the evidence: 0.65). Questions about things the documents never mention
usually share far fewer terms with the retrieved passages and fall well below the
threshold; paraphrased questions ("sit unused for a month" for "out of service for more
than two weeks") fall below it too: the answerer matches words, not meanings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from ..analysis.analyzer import FOLDED_SUFFIX, Analyzer, MultiAnalyzer, get_analyzer
from ..analysis.czech import fold_diacritics
from ..core.errors import ConfigError
from ..core.protocols import Embedder
from ..core.types import Answer, Hit
from .citations import render_cited
from .cues import (
    VERB_PREFIXES,
    answer_type,
    code_pattern,
    has_answer_type,
    in_a_range,
    number_value,
    numbers_in,
    question_codes,
    variant_finder,
)
from .semantic import CrossLanguageJudge, crosses_language
from .units import TextUnit, heading_key, parse_units, render_unit, split_units

__all__ = [
    "DEFAULT_MIN_EVIDENCE",
    "ExtractiveAnswerer",
    "below",
    "question_codes",
    "split_units",
]

DEFAULT_MIN_EVIDENCE = 0.55
"""Calibrated on SQuAD 2.0 (see the module docstring)."""

IDF_FLOOR = 1.0
"""Added to every term's IDF so a question term present in every passage still counts."""
CODE_WEIGHT = 1.0
"""A code's weight as a multiple of the rarest question term's weight."""
TYPE_WEIGHT = 1.0
"""Weight of the answer type ("how *long*" wants a duration) as a multiple of the mean
question term's weight; only for questions whose wording names a type."""
MISSING_CODE_FACTOR = 0.5
"""Evidence factor when a code of the question occurs in none of the passages."""
CONTEXT_WEIGHT = 0.5
"""Share of a question term's weight the evidence earns when the term occurs only next
to the sentence (neighbouring sentences, the headings above it, title and heading path)."""
SCORE_CONTEXT_WEIGHT = 0.3
"""The same share for ranking sentences: lower, so a sentence is chosen for its own words."""
RANK_BONUS = 0.1
"""Score bonus for a sentence of the best passage; ``RANK_BONUS / (rank + 1)`` below it."""
ECHO_PENALTY = (0.3,)
"""Score factor for sentences adding 0 (, 1, ...) terms beyond the question's own."""
HEADING_FACTOR = 0.8
"""Score factor for a heading-like line (short, unpunctuated, not one of the passage's
headings) quoted as an answer: a label, yet it may state the fact ("Version 2.3.1 -
released 27 March 2024")."""
EXTRA_MIN_RATIO = 0.7
"""A further sentence of an already cited passage must score this share of the best one's,
or else ..."""
MIN_GAIN = 0.3
"""... cover at least this much of the question that the picked sentences do not, and ..."""
EXTRA_GAIN_RATIO = 0.5
"""... score at least this share of the best sentence's score."""
FRAGMENT_FACTOR = 0.5
"""Score factor for a fragment (a flattened table row, a list of values: see
:mod:`~ragline.generate.units`): it may answer when nothing else does, never as a
further sentence."""
VARIANT_SHARE = 0.8
"""Share of a term's weight a sentence's score gets when it has the term only as a variant
(evidence counts variants in full)."""
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

TYPE_KEY = "\0type"
"""Key of the answer type among a unit's keys (cannot collide with an analyzer term)."""

# Per language: negation words (stop-word removal drops them, so they are matched apart)
# and answer-type words ("how *many*", "what *year*") that name the kind of answer
# rather than its content, so the sources need not contain them.
_NEGATION = {
    "english": re.compile(
        r"\b(?:not|never|no|none|nor|cannot|without|neither)\b|n't\b", re.IGNORECASE
    ),
}
_ANSWER_TYPE_WORDS = {
    "english": re.compile(
        r"\b(how|what|which)\s+(?:long|many|much|often|far|old|big|large|tall|high|wide|deep"
        r"|heavy|soon|fast|quickly|frequently|kinds?|types?|sorts?|years?|century|centuries"
        r"|decades?|dates?|days?|months?)\b",
        re.IGNORECASE,
    ),
}
_ANAPHORA = frozenset("it its this these those they their he she his her such that there".split())
_PROSE = frozenset({"sentence", "question", "lead", "fragment"})


@dataclass(frozen=True)
class _Unit:
    passage: int  # position of its passage among the hits considered
    position: int  # position of the unit inside its passage
    text: str  # as written: what the citation quotes
    shown: str  # as it reads in the answer (a table row with its column names)
    kind: str
    terms: frozenset[str]  # keys in its own text (analyzer terms, codes, answer type)
    bound: frozenset[str]  # keys of the header row or lead-in line it belongs to
    near: frozenset[str]  # keys around it: neighbouring sentences, headings, title
    lead: int | None  # position of the lead-in line to quote with it
    factor: float  # score factor of its kind; 0 when it cannot answer on its own
    loose: frozenset[str] = frozenset()  # keys its text has only as a variant ("ducklings")


def below(evidence: float, threshold: float) -> str:
    """ "0.549 is below the abstention threshold 0.55": as many decimals as it takes for
    the two to differ when printed (two at least), so the note never says "0.55 is
    below 0.55"."""
    digits = 2
    while digits < 6 and f"{evidence:.{digits}f}" == f"{threshold:.{digits}f}":
        digits += 1
    shown = f"{evidence:.{digits}f}"
    if float(shown) >= threshold:  # rounded up to or past the threshold: cut instead
        shown = f"{math.floor(evidence * 10**digits) / 10**digits:.{digits}f}"
    return f"{shown} is below the abstention threshold {threshold:.{max(2, _decimals(threshold))}f}"


def _decimals(x: float) -> int:
    text = f"{x:.6f}".rstrip("0")
    return len(text.split(".")[1]) if "." in text else 0


class ExtractiveAnswerer:
    """Answers with the retrieved sentences that best cover the question, or abstains.

    ``max_sentences`` bounds the answer's length, ``max_passages`` how many of the
    best hits are read, ``min_evidence`` (in [0, 1]) the question coverage below which
    it abstains, ``language`` the analyzer (stemming, stop words) used for matching,
    ``analyzer`` the collection's (passages read in their documents' languages),
    ``embedder`` the collection's (passages in another language than the question judged
    on meaning, :mod:`.semantic`). Deterministic: the same question and hits always give
    the same answer.
    """

    name = "extractive"

    def __init__(
        self,
        max_sentences: int = 3,
        max_passages: int = 5,
        min_evidence: float = DEFAULT_MIN_EVIDENCE,
        language: str = "english",
        analyzer: MultiAnalyzer | None = None,
        embedder: Embedder | None = None,
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
        self._multi = analyzer
        # passages in another language than the question are judged on the embedding
        self._judge = CrossLanguageJudge.for_embedder(embedder) if analyzer is not None else None

    def evidence(self, question: str, hits: Sequence[Hit]) -> float:
        """How well the best hits cover the question, in [0, 1]: the score this answerer
        abstains on, and the gate LLM generators use before spending a model call."""
        return self._best(question, _distinct(hits)[: self.max_passages])[1]

    def judged_across_languages(self) -> bool:
        """Whether passages in another language than the question are judged on the
        embedding (the collection's embedder has a calibration: :mod:`.semantic`)."""
        return self._judge is not None

    can_stream = False  # the answer is chosen whole: stream() yields it at once

    def stream(
        self, question: str, hits: Sequence[Hit], *, history: Sequence[Mapping[str, str]] = ()
    ) -> Iterator[str | Answer]:
        """The whole answer's text, then the :class:`Answer`."""
        a = self.answer(question, hits, history=history)
        yield a.text
        yield a

    def answer(
        self, question: str, hits: Sequence[Hit], *, history: Sequence[Mapping[str, str]] = ()
    ) -> Answer:
        """Cited sentences from ``hits`` (best first) answering ``question``, or abstention."""
        considered = _distinct(hits)[: self.max_passages]
        picked, evidence, across = self._best(question, considered)
        how = (
            (f"judged on meaning: the question is not in the language of {across}",)
            if across
            else ()
        )
        if not picked or evidence < self.min_evidence:
            why = (
                "no retrieved passage holds the question's key terms"
                if not picked
                else f"evidence {below(evidence, self.min_evidence)}"
            )
            return Answer.abstention(
                question, considered, generator=self.name, evidence=evidence, notes=(why, *how)
            )
        text, citations = render_cited([(u.shown, considered[u.passage], u.text) for u in picked])
        return Answer(
            question=question,
            text=text,
            citations=citations,
            abstained=False,
            hits=tuple(considered),
            generator=self.name,
            evidence=evidence,
            notes=how,
        )

    # -- scoring -------------------------------------------------------------------

    def _best(self, question: str, hits: Sequence[Hit]) -> tuple[list[_Unit], float, str | None]:
        """The sentences to answer with, the evidence, and the language (ISO code) whose
        passages were judged on the embedding if they decided. Each passage is read in
        its own document's language as the BM25 leg read it (stems, accents folded): with
        a collection analyzer, the hits are grouped by language, the question analyzed in
        each group's language, and the group with the best evidence answers. When none
        reaches ``min_evidence``, the groups in another language than the question are
        judged on meaning (:mod:`.semantic`), where the collection's embedder allows."""
        if self._multi is None or not hits:
            picked, evidence = self._select(
                question, hits, self._analyzer, self.language, range(len(hits))
            )
            return picked, evidence, None
        groups: dict[str, tuple[Analyzer, list[int]]] = {}
        for i, h in enumerate(hits):
            a = self._multi.for_language(h.metadata.get("language"))
            groups.setdefault(a.language, (a, []))[1].append(i)
        best: tuple[list[_Unit], float, str | None] = ([], 0.0, None)

        def consider(
            picked: list[_Unit], evidence: float, positions: list[int], across: str | None
        ) -> None:
            nonlocal best
            if picked and (evidence > best[1] or not best[0]):
                moved = [replace(u, passage=positions[u.passage]) for u in picked]
                best = (moved, evidence, across)
            elif not best[0] and evidence > best[1]:
                best = ([], evidence, across)

        for name, (a, positions) in groups.items():
            lang = name.removesuffix(FOLDED_SUFFIX)
            group = [hits[i] for i in positions]
            consider(*self._select(question, group, a, lang, positions), positions, None)
        if self._judge is None or best[1] >= self.min_evidence:
            return best
        # Nothing answers in words: the groups in another language than the question are
        # judged on meaning (their units are embedded only on a would-be abstention).
        for name, (a, positions) in groups.items():
            code = hits[positions[0]].metadata.get("language")
            if crosses_language(question, code):
                group = [hits[i] for i in positions]
                lang = name.removesuffix(FOLDED_SUFFIX)
                picked, evidence = self._by_meaning(question, group, a, lang)
                if picked and evidence > best[1]:
                    consider(picked, evidence, positions, code)
        return best

    def _by_meaning(
        self, question: str, hits: Sequence[Hit], analyzer: Analyzer, language: str
    ) -> tuple[list[_Unit], float]:
        """The unit most similar in meaning to the question (with what it needs to be
        understood before it), and that similarity on the evidence's scale."""
        assert self._judge is not None
        passages = self._units(question, hits, analyzer, language)[0]
        candidates = [u for units in passages for u in units if u.factor]
        i, cosine = self._judge.best(question, [u.shown for u in candidates])
        if i < 0:
            return [], 0.0
        unit = candidates[i]
        lead = _context_of(unit, passages)
        return ([lead] if lead is not None else []) + [unit], self._judge.evidence(cosine)

    def _question_keys(
        self, question: str, analyzer: Analyzer, language: str
    ) -> tuple[list[str], list[str]]:
        """The question's content terms and its codes."""
        terms_of = analyzer.terms
        codes = question_codes(question)
        type_words = _ANSWER_TYPE_WORDS.get(language)
        text = type_words.sub(r"\1", question) if type_words else question
        # Words that make up a code are matched through the code, not as terms.
        code_words = {w for c in codes for w in terms_of(c)}
        terms = [t for t in dict.fromkeys(terms_of(text)) if t not in code_words]
        return terms, codes

    def _units(
        self, question: str, hits: Sequence[Hit], analyzer: Analyzer, language: str
    ) -> tuple[list[list[_Unit]], dict[str, float], list[str], bool]:
        """Every passage's units with their keys; the weight of each question key; the
        question's terms; whether a code of the question is missing from every passage."""
        terms_of = analyzer.terms
        q_terms, codes = self._question_keys(question, analyzer, language)
        code_keys = [f"\0{j}" for j in range(len(codes))]
        code_res = [code_pattern(c) for c in codes]
        code_values = [number_value(c) for c in codes]
        kind = answer_type(question, language)
        q_numbers = numbers_in(question)
        q_folded = question.casefold()
        variants_of = variant_finder(q_terms, VERB_PREFIXES.get(language, ()))
        seen: set[str] = set()  # passage terms looked up for variants of question terms
        variants: dict[str, list[str]] = {}  # ... and those that are variants

        # Accent-folded languages: a word written without its accents can stem apart
        # from the accented form ("hibakod" -> "hib", "hibakód" -> "hibako"); the folded
        # whole words still match, and count as the question's term.
        by_word: dict[str, str] = {}
        if analyzer.language.endswith(FOLDED_SUFFIX):
            q_set_ = set(q_terms)
            for w in analyzer.words(question):
                t = terms_of(w)
                if len(t) == 1 and t[0] in q_set_:
                    by_word.setdefault(fold_diacritics(w), t[0])

        loose_of: dict[str, frozenset[str]] = {}  # keys a text matches only through a variant

        def keys_in(text: str, with_type: bool = True) -> frozenset[str]:
            found = set(terms_of(text))
            if by_word:
                found.update(
                    by_word[f] for w in analyzer.words(text) if (f := fold_diacritics(w)) in by_word
                )
            for t in found - seen:
                seen.add(t)
                if vs := variants_of(t):
                    variants[t] = vs
            direct = frozenset(found)
            for t in found & variants.keys():
                found.update(variants[t])
            loose_of[text] = frozenset(found - direct)
            for key, rx, value in zip(code_keys, code_res, code_values):
                if rx.search(text) or (value is not None and in_a_range(text, value)):
                    found.add(key)
            if with_type and kind is not None and has_answer_type(kind, text, q_numbers, q_folded):
                found.add(TYPE_KEY)
            return frozenset(found)

        parsed: list[list[TextUnit]] = []
        keyed: list[list[frozenset[str]]] = []
        around: list[frozenset[str]] = []
        known: list[set[str]] = []
        # (document, heading path, columns) -> a table header row's cells and keys
        table_headers: dict[
            tuple[str, tuple[str, ...], int], tuple[tuple[str, ...], frozenset[str]]
        ]
        table_headers = {}
        for hit in hits:
            names = [hit.title, *hit.heading_path]
            tus = parse_units(hit.text, names)
            parsed.append(tus)
            # A heading's section number ("4.1") is not content.
            keyed.append(
                [keys_in(heading_key(tu.text) if tu.kind == "heading" else tu.text) for tu in tus]
            )
            around.append(keys_in(" ".join(names), with_type=False))
            known.append({heading_key(n) for n in names})
            for tu, unit_keys in zip(tus, keyed[-1]):
                if tu.kind == "header":
                    place = (hit.doc_key, tuple(hit.heading_path), len(tu.cells))
                    table_headers.setdefault(place, (tu.cells, unit_keys))

        passages: list[list[_Unit]] = []
        for p, (hit, tus, ks) in enumerate(zip(hits, parsed, keyed)):
            units: list[_Unit] = []
            for i, tu in enumerate(tus):
                bound: frozenset[str] = frozenset()
                header: tuple[str, ...] = ()
                if tu.owner is not None:
                    bound = ks[tu.owner]
                    header = tus[tu.owner].cells
                elif tu.kind == "row" and "|" in tu.text:
                    # A chunk cut inside a table lacks its header row: borrow it from
                    # another passage of the same table.
                    place = (hit.doc_key, tuple(hit.heading_path), len(tu.cells))
                    header, bound = table_headers.get(place, ((), frozenset()))
                near = set(around[p])
                if tu.section is not None:
                    near |= ks[tu.section]
                if tu.kind in _PROSE:
                    if i > 0 and tus[i - 1].kind in _PROSE:
                        near |= ks[i - 1]
                    if i + 1 < len(tus) and tus[i + 1].kind in _PROSE:
                        near |= ks[i + 1]
                near.discard(TYPE_KEY)
                if tu.kind in ("sentence", "item", "row"):
                    factor = 1.0
                elif tu.kind == "heading" and heading_key(tu.text) not in known[p]:
                    factor = HEADING_FACTOR
                elif tu.kind == "fragment":
                    factor = FRAGMENT_FACTOR
                else:
                    factor = 0.0
                units.append(
                    _Unit(
                        passage=p,
                        position=i,
                        text=tu.text,
                        shown=render_unit(tu, header),
                        kind=tu.kind,
                        terms=ks[i],
                        loose=loose_of.get(
                            heading_key(tu.text) if tu.kind == "heading" else tu.text, frozenset()
                        ),
                        bound=bound,
                        near=frozenset(near),
                        lead=tu.owner if tu.kind == "item" else None,
                        factor=factor,
                    )
                )
            passages.append(units)

        # IDF over the passages; a passage contains a term if a unit or its header does.
        keys = q_terms + code_keys
        df = dict.fromkeys(keys, 0)
        for units, header_keys in zip(passages, around):
            present = header_keys.union(*(u.terms for u in units))
            for k in keys:
                df[k] += k in present
        n = len(passages)
        weight = {k: math.log(1 + (n - df[k] + 0.5) / (df[k] + 0.5)) + IDF_FLOOR for k in keys}
        if weight:
            top = max(weight.values())
            mean = sum(weight[k] for k in q_terms) / len(q_terms) if q_terms else top
            for k in code_keys:
                weight[k] = CODE_WEIGHT * top
            if kind is not None and TYPE_WEIGHT > 0:
                weight[TYPE_KEY] = TYPE_WEIGHT * mean
        missing = any(df[k] == 0 for k in code_keys)
        return passages, weight, q_terms, missing

    def _select(
        self,
        question: str,
        hits: Sequence[Hit],
        analyzer: Analyzer,
        language: str,
        ranks: Sequence[int],
    ) -> tuple[list[_Unit], float]:
        """The sentences to answer with, in output order, and the evidence score
        (``ranks``: each hit's position among all the hits considered)."""
        if not hits:
            return [], 0.0
        passages, weight, q_terms, missing_code = self._units(question, hits, analyzer, language)
        if not weight:
            return [], 0.0
        total = sum(weight.values())

        def cov(found: Iterable[str]) -> float:
            return sum(weight[k] for k in found) / total

        key_set = frozenset(weight)
        q_set = frozenset(q_terms)
        evidence = 0.0
        scored: list[tuple[float, _Unit]] = []
        for p, units in enumerate(passages):
            for u in units:
                if not u.factor:
                    continue
                own = (u.terms | u.bound) & key_set
                extra = (u.near & key_set) - own
                coverage = cov(own)
                # the question's own word form beats a variant ("ducks" vs "ducklings")
                exact = coverage - (1 - VARIANT_SHARE) * cov(own & u.loose)
                evidence = max(evidence, coverage + CONTEXT_WEIGHT * cov(extra))
                if not own - {TYPE_KEY}:
                    continue
                # A code counts only where it is written: its neighbours do not inherit it.
                context = SCORE_CONTEXT_WEIGHT * cov(k for k in extra if k in q_set)
                new_content = sum(1 for t in u.terms - key_set if not t.startswith("\0"))
                echo = ECHO_PENALTY[new_content] if new_content < len(ECHO_PENALTY) else 1.0
                score = (exact + context) * echo * u.factor + RANK_BONUS / (ranks[p] + 1)
                scored.append((score, u))
        evidence = min(1.0, evidence)
        if missing_code:
            evidence *= MISSING_CODE_FACTOR
        if not scored:
            return [], evidence

        scored.sort(key=lambda su: (-su[0], su[1].passage, su[1].position))
        picked = self._pick(scored, passages, key_set, cov)
        negation = _NEGATION.get(language)
        if (
            negation is not None
            and negation.search(question)
            and not any(negation.search(u.text) for u in picked)
        ):
            evidence *= NEGATION_FACTOR
        return picked, evidence

    def _pick(
        self,
        scored: list[tuple[float, _Unit]],
        passages: list[list[_Unit]],
        keys: frozenset[str],
        cov: Callable[[Iterable[str]], float],
    ) -> list[_Unit]:
        """Up to ``max_sentences`` coherent, non-duplicate sentences, in output order.

        The best sentence comes first, with what it needs to be understood before it:
        a list item its lead-in line, an anaphoric sentence ("It was ...") its
        predecessor. The others follow in reading order.
        """
        best_score, best = scored[0]
        lead = _context_of(best, passages)
        first = ([lead] if lead is not None else []) + [best]
        first = first[-self.max_sentences :]
        picked = list(first)
        covered = {k for u in picked for k in (u.terms | u.bound) & keys}
        while len(picked) < self.max_sentences:
            choice: tuple[float, int, int] | None = None
            chosen: list[_Unit] = []
            room = self.max_sentences - len(picked)
            for score, u in scored:
                gain = cov((u.terms | u.bound) & keys - covered)
                # A further unit must add an answer-bearing fact: cover a part of the
                # question the picked ones leave out, scoring at least half the best;
                # or sit in a cited passage scoring close to the best. Merely similar
                # units of other passages cost citation validity (SQuAD 2.0: 0.76 ->
                # 0.87) for little recall (0.685 -> 0.666).
                if u.kind == "fragment":  # never added to an answer, only reluctantly its lead
                    continue
                same = any(q.passage == u.passage for q in picked)
                own = (u.terms | u.bound) & keys
                around = SCORE_CONTEXT_WEIGHT * cov((u.near & keys) - own - covered - {TYPE_KEY})
                adds = gain + around >= MIN_GAIN and score >= EXTRA_GAIN_RATIO * best_score
                if not adds and not (same and score >= EXTRA_MIN_RATIO * best_score):
                    continue
                if any(u is q or _near_duplicate(u, q) for q in picked):
                    continue
                needs = u.lead if u.kind == "item" else None
                bring: list[_Unit] = []
                if needs is not None and not any(
                    q.passage == u.passage and q.position == needs for q in picked
                ):
                    if room < 2:
                        continue
                    bring = [passages[u.passage][needs]]
                value = score + GAIN_WEIGHT * gain
                if any(q.passage == u.passage for q in picked):
                    value += SAME_PASSAGE_BONUS
                    if any(
                        q.passage == u.passage and abs(q.position - u.position) == 1 for q in picked
                    ):
                        value += ADJACENT_BONUS
                key = (value, -u.passage, -u.position)
                if choice is None or key > choice:
                    choice, chosen = key, [*bring, u]
            if not chosen:
                break
            picked.extend(chosen)
            covered |= {k for u in chosen for k in (u.terms | u.bound) & keys}
        rest = picked[len(first) :]
        order = list(dict.fromkeys(u.passage for u in picked))
        rest.sort(key=lambda u: (order.index(u.passage), u.position))
        return first + rest


def _context_of(unit: _Unit, passages: list[list[_Unit]]) -> _Unit | None:
    """The unit that must be quoted before ``unit`` for it to make sense, if any."""
    units = passages[unit.passage]
    if unit.lead is not None:
        return units[unit.lead]
    first_word = unit.text.split(" ", 1)[0].strip("\"'(").casefold()
    if unit.kind == "sentence" and first_word in _ANAPHORA and unit.position > 0:
        before = units[unit.position - 1]
        if before.kind in ("sentence", "lead"):
            return before
    return None


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
