from __future__ import annotations

import pytest

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
