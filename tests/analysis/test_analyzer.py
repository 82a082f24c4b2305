from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragline.analysis import get_analyzer, split_sentences
from ragline.core.errors import ConfigError


def test_normalizes_casefolds_stems_and_drops_stopwords():
    a = get_analyzer("english")
    assert a.terms("The Running DOGS ran quickly") == ["run", "dog", "ran", "quick"]
    # NFKC: full-width letters and ligatures fold to ASCII before stemming
    assert a.terms("Ｒｕｎｎｉｎｇ ﬁles") == ["run", "file"]
    # same analyzer at index and query time: a stem matches its variants
    assert set(a.terms("charging")) == set(a.terms("charged")) == {"charg"}


def test_keeps_codes_and_digits():
    a = get_analyzer()
    assert "err_4021" in a.terms("Error ERR_4021 occurred")
    assert "7" in a.terms("page 7")


def test_unknown_language_lists_choices():
    with pytest.raises(ConfigError) as e:
        get_analyzer("klingon")
    assert "english" in str(e.value)


def test_language_hook():
    assert get_analyzer("hungarian").terms("házakban") != ["házakban"]


def test_split_sentences_keeps_abbreviations():
    s = split_sentences("Dr. Smith et al. found it. Results e.g. in Fig. 3 hold. Next?")
    assert s == ["Dr. Smith et al. found it.", "Results e.g. in Fig. 3 hold.", "Next?"]


def test_codes_versions_and_identifiers_survive_whole():
    a = get_analyzer()
    terms = a.terms("Error ERR_4021 on the X-570 with firmware v2.3.1 at 192.168.0.1")
    for exact in ("err_4021", "x-570", "v2.3.1", "192.168.0.1"):
        assert exact in terms
    assert {"err", "4021", "570"} <= set(terms)  # the parts still match looser queries
    assert "state-of-the-art" not in a.terms("a state-of-the-art design")  # no digit: not a code


def test_multi_analyzer_per_language_and_query_union():
    from ragline.analysis.analyzer import MultiAnalyzer

    m = MultiAnalyzer("english")
    assert m.terms("akkumulátorok", "hu") == get_analyzer("hungarian-folded").terms("akkumulátorok")
    assert m.terms("batteries", None) == ["batteri"]
    q = m.query_terms("akkumulátorok batteries", ["hu"])
    assert set(m.terms("akkumulátorok", "hu")) <= set(q) and "batteri" in q
    assert m.terms("documenten", "xx") == m.terms("documenten", None)  # unknown → default


def test_query_is_analyzed_in_the_languages_it_is_detected_to_be_in():
    from ragline.analysis.analyzer import MultiAnalyzer

    m = MultiAnalyzer("english")
    langs = ["cs", "en", "hu", "und"]
    q = "Smím pracovat na home office? Chyba GT-A17"
    detected = m.query_terms(q, langs, detect=True)
    assert detected == get_analyzer("czech-folded").terms(q)  # not also English, Hungarian
    assert "home" not in detected and {"hom", "gt-a17"} <= set(detected)
    every = m.query_terms(q, langs)  # as before: every language and the default
    assert {"home", "hom", "gt-a17"} <= set(every)
    # too short to tell: every language
    assert set(m.query_terms("GT-A17 filtr", langs, detect=True)) == set(
        m.query_terms("GT-A17 filtr", ["cs", "en", "hu"])
    )
    # one language: detection changes nothing
    assert m.query_terms("heat pump", ["en"], detect=True) == m.query_terms("heat pump", ["en"])


def test_plausible_languages():
    from ragline.analysis.language import plausible_languages

    assert plausible_languages("Mit jelent a hibakód a hőszivattyún?", ["cs", "hu", "en"]) == (
        "hu",
    )
    assert plausible_languages("How often is the filter cleaned?", ["en", "nl", "xx"]) == (
        "en",
        "xx",
    )
    assert plausible_languages("v2.3.1", ["cs", "hu"]) == ("cs", "hu")
    assert plausible_languages("anything at all here", ["en"]) == ("en",)


# -- invisible characters inside words (issue 14 #12) ---------------------------------------
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e", "\ufe0f"]


@pytest.mark.parametrize("mark", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_an_invisible_character_inside_a_word_does_not_split_it(mark: str) -> None:
    """Pasted text carries zero-width spaces, joiners, soft hyphens and BOMs that render as
    nothing: ``BLUE\\u200bHERON`` must be the word a user types, at index and query time."""
    from ragline.analysis.analyzer import MultiAnalyzer

    a = MultiAnalyzer("english")
    assert a.terms(f"BLUE{mark}HERON protocol") == a.terms("BLUEHERON protocol")
    assert a.query_terms(f"blue{mark}heron") == a.query_terms("blueheron") == ["blueheron"]
    # collections built with analysis v3 keep their (splitting) terms: old postings match
    assert MultiAnalyzer("english", 3).terms(f"BLUE{mark}HERON") == ["blue", "heron"]


@given(st.text(alphabet=st.sampled_from("abcdefXYZ09 " + "".join(INVISIBLE)), max_size=40))
def test_invisible_characters_never_change_the_terms(text: str) -> None:
    from ragline.analysis.analyzer import MultiAnalyzer

    a = MultiAnalyzer("english")
    visible = "".join(c for c in text if c not in INVISIBLE)
    assert a.terms(text) == a.terms(visible)
