"""Plain-text parsing: paragraphs on blank lines, bullet lists, no invented headings."""

from __future__ import annotations

from pathlib import Path

from ragline.parse import parse_bytes


def txt(text: str, name: str = "notes.txt"):
    return parse_bytes(text.encode("utf-8"), path=Path(name))


def test_paragraphs_split_on_blank_lines_and_whitespace_normalized() -> None:
    doc = txt("First paragraph\nwraps here.\n\n  \t\nSecond   one.\n\n\n\nThird.\n")
    assert [b.text for b in doc.blocks] == [
        "First paragraph wraps here.",
        "Second one.",
        "Third.",
    ]
    assert all(b.kind == "paragraph" and b.heading_path == () for b in doc.blocks)
    assert doc.media_type == "text/plain"
    assert doc.text == "First paragraph wraps here.\n\nSecond one.\n\nThird."


def test_title_from_first_line_when_it_looks_like_one() -> None:
    doc = txt("Release Notes\n\nThis release adds hybrid search.\n")
    assert doc.title == "Release Notes"
    assert doc.metadata["title_source"] == "first_line"
    assert doc.blocks[0].kind == "paragraph"  # no invented headings
    assert not any(b.kind == "heading" for b in doc.blocks)


def test_title_falls_back_to_stem() -> None:
    # First line ends with a period: a sentence, not a title.
    doc = txt("This is a sentence.\n\nAnd another.\n", "meeting-2024.txt")
    assert doc.title == "meeting-2024" and doc.metadata["title_source"] == "filename"
    # A single paragraph has no title line.
    assert txt("Only line\n", "solo.txt").title == "solo"
    # A first paragraph of several lines is not a title.
    assert txt("Line one\nline two\n\nMore.\n", "multi.txt").title == "multi"


def test_bullet_lists_become_list_blocks() -> None:
    doc = txt("Shopping:\n\n- eggs\n- milk\n  semi-skimmed\n    - organic\n\n1. one\n2) two\n")
    lists = [b.text for b in doc.blocks if b.kind == "list"]
    assert lists == ["- eggs\n- milk semi-skimmed\n  - organic", "1. one\n2) two"]


def test_control_characters_dropped_and_crlf_normalized() -> None:
    doc = txt("Alpha\x07 beta\r\ngamma\r\n\r\nDelta\x1b.\x0cEpsilon\n")
    assert [b.text for b in doc.blocks] == ["Alpha beta gamma", "Delta.", "Epsilon"]


def test_latin1_text_is_decoded() -> None:
    raw = "Le café coûte 3 €, très cher.\n\nÇa va.\n".encode("cp1252")
    doc = parse_bytes(raw, path=Path("fr.txt"))
    assert doc.blocks[0].text == "Le café coûte 3 €, très cher."
    assert doc.metadata["encoding"] == "cp1252"
