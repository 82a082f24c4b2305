"""Abstention notes print numbers that agree with the comparison they report."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from ragline.generate import ExtractiveAnswerer
from ragline.generate.extractive import below


def test_the_rounding_case_of_the_report():
    assert below(0.5496, 0.55) == "0.5496 is below the abstention threshold 0.55"
    assert below(0.548, 0.55) == "0.548 is below the abstention threshold 0.55"
    assert below(0.43, 0.55) == "0.43 is below the abstention threshold 0.55"


@given(
    st.floats(0.0, 1.0, allow_nan=False),
    st.floats(0.0, 1.0, allow_nan=False).map(lambda t: round(t, 3)),
)
def test_shown_evidence_is_below_the_shown_threshold(evidence, threshold):
    if not evidence < threshold or threshold - evidence < 1e-6:
        return
    shown, limit = re.fullmatch(
        r"(\d\.\d+) is below the abstention threshold (\d\.\d+)", below(evidence, threshold)
    ).groups()
    assert float(shown) < float(limit)


def test_an_answerer_note_never_says_equal_numbers():
    from ragline.core.types import Hit

    hit = Hit(1, 1, "d", "Doc", "d.md", "Ducks eat plants and small insects.", 1.0, 1)
    a = ExtractiveAnswerer(min_evidence=1.0).answer("What do geese eat in winter?", [hit])
    assert a.abstained
    shown, limit = re.search(
        r"(\d\.\d+) is below the abstention threshold (\d\.\d+)", a.notes[0]
    ).groups()
    assert float(shown) < float(limit)
