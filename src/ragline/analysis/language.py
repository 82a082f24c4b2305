"""Offline language detection: which language a document or query is written in.

The guess picks the Snowball stemmer for BM25 (:data:`SNOWBALL_BY_ISO`) and the
Tesseract model for OCR (:func:`iso_to_tesseract`). Nothing is downloaded: the model
ships inside the detector's wheel, and nothing is loaded until the first call.

Detector: ``py3langid`` 0.4 (BSD-3-Clause; 4.6 MB pure-Python wheel, needs numpy,
which ragline already has; 140 labels including ``uk``, ``sk`` and ``zxx`` for "no
language"; deterministic, nothing random to seed). Chosen over ``langdetect`` 1.0.9
(Apache-2.0, sdist only, randomized unless seeded) and ``cld3-py`` 3.1 (Apache-2.0,
compiled, a single-maintainer fork of Google's CLD3), measured on the paragraphs and
queries in ``tests/analysis/test_language.py`` (16 paragraphs of 1-3 sentences and 4
one-line queries in each of en, hu, cs, sk, nl, uk, ru, de, fr, pl):

==============================  ============  ============  ============
(2-core machine)                py3langid     langdetect    cld3-py
==============================  ============  ============  ============
paragraphs right (of 160)       160           160           160
queries right (of 40)           40            36            34
single sentences, worst lang    1.00          0.84 (nl)     0.97 (sk)
four-word fragments, worst      0.88 (nl)     0.69 (nl)     0.75 (sk)
restricting to candidates       exact         via priors    not possible
first call (import + model)     ~1 s          ~0.5 s        ~2 ms
per paragraph / 3000 chars      0.2 / 0.8 ms  2.8 / 7.7 ms  0.07 / 1.1 ms
==============================  ============  ============  ============

Through :func:`detect_language` (sampling and prose filter included) a paragraph takes
~0.7 ms and a 2 MB document ~7 ms.

py3langid is the most accurate on short text (where Czech/Slovak and Russian/Ukrainian
are told apart least easily) and gives a full posterior, so ``candidates`` renormalizes
it exactly. Its one cost is importing numpy and decompressing the model, once per
process (~1 s, then cached): hence the lazy import, so importing this module is free.

Only a sample of the text is read (:data:`SAMPLE_CHARS`, taken from the beginning,
middle and end), and lines that look like code, markup or tables are dropped first:
what is left must be mostly prose, or the answer is ``"und"``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..core.errors import ConfigError, MissingDependencyError

if TYPE_CHECKING:
    import numpy as np

UNDETERMINED = "und"
"""The code returned when the text has no (detectable) language: ISO 639-2 "undetermined"."""

SAMPLE_CHARS = 3000
"""At most this many characters are examined: a third each from start, middle and end."""

MIN_LETTERS = 8
"""Fewer letters of prose than this is too short to tell."""

MIN_PROSE_SHARE = 0.5
"""At least this share of the sample's visible characters must be letters of prose lines."""

MIN_CONFIDENCE = 0.2
"""Below this posterior the detector is guessing; the answer is ``"und"``."""

PLAUSIBLE_SHARE = 0.1
"""A query may be in a language whose posterior is at least this share of the likeliest's."""

# ISO 639-1 code -> PyStemmer algorithm (PyStemmer >= 3.0 for czech, polish, estonian,
# esperanto, persian, sesotho). Languages without a Snowball stemmer are absent.
SNOWBALL_BY_ISO: dict[str, str] = {
    "ar": "arabic",
    "ca": "catalan",
    "cs": "czech",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "en": "english",
    "eo": "esperanto",
    "es": "spanish",
    "et": "estonian",
    "eu": "basque",
    "fa": "persian",
    "fi": "finnish",
    "fr": "french",
    "ga": "irish",
    "hi": "hindi",
    "hu": "hungarian",
    "hy": "armenian",
    "id": "indonesian",
    "it": "italian",
    "lt": "lithuanian",
    "nb": "norwegian",
    "ne": "nepali",
    "nl": "dutch",
    "nn": "norwegian",
    "no": "norwegian",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "st": "sesotho",
    "sv": "swedish",
    "ta": "tamil",
    "tr": "turkish",
    "yi": "yiddish",
}

# ISO 639-1 code -> Tesseract traineddata name (mostly ISO 639-2/T).
_TESSERACT_BY_ISO: dict[str, str] = {
    "af": "afr", "am": "amh", "ar": "ara", "as": "asm", "az": "aze", "be": "bel",
    "bg": "bul", "bn": "ben", "bo": "bod", "br": "bre", "bs": "bos", "ca": "cat",
    "co": "cos", "cs": "ces", "cy": "cym", "da": "dan", "de": "deu", "dv": "div",
    "dz": "dzo", "el": "ell", "en": "eng", "eo": "epo", "es": "spa", "et": "est",
    "eu": "eus", "fa": "fas", "fi": "fin", "fo": "fao", "fr": "fra", "fy": "fry",
    "ga": "gle", "gd": "gla", "gl": "glg", "gu": "guj", "he": "heb", "hi": "hin",
    "hr": "hrv", "ht": "hat", "hu": "hun", "hy": "hye", "id": "ind", "is": "isl",
    "it": "ita", "iu": "iku", "ja": "jpn", "jv": "jav", "ka": "kat", "kk": "kaz",
    "km": "khm", "kn": "kan", "ko": "kor", "ku": "kmr", "ky": "kir", "la": "lat",
    "lb": "ltz", "lo": "lao", "lt": "lit", "lv": "lav", "mi": "mri", "mk": "mkd",
    "ml": "mal", "mn": "mon", "mr": "mar", "ms": "msa", "mt": "mlt", "my": "mya",
    "nb": "nor", "ne": "nep", "nl": "nld", "nn": "nor", "no": "nor", "oc": "oci",
    "or": "ori", "pa": "pan", "pl": "pol", "ps": "pus", "pt": "por", "qu": "que",
    "ro": "ron", "ru": "rus", "sa": "san", "sd": "snd", "si": "sin", "sk": "slk",
    "sl": "slv", "sq": "sqi", "sr": "srp", "su": "sun", "sv": "swe", "sw": "swa",
    "ta": "tam", "te": "tel", "tg": "tgk", "th": "tha", "ti": "tir", "tl": "tgl",
    "to": "ton", "tr": "tur", "tt": "tat", "ug": "uig", "uk": "ukr", "ur": "urd",
    "uz": "uzb", "vi": "vie", "yi": "yid", "yo": "yor", "zh": "chi_sim",
}  # fmt: skip

_NO_LANGUAGE = "zxx"  # py3langid's label for text with no linguistic content
_LETTERS = re.compile(r"[^\W\d_]+")
_SPACE = re.compile(r"\s")
_URL_OR_EMAIL = re.compile(r"(?:https?://|www\.)\S+|\S+@\S+\.\w+", re.IGNORECASE)
_URL = re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE)  # the same without an "@"
_INLINE_CODE = re.compile(r"`[^`]*`")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")  # [text](target) and ![alt](image)
_MARKDOWN_INLINE = re.compile(r"[*|]+")  # emphasis and table bars
_LINE_MARKER = re.compile(r"^\s*(?:[-+>#]+|\d+[.)])\s+")  # list, heading, quote
_ATTRIBUTE = re.compile(r"\w{2,}\.[^\W\d_]")  # obj.attr
_CODE_CHARS = frozenset("{}[]<>=;_\\&$@^~`/()")
_MAX_CODE_CHAR_SHARE = 0.1  # per line; prose rarely has more than a parenthesis or two


@dataclass(frozen=True)
class LanguageGuess:
    """The detected language of a text.

    ``code`` is ISO 639-1 (``"en"``, ``"uk"``) or ``"und"``; ``confidence`` is the
    detector's posterior in 0..1 among the languages considered (0 for ``"und"``);
    ``stemmer`` is the PyStemmer algorithm for ``code``, or None where there is none.
    """

    code: str
    confidence: float
    stemmer: str | None

    @property
    def is_known(self) -> bool:
        return self.code != UNDETERMINED


_UNKNOWN = LanguageGuess(UNDETERMINED, 0.0, None)


def detect_language(text: str, *, candidates: Sequence[str] | None = None) -> LanguageGuess:
    """Guess the language of ``text``, offline and deterministically.

    ``candidates`` (ISO 639-1 codes) restricts the answer to those languages, for a
    corpus known to hold only a few; the confidence is then relative to them. Text that
    is empty, too short, or mostly code, numbers or markup gives ``"und"``.
    """
    allowed = None if candidates is None else _check_candidates(candidates)
    prose = _prose_sample(text)
    if prose is None:
        return _UNKNOWN
    ranked: list[tuple[str, float]] = _identifier().rank(prose)
    if ranked[0][0] == _NO_LANGUAGE:
        return _UNKNOWN
    if allowed is not None:
        ranked = [(code, p) for code, p in ranked if code in allowed]
        total = sum(p for _, p in ranked)
        if total <= 0.0:
            return _UNKNOWN
        ranked = [(code, p / total) for code, p in ranked]
    code, confidence = ranked[0]
    if confidence < MIN_CONFIDENCE:
        return _UNKNOWN
    return LanguageGuess(code, round(float(confidence), 4), SNOWBALL_BY_ISO.get(code))


def plausible_languages(text: str, candidates: Sequence[str]) -> tuple[str, ...]:
    """The ``candidates`` (ISO 639-1 codes, e.g. a collection's languages) ``text`` may be
    written in, in their given order.

    A candidate stays when its posterior is at least :data:`PLAUSIBLE_SHARE` of the
    likeliest candidate's. Every candidate stays when the text is too short or has too
    little prose to tell ("GT-A17", "v2.3.1"), and so does any code the detector does not
    know (``und``, a declared ``xx``): nothing is ruled out on a guess.
    """
    known = _known_codes()
    judged = [c for c in candidates if c in known]
    if len(judged) < 2:
        return tuple(candidates)
    prose = _prose_sample(text)
    if prose is None:
        return tuple(candidates)
    posterior = dict(_identifier().rank(prose))
    top = max(posterior.get(c, 0.0) for c in judged)
    if top <= 0.0:
        return tuple(candidates)
    return tuple(
        c for c in candidates if c not in known or posterior.get(c, 0.0) >= PLAUSIBLE_SHARE * top
    )


def iso_to_tesseract(code: str) -> str:
    """The Tesseract language name for an ISO 639-1 code (``"cs"`` -> ``"ces"``).

    Chinese maps to simplified script (``chi_sim``). Raises :class:`ConfigError` for a
    code Tesseract has no model for, including ``"und"``.
    """
    key = code.strip().lower().replace("_", "-").split("-")[0]
    try:
        return _TESSERACT_BY_ISO[key]
    except KeyError:
        raise ConfigError(
            f"no Tesseract language for {code!r}; pass an ISO 639-1 code, one of: "
            + ", ".join(sorted(_TESSERACT_BY_ISO))
        ) from None


def _sample(text: str, limit: int = SAMPLE_CHARS) -> list[str]:
    """Up to ``limit`` characters: equal windows at the start, middle and end of ``text``."""
    if len(text) <= limit:
        return [text]
    width = limit // 3
    starts = (0, (len(text) - width) // 2, len(text) - width)
    windows = []
    for start in starts:
        end = start + width
        window = text[start:end]
        # cut at whitespace so that no window starts or ends inside a word
        if start > 0 and not text[start - 1].isspace():
            first = _SPACE.search(window)
            window = window[first.end() :] if first else ""
        if end < len(text) and not text[end].isspace():
            last = max(window.rfind(ch) for ch in " \n\t")
            window = window[:last] if last >= 0 else ""
        windows.append(window)
    return windows


def _prose_sample(text: str) -> str | None:
    """The prose lines of a sample of ``text`` with Markdown markup stripped, or None
    when they hold fewer than :data:`MIN_LETTERS` letters or under
    :data:`MIN_PROSE_SHARE` of all the sample's letters (code, tables, numbers)."""
    prose_lines: list[str] = []
    prose_letters = all_letters = 0
    for window in _sample(text):
        in_fence = False  # fences are tracked within one window of the sample
        for raw in window.splitlines():
            all_letters += _count_letters(raw)
            if raw.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            line = _strip_markup(raw)
            if line and not _looks_like_code(raw, line):
                prose_lines.append(line)
                prose_letters += _count_letters(line)
    if prose_letters < MIN_LETTERS or prose_letters < MIN_PROSE_SHARE * all_letters:
        return None
    return "\n".join(prose_lines)


def _count_letters(line: str) -> int:
    return sum(map(len, _LETTERS.findall(line)))


def _strip_markup(line: str) -> str:
    """``line`` without inline code, link targets, URLs, e-mail addresses and Markdown
    emphasis, table bars, headings, quotes and list markers."""
    # each pattern is tried only where its literal can occur: most lines hold none, and
    # the e-mail branch backtracks through every word
    if "`" in line:
        line = _INLINE_CODE.sub(" ", line)
    if "[" in line:
        line = _LINK.sub(r"\1", line)
    line = (_URL_OR_EMAIL if "@" in line else _URL).sub(" ", line)
    if "*" in line or "|" in line:
        line = _MARKDOWN_INLINE.sub(" ", line)
    return _LINE_MARKER.sub("", line).strip()


def _looks_like_code(raw: str, line: str) -> bool:
    """Whether a line (``raw``, and ``line`` its markup-stripped text) is code or data."""
    chars = len("".join(line.split()))
    code_chars = sum(map(line.count, _CODE_CHARS))  # C loops: ~8x the genexpr's speed
    if _count_letters(line) < 0.6 * chars or code_chars > _MAX_CODE_CHAR_SHARE * chars:
        return True
    # an indented line is code when it has any trace of syntax (Python, YAML bodies)
    return raw.startswith(("    ", "\t")) and (
        code_chars > 0 or line.endswith(":") or _ATTRIBUTE.search(line) is not None
    )


def _check_candidates(candidates: Sequence[str]) -> frozenset[str]:
    if isinstance(candidates, str):
        raise ConfigError(f"candidates must be a list of codes, not the string {candidates!r}")
    allowed = frozenset(c.strip().lower() for c in candidates)
    known = _known_codes()
    unknown = sorted(allowed - known)
    if not allowed or unknown:
        what = f"unknown language codes {unknown}" if unknown else "no candidate languages"
        raise ConfigError(f"{what}; choose among these codes: " + ", ".join(sorted(known)))
    return allowed


DFA_DEPTH = 6
"""The longest byte string a state of py3langid 0.4's automaton stands for. Its features are
byte n-grams and the automaton is Aho-Corasick's: the state after any text is the state
after the text's last ``DFA_DEPTH`` bytes, read from the start (tests/analysis checks it
against the model by a search from the start state)."""


def feature_counts(
    nextmove: np.ndarray, rowbase: np.ndarray, output: np.ndarray, text: bytes
) -> tuple[np.ndarray, np.ndarray]:
    """The features of the automaton that occur in ``text``, in the order of first
    occurrence, and how often each does: py3langid's ``visit_counts`` (a Counter), with
    every position walked at once.

    py3langid walks the bytes one at a time in Python. Since a position's state depends
    only on the last :data:`DFA_DEPTH` bytes, it is :data:`DFA_DEPTH` gathers over all
    positions instead: with the scoring that follows, a third less CPU per document
    (measured in bench/README.md, stop 36), all of it taken from the model beside it
    during an ingest."""
    import numpy as np  # lazily, as the detector itself

    x = np.frombuffer(text, dtype=np.uint8)
    n = len(x)
    state = np.zeros(n, dtype=np.int64)
    for lag in range(min(DFA_DEPTH, n) - 1, -1, -1):
        # every position i >= lag reads byte i - lag; earlier ones are still at the start
        state[lag:] = nextmove.take(rowbase.take(state[lag:]) + x[: n - lag])
    features = output.take(state)
    features = features[features >= 0]
    if len(features) == 0:
        return features, features
    order = np.argsort(features, kind="stable")
    ordered = features[order]
    first = np.empty(len(ordered), dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    counts = np.diff(np.append(starts, len(ordered)))
    seen = np.argsort(order[starts])  # the order of first occurrence, as Counter keeps it
    return ordered[starts][seen], counts[seen]


def _load_identifier() -> Any:
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError as e:
        raise MissingDependencyError(
            "py3langid is not available - install it (pip install 'py3langid>=0.4,<0.5') "
            "to enable language detection"
        ) from e

    import numpy as np

    class _Identifier(LanguageIdentifier):
        """py3langid's identifier, its automaton walked by :func:`feature_counts`
        (the same counts in the same order, so the same scores to the bit; an upgrade
        of py3langid that changes them fails tests/analysis/test_language.py)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            nextmove = self.tk_nextmove
            self._nextmove = (
                np.frombuffer(nextmove, dtype=np.dtype(nextmove.typecode))
                if hasattr(nextmove, "typecode")
                else np.asarray(nextmove)
            )
            self._rowbase_np = np.asarray(self.tk_row, dtype=np.int64) << 8
            self._output_np = np.asarray(self.tk_output, dtype=np.int64)

        def _raw_score(self, text: bytes) -> Any:
            found, counts = feature_counts(self._nextmove, self._rowbase_np, self._output_np, text)
            if len(found) == 0:
                return super()._raw_score(b"")  # no feature: py3langid's own fill
            # py3langid's _sparse_score, from the arrays instead of a Counter
            return np.log1p(counts.astype(np.float32)) @ self.nb_ptc[found] + self.nb_pc

    return _Identifier.from_model_file(MODEL_FILE, norm_probs=True)


def warm_up() -> None:
    """Load the detector now (about 0.75 s), not on the first document or query."""
    _identifier()


@lru_cache(maxsize=1)
def _known_codes() -> frozenset[str]:
    """The language codes the detector can answer (computed once, not per query)."""
    return frozenset(_identifier().labels) - {_NO_LANGUAGE}


@lru_cache(maxsize=1)
def _identifier() -> Any:
    """The detector, loaded once per process (about 0.75 s to decompress its model)."""
    return _load_identifier()
