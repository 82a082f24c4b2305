"""DOCX parsing: structure, tables, exclusions and hostile packages on generated files, and
text / table-cell agreement with docling's reference Markdown on real files."""

from __future__ import annotations

import re
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from ragline.core.errors import ParseError
from ragline.parse import docx as docx_module
from ragline.parse import parse_bytes, parse_file
from ragline.parse.docx import DocxParser

DOCUMENTS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "documents"
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
MC_NS = "http://schemas.openxmlformats.org/markup-compatibility/2006"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"

CONTENT_TYPES = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
</Types>"""
PACKAGE_RELS = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="{REL}/officeDocument" Target="word/document.xml"/>
<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>
</Relationships>"""
DOCUMENT_RELS = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="{REL}/styles" Target="styles.xml"/>
<Relationship Id="rId2" Type="{REL}/numbering" Target="numbering.xml"/>
<Relationship Id="rId3" Type="{REL}/header" Target="header1.xml"/>
<Relationship Id="rId4" Type="{REL}/footer" Target="footer1.xml"/>
<Relationship Id="rId5" Type="{REL}/footnotes" Target="footnotes.xml"/>
</Relationships>"""


def style(style_id: str, name: str, extra: str = "", based_on: str = "") -> str:
    based = f'<w:basedOn w:val="{based_on}"/>' if based_on else ""
    return (
        f'<w:style w:type="paragraph" w:styleId="{style_id}"><w:name w:val="{name}"/>'
        f"{based}{extra}</w:style>"
    )


STYLES = (
    f'<w:styles xmlns:w="{W_NS}">'
    + '<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>'
    + style("Title", "Title")
    # Localised style ids (German Word): the names stay "heading N".
    + style("berschrift1", "heading 1", '<w:pPr><w:outlineLvl w:val="0"/></w:pPr>')
    + style("berschrift2", "heading 2", '<w:pPr><w:outlineLvl w:val="1"/></w:pPr>')
    + style("MyHeading", "My Heading", based_on="berschrift2")
    + style("Beschriftung", "caption")
    + style("Code", "Code")
    + style("ListBullet", "List Bullet", '<w:pPr><w:numPr><w:numId w:val="1"/></w:numPr></w:pPr>')
    + "</w:styles>"
)

NUMBERING = (
    f'<w:numbering xmlns:w="{W_NS}">'
    '<w:abstractNum w:abstractNumId="0">'
    '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="bullet"/></w:lvl>'
    '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="bullet"/></w:lvl></w:abstractNum>'
    '<w:abstractNum w:abstractNumId="1">'
    '<w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/></w:lvl>'
    '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/></w:lvl></w:abstractNum>'
    '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>'
    '<w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num>'
    '<w:num w:numId="3"><w:abstractNumId w:val="1"/>'
    '<w:lvlOverride w:ilvl="0"><w:startOverride w:val="5"/></w:lvlOverride></w:num>'
    "</w:numbering>"
)


def core(title: str = "", creator: str = "Ada Lovelace") -> str:
    return (
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
        f"<dc:title>{title}</dc:title><dc:creator>{creator}</dc:creator>"
        "<dc:subject>Engines</dc:subject><cp:keywords>analytical, engine</cp:keywords>"
        '<dcterms:created xsi:type="dcterms:W3CDTF">2024-01-02T03:04:05Z</dcterms:created>'
        '<dcterms:modified xsi:type="dcterms:W3CDTF">2024-02-03T04:05:06Z</dcterms:modified>'
        "</cp:coreProperties>"
    )


def p(text: str, style_id: str = "", ppr: str = "") -> str:
    pstyle = f'<w:pStyle w:val="{style_id}"/>' if style_id else ""
    props = f"<w:pPr>{pstyle}{ppr}</w:pPr>" if pstyle or ppr else ""
    return f'<w:p>{props}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>'


def li(text: str, num_id: int, ilvl: int = 0) -> str:
    return p(text, ppr=f'<w:numPr><w:ilvl w:val="{ilvl}"/><w:numId w:val="{num_id}"/></w:numPr>')


def tc(text: str, props: str = "") -> str:
    tcpr = f"<w:tcPr>{props}</w:tcPr>" if props else ""
    return f"<w:tc>{tcpr}{p(text) if text else '<w:p/>'}</w:tc>"


def document(body: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        f'<w:document xmlns:w="{W_NS}" xmlns:r="{R_NS}" xmlns:mc="{MC_NS}"><w:body>{body}'
        '<w:sectPr><w:headerReference w:type="default" r:id="rId3"/>'
        '<w:footerReference w:type="default" r:id="rId4"/></w:sectPr></w:body></w:document>'
    )


def make_docx(
    body: str = "",
    *,
    document_xml: str | None = None,
    title: str = "",
    parts: dict[str, str | bytes] | None = None,
    omit: tuple[str, ...] = (),
) -> bytes:
    """A .docx package written part by part (no python-docx needed)."""
    import io

    files: dict[str, str | bytes] = {
        "[Content_Types].xml": CONTENT_TYPES,
        "_rels/.rels": PACKAGE_RELS,
        "word/_rels/document.xml.rels": DOCUMENT_RELS,
        "word/document.xml": document_xml if document_xml is not None else document(body),
        "word/styles.xml": STYLES,
        "word/numbering.xml": NUMBERING,
        "docProps/core.xml": core(title),
        "word/header1.xml": f'<w:hdr xmlns:w="{W_NS}">{p("HEADER_TEXT")}</w:hdr>',
        "word/footer1.xml": f'<w:ftr xmlns:w="{W_NS}">{p("FOOTER_TEXT")}</w:ftr>',
        "word/footnotes.xml": (
            f'<w:footnotes xmlns:w="{W_NS}"><w:footnote w:id="1">{p("FOOTNOTE_TEXT")}'
            "</w:footnote></w:footnotes>"
        ),
        **(parts or {}),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            if name not in omit:
                archive.writestr(name, data)
    return buffer.getvalue()


def parse(data: bytes, name: str = "report.docx"):
    return parse_bytes(data, path=Path(name))


# --------------------------------------------------------------------------- structure


def test_heading_styles_give_levels_and_paths() -> None:
    body = (
        p("Annual report", "Title")
        + p("Intro text.")
        + p("Engines", "berschrift1")
        + p("Under engines.")
        + p("Steam", "berschrift2")
        + p("About steam.")
        + p("Derived style", "MyHeading")
        + p("Outline level three", ppr='<w:outlineLvl w:val="2"/>')
        + p("Deep text.")
        + p("Electric", "berschrift1")
        + p("About electricity.")
        + p("   ", "berschrift1")  # an empty heading is not a heading
    )
    doc = parse(make_docx(body))
    got = [(b.kind, b.level, b.text, b.heading_path) for b in doc.blocks]
    assert got == [
        ("heading", 1, "Annual report", ()),
        ("paragraph", 0, "Intro text.", ("Annual report",)),
        ("heading", 1, "Engines", ()),
        ("paragraph", 0, "Under engines.", ("Engines",)),
        ("heading", 2, "Steam", ("Engines",)),
        ("paragraph", 0, "About steam.", ("Engines", "Steam")),
        ("heading", 2, "Derived style", ("Engines",)),
        ("heading", 3, "Outline level three", ("Engines", "Derived style")),
        ("paragraph", 0, "Deep text.", ("Engines", "Derived style", "Outline level three")),
        ("heading", 1, "Electric", ()),
        ("paragraph", 0, "About electricity.", ("Electric",)),
    ]
    assert doc.title == "Annual report" and doc.metadata["title_source"] == "title_style"
    assert doc.media_type == docx_module.DOCX_MEDIA_TYPE


def test_core_properties_and_title_fallbacks() -> None:
    doc = parse(make_docx(p("Body", "berschrift1") + p("text"), title="Core Title"))
    assert doc.title == "Core Title"
    meta = doc.metadata
    assert meta["title_source"] == "core_properties"
    assert meta["creator"] == "Ada Lovelace" and meta["subject"] == "Engines"
    assert meta["keywords"] == "analytical, engine"
    assert meta["created"] == "2024-01-02T03:04:05Z"
    assert meta["modified"] == "2024-02-03T04:05:06Z"

    doc = parse(make_docx(p("Body", "berschrift1") + p("text")))
    assert (doc.title, doc.metadata["title_source"]) == ("Body", "heading")
    doc = parse(make_docx(p("just text")), name="quarterly-notes.docx")
    assert (doc.title, doc.metadata["title_source"]) == ("quarterly-notes", "filename")
    doc = parse(make_docx(p("just text"), omit=("docProps/core.xml", "word/styles.xml")))
    assert doc.text == "just text"


def test_lists_one_block_per_list() -> None:
    body = (
        p("Before.")
        + li("apples", 1)
        + li("green", 1, 1)
        + li("pears", 1)
        + p("Steps:")
        + li("mix", 2)
        + li("stir", 2, 1)
        + li("again", 2, 1)
        + li("bake", 2)
        + li("started at five", 3)
        + li("six", 3)
        + p("Not a list item", "ListBullet", '<w:numPr><w:numId w:val="0"/></w:numPr>')
        + p("style bullet one", "ListBullet")
        + p("style bullet two", "ListBullet")
    )
    doc = parse(make_docx(body))
    got = [(b.kind, b.text) for b in doc.blocks]
    assert got == [
        ("paragraph", "Before."),
        ("list", "- apples\n  - green\n- pears"),
        ("paragraph", "Steps:"),
        ("list", "1. mix\n  1. stir\n  2. again\n2. bake"),
        ("list", "5. started at five\n6. six"),
        ("paragraph", "Not a list item"),
        ("list", "- style bullet one\n- style bullet two"),
    ]


def test_merged_cells_are_repeated() -> None:
    table = (
        "<w:tbl>"
        + "<w:tr>" + tc("Region") + tc("Q1 and Q2", '<w:gridSpan w:val="2"/>') + tc("Note") + "</w:tr>"
        + "<w:tr>" + tc("North", '<w:vMerge w:val="restart"/>') + tc("1") + tc("2") + tc("ok") + "</w:tr>"
        + "<w:tr>" + tc("", "<w:vMerge/>") + tc("3") + tc("4") + tc("late") + "</w:tr>"
        + '<w:tr><w:trPr><w:gridBefore w:val="2"/></w:trPr>' + tc("x|y") + tc("z") + "</w:tr>"
        + "</w:tbl>"
    )  # fmt: skip
    doc = parse(make_docx(p("Sales", "berschrift1") + table))
    [block] = [b for b in doc.blocks if b.kind == "table"]
    assert block.text == (
        "| Region | Q1 and Q2 | Q1 and Q2 | Note |\n"
        "| --- | --- | --- | --- |\n"
        "| North | 1 | 2 | ok |\n"
        "| North | 3 | 4 | late |\n"
        "|  |  | x\\|y | z |"
    )
    assert block.heading_path == ("Sales",)


def test_single_column_table_is_read_as_text() -> None:
    table = "<w:tbl><w:tr>" + tc("Boxed note") + "</w:tr></w:tbl>"
    doc = parse(make_docx(table))
    assert [(b.kind, b.text) for b in doc.blocks] == [("paragraph", "Boxed note")]


def test_headers_footers_footnotes_and_hidden_text_excluded() -> None:
    body = (
        '<w:p><w:r><w:t xml:space="preserve">Body text</w:t></w:r>'
        '<w:r><w:footnoteReference w:id="1"/></w:r>'
        '<w:del w:id="1"><w:r><w:delText>DELETED_TEXT</w:delText></w:r></w:del>'
        '<w:ins w:id="2"><w:r><w:t xml:space="preserve"> inserted</w:t></w:r></w:ins>'
        "<w:r><w:rPr><w:vanish/></w:rPr><w:t>HIDDEN_TEXT</w:t></w:r>"
        '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        '<w:r><w:instrText> HYPERLINK "FIELD_CODE" </w:instrText></w:r>'
        '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
        '<w:r><w:t xml:space="preserve"> link result</w:t></w:r>'
        '<w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>'
    )
    doc = parse(make_docx(body))
    assert doc.text == "Body text inserted link result"
    for hidden in ("HEADER_TEXT", "FOOTER_TEXT", "FOOTNOTE_TEXT", "DELETED_TEXT",
                   "HIDDEN_TEXT", "FIELD_CODE"):  # fmt: skip
        assert hidden not in doc.text


def test_image_caption_text_box_and_code() -> None:
    drawing = (
        '<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/'
        'drawingml/2006/wordprocessingDrawing"><wp:docPr id="1" name="Picture 1" '
        'descr="ALT_TEXT"/></wp:inline></w:drawing></w:r></w:p>'
    )
    text_box = (
        '<w:p><w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><w:txbxContent>'
        + p("Boxed words")
        + "</w:txbxContent></w:drawing></mc:Choice><mc:Fallback><w:pict><w:txbxContent>"
        + p("Boxed words")
        + "</w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>"
    )
    body = (
        p("Figures", "berschrift1")
        + drawing
        + p("Figure 1: A steam engine", "Beschriftung")
        + text_box
        + p("def f(x):", "Code")
        + p("    return x", "Code")
        + p("After code.")
    )
    doc = parse(make_docx(body))
    got = [(b.kind, b.text) for b in doc.blocks]
    assert got == [
        ("heading", "Figures"),
        ("caption", "Figure 1: A steam engine"),
        ("paragraph", "Boxed words"),
        ("code", "def f(x):\n    return x"),
        ("paragraph", "After code."),
    ]
    assert doc.blocks[1].heading_path == ("Figures",)
    assert "ALT_TEXT" not in doc.text


def test_parse_file_and_detection(tmp_path: Path) -> None:
    path = tmp_path / "notes.bin"
    path.write_bytes(make_docx(p("Detected by magic bytes")))
    assert parse_file(path, media_type=docx_module.DOCX_MEDIA_TYPE).text == (
        "Detected by magic bytes"
    )
    path = tmp_path / "notes.docx"
    path.write_bytes(make_docx(p("By extension")))
    assert parse_file(path).media_type == docx_module.DOCX_MEDIA_TYPE


# --------------------------------------------------------------------------- hostile input


def test_zip_bomb_by_ratio() -> None:
    filler = " " * (8 * 1024 * 1024)  # 8 MiB of spaces deflates ~1000x
    data = make_docx(document_xml=document(p("x") + f"<!--{filler}-->"))
    assert len(data) < 100_000
    with pytest.raises(ParseError) as info:
        parse(data)
    assert "ZIP bomb" in info.value.reason


def test_zip_bomb_by_declared_size() -> None:
    data = make_docx(p("word " * 5_000))
    with pytest.raises(ParseError) as info:
        DocxParser(max_part_bytes=10_000).parse(data, path=Path("report.docx"))
    assert "word/document.xml" in info.value.reason and "limit" in info.value.reason


def test_external_entity_is_never_read(tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("CANARY_SECRET_4711")
    xml = document(p("&xxe;")).replace(
        "<w:document",
        f'<!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file://{canary}">]><w:document',
    )
    data = make_docx(document_xml=xml)
    with pytest.raises(ParseError) as info:
        parse(data)
    assert "DTD" in info.value.reason
    assert "CANARY_SECRET_4711" not in str(info.value)
    # Past the prolog pre-check, the parser itself neither reads the file nor keeps a DTD.
    late = xml.replace("<!DOCTYPE", f"<!--{' ' * 70_000}--><!DOCTYPE")
    with pytest.raises(ParseError) as info:
        parse(make_docx(document_xml=late))
    assert "CANARY_SECRET_4711" not in str(info.value)
    # A DTD in any other part is refused the same way.
    with pytest.raises(ParseError) as info:
        parse(make_docx(p("ok"), parts={"docProps/core.xml": xml}))
    assert "CANARY_SECRET_4711" not in str(info.value)


def test_entity_expansion_is_refused() -> None:
    entities = '<!ENTITY a "ha">' + "".join(
        f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9)
    )
    xml = document(p("&j;")).replace(
        "<w:document", f"<!DOCTYPE w:document [{entities}]><w:document"
    )
    with pytest.raises(ParseError) as info:
        parse(make_docx(document_xml=xml))
    assert "DTD" in info.value.reason


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"PK\x03\x04 this is not really a zip archive" * 4, "not a valid DOCX"),
        (b"plain bytes named .docx", "not a valid DOCX"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100), "legacy .doc"),
    ],
)
def test_corrupt_packages(data: bytes, expected: str) -> None:
    with pytest.raises(ParseError) as info:
        DocxParser().parse(data, path=Path("broken.docx"))
    assert expected in info.value.reason


def test_truncated_zip_and_missing_parts() -> None:
    good = make_docx(p("hello"))
    with pytest.raises(ParseError) as info:
        parse(good[: len(good) // 2])
    assert "not a valid DOCX" in info.value.reason
    with pytest.raises(ParseError) as info:
        parse(make_docx(p("x"), omit=("word/document.xml",)))
    assert "no main document part" in info.value.reason
    with pytest.raises(ParseError) as info:
        parse(make_docx(document_xml="<w:document><w:body>"))
    assert "not well-formed XML" in info.value.reason
    with pytest.raises(ParseError) as info:
        parse(make_docx(document_xml=f'<w:document xmlns:w="{W_NS}"><w:body/></w:document>'))
    assert "no text" in info.value.reason


# --------------------------------------------------------------------------- real files

_TOKEN_RE = re.compile(r"\w+")


def tokens(text: str) -> Counter[str]:
    return Counter(_TOKEN_RE.findall(text.lower()))


def token_f1(predicted: str, reference: str) -> float:
    """F1 of the lower-cased word multisets."""
    got, want = tokens(predicted), tokens(reference)
    overlap = sum((got & want).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / sum(got.values()), overlap / sum(want.values())
    return 2 * precision * recall / (precision + recall)


def table_cells(markdown: str) -> Counter[str]:
    """Non-empty cell texts of every Markdown table row (separator rows skipped)."""
    cells: Counter[str] = Counter()
    for line in markdown.splitlines():
        line = line.strip()
        if not line.startswith("|") or re.fullmatch(r"\|[\s:|-]*\|", line):
            continue
        for cell in re.split(r"(?<!\\)\|", line.strip("|")):
            cell = " ".join(cell.replace("\\|", "|").split()).lower()
            if cell:
                cells[cell] += 1
    return cells


def cell_recall(predicted: str, reference: str) -> float | None:
    want = table_cells(reference)
    if not want:
        return None
    return sum((table_cells(predicted) & want).values()) / sum(want.values())


def test_metrics_against_known_values() -> None:
    assert token_f1("a b c", "a b c") == 1.0
    assert token_f1("a b", "c d") == 0.0
    assert token_f1("a a b", "a b b") == pytest.approx(2 / 3)
    assert (
        cell_recall("| a | b |\n| --- | --- |\n| c | d |", "| a | B |\n| - | - |\n| x | d |")
        == 0.75
    )
    assert cell_recall("text", "no tables") is None


def real_files() -> list[Path]:
    folder = DOCUMENTS / "docx"
    return sorted(folder.glob("*.docx")) if folder.is_dir() else []


@pytest.mark.skipif(not real_files(), reason=f"shared sample documents not found at {DOCUMENTS}")
def test_real_files_against_docling_references() -> None:
    rows = []
    for path in real_files():
        doc = parse_file(path)
        assert doc.blocks and doc.title
        reference_path = DOCUMENTS / "expected" / (path.name.split("__", 1)[-1] + ".md")
        if reference_path.is_file():
            reference = reference_path.read_text(encoding="utf-8").replace("<!-- image -->", "")
            f1, recall = token_f1(doc.text, reference), cell_recall(doc.text, reference)
        else:
            f1 = recall = None
        rows.append((path.name, len(doc.blocks), f1, recall))
    print(f"\n{'file':40} {'blocks':>6} {'token F1':>9} {'cell recall':>12}")
    for name, blocks, f1, recall in rows:
        f1_text = f"{f1:.3f}" if f1 is not None else "-"
        recall_text = f"{recall:.3f}" if recall is not None else "-"
        print(f"{name:40} {blocks:>6} {f1_text:>9} {recall_text:>12}")
    for name, _, f1, recall in rows:
        if f1 is not None:
            assert f1 >= 0.85, (name, f1)
        if recall is not None:
            assert recall >= 0.9, (name, recall)


@pytest.mark.skipif(not real_files(), reason=f"shared sample documents not found at {DOCUMENTS}")
def test_real_file_structure() -> None:
    doc = parse_file(DOCUMENTS / "docx" / "docling__word_sample.docx")
    assert doc.title == "Swimming in the lake"
    kinds = [b.kind for b in doc.blocks]
    assert kinds.count("list") == 3 and kinds.count("table") == 1 and "caption" in kinds
    eat = next(b for b in doc.blocks if b.text.startswith("After we had"))
    assert eat.heading_path == ("Let’s swim!", "Let’s eat")
    assert doc.metadata["creator"] == "Christoph Auer"
