"""Answer units of a passage and the question cues, on hand-written text."""

from __future__ import annotations

import pytest

from ragline.core.types import Hit
from ragline.generate import render_cited
from ragline.generate.cues import (
    answer_type,
    has_answer_type,
    in_a_range,
    is_variant,
    number_value,
    question_codes,
    variant_finder,
)
from ragline.generate.units import parse_units, render_unit, table_cells

PASSAGE = (
    "4. Meals and per diem\n\n"
    "Meals are covered by a daily per diem:\n\n"
    "- Domestic travel: $75 per day.\n"
    "- International travel: $110 per day.\n\n"
    "The per diem is 75 percent on the last day.\n\n"
    "| Code | Meaning |\n| --- | --- |\n| E_1 | Dirty \\| wet lens |\n\n"
    "4.1 Receipts\n\n"
    "How do I claim?\n\n"
    "Claim it in the portal."
)


def test_parse_units_recovers_roles():
    units = parse_units(PASSAGE, ["Travel", "4. Meals and per diem"])
    assert [u.kind for u in units] == [
        "heading",  # repeats the heading path
        "lead",
        "item",
        "item",
        "sentence",
        "header",
        "row",
        "heading",  # short, unpunctuated line of its own
        "question",
        "sentence",
    ]
    assert units[2].owner == units[3].owner == 1  # items belong to the lead-in line
    assert units[6].owner == 5  # the row to its header row
    assert units[6].cells == ("E_1", "Dirty | wet lens")
    assert units[9].section == 7  # under "4.1 Receipts"


def test_lead_in_only_owns_the_list_right_after_it():
    units = parse_units("Note:\n\nPlain prose follows.\n\n- an item")
    assert [u.kind for u in units] == ["lead", "sentence", "item"]
    assert units[2].owner is None


def test_header_row_needs_a_rule_in_pipe_tables():
    units = parse_units("| E_1 | Dirty |\n| E_2 | Wet |")
    assert [u.kind for u in units] == ["row", "row"]
    assert all(u.owner is None for u in units)
    tabbed = parse_units("name\tvalue\nalpha\t1")
    assert [u.kind for u in tabbed] == ["header", "row"]
    assert render_unit(tabbed[1], tabbed[0].cells) == "alpha — value: 1"


def test_render_unit():
    units = parse_units(PASSAGE)
    row = units[6]
    assert render_unit(row, units[5].cells) == "E_1 — Meaning: Dirty | wet lens"
    assert render_unit(row) == "E_1 — Dirty | wet lens"
    assert render_unit(units[2]) == "Domestic travel: $75 per day."
    assert render_unit(units[4]) == units[4].text
    assert table_cells("| a | | c |") == ("a", "", "c")


def test_render_cited_keeps_verbatim_quotes():
    h = Hit(chunk_id=1, document_id=1, doc_key="d", title="T", source="s", text="", score=1, rank=1)
    text, cits = render_cited([("E_1 — Meaning: Dirty", h, "| E_1 | Dirty |"), ("More.", h)])
    assert text == "E_1 — Meaning: Dirty [1] More. [1]"
    assert cits[0].quote == "| E_1 | Dirty | … More."


def test_question_codes_keep_numbers_with_separators_whole():
    assert question_codes("Who approves a trip costing $5,000 on X-570?") == ["5,000", "x-570"]
    assert question_codes("What does ERR_4021 mean in v2.3.1?") == ["err_4021", "v2.3.1"]


def test_number_ranges():
    assert number_value("$2,000.01") == 2000.01 and number_value("x1") is None
    assert in_a_range("From $2,000.01 to $10,000: your director.", 5000)
    assert in_a_range("store it between 40 and 60 percent", 50)
    assert in_a_range("ages 5-12", 7)
    assert not in_a_range("From $2,000.01 to $10,000: your director.", 12000)
    assert not in_a_range("Up to $2,000: your manager.", 1000)  # one-sided: not a range


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("full", "fulli", True),  # full / fully
        ("respond", "respons", True),  # respond / response
        ("nine", "9", True),
        ("charg", "charger", True),
        ("state", "statu", False),  # state / status
        ("form", "formal", False),
        ("art", "arti", False),  # too short to tell
        ("full", "full", False),  # equal terms are not variants, they are the same
    ],
)
def test_term_variants(a, b, same):
    assert is_variant(a, b) is same
    assert is_variant(b, a) is same


def test_variant_finder():
    find = variant_finder(["full", "nine", "charg"])
    assert find("fulli") == ["full"]
    assert find("9") == ["nine"]
    assert find("charger") == ["charg"]
    assert find("table") == []


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How long does the battery last?", "duration"),
        ("How quickly must records be destroyed?", "duration"),
        ("How many days can I carry over?", "quantity"),
        ("How much is the per diem?", "quantity"),
        ("When did the museum open?", "time"),
        ("In what year was it built?", "year"),
        ("Who approves the trip?", "entity"),
        ("What does ERR_4021 mean?", None),
    ],
)
def test_answer_type(question, kind):
    assert answer_type(question) == kind


def test_has_answer_type_ignores_what_the_question_already_says():
    assert has_answer_type("duration", "It runs for up to 10 hours.", set(), "")
    assert not has_answer_type("duration", "The last 20 percent is slow.", set(), "")
    assert has_answer_type("quantity", "It costs $110 per day.", set(), "")
    assert not has_answer_type("quantity", "It costs $5,000.", {5000.0}, "")
    assert has_answer_type("time", "It opened in 1793.", set(), "")
    assert has_answer_type("year", "It opened in 1793.", set(), "")
    assert not has_answer_type("year", "It opened in 1793.", {1793.0}, "")
    assert has_answer_type("entity", "Only the General Counsel can do it.", set(), "")
    q = "who may lift a hold set by the general counsel?"
    assert not has_answer_type("entity", "Only the General Counsel can do it.", set(), q)
