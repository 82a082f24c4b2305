"""HTML parsing: main-content extraction, structure, encodings; on a fixture and real pages."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ragline.parse import parse_bytes, parse_file

FIXTURES = Path(__file__).parent / "fixtures"
# /work/shared is the sibling "shared" folder of the repository.
DOCUMENTS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "documents" / "html"
needs_documents = pytest.mark.skipif(
    not DOCUMENTS.is_dir(), reason=f"shared sample documents not found at {DOCUMENTS}"
)

BOILERPLATE = [
    "SCRIPT_TEXT",
    "font-family",
    "HIDDEN_TEXT",
    "ALSO_HIDDEN",
    "NOSCRIPT_TEXT",
    "SVG_TEXT",
    "Sign up",
    "Subscribe",
    "SIDEBAR_TEXT",
    "FOOTER_TEXT",
    "cookies",
    "Skip to content",
    "Jump to navigation",
    "Breadcrumbs",
    "Example Site",
    "About",
    "[edit]",
    "edit",
    "[1]",
    "[2]",
    "ALT_TEXT",
]


def html(markup: str, name: str = "page.html"):
    return parse_bytes(markup.encode("utf-8"), path=Path(name))


def check_fixture_blocks(doc) -> None:
    kinds = [(b.kind, b.level, b.text.split("\n")[0]) for b in doc.blocks]
    assert kinds == [
        ("heading", 1, "Tidal Energy Primer"),
        ("paragraph", 0, ("Tidal power converts the energy of tides into electricity. "
                          "It is more predictable than wind.")),
        ("heading", 2, "Generation methods"),
        ("paragraph", 0, "There are three main approaches."),
        ("list", 0, "- Tidal stream generators"),
        ("heading", 3, "Comparison"),
        ("caption", 0, "Typical capacity factors"),
        ("table", 0, "| Method | Capacity factor | Notes |"),
        ("caption", 0, "A tidal stream turbine."),
        ("heading", 2, "Example code"),
        ("code", 0, "def power(area, velocity):"),
    ]  # fmt: skip
    for needle in BOILERPLATE:
        assert needle not in doc.text, needle


@pytest.fixture(scope="module")
def article():
    return parse_file(FIXTURES / "article.html")


def test_fixture_main_content_only(article) -> None:
    check_fixture_blocks(article)
    assert article.title == "Tidal Energy Primer"
    assert article.media_type == "text/html"
    assert article.metadata["language"] == "en"


def test_fixture_boilerplate_dropped_without_main_element() -> None:
    data = (FIXTURES / "article.html").read_bytes()
    data = data.replace(b'<main id="main">', b"<div>").replace(b"</main>", b"</div>")
    check_fixture_blocks(parse_bytes(data, path=Path("no-main.html")))


def test_fixture_heading_paths(article) -> None:
    paths = {b.text.split("\n")[0]: b.heading_path for b in article.blocks}
    assert paths["Tidal Energy Primer"] == ()
    assert paths["Generation methods"] == ("Tidal Energy Primer",)
    assert paths["| Method | Capacity factor | Notes |"] == (
        "Tidal Energy Primer",
        "Generation methods",
        "Comparison",
    )
    assert paths["def power(area, velocity):"] == ("Tidal Energy Primer", "Example code")


def test_fixture_list_table_and_code(article) -> None:
    by_kind = {b.kind: b.text for b in article.blocks if b.kind in ("list", "table", "code")}
    assert by_kind["list"] == (
        "- Tidal stream generators\n  - Horizontal axis\n  - Vertical axis\n"
        "- Barrages\n- Dynamic tidal power"
    )
    # rowspan and colspan cells are repeated into every slot they cover.
    assert by_kind["table"].split("\n") == [
        "| Method | Capacity factor | Notes |",
        "| --- | --- | --- |",
        "| Stream | 35% | Site dependent |",
        "| Barrage | 25% | Site dependent |",
        "| Dynamic (theoretical) | Dynamic (theoretical) | Untested |",
    ]
    assert by_kind["code"] == (
        "def power(area, velocity):\n    return 0.5 * 1025 * area * velocity ** 3"
    )


def test_table_without_th_uses_first_row_as_header_and_escapes_pipes() -> None:
    doc = html("<table><tr><td>a|b</td><td>c</td></tr><tr><td>1</td></tr></table>")
    assert doc.blocks[0].text == "| a\\|b | c |\n| --- | --- |\n| 1 |  |"


def test_layout_tables_are_read_as_containers() -> None:
    doc = html(
        "<table><tr><td><h2>Section</h2><p>Text in a layout cell.</p></td>"
        "<td><p>Second column.</p></td></tr></table>"
    )
    assert [(b.kind, b.text) for b in doc.blocks] == [
        ("heading", "Section"),
        ("paragraph", "Text in a layout cell."),
        ("paragraph", "Second column."),
    ]


def test_title_from_title_element_without_h1_and_stem_without_either() -> None:
    assert html("<title> My  Page </title><p>Body.</p>").title == "My Page"
    doc = html("<p>Body only.</p>", "plain-page.html")
    assert doc.title == "plain-page" and doc.metadata["title_source"] == "filename"


def test_loose_text_br_and_definition_lists() -> None:
    doc = html("<div>Loose <i>text</i><br>after break<div>inner</div>tail</div>"
               "<dl><dt>Term</dt><dd>Meaning</dd></dl>")  # fmt: skip
    assert [b.text for b in doc.blocks] == [
        "Loose text after break",
        "inner",
        "tail",
        "- Term: Meaning",
    ]


def test_declared_charset_is_honoured() -> None:
    markup = '<meta charset="windows-1252"><p>Caf\xe9 \x80 na\xefve</p>'.encode("latin-1")
    doc = parse_bytes(markup, path=Path("legacy.html"))
    assert doc.blocks[0].text == "Café € naïve"
    assert doc.metadata["encoding"] == "cp1252"
    markup = (
        '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>Привет</p>'.encode(
            "koi8-r"
        )
    )
    assert parse_bytes(markup, path=Path("ru.html")).blocks[0].text == "Привет"


def test_xml_declaration_and_no_external_entities(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP_SECRET")
    markup = (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<!DOCTYPE html [<!ENTITY xxe SYSTEM "file://{secret}">]>\n'
        "<html><body><p>Safe &xxe; text</p></body></html>"
    )
    doc = html(markup, "x.xhtml.html")
    assert "TOP_SECRET" not in doc.text
    assert "Safe" in doc.text


def test_one_megabyte_parses_fast() -> None:
    unit = (
        "<div><p>Some <b>text</b> with a <a href='#'>link</a> and more words.</p>"
        "<ul><li>one</li><li>two</li></ul>"
        "<table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table></div>\n"
    )
    data = ("<html><body>" + unit * (1_000_000 // len(unit)) + "</body></html>").encode()
    start = time.perf_counter()
    doc = parse_bytes(data, path=Path("big.html"))
    elapsed = time.perf_counter() - start
    assert len(doc.blocks) > 10_000
    assert elapsed < 2.0, f"1 MB of HTML took {elapsed:.2f}s"


@needs_documents
def test_real_wikipedia_page() -> None:
    doc = parse_file(DOCUMENTS / "docling__wiki_duck.html")
    assert doc.title == "Duck"
    assert doc.metadata["encoding"] == "utf-8"
    text = doc.text
    assert text.startswith("| Duck | Duck |")  # the infobox, colspan repeated
    assert "Duck is the common name for numerous species of waterfowl" in text
    headings = [(b.level, b.text) for b in doc.blocks if b.kind == "heading"]
    assert headings[:6] == [
        (2, "Etymology"),
        (2, "Taxonomy"),
        (2, "Morphology"),
        (2, "Distribution and habitat"),
        (2, "Behaviour"),
        (3, "Feeding"),
    ]
    feeding = next(b for b in doc.blocks if b.text.startswith("Dabbling ducks feed"))
    assert feeding.heading_path == ("Behaviour", "Feeding")
    # Boilerplate: navigation, language list, edit links, reference markers, footer.
    for needle in ["[edit]", "Jump to", "136 languages", "Afrikaans", "Privacy policy",
                   "Main page", "Toggle", "[1]", "From Wikipedia", "Retrieved from"]:  # fmt: skip
        assert needle not in text, needle
    see_also = next(b for b in doc.blocks if b.heading_path == ("See also",))
    assert see_also.kind == "list" and "- Rubber duck" in see_also.text.split("\n")


@needs_documents
def test_real_cp1252_page() -> None:
    doc = parse_file(DOCUMENTS / "unstructured__fake-html-cp1252.html")
    assert doc.metadata["encoding"] == "cp1252"
    assert doc.title == "My First Heading"
    assert [b.kind for b in doc.blocks] == ["heading", "paragraph", "paragraph", "code"]
    code = doc.blocks[-1].text
    assert (
        'Die schöne Frau hat einen Kaffee mit Kuchen gegessen. Sie sagte: "Das war köstlich!"'
        in code
    )
    assert "15,50 €" in code and "El niño comió paella con ñoquis" in code
    assert "L'été était très chaud cette année." in code
    assert "\ufffd" not in doc.text
    assert len(code.split("\n")) == 6  # pre keeps its lines


@needs_documents
def test_real_utf16_page() -> None:
    # UTF-16-LE with a BOM, although its <meta> claims utf-8: the BOM wins.
    doc = parse_file(DOCUMENTS / "unstructured__example-steelJIS-datasheet-utf-16.html")
    assert doc.metadata["encoding"] == "utf-16-le"
    assert "\x00" not in doc.text
    assert doc.title == "SteelJIS: Japanese Steels and Alloys"
    tables = [b.text for b in doc.blocks if b.kind == "table"]
    assert any(t.startswith("| C | Si | Mn | P | S | Cr | Mo |") for t in tables)
    assert any("| Grade : | SNB22-3 |" in t for t in tables)
    heading = next(b for b in doc.blocks if b.kind == "heading" and b.level == 2)
    assert heading.text == "SNB22-3 Chemical composition, standards and properties"
    assert "adsbygoogle" not in doc.text and "font-family" not in doc.text
    # The link-only menu bar is dropped.
    assert "Home Japanese steel grading" not in doc.text
