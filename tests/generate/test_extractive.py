"""ExtractiveAnswerer and the citation helpers, on small hand-written passages."""

from __future__ import annotations

import pytest

from ragline.core.errors import ConfigError
from ragline.core.protocols import Generator
from ragline.core.types import ABSTAIN_SENTENCE, Citation, Hit
from ragline.generate import (
    ExtractiveAnswerer,
    check_citations,
    parse_markers,
    render_cited,
    renumber_markers,
    split_units,
    strip_markers,
)


def hit(chunk_id: int, text: str, *, title: str = "", rank: int = 1, **kw) -> Hit:
    return Hit(
        chunk_id=chunk_id,
        document_id=chunk_id // 10,
        doc_key=f"doc-{chunk_id // 10}",
        title=title or f"Doc {chunk_id}",
        source=f"docs/{chunk_id}.md",
        text=text,
        score=1.0 / rank,
        rank=rank,
        **kw,
    )


ERRORS = hit(
    11,
    "The storage service reports numbered error codes. "
    "ERR_4020 means the request was malformed. "
    "ERR_4021 means the disk quota of the tenant is exhausted. "
    "ERR_4022 means the upstream network is unreachable.",
    title="Error codes",
    heading_path=("Reference", "Errors"),
    page=3,
)
RELEASES = hit(
    21,
    "Version v2.3.0 added the export command. "
    "Version v2.3.1 fixed a crash when exporting empty collections. "
    "Version v2.4 removed the legacy importer.",
    title="Release notes",
    rank=2,
)
BREAD = hit(
    31,
    "Knead the dough for ten minutes until it is smooth and elastic. "
    "Let the dough rise in a warm place for one hour. "
    "Bake the bread at 220 degrees for thirty minutes.",
    title="Baking bread",
)
EIFFEL = hit(
    41,
    "The Eiffel Tower is a wrought-iron lattice tower in Paris. "
    "It was designed by the engineering company of Gustave Eiffel. "
    "The tower was completed in 1889 for the World's Fair.",
    title="Eiffel Tower",
)
LOUVRE = hit(
    51,
    "The Louvre is the world's most-visited art museum. "
    "The museum is housed in the Louvre Palace in Paris. "
    "The Louvre opened as a museum in 1793.",
    title="Louvre",
    rank=2,
)


def check_consistent(answer) -> None:
    """Every [n] names a citation, every citation is cited, numbered by first citation."""
    assert check_citations(answer.text, answer.citations) == []
    assert [c.number for c in answer.citations] == list(range(1, len(answer.citations) + 1))
    assert list(dict.fromkeys(parse_markers(answer.text))) == [c.number for c in answer.citations]


def test_is_a_generator():
    a = ExtractiveAnswerer()
    assert isinstance(a, Generator)
    assert a.name == "extractive"


def test_exact_code_picks_the_sentence_with_the_code():
    ans = ExtractiveAnswerer().answer("What does ERR_4021 mean?", [ERRORS, RELEASES])
    assert not ans.abstained
    assert "ERR_4021 means the disk quota" in ans.text
    assert "ERR_4020" not in ans.text and "ERR_4022" not in ans.text
    assert ans.text.startswith("ERR_4021 means the disk quota of the tenant is exhausted. [1]")
    check_consistent(ans)


def test_version_is_matched_exactly_not_by_its_parts():
    ans = ExtractiveAnswerer().answer("What did v2.3.1 fix?", [RELEASES, ERRORS])
    assert not ans.abstained
    assert "v2.3.1 fixed a crash" in ans.text
    assert "v2.3.0" not in ans.text


def test_citation_maps_to_the_right_hit():
    ans = ExtractiveAnswerer().answer("What does ERR_4021 mean?", [RELEASES, ERRORS])
    assert len(ans.citations) == 1
    c = ans.citations[0]
    assert c == Citation(
        number=1,
        chunk_id=ERRORS.chunk_id,
        doc_key=ERRORS.doc_key,
        title="Error codes",
        source=ERRORS.source,
        heading_path=("Reference", "Errors"),
        page=3,
        quote="ERR_4021 means the disk quota of the tenant is exhausted.",
    )
    assert c.location == "Error codes › Reference › Errors"
    assert ans.hits == (RELEASES, ERRORS)


def test_multiple_passages_numbered_by_first_citation():
    # The better-matching passage (Louvre) is second in the hit list but cited first.
    # Evidence comes from the best single spot, so a two-part question gets about 0.5.
    ans = ExtractiveAnswerer(max_sentences=3, min_evidence=0.4).answer(
        "When did the Louvre open as a museum, and when was the Eiffel Tower completed?",
        [EIFFEL, LOUVRE],
    )
    assert not ans.abstained
    check_consistent(ans)
    assert len(ans.citations) == 2
    by_number = {c.number: c.chunk_id for c in ans.citations}
    first = parse_markers(ans.text)[0]
    assert first == 1
    assert "1793" in ans.text and "1889" in ans.text
    # Each quote comes from the passage it cites, and each sentence carries its marker.
    for c in ans.citations:
        source = {EIFFEL.chunk_id: EIFFEL, LOUVRE.chunk_id: LOUVRE}[c.chunk_id]
        for part in c.quote.split(" … "):
            assert part in source.text
            assert f"{part} [{c.number}]" in ans.text
    assert set(by_number.values()) == {EIFFEL.chunk_id, LOUVRE.chunk_id}


def test_abstains_without_hits():
    ans = ExtractiveAnswerer().answer("What does ERR_4021 mean?", [])
    assert ans.abstained
    assert ans.text == ABSTAIN_SENTENCE
    assert ans.citations == ()
    assert ans.evidence == 0.0
    assert ans.hits == ()


def test_abstains_on_unrelated_hits():
    ans = ExtractiveAnswerer().answer("How do I rotate the API key of a tenant?", [BREAD, EIFFEL])
    assert ans.abstained
    assert ans.text == ABSTAIN_SENTENCE
    assert ans.citations == ()
    assert ans.evidence < 0.2
    assert ans.hits == (BREAD, EIFFEL)


def test_abstains_when_the_code_is_absent():
    # Every word matches, but the asked-for code appears nowhere.
    ans = ExtractiveAnswerer().answer("What does ERR_9999 mean?", [ERRORS])
    assert ans.abstained


def test_evidence_is_reported_when_answering_and_threshold_applies():
    q = "How long should the dough rise?"
    ans = ExtractiveAnswerer().answer(q, [BREAD])
    assert not ans.abstained
    assert 0.0 < ans.evidence <= 1.0
    assert "rise in a warm place for one hour" in ans.text
    strict = ExtractiveAnswerer(min_evidence=1.0).answer(q, [BREAD])
    lenient = ExtractiveAnswerer(min_evidence=0.0).answer(q, [BREAD])
    assert strict.evidence == lenient.evidence == ans.evidence
    assert strict.abstained == (ans.evidence < 1.0)
    assert not lenient.abstained


def test_negated_question_without_negated_sentence_lowers_evidence():
    plain = ExtractiveAnswerer(min_evidence=0).answer("When was the tower completed?", [EIFFEL])
    negated = ExtractiveAnswerer(min_evidence=0).answer(
        "When was the tower not completed?", [EIFFEL]
    )
    assert negated.evidence < plain.evidence


def test_deterministic():
    a = ExtractiveAnswerer()
    hits = [EIFFEL, LOUVRE, BREAD, ERRORS, RELEASES]
    q = "Where is the Louvre museum and when did it open?"
    first = a.answer(q, hits)
    for _ in range(3):
        assert ExtractiveAnswerer().answer(q, hits) == first
        assert a.answer(q, hits) == first


def test_max_sentences_and_max_passages():
    hits = [EIFFEL, LOUVRE]
    q = "What is the Louvre museum in Paris?"
    one = ExtractiveAnswerer(max_sentences=1).answer(q, hits)
    assert len(parse_markers(one.text)) == 1
    first_only = ExtractiveAnswerer(max_passages=1).answer(q, hits)
    assert first_only.hits == (EIFFEL,)
    assert all(c.chunk_id == EIFFEL.chunk_id for c in first_only.citations)


def test_duplicate_hits_and_sentences_are_not_repeated():
    copy = hit(12, ERRORS.text, title="Error codes (mirror)", rank=2)
    ans = ExtractiveAnswerer().answer("What does ERR_4021 mean?", [ERRORS, ERRORS, copy])
    assert ans.hits == (ERRORS, copy)
    assert ans.text.count("ERR_4021 means") == 1
    check_consistent(ans)


def test_anaphoric_sentence_brings_its_predecessor():
    ans = ExtractiveAnswerer().answer("Which company designed it, Gustave Eiffel?", [EIFFEL])
    assert "designed by the engineering company" in ans.text
    check_consistent(ans)


def test_sentences_in_reading_order_within_a_passage():
    ans = ExtractiveAnswerer().answer(
        "Which error codes mean malformed request or unreachable network?", [ERRORS]
    )
    assert not ans.abstained
    i, j = ans.text.find("ERR_4020"), ans.text.find("ERR_4022")
    assert 0 <= i < j


def test_table_and_list_lines_stay_whole():
    text = (
        "Limits per plan:\n\n"
        "| plan | max documents |\n|---|---|\n| Free | 1,000 |\n| Pro | 250,000 |\n\n"
        "- Retention is 30 days. Backups are daily.\n- Support by e-mail."
    )
    units = split_units(text)
    assert "| Pro | 250,000 |" in units
    assert "- Retention is 30 days. Backups are daily." in units
    assert not any("---" in u for u in units)
    table = hit(61, text, title="Plans")
    ans = ExtractiveAnswerer(max_sentences=1).answer("How many documents on the Pro plan?", [table])
    # Shown with its column names; the citation quotes the row as written.
    assert ans.text == "Pro — max documents: 250,000 [1]"
    assert ans.citations[0].quote == "| Pro | 250,000 |"


def test_split_units_edge_cases():
    assert split_units("") == []
    assert split_units("Use a || b in shell. Then stop.") == ["Use a || b in shell.", "Then stop."]
    items = "Steps:\n- Install the wheel\n  with pip.\n- Run it.\n\n# Usage\nCall it. Done."
    assert split_units(items) == [
        "Steps:",
        "- Install the wheel with pip.",
        "- Run it.",
        "# Usage",
        "Call it.",
        "Done.",
    ]
    tabbed = "name\tvalue\nalpha\t1\nbeta\t2"
    assert split_units(tabbed) == ["name value", "alpha 1", "beta 2"]


def test_abstains_on_empty_passages_and_contentless_questions():
    empty = hit(91, "")
    assert ExtractiveAnswerer(min_evidence=0).answer("What does ERR_4021 mean?", [empty]).abstained
    ans = ExtractiveAnswerer(min_evidence=0).answer("What is it?", [EIFFEL])
    assert ans.abstained and ans.evidence == 0.0


def test_question_echo_is_penalized():
    echo = hit(
        71,
        "How do I configure the proxy timeout? "
        "Set proxy.timeout in ragline.yaml; the default is 30 seconds.",
        title="FAQ",
    )
    ans = ExtractiveAnswerer(max_sentences=1).answer(
        "How do I configure the proxy timeout?", [echo]
    )
    assert "30 seconds" in ans.text


def test_uses_hits_without_any_scores():
    bare = hit(81, "The Louvre opened as a museum in 1793.", scores={})
    ans = ExtractiveAnswerer().answer("When did the Louvre open?", [bare])
    assert not ans.abstained


@pytest.mark.parametrize(
    "kwargs",
    [{"max_sentences": 0}, {"max_passages": 0}, {"min_evidence": 1.5}, {"language": "klingon"}],
)
def test_bad_settings_raise_config_error(kwargs):
    with pytest.raises(ConfigError):
        ExtractiveAnswerer(**kwargs)


# -- citation helpers ------------------------------------------------------------


def test_render_cited_numbers_by_first_citation_and_quotes():
    text, cits = render_cited([("A.", LOUVRE), ("B.", EIFFEL), ("C.", LOUVRE)])
    assert text == "A. [1] B. [2] C. [1]"
    assert [(c.number, c.chunk_id, c.quote) for c in cits] == [
        (1, LOUVRE.chunk_id, "A. … C."),
        (2, EIFFEL.chunk_id, "B."),
    ]
    assert check_citations(text, cits) == []


def test_parse_and_strip_markers():
    assert parse_markers("x [2] y [1, 3][2]") == [2, 1, 3, 2]
    assert strip_markers("Paris. [1] It opened in 1793. [2]") == "Paris. It opened in 1793."


def test_check_citations_reports_problems():
    _, cits = render_cited([("A.", LOUVRE), ("B.", EIFFEL)])
    problems = check_citations("A. [1] C. [3]", cits)
    assert any("[3]" in p for p in problems)
    assert any("citation 2" in p for p in problems)
    assert check_citations("B. [2] A. [1]", cits)  # not in order of first citation


def test_renumber_markers_from_prompt_positions():
    sources = [BREAD, EIFFEL, LOUVRE, EIFFEL]
    text, cits = renumber_markers(
        "Paris museum [3]. Tower [2][4]. Bogus [9]. Both [3, 2].", sources
    )
    assert text == "Paris museum [1]. Tower [2]. Bogus. Both [1][2]."
    assert [(c.number, c.chunk_id) for c in cits] == [(1, LOUVRE.chunk_id), (2, EIFFEL.chunk_id)]
    assert check_citations(text, cits) == []


# -- structure of real documents: model numbers, answer types, headings, lists, tables ---

CHARGING = hit(
    201,
    "Charging\n\n"
    "The R-20 charges automatically on its docking station. When the battery falls to the "
    "return threshold, the robot drives to the nearest free dock.\n\n"
    "A fully charged R-20 runs for up to 10 hours of continuous operation at standard load. "
    "Heavier payloads reduce runtime.\n\n"
    "The last 20 percent charges more slowly to protect the cells. For most sites it is "
    "better to top up between waves than to wait for a full charge.",
    title="R-20 User Manual",
    heading_path=("R-20 User Manual", "Charging"),
)
PER_DIEM = hit(
    211,
    "4. Meals and per diem\n\n"
    "Meals while travelling are covered by a daily per diem instead of receipts:\n\n"
    "- Domestic travel: $75 per day.\n"
    "- International travel: $110 per day.\n\n"
    "Business meals with customers are reimbursed separately at actual cost.",
    title="Travel Policy",
    heading_path=("Travel Policy", "4. Meals and per diem"),
)
FAULTS_HEAD = hit(
    221,
    "Error codes\n\n"
    "When the robot detects a fault, the status light turns red and the code is shown.\n\n"
    "| Code | Meaning | Fix |\n"
    "| --- | --- | --- |\n"
    "| E_101 | Lidar window dirty | Wipe the lidar window with a dry cloth |\n"
    "| E_402 | Charging contact fault | Clean the copper contacts, then re-dock |",
    title="R-20 User Manual",
    heading_path=("R-20 User Manual", "Error codes"),
)
FAULTS_TAIL = hit(  # the rest of that table (same document), cut off without its header
    222,
    "| E_515 | Lift actuator stall | Lower the pod with the manual release lever |\n"
    "| E_601 | Firmware mismatch | Update robot and dock to the same release |",
    title="R-20 User Manual",
    heading_path=("R-20 User Manual", "Error codes"),
    rank=2,
)
APPROVALS = hit(
    231,
    "Approval depends on the estimated total cost of the trip:\n\n"
    "- Up to $2,000: approval by your direct manager.\n"
    "- From $2,000.01 to $10,000: approval by your department director.\n"
    "- Above $10,000: approval by the VP of Finance.",
    title="Travel Policy",
    heading_path=("Travel Policy", "Before you travel"),
)


def test_model_number_and_word_forms_find_the_answer_and_lead_with_it():
    # "X-570"-style model numbers match literally; "full charge" matches "fully charged".
    ans = ExtractiveAnswerer().answer(
        "How long does the R-20 battery last on a full charge?", [CHARGING]
    )
    assert not ans.abstained
    assert ans.text.startswith("A fully charged R-20 runs for up to 10 hours")
    check_consistent(ans)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How long does the dough rest in the fridge?", "rest in the fridge for two hours"),
        ("How many eggs does the dough need?", "needs three eggs"),
        ("When was the bakery opened?", "opened in 1931"),
        ("Who opened the bakery?", "Anna Berg opened"),
    ],
)
def test_answer_type_prefers_a_sentence_holding_that_kind_of_answer(question, expected):
    bakery = hit(
        241,
        "The dough must rest in the fridge before baking. "
        "Let the dough rest in the fridge for two hours. "
        "The dough needs eggs and flour. The dough needs three eggs. "
        "The bakery was opened by the family. The bakery opened in 1931. "
        "The bakery was opened as a family shop. Anna Berg opened the bakery as a shop.",
        title="Bakery",
    )
    ans = ExtractiveAnswerer(max_sentences=1, min_evidence=0).answer(question, [bakery])
    assert expected in ans.text


def test_headings_are_not_answers_and_a_lead_in_brings_its_list():
    ans = ExtractiveAnswerer().answer("What is the per diem for meals?", [PER_DIEM])
    assert not ans.abstained
    assert "4. Meals and per diem" not in ans.text
    assert "$75 per day" in ans.text and "$110 per day" in ans.text
    # The lead-in line is quoted once, before its items, never alone.
    assert ans.text.startswith("Meals while travelling are covered by a daily per diem")
    assert ans.text.count("covered by a daily per diem") == 1
    assert "- Domestic" not in ans.text  # bullets are not part of the answer text
    check_consistent(ans)


def test_a_lead_in_line_alone_is_never_an_answer():
    ans = ExtractiveAnswerer(max_sentences=1).answer(
        "What covers meals while travelling?", [PER_DIEM]
    )
    assert not ans.text.rstrip(" [1]").endswith(":")


def test_faq_question_line_is_context_not_answer():
    faq = hit(
        251,
        "How do I get VPN access?\n\nOpen a request for VPN Standard Access in the IT "
        "Helpdesk portal. Your manager approves it within one business day.",
        title="FAQ",
        heading_path=("FAQ", "How do I get VPN access?"),
    )
    ans = ExtractiveAnswerer().answer("How do I get VPN access?", [faq])
    assert ans.text.startswith("Open a request for VPN Standard Access")
    assert "How do I get VPN access?" not in ans.text


def test_table_row_is_shown_with_its_column_names_never_the_header_row():
    ans = ExtractiveAnswerer().answer("What does E_402 mean?", [FAULTS_HEAD])
    assert not ans.abstained
    assert ans.text.startswith(
        "E_402 — Meaning: Charging contact fault; Fix: Clean the copper contacts, then re-dock [1]"
    )
    assert "| Code |" not in ans.text and "Code | Meaning" not in ans.text
    assert "E_101" not in ans.text
    assert ans.citations[0].quote.startswith("| E_402 | Charging contact fault |")
    check_consistent(ans)


def test_a_table_cut_by_the_chunker_borrows_the_header_row_of_its_other_part():
    ans = ExtractiveAnswerer().answer("How do I fix E_515?", [FAULTS_HEAD, FAULTS_TAIL])
    assert not ans.abstained
    assert ans.text.startswith("E_515 — Meaning: Lift actuator stall; Fix: Lower the pod")
    assert ans.citations[0].chunk_id == FAULTS_TAIL.chunk_id
    # Without the other part, the row still reads, just without column names.
    alone = ExtractiveAnswerer(min_evidence=0).answer("How do I fix E_515?", [FAULTS_TAIL])
    assert alone.text.startswith("E_515 — Lift actuator stall; Lower the pod")


def test_header_row_alone_never_answers():
    ans = ExtractiveAnswerer(min_evidence=0).answer("What is the fix for a code?", [FAULTS_HEAD])
    assert "| Code | Meaning | Fix |" not in ans.text
    assert not ans.text.startswith("Code")


def test_a_number_in_the_question_matches_a_range_holding_it():
    ans = ExtractiveAnswerer().answer(
        "Who has to approve a business trip that is estimated to cost $5,000?", [APPROVALS]
    )
    assert ans.text.startswith(
        "Approval depends on the estimated total cost of the trip: [1] "
        "From $2,000.01 to $10,000: approval by your department director. [1]"
    )


def test_a_code_found_in_no_passage_lowers_evidence():
    known = ExtractiveAnswerer(min_evidence=0).answer("What did v2.3.1 fix?", [RELEASES])
    unknown = ExtractiveAnswerer(min_evidence=0).answer("What did v2.5.0 fix?", [RELEASES])
    assert unknown.evidence < known.evidence
    assert ExtractiveAnswerer().answer("What did v2.5.0 fix?", [RELEASES]).abstained


def test_heading_like_line_may_answer_when_it_states_the_fact():
    notes = hit(
        261,
        "Release notes for the controller.\n\n"
        "VERSION 2.3.1 - released 27 March 2024\n\n"
        "This is a maintenance release. All sites should install it.",
        title="Release notes",
    )
    ans = ExtractiveAnswerer(max_sentences=1).answer("When was version 2.3.1 released?", [notes])
    assert ans.text == "VERSION 2.3.1 - released 27 March 2024 [1]"


def test_structured_answers_are_deterministic_and_consistent():
    hits = [CHARGING, PER_DIEM, FAULTS_HEAD, FAULTS_TAIL, APPROVALS]
    for q in [
        "What does E_402 mean?",
        "What is the per diem for meals?",
        "How long does the R-20 battery last on a full charge?",
        "Who approves trips above $10,000?",
    ]:
        first = ExtractiveAnswerer(min_evidence=0).answer(q, hits)
        assert ExtractiveAnswerer(min_evidence=0).answer(q, hits) == first
        if not first.abstained:
            check_consistent(first)
