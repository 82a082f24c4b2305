"""What a question asks for, and how loosely its words may match a passage's.

Pure functions behind :class:`~ragline.generate.extractive.ExtractiveAnswerer`:

* codes — identifiers, versions and numbers of the question (``ERR_4021``, ``X-570``,
  ``v2.3.1``, ``$5,000``) are matched literally, never through their parts, and a
  number also matches a range that contains it ("from $2,000.01 to $10,000");
* term variants — two stems that differ only in their last letters ("full" of *full*
  and "fulli" of *fully*, "respond" and "respons") match, as do a number word and its
  digits ("nine", "9");
* answer types — "how long / many / much ...", "when", "what year", "who" name the
  kind of answer wanted; :func:`has_answer_type` tells whether a sentence holds one
  (a number or amount, a date or time, a name) that the question does not already say.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Literal

AnswerType = Literal["duration", "quantity", "time", "year", "entity"]

VARIANT_MIN_PREFIX = 4
"""Stems sharing fewer leading letters are never variants of each other."""

_TOKEN = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\w)|\w(?:[\w.\-/:]*\w)?")
_NUMBER = re.compile(
    r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.,])\d+(?:\.\d+)?(?![\w.]\d)"
)
_RANGE = re.compile(
    r"(?:\b(?:from|between)\s+)?[$€£¥]?\s?(\d[\d,]*(?:\.\d+)?)\s*%?\s*"
    r"(?:to|and|-|–|—)\s*[$€£¥]?\s?(\d[\d,]*(?:\.\d+)?)",
    re.IGNORECASE,
)

NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "hundred": "100"}
"""English number words and their digits (both sides are analyzer terms: unstemmed)."""

# Per language: question patterns naming the answer type, first match wins.
_QUESTION_TYPES: dict[str, list[tuple[re.Pattern[str], AnswerType]]] = {
    "english": [
        (
            re.compile(
                r"\b(?:what|which)\s+(?:year|century|decade)s?\b|\bin\s+what\s+year\b", re.I
            ),
            "year",
        ),
        (re.compile(r"\bhow\s+(?:long|soon|quickly|fast)\b", re.I), "duration"),
        (
            re.compile(
                r"\bhow\s+(?:many|much|often|far|old|big|large|tall|high|wide|deep|heavy"
                r"|frequently)\b|\bwhat\s+(?:percentage|percent|amount|number"
                r"|price|cost|rate|fee|size|speed|temperature|distance)\b",
                re.I,
            ),
            "quantity",
        ),
        (
            re.compile(r"^\s*when\b|[,;]\s*when\b|\bwhat\s+(?:date|day|month|time)\b", re.I),
            "time",
        ),
        (re.compile(r"^\s*(?:who|whom|whose)\b|[,;]\s*(?:who|whom|whose)\b", re.I), "entity"),
    ],
}

_QUANTITY_WORDS = re.compile(
    r"\b(?:" + "|".join(NUMBER_WORDS) + r"|thousand|million|billion|dozens?|half|once|twice"
    r"|every|daily|weekly|monthly|yearly|annually|hourly|several)\b",
    re.I,
)
_TIME = re.compile(
    r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b|\b(?:january|february|march|april|may|june|july|august"
    r"|september|october|november|december|monday|tuesday|wednesday|thursday|friday"
    r"|saturday|sunday|century|centuries|decade|yesterday|today|tomorrow)\b"
    r"|\b\d{1,2}:\d{2}\b|\b\d{1,2}\s?(?:am|pm|a\.m\.|p\.m\.)"
    r"|\b(?:within|after|before|until|by|every|each)\s+(?:\w+\s+){0,2}?"
    r"(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?)\b",
    re.I,
)
_UNITS = (
    r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|h|days?|nights?|weeks?|months?|years?"
    r"|decades?|centuries|business\s+days?|working\s+days?|shifts?|cycles?"
    r"|mm|cm|m|km|metres?|meters?|kilometres?|kilometers?|miles?|feet|foot|ft|inches?|yards?"
    r"|m/s|km/h|mph|knots?)"
)
_DURATION = re.compile(
    r"(?:\d[\d,.]*|\b(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|fifteen|twenty|thirty|forty|fifty|sixty|several|few|hundred|half|a\s+few)\b)"
    r"(?:\s*-\s*|\s+)(?:\w+\s+)?" + _UNITS + r"\b"
    r"|\b(?:immediately|instantly|overnight|same\s+day|next\s+(?:business\s+)?day)\b",
    re.I,
)
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})s?\b")
_NAME = re.compile(r"(?<=[\w,;:)] )[A-Z][\w'’\-]*")


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


def code_pattern(code: str) -> re.Pattern[str]:
    """Where ``code`` occurs as a whole token (``2.3`` does not match in ``2.3.1``)."""
    return re.compile(r"(?<![\w.\-])" + re.escape(code) + r"(?![\w]|[.\-]\w)", re.IGNORECASE)


def number_value(token: str) -> float | None:
    """The value of a plain number token (``5,000``, ``$2,000.01``), else None."""
    token = token.lstrip("$€£¥").rstrip("%")
    if not re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?", token):
        return None
    return float(token.replace(",", ""))


def in_a_range(text: str, value: float) -> bool:
    """Whether ``text`` states a range ("from 2,000 to 10,000", "40-60") holding ``value``."""
    for m in _RANGE.finditer(text):
        low, high = number_value(m.group(1)), number_value(m.group(2))
        if low is not None and high is not None and low < high and low <= value <= high:
            return True
    return False


def numbers_in(text: str) -> set[float]:
    """The values of the plain numbers written in ``text``."""
    out = set()
    for m in _NUMBER.finditer(text):
        v = number_value(m.group(0))
        if v is not None:
            out.add(v)
    return out


def is_variant(a: str, b: str) -> bool:
    """Whether analyzer terms ``a`` and ``b`` are forms of one word (or number)."""
    if a == b:
        return False
    if NUMBER_WORDS.get(a) == b or NUMBER_WORDS.get(b) == a:
        return True
    if not (a.isalpha() and b.isalpha()) or a[:VARIANT_MIN_PREFIX] != b[:VARIANT_MIN_PREFIX]:
        return False
    n = VARIANT_MIN_PREFIX
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    extra = len(a) + len(b) - 2 * n
    return extra <= 1 or (n >= 5 and extra <= 2)


VERB_PREFIXES = {
    "hungarian": ("meg", "el", "ki", "be", "fel", "le", "at", "vissza", "ossze", "ra", "szet"),
    "dutch": ("ge", "be", "ver", "ont", "her", "schoon", "op", "af", "uit", "in"),
    "czech": ("vy", "na", "po", "za", "pro", "pre", "od", "do", "roz", "pri", "vz"),
}
"""Verbal prefixes per analyzer language (accents folded as the analyzer folds them): a
stem with one of them is a form of the stem without it ("megtisztít", "tisztít"), which
Snowball, stemming only the end of a word, leaves apart."""
PREFIX_MIN_REST = 4
"""What is left after a prefix must have at least this many letters."""


def variant_finder(
    terms: Collection[str], prefixes: Collection[str] = ()
) -> Callable[[str], list[str]]:
    """A function giving, for an analyzer term, the ``terms`` it is a variant of
    (``prefixes``: verbal prefixes that may come and go, see :data:`VERB_PREFIXES`)."""
    by_prefix: dict[str, list[str]] = {}
    stripped: dict[str, list[str]] = {}  # a question term without its verbal prefix

    def key_of(t: str) -> str:
        return NUMBER_WORDS.get(t, t if t.isdigit() else t[:VARIANT_MIN_PREFIX])

    def bare(t: str) -> list[str]:
        return [
            t[len(p) :]
            for p in prefixes
            if t.startswith(p) and len(t) - len(p) >= PREFIX_MIN_REST and t[len(p) :].isalpha()
        ]

    for t in terms:
        by_prefix.setdefault(key_of(t), []).append(t)
        for b in bare(t):
            stripped.setdefault(b, []).append(t)
    cache: dict[str, list[str]] = {}

    def close(term: str) -> list[str]:
        return [t for t in by_prefix.get(key_of(term), ()) if is_variant(t, term)]

    def find(term: str) -> list[str]:
        found = cache.get(term)
        if found is None:
            out = dict.fromkeys(close(term))
            if prefixes:
                for b in bare(term):  # "megtisztit" of the passage, "tisztit" asked
                    out.update(dict.fromkeys(t for t in terms if t == b))
                    out.update(dict.fromkeys(close(b)))
                for t in stripped.get(term, ()):  # the other way round
                    out[t] = None
            out.pop(term, None)
            found = cache[term] = list(out)
        return found

    return find


def answer_type(question: str, language: str = "english") -> AnswerType | None:
    """The kind of answer ``question`` asks for, where its wording says so."""
    for pattern, kind in _QUESTION_TYPES.get(language, []):
        if pattern.search(question):
            return kind
    return None


def has_answer_type(
    kind: AnswerType, text: str, question_numbers: Collection[float], question_words: str
) -> bool:
    """Whether ``text`` holds an answer of ``kind`` that the question does not state.

    ``question_numbers`` are the values of the question's numbers and
    ``question_words`` its case-folded text: repeating them is not answering.
    """
    if kind == "entity":
        return any(m.group(0).casefold() not in question_words for m in _NAME.finditer(text))
    if kind == "year":
        return any(float(y) not in question_numbers for y in _YEAR.findall(text))
    if kind == "duration":
        return any(
            float(v) not in question_numbers if (v := number_value(m.group(0).split()[0])) else True
            for m in _DURATION.finditer(text)
        )
    if kind == "time":
        return any(m.group(0).casefold() not in question_words for m in _TIME.finditer(text))
    return any(v not in question_numbers for v in numbers_in(text)) or bool(
        _QUANTITY_WORDS.search(text)
    )
