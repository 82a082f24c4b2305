"""SectionChunker: sections, merging, breadcrumbs, tables, headers, pages, speed."""

from __future__ import annotations

import itertools
import random
import time

import pytest

from ragline.chunk import RecursiveChunker, SectionChunker, breadcrumb, estimate_tokens
from ragline.chunk.section import table_header
from ragline.core.errors import ConfigError
from ragline.core.types import Block, ParsedDocument

from .test_invariants import _paragraph, assert_invariants


def words(text: str) -> int:
    return len(text.split())


def H(text: str, level: int, *path: str, page: int | None = None) -> Block:
    return Block("heading", text, level=level, heading_path=tuple(path), page=page)


def P(text: str, *path: str, page: int | None = None) -> Block:
    return Block("paragraph", text, heading_path=tuple(path), page=page)


def doc(*blocks: Block, title: str = "Doc") -> ParsedDocument:
    return ParsedDocument(title=title, blocks=tuple(blocks), media_type="text/markdown")


def sentences(n: int, tag: str = "s") -> str:
    return " ".join(f"This is {tag} sentence number {i}." for i in range(n))  # 6 words each


# -- breadcrumb -----------------------------------------------------------------------


def test_breadcrumb() -> None:
    assert breadcrumb("Guide", ("Install", "Linux")) == "Guide › Install › Linux"
    assert breadcrumb("Guide", ("guide ", "Install")) == "Guide › Install"  # title not repeated
    assert breadcrumb("", ("A", "", "B")) == "A › B"
    assert breadcrumb("T", ()) == "T"
    assert breadcrumb("", ()) == ""
    assert breadcrumb(" My\n title ", ("Sec\ttion",)) == "My title › Sec tion"


# -- sections -------------------------------------------------------------------------


def test_heading_path_includes_own_heading_and_header_is_breadcrumb() -> None:
    d = doc(H("A", 1), P("Intro to A.", "A"), H("B", 2, "A"), P("Body of B.", "A", "B"))
    chunks = SectionChunker(12, 2, words).chunk(d)  # sections of 4 words are not small (< 3)
    assert [(c.text, c.heading_path, c.header) for c in chunks] == [
        ("A\n\nIntro to A.", ("A",), "Doc › A"),
        ("B\n\nBody of B.", ("A", "B"), "Doc › A › B"),
    ]
    assert chunks[1].indexed_text == "Doc › A › B\n\nB\n\nBody of B."


def test_blocks_of_a_section_are_packed_but_sections_are_not() -> None:
    a = [P(sentences(3, f"a{i}"), "A") for i in range(3)]  # 18 words each
    b = [P(sentences(3, f"b{i}"), "B") for i in range(2)]
    d = doc(H("A", 1), *a, H("B", 1), *b)
    chunks = SectionChunker(100, 10, words).chunk(d)  # sections are 55 and 37 words: not small
    assert [c.heading_path for c in chunks] == [("A",), ("B",)]
    assert chunks[0].text.startswith("A\n\n") and chunks[0].text.endswith(a[-1].text)
    assert chunks[1].text.startswith("B\n\n") and chunks[1].text.endswith(b[-1].text)


def test_oversized_section_overlaps_only_inside_itself() -> None:
    d = doc(
        H("A", 1),
        P(sentences(40, "a"), "A"),
        H("B", 1),
        P(sentences(40, "b"), "B"),
    )
    chunker = SectionChunker(50, 12, words)
    chunks = chunker.chunk(d)
    assert_invariants(d, chunks, words, 50)
    a = [c for c in chunks if c.heading_path == ("A",)]
    b = [c for c in chunks if c.heading_path == ("B",)]
    assert len(a) > 3 and len(b) > 3
    for x, y in itertools.pairwise(a):
        assert y.char_start < x.char_end  # overlap inside A
        assert words(d.text[y.char_start : x.char_end]) <= 12
    assert a[-1].char_end < b[0].char_start  # none across sections
    assert b[0].text.startswith("B\n\n")


def test_empty_heading_folds_into_its_subsection() -> None:
    d = doc(
        H("A", 1),
        H("B", 2, "A"),
        H("C", 3, "A", "B"),
        P(sentences(20), "A", "B", "C"),
        H("D", 1),
        P(sentences(20, "d"), "D"),
    )
    chunks = SectionChunker(200, 0, words).chunk(d)
    assert chunks[0].heading_path == ("A", "B", "C")
    assert chunks[0].text.startswith("A\n\nB\n\nC\n\nThis is")
    assert chunks[1].heading_path == ("D",)


def test_empty_heading_before_a_higher_level_heading_stays_alone() -> None:
    big = sentences(10)
    d = doc(H("A", 1), P(big, "A"), H("B", 2, "A"), H("C", 1), P(big, "C"), H("End", 1))
    chunks = SectionChunker(70, 0, words).chunk(d)
    assert [(c.text[:5], c.heading_path) for c in chunks] == [
        ("A\n\nTh", ("A",)),
        ("B", ("A", "B")),
        ("C\n\nTh", ("C",)),
        ("End", ("End",)),
    ]


def test_small_sibling_sections_merge_under_first_heading() -> None:
    d = doc(
        H("API", 1),
        P(sentences(10, "api"), "API"),
        H("get", 2, "API"),
        P("Fetches one.", "API", "get"),
        H("put", 2, "API"),
        P("Stores one.", "API", "put"),
        H("del", 2, "API"),
        P("Removes one.", "API", "del"),
        H("Other", 1),
        P("Elsewhere.", "Other"),
    )
    chunks = SectionChunker(100, 0, words).chunk(d)  # small = 25 words
    assert [c.heading_path for c in chunks] == [("API",), ("API", "get"), ("Other",)]
    assert chunks[1].text == "get\n\nFetches one.\n\nput\n\nStores one.\n\ndel\n\nRemoves one."
    assert chunks[1].header == "Doc › API › get"


def test_small_intro_absorbs_small_descendants() -> None:
    d = doc(
        H("Guide", 1),
        P("Short intro.", "Guide"),
        H("Step", 2, "Guide"),
        P("Do it.", "Guide", "Step"),
        title="Guide",
    )
    chunks = SectionChunker(100, 0, words).chunk(d)
    assert len(chunks) == 1
    assert chunks[0].heading_path == ("Guide",)
    assert chunks[0].header == "Guide"


def test_preamble_before_first_heading() -> None:
    d = doc(P(sentences(5, "pre")), H("A", 1), P(sentences(5), "A"))
    chunks = SectionChunker(40, 0, words).chunk(d)
    assert [c.heading_path for c in chunks] == [(), ("A",)]
    assert chunks[0].header == "Doc"


# -- tables ---------------------------------------------------------------------------


def _table(rows: int) -> str:
    lines = ["| name | value |", "| --- | --- |"]
    lines += [f"| key{i} | the value of key {i} |" for i in range(rows)]
    return "\n".join(lines)


def test_table_header() -> None:
    assert table_header(_table(3)) == "| name | value |\n| --- | --- |"
    assert table_header("| a |\n| b |") == "| a |"
    assert table_header("| a |") == ""


def test_large_table_pieces_repeat_the_header_in_the_chunk_header() -> None:
    table = _table(100)
    d = doc(H("Data", 1), Block("table", table, heading_path=("Data",)))
    chunks = SectionChunker(80, 0, words).chunk(d)
    assert_invariants(d, chunks, words, 80)
    assert chunks[0].header == "Doc › Data"
    assert chunks[0].text.startswith("Data\n\n| name | value |\n| --- | --- |\n| key0 |")
    for c in chunks[1:]:
        assert c.header == "Doc › Data\n| name | value |\n| --- | --- |"
        assert c.text.startswith("| key") and c.text.endswith("|")  # whole rows
    no_header = SectionChunker(80, 0, words, include_header=False).chunk(d)
    assert all(c.header == "" for c in no_header)
    assert_invariants(d, no_header, words, 80)


# -- documents without headings -------------------------------------------------------


def test_plain_text_falls_back_to_recursive_splitting() -> None:
    blocks = [P(sentences(8, f"p{i}"), page=i + 1) for i in range(20)]  # 48 words each
    d = ParsedDocument("Plain", tuple(blocks), "text/plain")
    chunks = SectionChunker(110, 10, words).chunk(d)
    assert_invariants(d, chunks, words, 110)
    assert all(c.heading_path == () and c.header == "Plain" for c in chunks)
    # Block boundaries are preferred: two whole blocks per chunk, overlap from the block before.
    assert chunks[0].text == "\n\n".join(b.text for b in blocks[:2])
    assert [c.page for c in chunks[:3]] == [1, 2, 4]
    recursive = RecursiveChunker(110, 10, words).chunk(d)
    assert [(c.char_start, c.char_end) for c in recursive] == [
        (c.char_start, c.char_end) for c in chunks
    ]


# -- headers, pages, identity ---------------------------------------------------------


def test_page_is_page_of_first_block() -> None:
    d = doc(H("A", 1, page=3), P("x " * 5, "A", page=3), P("y " * 5, "A", page=4))
    chunks = SectionChunker(100, 0, words).chunk(d)
    assert len(chunks) == 1 and chunks[0].page == 3


def test_too_long_header_is_shortened() -> None:
    title = " ".join(["title"] * 30)
    d = doc(H("Sec", 1), P(sentences(30), "Sec"), title=title)
    chunks = SectionChunker(40, 4, words).chunk(d)
    assert_invariants(d, chunks, words, 40)
    assert all(c.header == "Sec" for c in chunks)


def test_include_header_false() -> None:
    d = doc(H("A", 1), P("text", "A"))
    (c,) = SectionChunker(include_header=False).chunk(d)
    assert c.header == "" and c.indexed_text == c.text == "A\n\ntext"
    assert c.token_count == estimate_tokens("A\n\ntext")


def test_name_and_defaults() -> None:
    assert SectionChunker().name == "section-v1:256:32"
    assert SectionChunker(254, 16).name == "section-v1:254:16"
    assert SectionChunker(include_header=False).name == "section-v1:256:32:noheader"
    assert SectionChunker().count_tokens is estimate_tokens
    with pytest.raises(ConfigError, match="overlap_tokens"):
        SectionChunker(100, 100)


# -- speed ----------------------------------------------------------------------------


def _big_document(size: int) -> ParsedDocument:
    rng = random.Random(0)
    blocks: list[Block] = []
    n = 0
    while n < size:
        if rng.random() < 0.05:
            blocks.append(H(f"Heading {len(blocks)}", 2, "Top"))
        else:
            blocks.append(P(_paragraph(rng), "Top"))
        n += len(blocks[-1].text) + 2
    return doc(*blocks)


def test_one_megabyte_chunks_quickly_and_counts_linearly() -> None:
    d = _big_document(1_000_000)
    counted = 0

    def counting(text: str) -> int:
        nonlocal counted
        counted += len(text)
        return estimate_tokens(text)

    start = time.perf_counter()
    chunks = SectionChunker(254, 32, counting).chunk(d)
    elapsed = time.perf_counter() - start
    assert elapsed < 5, elapsed
    assert counted < 5 * len(d.text)  # no counting of ever-growing prefixes
    assert_invariants(d, chunks, estimate_tokens, 254)

    one_block = ParsedDocument("t", (Block("paragraph", d.text),), "text/plain")
    start = time.perf_counter()
    RecursiveChunker(254, 32).chunk(one_block)
    assert time.perf_counter() - start < 5
