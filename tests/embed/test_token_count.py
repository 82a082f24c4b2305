"""Word-by-word token counts equal the tokenizer's own count of the whole text.

Reference: ``len(tokenizer.encode(text, add_special_tokens=False).ids)`` on the real
MiniLM tokenizer, over random texts of every kind of character the normalizer treats
specially (accents, CJK, punctuation, control and zero-width characters, the whitespace
Python and BERT disagree on, words longer than WordPiece's 100-character limit)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragline.embed.token_count import CACHE_WORDS, TokenCounter

_PIECES = [
    "the", "cells", "cell.", "Ünïcödé", "naïve", "x-ray", "(IL-6)", "2,3", "α-syn", "東京都",
    "한국어", "😀", "[MASK]", "[CLS]x", "co\u00adoperate", "zero\u200bwidth", "\u0301", "ß",
    "İstanbul", "ﬁle", "a" * 120, "б" * 101, "e.g.", "U.S.", "...", "«quoted»", "\ufffd",
    "\x00", "tab\tbed", "don't", "$100", "#tag",
]  # fmt: skip
_SPACES = [" ", "  ", "\n", "\t", "\r\n", "\u00a0", "\u2028", "\u3000", "\x0b", "\x0c",
           "\x1c", "\x1f", "\x85", "\u200b", "\u180e", ""]  # fmt: skip


@pytest.fixture(scope="module")
def tokenizer():
    from tokenizers import Tokenizer

    from ragline.embed.minilm import model_files

    tok = Tokenizer.from_file(str(model_files()[1]))
    tok.no_truncation()
    tok.no_padding()
    return tok


def _reference(tok, text: str) -> int:
    return len(tok.encode(text, add_special_tokens=False).ids)


texts = st.lists(
    st.tuples(
        st.one_of(st.sampled_from(_PIECES), st.text(min_size=0, max_size=12)),
        st.sampled_from(_SPACES),
    ),
    max_size=25,
).map(lambda parts: "".join(p + s for p, s in parts))


@settings(max_examples=400, deadline=None)
@given(texts=st.lists(texts, min_size=1, max_size=6))
def test_counts_equal_the_tokenizer_on_random_texts(tokenizer, texts):
    counter = TokenCounter(tokenizer)
    assert counter.by_word
    for text in texts * 2:  # the second pass is answered from the cache
        assert counter(text) == _reference(tokenizer, text), repr(text)


def test_cache_starts_over_when_full(tokenizer, monkeypatch):
    import ragline.embed.token_count as tc

    monkeypatch.setattr(tc, "CACHE_WORDS", 4)
    counter = TokenCounter(tokenizer)
    text = "alpha beta gamma delta epsilon zeta eta theta"
    assert counter("alpha beta gamma") == _reference(tokenizer, "alpha beta gamma")
    assert counter(text) == _reference(tokenizer, text)  # known and new words, then a reset
    assert len(counter._words) <= 8
    assert CACHE_WORDS > 4


def test_other_tokenizers_are_counted_whole(tokenizer):
    from tokenizers import pre_tokenizers

    metaspace = tokenizer.from_str(tokenizer.to_str())
    metaspace.pre_tokenizer = pre_tokenizers.Metaspace()
    assert not TokenCounter(metaspace).by_word
    padded = tokenizer.from_str(tokenizer.to_str())
    padded.enable_padding(length=64)
    assert not TokenCounter(padded).by_word
    counter = TokenCounter(padded)
    assert counter("a few words") == len(padded.encode("a few words", add_special_tokens=False).ids)
