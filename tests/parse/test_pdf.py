"""PDF parser: generated PDFs for each layout rule, and the real files of the shared
document set checked against docling's reference Markdown."""

from __future__ import annotations

import re
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("pdfplumber")
pytest.importorskip("pypdfium2")

from ragline.core.errors import MissingDependencyError, ParseError  # noqa: E402
from ragline.parse.pdf import PASSWORD_ENV, PdfParser, to_markdown  # noqa: E402
from ragline.parse.registry import parse_bytes, parse_file  # noqa: E402

DOCUMENTS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "documents"
PDFS = DOCUMENTS / "pdf"
EXPECTED = DOCUMENTS / "expected"

needs_documents = pytest.mark.skipif(
    not PDFS.is_dir(), reason=f"shared documents not found at {PDFS}"
)


def parse(path: Path, **options) -> object:
    return PdfParser(**options).parse(path.read_bytes(), path=path)


# ----------------------------------------------------------------------------- generated PDFs


@pytest.fixture
def canvas_pdf(tmp_path):
    """Draw pages with reportlab: ``make(name, draw_page_1, draw_page_2, ..., **kw)``."""
    reportlab = pytest.importorskip("reportlab")
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    assert reportlab

    def make(name: str, *pages, **kwargs) -> Path:
        path = tmp_path / name
        c = canvas.Canvas(str(path), pagesize=A4, **kwargs)
        for i, draw in enumerate(pages, start=1):
            draw(c, i)
            c.showPage()
        c.save()
        return path

    return make


LEFT = [
    "Alpha opens the left column with a sentence about rivers.",
    "Bravo continues the left column and mentions mountains.",
    "Charlie ends the left column with a note on forests.",
]
RIGHT = [
    "Delta starts the right column talking about deserts.",
    "Echo follows in the right column about oceans.",
    "Foxtrot closes the right column with glaciers.",
]


def _wrapped(c, x: float, y: float, sentences: list[str], width: int = 30) -> float:
    """Write sentences as lines of about ``width`` characters; returns the next y."""
    import textwrap

    for sentence in sentences:
        for line in textwrap.wrap(sentence, width):
            c.drawString(x, y, line)
            y -= 13
        y -= 10
    return y


def test_two_columns_read_column_by_column_after_the_title(canvas_pdf):
    def page(c, _):
        c.setFont("Helvetica-Bold", 20)
        c.drawString(72, 780, "A Study of Landscapes")
        c.setFont("Helvetica", 10)
        # Columns drawn interleaved line by line, as many layout programs emit them.
        import textwrap

        left = [ln for s in LEFT for ln in textwrap.wrap(s, 30)]
        right = [ln for s in RIGHT for ln in textwrap.wrap(s, 30)]
        y = 740
        for a, b in zip(left, right):
            c.drawString(72, y, a)
            c.drawString(320, y, b)
            y -= 13
        c.drawString(72, y - 30, "Zulu is a full-width closing line below both of the columns.")

    doc = parse(canvas_pdf("columns.pdf", page))
    text = doc.text
    positions = [text.find(s.split()[0]) for s in [*LEFT, *RIGHT]]
    assert all(p >= 0 for p in positions), text
    assert positions == sorted(positions), text
    assert text.find("A Study of Landscapes") < positions[0]
    assert text.find("Zulu is a full-width closing line") > positions[-1]
    assert doc.blocks[0].kind == "heading" and doc.title == "A Study of Landscapes"
    for s in LEFT + RIGHT:
        assert s in " ".join(text.split()), s
    assert all(b.page == 1 for b in doc.blocks)


def test_ruled_table_becomes_markdown_and_is_not_repeated(tmp_path):
    pytest.importorskip("reportlab")
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Table, TableStyle

    path = tmp_path / "table.pdf"
    styles = getSampleStyleSheet()
    data = [
        ["Region", "Quarter", "Revenue"],
        ["North", "Q1", "1,200"],
        ["", "Q2", "1,350"],
        ["South", "Q1", "980"],
    ]
    table = Table(data)
    table.setStyle(
        TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black), ("SPAN", (0, 1), (0, 2))])
    )
    story = [
        Paragraph("Quarterly results", styles["Heading1"]),
        Paragraph("The table below lists revenue by region.", styles["BodyText"]),
        table,
        Paragraph("Revenue grew in every region.", styles["BodyText"]),
    ]
    SimpleDocTemplate(str(path), pagesize=A4).build(story)

    doc = parse(path)
    tables = [b for b in doc.blocks if b.kind == "table"]
    assert len(tables) == 1
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in tables[0].text.splitlines()
        if not set(line) <= set("|- ")
    ]
    assert rows == [
        ["Region", "Quarter", "Revenue"],
        ["North", "Q1", "1,200"],
        ["North", "Q2", "1,350"],  # the merged cell is repeated in each row it spans
        ["South", "Q1", "980"],
    ]
    others = " ".join(b.text for b in doc.blocks if b.kind != "table")
    assert "1,350" not in others and "South" not in others
    kinds = [b.kind for b in doc.blocks]
    assert kinds == ["heading", "paragraph", "table", "paragraph"]
    assert tables[0].heading_path == ("Quarterly results",)


def test_headers_footers_and_page_numbers_are_removed(canvas_pdf):
    def page(c, number):
        c.setFont("Helvetica", 8)
        c.drawString(72, 810, "ACME Corporation - Internal Report")
        c.drawString(280, 30, f"Page {number} of 3")
        c.setFont("Helvetica", 10)
        c.drawString(72, 700, f"Body text of page {number} talks about subject {number}.")
        c.drawString(72, 686, "It has a second line so the page holds a paragraph.")

    doc = parse(canvas_pdf("furniture.pdf", page, page, page))
    assert "ACME" not in doc.text and "Page 2 of 3" not in doc.text, doc.text
    for n in (1, 2, 3):
        assert f"Body text of page {n}" in doc.text
    assert [b.page for b in doc.blocks] == [1, 2, 3]
    assert doc.metadata["pages"] == 3


def test_bare_page_number_removed_on_a_single_page(canvas_pdf):
    def page(c, _):
        c.setFont("Helvetica", 10)
        c.drawString(72, 700, "Only one page here, with a page number below.")
        c.drawString(297, 30, "17")

    doc = parse(canvas_pdf("single.pdf", page))
    assert "17" not in doc.text


def test_hyphenation_at_line_ends(canvas_pdf):
    lines = [
        "Search engines index the informa-",
        "tion that users need. We report state-of-the-",
        "art results with an Anglo-",
        "Saxon corpus and a well-",
        "known baseline; the well-known baseline is strong.",
    ]

    def page(c, _):
        c.setFont("Helvetica", 11)
        y = 700
        for line in lines:
            c.drawString(72, y, line)
            y -= 14

    text = parse(canvas_pdf("hyphen.pdf", page)).text
    assert "the information that users need" in text
    assert "state-of-the-art results" in text
    assert "Anglo-Saxon" in text
    assert "a well-known baseline" in text  # the hyphenated word occurs elsewhere


def test_headings_lists_code_and_captions(canvas_pdf):
    def page(c, _):
        c.setFont("Helvetica-Bold", 18)
        c.drawString(72, 780, "Installation Guide")
        c.setFont("Helvetica-Bold", 13)
        c.drawString(72, 740, "1 Requirements")
        c.setFont("Helvetica", 10)
        c.drawString(72, 720, "You need the following before you start:")
        c.drawString(80, 700, "•")
        c.drawString(92, 700, "a computer with a network connection")
        c.drawString(80, 686, "•")
        c.drawString(92, 686, "an account on the server")
        c.setFont("Helvetica-Bold", 13)
        c.drawString(72, 650, "2 Running")
        c.setFont("Courier", 10)
        c.drawString(72, 630, "pip install ragline")
        c.drawString(72, 616, "ragline ingest docs/")
        c.setFont("Helvetica", 10)
        c.drawString(72, 590, "Figure 1: The ingestion pipeline")

    doc = parse(canvas_pdf("guide.pdf", page))
    got = [(b.kind, b.level, b.text, b.heading_path) for b in doc.blocks]
    assert got[0] == ("heading", 1, "Installation Guide", ())
    assert ("heading", 2, "1 Requirements", ("Installation Guide",)) in got
    lists = [b for b in doc.blocks if b.kind == "list"]
    assert lists and lists[0].text == (
        "- a computer with a network connection\n- an account on the server"
    )
    assert lists[0].heading_path == ("Installation Guide", "1 Requirements")
    code = [b for b in doc.blocks if b.kind == "code"]
    assert code and code[0].text == "pip install ragline\nragline ingest docs/"
    assert code[0].heading_path == ("Installation Guide", "2 Running")
    assert any(b.kind == "caption" and b.text.startswith("Figure 1") for b in doc.blocks)
    markdown = to_markdown(doc)
    assert markdown.startswith("# Installation Guide")
    assert "```\npip install ragline" in markdown


def test_metadata_title_and_dates(canvas_pdf):
    def page(c, _):
        c.setTitle("Annual Report 2023")
        c.setAuthor("Jane Doe")
        c.setFont("Helvetica", 10)
        c.drawString(72, 700, "Some text.")

    doc = parse(canvas_pdf("report.pdf", page))
    assert doc.title == "Annual Report 2023"
    assert doc.metadata["title_source"] == "metadata"
    assert doc.metadata["author"] == "Jane Doe"
    assert re.match(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", doc.metadata["created"])
    assert doc.media_type == "application/pdf"


def test_title_falls_back_to_the_largest_line_then_the_file_name(canvas_pdf):
    def big(c, _):
        c.setTitle("Microsoft Word - draft7.docx")
        c.setFont("Helvetica", 10)
        c.drawString(72, 760, "Department of Examples")
        c.setFont("Helvetica-Bold", 22)
        c.drawString(72, 720, "The Real Title")
        c.setFont("Helvetica", 10)
        c.drawString(72, 690, "Body text follows the title.")

    doc = parse(canvas_pdf("big.pdf", big))
    assert (doc.title, doc.metadata["title_source"]) == ("The Real Title", "largest_font")

    def plain(c, _):
        c.setFont("Helvetica", 10)
        c.drawString(72, 700, "Nothing stands out on this page.")

    doc = parse(canvas_pdf("plain-name.pdf", plain))
    assert (doc.title, doc.metadata["title_source"]) == ("plain-name", "filename")


def test_page_without_text_is_recorded(canvas_pdf):
    def text(c, _):
        c.drawString(72, 700, "This page has a text layer.")

    def drawing(c, _):
        c.rect(100, 100, 300, 300, fill=1)

    doc = parse(canvas_pdf("scan.pdf", text, drawing), ocr=False)
    assert doc.metadata["pages_without_text"] == [2]

    with pytest.raises(ParseError, match="no text layer"):
        parse(canvas_pdf("blank.pdf", drawing), ocr=False)


def test_pages_without_text_go_to_ocr(canvas_pdf):
    seen = []

    def fake_ocr(image, languages=None, **_):
        seen.append((image.size, languages))
        return "Recognised words from the scan."

    def drawing(c, _):
        c.rect(100, 100, 300, 300, fill=1)

    def text(c, number):
        c.drawString(72, 700, f"Typed text on page {number}.")

    doc = parse(canvas_pdf("scan.pdf", text, drawing, text), ocr=fake_ocr)
    assert len(seen) == 1 and seen[0][0][0] > 2000  # 300 dpi: an A4 page is 2480 px wide
    assert [(b.text, b.page) for b in doc.blocks] == [
        ("Typed text on page 1.", 1),
        ("Recognised words from the scan.", 2),
        ("Typed text on page 3.", 3),
    ]
    assert doc.metadata["ocr_pages"] == [2] and doc.metadata["pages_without_text"] == [2]


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")
def test_real_ocr_of_an_image_only_page(canvas_pdf, tmp_path):
    pytest.importorskip("ragline.parse.ocr")
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1700, 400), "white")
    try:
        font = ImageFont.load_default(size=64)
    except TypeError:  # Pillow < 10.1
        font = ImageFont.load_default()
    ImageDraw.Draw(image).text((60, 150), "Scanned invoice number 4711", fill="black", font=font)
    png = tmp_path / "scan.png"
    image.save(png)

    def page(c, _):
        c.drawImage(str(png), 50, 500, width=500, height=118)

    doc = parse(canvas_pdf("scanned.pdf", page))
    assert doc.metadata["pages_without_text"] == [1]
    assert "invoice" in doc.text.lower() and "4711" in doc.text


def test_password_protected_pdf(canvas_pdf, monkeypatch):
    monkeypatch.delenv(PASSWORD_ENV, raising=False)

    def page(c, _):
        c.drawString(72, 700, "Top secret launch codes.")

    path = canvas_pdf("locked.pdf", page, encrypt="s3cret")
    with pytest.raises(ParseError) as info:
        parse(path)
    assert "password-protected" in info.value.reason
    assert "--pdf-password" in info.value.reason and PASSWORD_ENV in info.value.reason
    with pytest.raises(ParseError, match="password given is wrong"):
        parse(path, password="nope")
    assert "launch codes" in parse(path, password="s3cret").text
    monkeypatch.setenv(PASSWORD_ENV, "s3cret")
    assert "launch codes" in parse(path).text
    assert parse(path).metadata["encrypted"] is True


@needs_documents
def test_real_password_protected_file(monkeypatch):
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    path = PDFS / "unstructured__password.pdf"
    with pytest.raises(ParseError, match="password-protected"):
        parse_file(path)
    # unstructured's examples open this file with the password "password".
    assert parse(path, password="password").text == "File with password"


@needs_documents
def test_aes_file_with_empty_user_password_opens():
    doc = parse(PDFS / "unstructured__copy-protected.pdf")
    assert doc.metadata["encrypted"] is True
    assert "LayoutParser" in doc.title
    assert "deep learning" in doc.text.lower()


@needs_documents
def test_truncated_and_corrupt_files_raise_parse_error(tmp_path):
    data = (PDFS / "docling__multi_page.pdf").read_bytes()
    for cut in (0.2, 0.6, 0.95):
        with pytest.raises(ParseError, match="damaged or truncated"):
            parse_bytes(data[: int(len(data) * cut)], path=tmp_path / "cut.pdf")
    with pytest.raises(ParseError, match="not a readable PDF"):
        parse_bytes(b"%PDF-1.7\n this is not a pdf at all", path=tmp_path / "junk.pdf")


def test_huge_pages_are_read_as_plain_text(canvas_pdf):
    def page(c, _):
        for i in range(40):
            c.drawString(72, 760 - 14 * i, f"Dense line number {i} of a crowded page.")

    path = canvas_pdf("dense.pdf", page)
    doc = parse(path, max_page_objects=10)  # layout analysis is skipped
    assert doc.metadata["pages_plain_text"] == [1]
    assert "Dense line number 39 of a crowded page." in doc.text


def test_missing_dependency_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pdfplumber", None)
    with pytest.raises(MissingDependencyError, match=r'"pdf" extra'):
        PdfParser().parse(b"%PDF-1.4", path=tmp_path / "x.pdf")


def test_registry_dispatches_pdf(canvas_pdf):
    def page(c, _):
        c.drawString(72, 700, "Dispatched through the registry.")

    doc = parse_file(canvas_pdf("via-registry.pdf", page))
    assert doc.text == "Dispatched through the registry."


# ----------------------------------------------------------------------------- real files


def _tokens(text: str) -> Counter[str]:
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S).replace("\\", "")
    return Counter(re.findall(r"\w+", text.lower()))


def token_f1(ours: str, reference: str) -> float:
    """F1 of lower-cased word tokens, counted as multisets (order does not matter)."""
    a, b = _tokens(ours), _tokens(reference)
    common = sum((a & b).values())
    if not common:
        return 0.0
    precision, recall = common / sum(a.values()), common / sum(b.values())
    return 2 * precision * recall / (precision + recall)


def table_cells(markdown: str) -> set[str]:
    """Cell texts (as their word tokens) of every Markdown table row."""
    cells = set()
    for line in markdown.splitlines():
        line = line.strip()
        if line.startswith("|") and not re.fullmatch(r"\|[\s\-:|]*\|", line):
            for cell in re.split(r"(?<!\\)\|", line.strip("|")):
                words = " ".join(re.findall(r"\w+", cell.replace("\\", "").lower()))
                if words:
                    cells.add(words)
    return cells


def test_token_f1_and_cells_helpers():
    assert token_f1("a b b c", "a b c") == pytest.approx(2 * 0.75 * 1 / 1.75)
    assert token_f1("", "x") == 0.0
    assert table_cells("| A | b c |\n| --- | --- |\n| 1 | |") == {"a", "b c", "1"}


MIN_F1 = 0.9
MIN_CELL_RECALL = {
    "2305.03393v1-pg9.pdf.md": 0.95,
    # docling also renders the table of contents and an SQL listing as tables; in the PDF
    # they are plain text (dot leaders, no rules), so ours stay paragraphs.
    "redp5110_sampled.pdf.md": 0.4,
}


@needs_documents
def test_matches_docling_reference():
    """Token F1 and table-cell recall against docling's Markdown, as a table (pytest -s)."""
    references = sorted(EXPECTED.glob("*.pdf.md"))
    assert references, f"no references in {EXPECTED}"
    rows, failures = [], []
    for reference in references:
        source = PDFS / f"docling__{reference.name.removesuffix('.md')}"
        started = time.perf_counter()
        doc = parse(source)
        seconds = time.perf_counter() - started
        expected = reference.read_text(encoding="utf-8")
        f1 = token_f1(to_markdown(doc), expected)
        wanted = table_cells(expected)
        ours = table_cells("\n".join(b.text for b in doc.blocks if b.kind == "table"))
        recall = len(wanted & ours) / len(wanted) if wanted else None
        shown = "   -" if recall is None else f"{recall:4.2f}"
        rows.append(
            f"{reference.name:28} {f1:6.3f} {shown:>6} {len(wanted):6} "
            f"{doc.metadata['pages']:5} {seconds:6.2f}"
        )
        if f1 < MIN_F1:
            failures.append(f"{reference.name}: token F1 {f1:.3f} < {MIN_F1}")
        if recall is not None and recall < MIN_CELL_RECALL.get(reference.name, 0.9):
            failures.append(f"{reference.name}: table-cell recall {recall:.2f}")
    print(f"\n{'reference':28} {'F1':>6} {'cells':>6} {'of':>6} {'pages':>5} {'secs':>6}")
    print("\n".join(rows))
    assert not failures, failures


@needs_documents
def test_every_shared_pdf_parses(monkeypatch):
    """Every shared PDF gives blocks (its speed is bench/parse_throughput.py's, not a test's)."""
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    for path in sorted(PDFS.glob("*.pdf")):
        doc = parse(path, password="password" if "password" in path.name else None, ocr=False)
        assert doc.blocks and doc.metadata["pages"] >= 1, path.name


@needs_documents
def test_spreadsheet_export_keeps_dates_whole():
    doc = parse(PDFS / "pdfplumber__WARN-Report-for-7-1-2015-to-03-25-2016.pdf")
    first = next(b for b in doc.blocks if b.kind == "table")
    assert "| 06/22/2015 | 03/25/2016 | 07/01/2015 | Maxim Integrated Product |" in first.text
    assert sum(b.kind == "table" for b in doc.blocks) >= 16


@needs_documents
def test_right_to_left_text_in_logical_order():
    doc = parse(PDFS / "docling__right_to_left_01.pdf")
    assert doc.title.startswith("تحسين الإنتاجية وحل المشكلات")
    assert "مكتبة pandas في Python" in doc.text


@needs_documents
def test_rotated_table_headers_read_upright():
    doc = parse(PDFS / "docling__redp5110_sampled.pdf", ocr=False)
    tables = "\n".join(b.text for b in doc.blocks if b.kind == "table")
    assert "| QIBM_DB_SECADM |" in tables and "No Authority" in tables
