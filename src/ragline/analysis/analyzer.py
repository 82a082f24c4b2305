"""The lexical analyzer behind BM25.

NFKC normalization → casefold → default-ignorable characters removed (zero-width space,
joiners, soft hyphen, word joiner, BOM, variation selectors: invisible, so
``BLUE\u200bHERON`` is the word ``blueheron``, as in ICU's NFKC_Casefold) → Unicode word
tokenization → stop words → stemming
(Snowball via PyStemmer; a light suffix stripper for Ukrainian, which has no Snowball
stemmer). The same analysis runs at index and at query time, so a term matches exactly
when both sides produce the same string.

Codes, versions and identifiers survive exactly: besides its parts, a token such as
``X-570``, ``v2.3.1``, ``HP-E14`` or ``192.168.0.1`` (word pieces joined by ``-./:`` with
at least one digit) is also indexed whole, and ``ERR_4021`` also as ``err`` + ``4021``.
A query for the exact code therefore matches the chunk holding it with the code's (high)
IDF, while "error 4021" still finds it through the parts.

A document is analyzed in its own language (:class:`MultiAnalyzer`); a query is analyzed
in every language present in the collection and the term sets are unioned.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from functools import lru_cache
from itertools import chain

from ..core.errors import ConfigError
from .stopwords import STOPWORDS

_WORD = re.compile(r"\w+", re.UNICODE)
# Matches start only at a token boundary and never backtrack: linear on 10 MB "words".
_CODE = re.compile(r"(?<![\w./:-])\w++(?:[-./:]\w++)+", re.UNICODE)
MAX_TERM_CHARS = 64
"""Longer "words" (hashes, base64, run-together garbage) are not indexed: no query matches
them and PostgreSQL's btree cannot hold arbitrarily long keys."""
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9\u00C0-\u024F\u0400-\u04FF])")
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs al fig figs eq eqs no nos dr mr mrs ms prof st inc ltd co approx ca cf".split()
)
UKRAINIAN = "ukrainian"
FOLDED_SUFFIX = "-folded"
FOLDED = frozenset({"czech", "hungarian"})
"""Languages with a ``<language>-folded`` analyzer: Snowball, then diacritics removed
(Czech also undoes stem-final alternations, :mod:`.czech`), so text typed without
accents ("hoszivattyu", "prace z domova") matches. Measured on the golden set's
questions with their accents removed: BM25 nDCG@10 hu 0.607 → 0.838, cs 0.597 → 0.733."""
CZECH_FOLDED = "czech" + FOLDED_SUFFIX
PLAIN = "plain"
STOPWORDS_ONLY = frozenset({"slovak"})  # stop words but no Snowball stemmer: no stemming
_NO_SNOWBALL_ISO = {"sk": "slovak"}
UNDETERMINED = "und"  # a document whose language could not be told: default analysis


_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
"""Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt): characters that
render as nothing. Inside a word they must not split it, or a pasted ``BLUE\u200bHERON``
(or a soft-hyphenated word) would never match ``blueheron``."""


def _normalize(text: str, ignorables: bool = True) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _IGNORABLE.sub("", folded) if ignorables else folded


class Analyzer:
    """Turns text into index terms for one language.

    ``language`` is a PyStemmer algorithm name (``english``, ``hungarian``, ...),
    ``ukrainian`` (light suffix stripping) or ``plain`` (no stemming, no stop words).
    Stemming results are cached per word: the same word always maps to the same term.
    """

    def __init__(self, language: str = "english", *, ignorables: bool = True) -> None:
        """``ignorables`` False keeps default-ignorable characters (as word breaks): the
        analysis of collections built before version 4."""
        import Stemmer  # PyStemmer; light, but keep `import ragline` free of it

        self.language = language
        self.ignorables = ignorables
        self._stem_word: Callable[[str], str] | None = None
        base = language.removesuffix(FOLDED_SUFFIX)
        folded = base != language and base in FOLDED
        self._stop = STOPWORDS.get(base if folded else language, frozenset())
        if language == UKRAINIAN:
            from .ukrainian import stem_uk

            self._stem_word = stem_uk
        elif folded:
            from .czech import fold_diacritics, stem_cs

            if base == "czech":
                self._stem_word = stem_cs
            else:
                snowball = Stemmer.Stemmer(base).stemWord
                self._stem_word = lambda w: fold_diacritics(snowball(w))
            self._stop = self._stop | {fold_diacritics(w) for w in self._stop}
        elif language != PLAIN and language not in STOPWORDS_ONLY:
            if language not in Stemmer.algorithms():
                names = [f + FOLDED_SUFFIX for f in FOLDED]
                raise ConfigError(
                    f"no stemmer for language {language!r}; choose one of: "
                    + ", ".join(sorted([*Stemmer.algorithms(), UKRAINIAN, *names, PLAIN]))
                )
            self._stem_word = Stemmer.Stemmer(language).stemWord
        self._stem_cache: dict[str, tuple[str, ...]] = {}

    @property
    def name(self) -> str:
        """Identity stored with a collection: changing it means re-indexing."""
        return f"snowball-{self.language}-v2"

    def words(self, text: str) -> list[str]:
        """Normalized, case-folded words of ``text`` (before stop words and stemming)."""
        return _WORD.findall(_normalize(text, self.ignorables))

    def _stem(self, w: str) -> str:
        return self._stem_word(w) if self._stem_word is not None else w

    def _word_terms(self, w: str) -> tuple[str, ...]:
        """The terms one word contributes (none for a stop word or a run-on "word")."""
        if len(w) > MAX_TERM_CHARS:
            return ()
        out: list[str] = []
        if "_" in w and any(c.isdigit() for c in w):
            out.append(w)  # ERR_4021 exactly, and its parts below
            parts = [p for p in w.split("_") if p]
        else:
            parts = [w]
        for p in parts:
            if p in self._stop or (len(p) == 1 and not p.isdigit()):
                continue
            out.append(self._stem(p))
        return tuple(out)

    def terms(self, text: str) -> list[str]:
        """Index terms in order of occurrence (duplicates kept), exact codes added."""
        norm = _normalize(text, self.ignorables)
        words = _WORD.findall(norm)
        cache = self._stem_cache  # word → its terms: analyzed once, then looked up in C
        new = set(words).difference(cache)
        if new and len(cache) + len(new) > 500_000:  # full: this text's words on their own
            cache = {w: cache.get(w) or self._word_terms(w) for w in set(words)}
        else:
            for w in new:
                cache[w] = self._word_terms(w)
        out = list(chain.from_iterable(map(cache.__getitem__, words)))
        for m in _CODE.finditer(norm):
            code = m.group(0)
            if len(code) <= MAX_TERM_CHARS and any(c.isdigit() for c in code):
                out.append(code)
        return out

    def term_frequencies(self, text: str) -> Counter[str]:
        return Counter(self.terms(text))


@lru_cache(maxsize=64)
def get_analyzer(language: str = "english", ignorables: bool = True) -> Analyzer:
    """The shared analyzer for ``language`` (one per process)."""
    return Analyzer(language, ignorables=ignorables)


def analyzer_for_iso(
    code: str | None, default: str = "english", *, ignorables: bool = True
) -> Analyzer:
    """The analyzer for an ISO 639-1 language code; unknown or undetermined → ``default``."""
    from .language import SNOWBALL_BY_ISO

    c = (code or "").lower()
    if c == "uk":
        return get_analyzer(UKRAINIAN, ignorables)
    name = SNOWBALL_BY_ISO.get(c) or _NO_SNOWBALL_ISO.get(c)
    return get_analyzer(name or default, ignorables)


ANALYSIS_VERSION = 4
"""Version of :class:`MultiAnalyzer` new collections get. 4: default-ignorable characters
(zero-width space, joiners, soft hyphen, …) are removed instead of splitting words. 3:
Czech and Hungarian are analyzed with their :data:`FOLDED` analyzers (2: plain Snowball).
A collection keeps the version it was built with, since its postings hold that version's
terms; ``ragline index build`` re-indexes into the current one."""
KNOWN_VERSIONS = (2, 3, 4)


class MultiAnalyzer:
    """Per-document language analysis for a collection.

    Documents are analyzed with the analyzer of their language (``default`` when it is
    unknown); queries as :meth:`query_terms` says.
    """

    def __init__(self, default: str = "english", version: int = ANALYSIS_VERSION) -> None:
        if version not in KNOWN_VERSIONS:
            raise ConfigError(
                f"unknown analysis version {version}; this ragline knows "
                + ", ".join(map(str, KNOWN_VERSIONS))
            )
        self.default = default
        self.version = version
        get_analyzer(default)  # validate early

    @classmethod
    def from_name(cls, name: str) -> MultiAnalyzer | None:
        """The analyzer a collection's stored ``name`` (``multilingual-v3:english``) means;
        None for a name that is not a multilingual analyzer's."""
        m = re.fullmatch(r"multilingual-v(\d+):(.+)", name)
        return cls(m.group(2), int(m.group(1))) if m else None

    @property
    def name(self) -> str:
        return f"multilingual-v{self.version}:{self.default}"

    def for_language(self, code: str | None) -> Analyzer:
        strip = self.version >= 4
        a = analyzer_for_iso(code, self.default, ignorables=strip)
        if self.version >= 3 and a.language in FOLDED:
            return get_analyzer(a.language + FOLDED_SUFFIX, strip)
        return a

    def terms(self, text: str, language: str | None = None) -> list[str]:
        return self.for_language(language).terms(text)

    def query_terms(
        self, text: str, languages: Iterable[str | None] = (), *, detect: bool = False
    ) -> list[str]:
        """BM25 terms of a query over documents in ``languages`` (see :meth:`query_analysis`)."""
        return self.query_analysis(text, languages, detect=detect)[0]

    def query_analysis(
        self, text: str, languages: Iterable[str | None] = (), *, detect: bool = False
    ) -> tuple[list[str], list[str]]:
        """BM25 terms of a query over documents in ``languages`` (ISO codes as stored), and
        the languages it was analyzed in (``default:<name>`` for the default analysis).

        The query is analyzed in each of the languages and in the default one, terms
        unioned. With ``detect`` and several languages, it is analyzed only in those it
        plausibly is in (:func:`~ragline.analysis.language.plausible_languages`; all of
        them when it is too short to tell): a Czech question is not also stemmed as English,
        Hungarian and Dutch, whose stems matched other languages' documents by coincidence
        ("home office" pulled an English policy above the Czech handbook). The terms still
        match every document, so a mostly English document detected as Hungarian is found
        by an English question, and codes (``gt-a17``) are the same in every analysis.
        """
        codes = [c for c in dict.fromkeys(languages) if c and c != UNDETERMINED]
        chosen: list[str | None] = [*codes, None]
        if detect and len(codes) > 1:
            from .language import plausible_languages

            chosen = list(plausible_languages(text, codes))
        seen: dict[str, None] = {}
        analyzers = {id(a): a for a in (self.for_language(code) for code in chosen)}
        for a in analyzers.values():
            for t in a.terms(text):
                seen.setdefault(t, None)
        used = [c if c is not None else f"default:{self.default}" for c in chosen]
        return list(seen), used


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences; keeps abbreviations (e.g., Fig., et al.) together."""
    pieces: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        para = " ".join(para.split())
        if not para:
            continue
        start = 0
        for m in _SENTENCE_END.finditer(para):
            candidate = para[start : m.start()].strip()
            last = candidate.rsplit(" ", 1)[-1].rstrip(".").lower() if candidate else ""
            if last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
                continue
            if candidate:
                pieces.append(candidate)
            start = m.end()
        tail = para[start:].strip()
        if tail:
            pieces.append(tail)
    return pieces


def unique(items: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for i in items:
        seen.setdefault(i, None)
    return list(seen)
