"""The fixed, semantic and parent–child strategies: the shared invariants on random
documents, plus what each strategy promises of its own."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ragline.chunk import (
    FixedChunker,
    ParentChildChunker,
    SectionChunker,
    SemanticChunker,
    estimate_tokens,
    make_chunker,
    strategy_of,
)
from ragline.chunk.semantic import breakpoints
from ragline.core.errors import ConfigError
from ragline.core.types import Block, ParsedDocument
from tests.chunk.test_invariants import COUNTERS, assert_invariants, random_document
from tests.fakes import FakeEmbedder


@pytest.mark.parametrize("counter", sorted(COUNTERS))
@pytest.mark.parametrize("seed", range(30))
def test_fixed_chunker_random_documents(seed: int, counter: str) -> None:
    count = COUNTERS[counter]
    rng = random.Random(seed + 77)
    max_tokens = rng.choice([16, 32, 100, 254])
    overlap = rng.choice([0, 3, max_tokens // 4])
    doc = random_document(seed + 2000)
    chunks = FixedChunker(max_tokens, overlap, count).chunk(doc)
    assert_invariants(doc, chunks, count, max_tokens)
    assert all(c.heading_path == () and c.parent is None for c in chunks)
    assert FixedChunker(max_tokens, overlap, count).chunk(doc) == chunks


def test_fixed_chunker_ignores_structure_and_overlaps() -> None:
    words = [f"w{i}" for i in range(300)]
    doc = ParsedDocument(
        "T",
        (
            Block("heading", "One", level=1),
            Block("paragraph", " ".join(words[:150]), heading_path=("One",)),
            Block("heading", "Two", level=1),
            Block("paragraph", " ".join(words[150:]), heading_path=("One",)),
        ),
        "text/markdown",
    )
    count = FakeEmbedder().count_tokens
    chunks = FixedChunker(64, 8, count).chunk(doc)
    # windows run across the heading "Two": structure is ignored
    assert any("Two" in c.text and "w149" in c.text for c in chunks)
    for a, b in zip(chunks, chunks[1:]):
        # consecutive windows share their overlap: 8 one-token words
        assert b.text.split()[:8] == a.text.split()[-8:]
    assert all(c.token_count <= 64 for c in chunks)
    assert sum(c.token_count for c in chunks) > 0.9 * 64 * (len(chunks) - 1)  # windows are full


def _fake_embed(texts):
    return FakeEmbedder().embed_documents(texts)


@pytest.mark.parametrize("counter", sorted(COUNTERS))
@pytest.mark.parametrize("seed", range(30))
def test_semantic_chunker_random_documents(seed: int, counter: str) -> None:
    count = COUNTERS[counter]
    rng = random.Random(seed + 99)
    max_tokens = rng.choice([16, 40, 128, 254])
    overlap = rng.choice([0, 4, max_tokens // 4])
    doc = random_document(seed + 3000)
    chunker = SemanticChunker(max_tokens, overlap, count, embed=_fake_embed, percentile=80)
    chunks = chunker.chunk(doc)
    assert_invariants(doc, chunks, count, max_tokens)
    assert chunker.chunk(doc) == chunks
    for c in chunks:  # the heading path is that of the chunk's section
        assert c.header == "" or c.header.endswith(c.heading_path[-1] if c.heading_path else "")


def _topic_doc() -> ParsedDocument:
    cats = [
        "Cats sleep for most of the day and hunt small birds at dusk.",
        "A cat grooms its fur with a rough tongue and purrs when calm.",
        "Kittens learn to hunt by watching their mother cat stalk mice.",
        "Domestic cats still keep the hunting instincts of wild cats.",
    ]
    db = [
        "PostgreSQL stores table rows in pages of eight kilobytes on disk.",
        "An index in PostgreSQL speeds up queries that filter on a column.",
        "The query planner in PostgreSQL picks between index scans and sequential scans.",
        "Vacuum in PostgreSQL reclaims the space of dead table rows.",
    ]
    rain = [
        "Heavy rain and strong wind are forecast for the coast on Friday.",
        "The storm will bring rain, thunder and wind gusts over the hills.",
        "Farmers welcome the rain after a dry and windy summer.",
        "After the storm the wind drops and the rain clears by Sunday.",
    ]
    return ParsedDocument("Notes", (Block("paragraph", " ".join(cats + db + rain)),), "text/plain")


def test_semantic_chunker_cuts_where_the_topic_changes(minilm) -> None:
    doc = _topic_doc()
    chunker = SemanticChunker(
        254, 0, minilm.count_tokens, embed=minilm.embed_documents, percentile=80
    )
    chunks = chunker.chunk(doc)
    topics = [
        {t for t, w in (("cat", "cat"), ("db", "postgresql"), ("rain", "rain")) if w in words}
        for words in (
            set(c.text.lower().replace(".", " ").replace(",", " ").split()) for c in chunks
        )
    ]
    assert len(chunks) == 3, [c.text[:60] for c in chunks]
    assert topics == [{"cat"}, {"db"}, {"rain"}]
    # without embeddings it is one section: the cuts came from the embeddings
    assert len(SemanticChunker(254, 0, minilm.count_tokens).chunk(doc)) == 1


def test_breakpoints_percentile() -> None:
    a, b = [1.0, 0.0], [0.0, 1.0]
    v = np.array([a, a, a, b, b, b, b, a, a], dtype=np.float32)
    assert breakpoints(v, 75) == [3, 7]  # the two topic changes, nothing else
    assert breakpoints(v, 75, window=1) == [3, 7]
    assert breakpoints(v[:2], 50) == []


@pytest.mark.parametrize("counter", sorted(COUNTERS))
@pytest.mark.parametrize("seed", range(40))
def test_parent_child_random_documents(seed: int, counter: str) -> None:
    count = COUNTERS[counter]
    rng = random.Random(seed + 5)
    child = rng.choice([16, 32, 64, 128])
    parent_tokens = rng.choice([child, 2 * child, 512, 1024])
    overlap = rng.choice([0, 2, child // 8])
    doc = random_document(seed + 4000)
    chunker = ParentChildChunker(child, overlap, count, parent_tokens=parent_tokens)
    chunks = chunker.chunk(doc)
    assert_invariants(doc, chunks, count, child)  # children: no text lost, exact spans
    text = doc.text
    parents = []
    for c in chunks:
        p = c.parent
        assert p is not None
        assert p.char_start <= c.char_start < c.char_end <= p.char_end  # child inside parent
        assert p.text == text[p.char_start : p.char_end]
        assert p.token_count <= parent_tokens
        assert c.heading_path == p.heading_path
        if not parents or parents[-1] is not p:
            parents.append(p)
    # parents: each once, in order, numbered 0..n-1, and equal to the section chunks
    assert [p.ordinal for p in parents] == list(range(len(parents)))
    assert len({id(p) for p in parents}) == len(parents)
    expected = SectionChunker(parent_tokens, 0, count).chunk(doc)
    assert [(p.char_start, p.char_end) for p in parents] == [
        (p.char_start, p.char_end) for p in expected
    ]
    for p in parents:  # each parent's text is covered by its own children
        kids = [c for c in chunks if c.parent is p]
        covered = bytearray(p.char_end - p.char_start)
        for c in kids:
            covered[c.char_start - p.char_start : c.char_end - p.char_start] = b"\x01" * (
                c.char_end - c.char_start
            )
        assert all(cov or ch.isspace() for ch, cov in zip(p.text, covered))
    assert (
        ParentChildChunker(child, overlap, count, parent_tokens=parent_tokens).chunk(doc) == chunks
    )


def test_parent_smaller_than_child_is_refused() -> None:
    with pytest.raises(ConfigError, match="parent_tokens"):
        ParentChildChunker(128, 16, parent_tokens=64)


@pytest.mark.parametrize("strategy", ["section", "recursive", "fixed", "semantic", "parent-child"])
def test_make_chunker_names_round_trip(strategy: str) -> None:
    c = make_chunker(strategy, max_tokens=254, overlap_tokens=32, count_tokens=estimate_tokens)
    assert strategy_of(c.name) == strategy
    again = make_chunker(c.name, max_tokens=999, overlap_tokens=1)  # stored numbers win
    assert again.name == c.name
    if strategy == "parent-child":
        assert c.max_tokens == 128 and c.parent_tokens == 1024 and c.overlap_tokens == 16


def test_unknown_strategy() -> None:
    with pytest.raises(ConfigError, match="choose one of"):
        make_chunker("sentences", max_tokens=100)
