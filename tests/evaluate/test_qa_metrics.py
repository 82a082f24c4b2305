"""Answer matching of `eval qa`: SQuAD normalization, whole words, punctuation as a break."""

from __future__ import annotations

import pytest

from ragline.evaluate.qa import contains_answer, normalize_answer, token_f1


@pytest.mark.parametrize(
    ("text", "answers", "found"),
    [
        ("The Normans were led by Rollo.", ["Rollo"], True),
        ("Rollo's descendants", ["Rollo"], True),  # glued to a possessive
        ("today mostly Afrikaans-speaking", ["Afrikaans"], True),  # glued to a hyphen
        ("the U.S. Army", ["U.S."], True),
        ("It holds 10 hours of charge", ["10 hours"], True),
        ("a catalogue of cats", ["cat"], False),  # whole words only
        ("nothing relevant", ["Rollo", "Normandy"], False),
        ("", ["x"], False),
    ],
)
def test_contains_answer(text, answers, found):
    assert contains_answer(text, answers) is found


def test_official_normalization_and_f1_unchanged():
    assert normalize_answer("The  Rollo's, men!") == "rollos men"
    assert token_f1("Rollo the Walker", ["Rollo"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("nothing", ["Rollo"]) == 0.0
