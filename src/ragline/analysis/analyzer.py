"""The lexical analyzer behind BM25.

NFKC normalization → casefold → Unicode word tokenization → stop words → Snowball
stemming (PyStemmer). The same :class:`Analyzer` runs at index and at query time, so
a term matches exactly when both sides produce the same string. Languages plug in
through :func:`get_analyzer`; English is the default.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

from ..core.errors import ConfigError
from .stopwords import STOPWORDS

# Words are runs of letters/digits, joined by inner apostrophes or hyphens are split.
_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9\u00C0-\u024F\u0400-\u04FF])")
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs al fig figs eq eqs no nos dr mr mrs ms prof st inc ltd co approx ca cf".split()
)


class Analyzer:
    """Turns text into index terms for one language.

    ``language`` is a PyStemmer algorithm name (``english``, ``hungarian``, ...).
    Stemming results are cached per word: the same word always maps to the same term.
    """

    def __init__(self, language: str = "english") -> None:
        import Stemmer  # PyStemmer; light, but keep `import ragline` free of it

        if language not in Stemmer.algorithms():
            raise ConfigError(
                f"no stemmer for language {language!r}; choose one of: "
                + ", ".join(sorted(Stemmer.algorithms()))
            )
        self.language = language
        self._stemmer = Stemmer.Stemmer(language)
        self._stop = STOPWORDS.get(language, frozenset())
        self._stem_cache: dict[str, str] = {}

    @property
    def name(self) -> str:
        """Identity stored with a collection: changing it means re-indexing."""
        return f"snowball-{self.language}-v1"

    def words(self, text: str) -> list[str]:
        """Normalized, case-folded words of ``text`` (before stop words and stemming)."""
        return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())

    def terms(self, text: str) -> list[str]:
        """Index terms in order of occurrence (duplicates kept)."""
        out: list[str] = []
        cache = self._stem_cache
        for w in self.words(text):
            if w in self._stop or (len(w) == 1 and not w.isdigit()):
                continue
            t = cache.get(w)
            if t is None:
                t = self._stemmer.stemWord(w)
                if len(cache) < 500_000:
                    cache[w] = t
            out.append(t)
        return out

    def term_frequencies(self, text: str) -> Counter[str]:
        return Counter(self.terms(text))


@lru_cache(maxsize=16)
def get_analyzer(language: str = "english") -> Analyzer:
    """The shared analyzer for ``language`` (one per process)."""
    return Analyzer(language)


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
