"""Czech stemming that survives inflection and missing diacritics.

:func:`stem_cs` is Snowball's Czech stemmer followed by two normalizations:

1. The consonant and vowel alternations Czech inflection leaves at the end of a stem
   are undone, as Lucene's ``CzechStemmer.normalize`` does (Dolamic & Savoy, "Indexing
   and stemming approaches for the Czech language", IP&M 2009): ``-čt``/``-št`` →
   ``-ck``/``-sk``, a final ``c``/``č`` → ``k`` and ``z``/``ž`` → ``h``, a fleeting
   ``e`` before the last letter dropped, and ``ů`` before the last letter → ``o``. So
   ``práce``, ``práci``, ``prací`` and ``pracovat`` share ``prak``; ``dům``, ``domu`` and
   ``domě`` share ``dom``; ``měsíc`` and ``měsících``, ``heslo`` and ``hesel`` agree,
   which plain Snowball splits.
2. Diacritics are removed, so a query typed without them (``prace z domova``, as many
   Czech users type) matches the document's ``práce z domova``.

Measured on the Czech part of ``eval/multilingual`` (27 questions, e5 + BM25): with the
questions as written, hybrid MRR@10 goes 0.788 → 0.802; with the questions' diacritics
removed, BM25 nDCG@10 0.597 → 0.731 (recall@5 0.667 → 0.815) and hybrid nDCG@10 0.773 →
0.817 (``bench/README.md``).

Snowball's output changes are deliberate trade-offs: ``-c``/``-k`` and ``-z``/``-h``
stems merge (``věc``/``vek`` do not collide in practice) and words that differ only by
diacritics merge (``byt``/``být``), as they do for users who type without them.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache


@lru_cache(maxsize=1)
def _snowball():
    import Stemmer

    return Stemmer.Stemmer("czech").stemWord


def fold_diacritics(text: str) -> str:
    """``text`` without combining marks: ``příliš žluťoučký`` → ``prilis zlutoucky``."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))


def normalize_stem(t: str) -> str:
    """Undo the alternations inflection leaves at the end of a Czech stem (Lucene)."""
    if t.endswith("čt"):
        return t[:-2] + "ck"
    if t.endswith("št"):
        return t[:-2] + "sk"
    if t[-1:] in ("c", "č"):
        t = t[:-1] + "k"
    elif t[-1:] in ("z", "ž"):
        t = t[:-1] + "h"
    if len(t) > 1 and t[-2] == "e":
        return t[:-2] + t[-1]
    if len(t) > 2 and t[-2] == "ů":
        return t[:-2] + "o" + t[-1]
    return t


def stem_cs(word: str) -> str:
    """The term for a case-folded Czech word: Snowball, then :func:`normalize_stem`,
    then :func:`fold_diacritics`."""
    return fold_diacritics(normalize_stem(_snowball()(word)))
