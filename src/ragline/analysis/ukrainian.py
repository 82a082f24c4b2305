"""A light stemmer for Ukrainian, which has no Snowball stemmer.

:func:`stem_uk` strips inflectional endings so that the case and number forms of a
noun or adjective, and the present/past forms of ``-увати``/``-ювати`` verbs, map to
one term: ``акумулятор``, ``акумулятора``, ``акумулятором`` -> ``акумулятор``;
``зарядка``, ``зарядкою``, ``зарядок`` -> ``зарядк``. It is a pure function of the
word: no dictionary, no state.

Steps: NFKC + casefold, apostrophes removed (``пам'ять`` = ``пам’ять`` = ``памʼять``);
reflexive ``-ся``/``-сь`` off a verb; the longest ending in :data:`ENDINGS` that
leaves at least :data:`MIN_STEM` letters, repeated while one is left (``історі-я``
-> ``істор`` like ``історій``; ``програм-а`` -> ``прогр`` like the genitive plural
``програм``, whose ``-ам`` looks like an ending). A word with no ending (nominative
singular) has its fleeting vowel dropped as the other cases do (``рядок`` ->
``рядк`` like ``рядка``, ``рівень`` -> ``рівн``, ``кінець`` -> ``кінц``, ``вхід`` ->
``вход``); finally a soft sign is dropped and a doubled final consonant is made
single (``рішення``, ``рішень`` -> ``рішен``).

Deliberate limits: infinitives in ``-ати``/``-ити`` keep their ``-т`` (stripping it
would merge plural nouns such as ``результати`` wrongly: ``результат`` matters more
in search than a verb), consonant alternations (``зарядка``/``зарядці``) and most
vowel alternations (``робота``/``робіт``) are not undone, and ``-ість`` nouns share
the stem of their adjective (``потужність``, ``потужний`` -> ``потужн``), which is
what a search wants.
"""

from __future__ import annotations

import unicodedata

MIN_STEM = 3
"""An ending is stripped only when at least this many letters remain."""

_APOSTROPHES = str.maketrans(dict.fromkeys("'\u2019\u2018\u02bc\u0060\u00b4\u02b9"))
_VOWELS = frozenset("аеєиіїоуюя")

# Inflectional endings of nouns and adjectives, the "-ість" abstract-noun suffix, the
# infinitive, present and past endings of -увати/-ювати verbs and the present endings
# of -ати/-яти verbs. Matched longest first.
ENDINGS: tuple[str, ...] = tuple(
    sorted(
        frozenset(
            # nouns and adjectives
            "а я у ю і ї и е є о й"
            " ом ем єм ою ею єю ів їв ам ям ах ях ей"
            " ами ями ові еві єві"
            " ий ій ої ого ому им ім их іх ими іми ього ьому ьою ьої"
            # -ість / -ості abstract nouns
            " ість ості істю остей остям остями остях"
            # verbs: -увати, -ювати
            " увати ювати ував ював увала ювала увало ювало ували ювали"
            " ую юю уєш юєш ує ює уємо юємо уєте юєте ують юють"
            # verbs: present tense of -ати / -яти
            " аю яю аєш яєш ає яє аємо яємо аєте яєте ають яють".split()
        ),
        key=lambda e: (-len(e), e),
    )
)

# Fleeting vowels of bare (nominative singular) stems: (word ending, replacement, min len)
_FLEETING: tuple[tuple[str, str, int], ...] = (
    ("ець", "ц", 6),  # кінець / кінця
    ("вень", "вн", 6),  # рівень / рівня (not -ень at large: рішень is рішення's genitive)
    ("хід", "ход", 4),  # вхід / входу
    ("сіб", "соб", 5),  # спосіб / способу
)


def normalize_uk(word: str) -> str:
    """``word`` in NFKC, casefolded, with its apostrophes removed."""
    return unicodedata.normalize("NFKC", word).casefold().translate(_APOSTROPHES)


def stem_uk(word: str) -> str:
    """The stem of a Ukrainian word: its inflected forms share it (see the module doc).

    Deterministic; short words (:data:`MIN_STEM` letters or fewer) are only normalized.
    """
    w = normalize_uk(word)
    if len(w) <= MIN_STEM or not w.isalpha():
        return w
    w = _strip_reflexive(w)
    stem = _strip_ending(w)
    if stem is None:  # no ending: a bare nominative (or an indeclinable word)
        stem = _drop_fleeting_vowel(w)
    else:
        # Strip again until nothing is left to strip: історі-я -> істор like історій,
        # програм-а -> прогр like програм (gen. pl.), so that stems are fixed points.
        while (shorter := _strip_ending(stem)) is not None:
            stem = shorter
    if stem.endswith("ь") and len(stem) > MIN_STEM:
        stem = stem[:-1]
    if len(stem) > MIN_STEM and stem[-1] == stem[-2] and stem[-1] not in _VOWELS:
        stem = stem[:-1]  # рішенн-я -> рішен, like рішень
    return stem


def _strip_reflexive(w: str) -> str:
    """``w`` without the reflexive particle of a verb (``-ться``, ``-ся``, ``-сь``)."""
    if w.endswith("ться") and len(w) - 4 >= MIN_STEM + 2:
        return w[:-4]  # використовується -> використовує
    if w.endswith(("ся", "сь")) and len(w) - 2 >= MIN_STEM + 2:
        before = w[-3]
        if before in _VOWELS or before == "в" or w[:-2].endswith("ти"):
            return w[:-2]
    return w


def _strip_ending(w: str) -> str | None:
    """``w`` less its longest ending that leaves :data:`MIN_STEM` letters, or None."""
    for ending in ENDINGS:
        if w.endswith(ending) and len(w) - len(ending) >= MIN_STEM:
            return w[: -len(ending)]
    return None


def _drop_fleeting_vowel(w: str) -> str:
    for ending, replacement, min_len in _FLEETING:
        if w.endswith(ending) and len(w) >= min_len:
            return w[: -len(ending)] + replacement
    # рядок / рядка, зарядок (gen. pl.) / зарядка; but блок, урок stay
    if w.endswith("ок") and len(w) >= 5 and w[-3] not in _VOWELS and w[-3] != "ь":
        return w[:-2] + "к"
    return w
