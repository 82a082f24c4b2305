"""Markdown parsing: structure from markdown-it's syntax tree, front matter, heading paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragline.core.errors import EmptyDocumentError, ParseError
from ragline.parse import parse_bytes, parse_file

FIXTURES = Path(__file__).parent / "fixtures"


def md(text: str, name: str = "doc.md"):
    return parse_bytes(text.encode("utf-8"), path=Path(name))


@pytest.fixture(scope="module")
def guide():
    return parse_file(FIXTURES / "guide.md")


def test_guide_blocks_and_heading_paths(guide) -> None:
    got = [(b.kind, b.level, b.heading_path, b.text) for b in guide.blocks]
    assert got[0] == ("heading", 1, (), "Introduction")
    assert ("heading", 2, ("Introduction",), "Setup Notes") in got  # setext heading
    # A level-4 heading under a level-2 one: skipped levels nest under the nearest above.
    assert ("heading", 4, ("Introduction", "Setup Notes"), "Skipped levels") in got
    para = next(b for b in guide.blocks if b.text.startswith("A level-4"))
    assert para.heading_path == ("Introduction", "Setup Notes", "Skipped levels")
    # A new level-2 heading closes the level-4 one.
    features = next(b for b in guide.blocks if b.text == "Features")
    assert features.heading_path == ("Introduction",)
    appendix = next(b for b in guide.blocks if b.text == "Appendix")
    assert appendix.heading_path == ()
    assert guide.blocks[-1].text == "Final words."
    assert guide.blocks[-1].heading_path == ("Appendix",)


def test_code_fence_is_verbatim_and_hash_is_not_a_heading(guide) -> None:
    code = [b for b in guide.blocks if b.kind == "code"]
    assert [c.text for c in code] == [
        "# not a heading: this is a shell comment\npip install ragline"
    ]
    assert code[0].heading_path == ("Introduction", "Setup Notes")
    assert all("shell comment" not in b.text for b in guide.blocks if b.kind == "heading")


def test_front_matter_becomes_metadata_and_title(guide) -> None:
    assert guide.title == "The Ragline Guide"
    assert guide.metadata["title_source"] == "front_matter"
    assert guide.metadata["tags"] == ["rag", "search"]
    assert guide.metadata["date"] == "2024-05-01"  # YAML date made JSON-safe
    assert guide.metadata["encoding"] == "utf-8"
    assert "tags:" not in guide.text
    assert guide.media_type == "text/markdown"


def test_lists_are_one_block_each_with_nesting(guide) -> None:
    lists = [b.text for b in guide.blocks if b.kind == "list"]
    assert lists == [
        "- Hybrid search\n- Citations with [n] markers\n  - nested item\n- Evaluation",
        "1. First step\n2. Second step",
    ]


def test_table_kept_as_markdown(guide) -> None:
    (table,) = [b for b in guide.blocks if b.kind == "table"]
    assert table.text.split("\n") == [
        "| Stage | Backend |",
        "| --- | --- |",
        "| embed | MiniLM |",
        "| store | pgvector \\| PostgreSQL |",
    ]
    assert table.heading_path == ("Introduction", "Features")


def test_inline_markup_stripped_link_text_kept(guide) -> None:
    first = guide.blocks[1]
    assert first.kind == "paragraph"
    assert first.text.startswith("Ragline turns your documents into cited answers.")
    assert "https://" not in guide.text and "**" not in guide.text and "![" not in guide.text
    quote = next(b for b in guide.blocks if "Quoted advice" in b.text)
    assert quote.kind == "paragraph" and quote.text == "Quoted advice: measure before tuning."


def test_text_joins_blocks_and_blocks_are_clean(guide) -> None:
    assert guide.text == "\n\n".join(b.text for b in guide.blocks)
    for block in guide.blocks:
        assert block.text and block.text == block.text.strip()
        if block.kind not in ("code", "table", "list"):
            assert "\n" not in block.text and "  " not in block.text


def test_title_falls_back_to_first_h1_then_stem() -> None:
    doc = md("Intro text.\n\n## Minor\n\n# Real Title\n\nBody.\n", "notes.md")
    assert doc.title == "Real Title" and doc.metadata["title_source"] == "heading"
    doc = md("## Only level two\n\nBody.\n", "my-notes.md")
    assert doc.title == "my-notes" and doc.metadata["title_source"] == "filename"


def test_heading_path_resets_on_same_level_and_heading_is_not_its_own_path() -> None:
    doc = md("# A\n## B\n### C\ntext c\n## D\ntext d\n# E\ntext e\n")
    paths = {b.text: b.heading_path for b in doc.blocks}
    assert paths == {
        "A": (),
        "B": ("A",),
        "C": ("A", "B"),
        "text c": ("A", "B", "C"),
        "D": ("A",),
        "text d": ("A", "D"),
        "E": (),
        "text e": ("E",),
    }


def test_setext_and_atx_levels() -> None:
    doc = md("Top\n===\n\nSub\n---\n\n### Third ###\n\npara\n")
    assert [(b.kind, b.level, b.text) for b in doc.blocks] == [
        ("heading", 1, "Top"),
        ("heading", 2, "Sub"),
        ("heading", 3, "Third"),
        ("paragraph", 0, "para"),
    ]


def test_tilde_fence_and_indented_code() -> None:
    doc = md("# H\n\n~~~\n## inside\n~~~\n\n    # indented code\n    x = 1\n")
    assert [b.kind for b in doc.blocks] == ["heading", "code", "code"]
    assert doc.blocks[1].text == "## inside"
    assert doc.blocks[2].text == "# indented code\nx = 1"


def test_html_block_text_kept_without_tags() -> None:
    doc = md('<div align="center"><b>Bold</b> claim &amp; more</div>\n\n<!-- a comment -->\n')
    assert [b.text for b in doc.blocks] == ["Bold claim & more"]


def test_bad_yaml_front_matter_names_the_line() -> None:
    with pytest.raises(ParseError) as info:
        md("---\ntitle: ok\ntags: [unclosed\n---\n\nBody\n")
    assert "front matter" in info.value.reason
    assert "line" in info.value.reason


def test_thematic_break_at_start_is_not_front_matter() -> None:
    doc = md("---\nJust a heading\n---\n\nBody text.\n")
    assert doc.metadata.get("title_source") != "front_matter"
    assert "Body text." in doc.text


def test_front_matter_only_is_empty() -> None:
    with pytest.raises(EmptyDocumentError):
        md("---\ntitle: Nothing else\n---\n")


def test_crlf_and_bom() -> None:
    doc = parse_bytes(b"\xef\xbb\xbf# Title\r\n\r\nLine one\r\nline two\r\n", path=Path("w.md"))
    assert doc.title == "Title"
    assert doc.blocks[1].text == "Line one line two"
