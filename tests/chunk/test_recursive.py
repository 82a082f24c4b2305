"""Offset-preserving splitting, packing with overlap, and RecursiveChunker."""

from __future__ import annotations

import itertools

import pytest

from ragline.chunk import RecursiveChunker, estimate_tokens
from ragline.chunk.recursive import (
    LINE,
    PARAGRAPH,
    SENTENCE,
    WORD,
    pack,
    split_span,
    strip_span,
    subspans,
)
from ragline.core.errors import ConfigError
from ragline.core.types import Block, ParsedDocument

from .test_invariants import assert_invariants


def words(text: str) -> int:
    return len(text.split())


def test_estimate_tokens_is_words_times_1_3_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("   \n") == 0
    assert estimate_tokens("one") == 2
    assert estimate_tokens(" ".join(["w"] * 10)) == 13  # exact, no float rounding up to 14
    assert estimate_tokens(" ".join(["w"] * 100)) == 130


def test_strip_span() -> None:
    text = "  ab c \n"
    assert strip_span(text, 0, len(text)) == (2, 6)
    assert strip_span(text, 0, 2) == (0, 0)


def _texts(text: str, level: int) -> list[str]:
    spans = subspans(text, 0, len(text), level)
    return [text[s:e] for s, e in spans]


def test_sentence_spans_keep_offsets_and_abbreviations() -> None:
    text = (
        'Dr. Smith arrived. He said "Hi." Then he left!  See Fig. 3 for e.g. details. '
        "J. Doe agreed? (Yes.) Done"
    )
    assert _texts(text, SENTENCE) == [
        "Dr. Smith arrived.",
        'He said "Hi."',
        "Then he left!",
        "See Fig. 3 for e.g. details.",
        "J. Doe agreed?",
        "(Yes.)",
        "Done",
    ]


def test_paragraph_line_and_word_spans() -> None:
    text = "a b\n  c\n \t\n\nd e\n"
    assert _texts(text, PARAGRAPH) == ["a b\n  c", "d e"]
    assert _texts(text, LINE) == ["a b", "c", "d e"]
    assert _texts(text, WORD) == ["a", "b", "c", "d", "e"]


def test_split_span_prefers_coarse_boundaries() -> None:
    para1 = "One two three. Four five six."
    para2 = "Seven eight. Nine ten eleven twelve thirteen."
    text = f"{para1}\n\n{para2}"
    pieces = split_span(text, 0, len(text), 6, words)
    assert [text[s:e] for s, e, _ in pieces] == [
        para1,
        "Seven eight.",
        "Nine ten eleven twelve thirteen.",
    ]
    assert all(t == words(text[s:e]) for s, e, t in pieces)
    # A single word over budget is cut into characters.
    long = "x" * 40
    cut = split_span(long, 0, 40, 3, lambda t: len(t) // 4)
    assert "".join(long[s:e] for s, e, _ in cut) == long
    assert all(t <= 3 for _, _, t in cut)


def test_pack_overlaps_with_whole_sentences() -> None:
    sentences = [f"Sentence number {i} has exactly seven words." for i in range(40)]
    text = " ".join(sentences)
    pieces = split_span(text, 0, len(text), 30, words, level=SENTENCE)
    spans = pack(text, pieces, lambda _pos: 30, 15, words)
    assert len(spans) > 5
    for (s1, e1, _), (s2, e2, t2) in itertools.pairwise(spans):
        assert s1 < s2 < e1  # overlapping
        overlap = text[s2:e1]
        assert overlap in sentences or overlap in [
            f"{a} {b}" for a, b in itertools.pairwise(sentences)
        ]
        assert words(overlap) <= 15
        assert t2 <= 30


def test_pack_overlap_falls_back_to_words() -> None:
    text = " ".join(f"w{i}" for i in range(100))  # one long "sentence"
    pieces = split_span(text, 0, len(text), 20, words)
    spans = pack(text, pieces, lambda _pos: 20, 5, words)
    for (_, e1, _), (s2, _, _) in itertools.pairwise(spans):
        assert words(text[s2:e1]) == 5
    assert all(words(text[s:e]) <= 20 for s, e, _ in spans)


def test_no_overlap_when_zero() -> None:
    text = " ".join(f"Sentence {i} is here." for i in range(200))
    chunks = RecursiveChunker(32, 0, words).split(text)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(chunks))


def test_paragraph_boundary_preferred_over_fill() -> None:
    p1 = " ".join(["alpha"] * 12) + "."
    p2 = " ".join(["beta"] * 12) + "."
    text = f"{p1}\n\n{p2}"
    spans = RecursiveChunker(20, 0, words).split(text)
    assert [text[s:e] for s, e, _, _ in spans] == [p1, p2]


def test_recursive_chunker_document() -> None:
    body = "\n\n".join(" ".join(f"Sentence {i}.{j} is here." for j in range(30)) for i in range(5))
    doc = ParsedDocument(
        "Notes",
        (Block("paragraph", "Intro.", page=1), Block("paragraph", body, page=2)),
        "text/plain",
    )
    chunker = RecursiveChunker(60, 8)
    chunks = chunker.chunk(doc)
    assert_invariants(doc, chunks, estimate_tokens, 60)
    assert all(c.header == "Notes" and c.heading_path == () for c in chunks)
    assert chunks[0].page == 1 and chunks[-1].page == 2
    assert chunker.name == "recursive-v1:60:8"
    assert RecursiveChunker(60, 8, include_header=False).chunk(doc)[0].header == ""


@pytest.mark.parametrize("max_tokens, overlap", [(0, 0), (10, 10), (10, -1)])
def test_invalid_limits_are_config_errors(max_tokens: int, overlap: int) -> None:
    with pytest.raises(ConfigError, match="max_tokens|overlap_tokens"):
        RecursiveChunker(max_tokens, overlap)
