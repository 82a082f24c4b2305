"""Invariants of every chunker, checked on handmade and randomly generated documents.

The generator is a small seeded one (no hypothesis dependency): headings of random
levels with a correct heading path, paragraphs with abbreviations and quotes, lists,
code with blank lines, tables, over-long words, odd whitespace and pages.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from ragline.chunk import RecursiveChunker, SectionChunker, estimate_tokens
from ragline.core.types import Block, Chunk, ParsedDocument

Counter = Callable[[str], int]

_WORDS = [
    "the",
    "a",
    "retrieval",
    "engine",
    "index",
    "vector",
    "query",
    "chunk",
    "token",
    "section",
    "heading",
    "table",
    "PostgreSQL",
    "pgvector",
    "BM25",
    "ranking",
    "fusion",
    "évaluation",
    "données",
    "Привет",
    "мир",
    "42",
    "3.14",
    "e.g.",
    "i.e.",
    "Dr.",
    "Fig.",
    "al.",
    "U.S.",
    "(see",
    "above)",
    '"quoted"',
    "it's",
    "well-known",
    "x",
]


def chars_counter(text: str) -> int:
    """A deliberately non-additive counter: joined strings count more than their parts."""
    return len(text) // 3


def assert_invariants(
    doc: ParsedDocument, chunks: list[Chunk], count: Counter, max_tokens: int
) -> None:
    text = doc.text
    covered = bytearray(len(text))
    starts = [s for s, _ in doc.block_offsets()]
    for i, c in enumerate(chunks):
        assert c.ordinal == i  # (3) ordinals 0..n-1
        assert 0 <= c.char_start < c.char_end <= len(text)
        assert c.text == text[c.char_start : c.char_end]  # (1) exact slice
        assert c.text and c.text == c.text.strip()  # (5) stripped, non-empty
        assert c.token_count == count(c.indexed_text)  # (6)
        assert c.token_count <= max_tokens, (c.token_count, max_tokens, c.indexed_text)  # (4)
        first_block = max(j for j, s in enumerate(starts) if s <= c.char_start)
        assert c.page == doc.blocks[first_block].page  # (8)
        covered[c.char_start : c.char_end] = b"\x01" * (c.char_end - c.char_start)
        if i:
            prev = chunks[i - 1]
            assert prev.char_start < c.char_start  # (3) increasing starts
            assert prev.char_end < c.char_end
            if c.char_start < prev.char_end:  # overlap stays inside one section
                assert c.heading_path == prev.heading_path
    lost = [ch for ch, cov in zip(text, covered) if not cov and not ch.isspace()]
    assert not lost, f"text not covered by any chunk: {''.join(lost)[:80]!r}"  # (2)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(1, 25))]
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice([".", ".", "?", "!", '."', ".)"])


def _paragraph(rng: random.Random) -> str:
    n = rng.choice([1, 2, 3, 5, 8, 20, 60])
    sep = rng.choice([" ", " ", "  ", "\n", "\u00a0"])
    return sep.join(_sentence(rng) for _ in range(n))


def _block(rng: random.Random, path: tuple[str, ...], page: int | None) -> Block:
    kind = rng.choice(["paragraph"] * 5 + ["list", "table", "code", "caption", "weird"])
    if kind == "list":
        lines = [f"{'  ' * rng.randint(0, 2)}- {_sentence(rng)}" for _ in range(rng.randint(1, 30))]
        return Block("list", "\n".join(lines), heading_path=path, page=page)
    if kind == "table":
        cols = rng.randint(1, 5)
        rows = ["| " + " | ".join(rng.choice(_WORDS) for _ in range(cols)) + " |"]
        rows.append("| " + " | ".join(["---"] * cols) + " |")
        for _ in range(rng.randint(0, 80)):
            cells = [
                " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 6))) for _ in range(cols)
            ]
            rows.append("| " + " | ".join(cells) + " |")
        return Block("table", "\n".join(rows), heading_path=path, page=page)
    if kind == "code":
        lines = []
        for _ in range(rng.randint(1, 40)):
            lines.append(
                rng.choice(["", "    return x + 1", "def f(x):", "# comment here", "x = [1, 2, 3]"])
            )
        return Block("code", "\n".join(lines).strip("\n") or "pass", heading_path=path, page=page)
    if kind == "weird":
        choice = rng.randint(0, 3)
        if choice == 0:
            return Block("paragraph", "  \t ", heading_path=path, page=page)
        if choice == 1:  # one over-long "word", e.g. base64 or a URL
            word = "".join(
                rng.choice("abcdefXYZ0123456789+/") for _ in range(rng.randint(50, 3000))
            )
            return Block("paragraph", word, heading_path=path, page=page)
        if choice == 2:
            return Block(
                "paragraph",
                f"  {_paragraph(rng)}\n\n\n {_paragraph(rng)}  ",
                heading_path=path,
                page=page,
            )
        return Block("paragraph", "", heading_path=path, page=page)
    return Block(kind, _paragraph(rng), heading_path=path, page=page)


def random_document(seed: int, *, headings: bool | None = None) -> ParsedDocument:
    rng = random.Random(seed)
    if headings is None:
        headings = rng.random() < 0.8
    stack: list[tuple[int, str]] = []
    blocks: list[Block] = []
    page: int | None = 1 if rng.random() < 0.5 else None
    for _ in range(rng.randint(1, 60)):
        if page is not None and rng.random() < 0.15:
            page += 1
        path = tuple(t for _, t in stack)
        if headings and rng.random() < 0.3:
            level = rng.randint(1, 4)
            title = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 6))).strip()
            while stack and stack[-1][0] >= level:
                stack.pop()
            blocks.append(
                Block(
                    "heading",
                    title,
                    level=level,
                    heading_path=tuple(t for _, t in stack),
                    page=page,
                )
            )
            stack.append((level, title))
        else:
            blocks.append(_block(rng, path, page))
    title = rng.choice(["", "Guide", blocks[0].text[:30] if blocks else "x"])
    return ParsedDocument(title=title, blocks=tuple(blocks), media_type="text/markdown")


COUNTERS: dict[str, Counter] = {"words": estimate_tokens, "chars": chars_counter}


@pytest.mark.parametrize("counter", sorted(COUNTERS))
@pytest.mark.parametrize("seed", range(60))
def test_section_chunker_random_documents(seed: int, counter: str) -> None:
    count = COUNTERS[counter]
    rng = random.Random(seed * 7 + 1)
    max_tokens = rng.choice([16, 24, 40, 64, 128, 254, 512])
    overlap = rng.choice([0, 1, 4, max_tokens // 8, max_tokens // 3])
    doc = random_document(seed)
    chunker = SectionChunker(max_tokens, overlap, count, include_header=rng.random() < 0.8)
    chunks = chunker.chunk(doc)
    assert_invariants(doc, chunks, count, max_tokens)
    assert chunker.chunk(doc) == chunks  # (7) deterministic
    again = SectionChunker(max_tokens, overlap, count, include_header=chunker.include_header)
    assert again.chunk(doc) == chunks


@pytest.mark.parametrize("counter", sorted(COUNTERS))
@pytest.mark.parametrize("seed", range(30))
def test_recursive_chunker_random_documents(seed: int, counter: str) -> None:
    count = COUNTERS[counter]
    rng = random.Random(seed)
    max_tokens = rng.choice([16, 32, 100, 254])
    overlap = rng.choice([0, 3, max_tokens // 4])
    doc = random_document(seed + 1000, headings=rng.random() < 0.5)
    chunks = RecursiveChunker(max_tokens, overlap, count).chunk(doc)
    assert_invariants(doc, chunks, count, max_tokens)
    assert RecursiveChunker(max_tokens, overlap, count).chunk(doc) == chunks


@pytest.mark.parametrize("seed", range(40))
def test_documents_without_headings(seed: int) -> None:
    doc = random_document(seed + 500, headings=False)
    chunks = SectionChunker(64, 8).chunk(doc)
    assert_invariants(doc, chunks, estimate_tokens, 64)
    assert all(c.heading_path == () for c in chunks)


def test_empty_and_blank_documents() -> None:
    for blocks in [
        (),
        (Block("paragraph", ""),),
        (Block("paragraph", " \n\t "), Block("code", "   ")),
    ]:
        doc = ParsedDocument("t", blocks, "text/plain")
        assert SectionChunker().chunk(doc) == []
        assert RecursiveChunker().chunk(doc) == []
