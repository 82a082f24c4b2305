"""Exact token counts for chunking, without tokenizing the same words over and over.

The chunker counts a block, then its sentences, then the words of an overlap, then the
finished chunk: each character is tokenized three or four times, ~0.6 s of a 400-document
ingest on this machine, in the thread that feeds the model. For a BERT (WordPiece)
tokenizer, no token crosses whitespace: the normalizer only maps characters one by one
and the pre-tokenizer splits on whitespace first. The count of a text is then the sum of
the counts of its whitespace-separated words, and a word's count never changes, so it is
kept. Other tokenizers (SentencePiece, byte-level BPE) are counted whole, as before.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any

CACHE_WORDS = 1 << 18
"""Words kept (~30 MB at most); the cache starts over when it is full."""

_NOT_SPLIT_ALIKE = re.compile("[\x0b\x0c\x1c-\x1f\x85]")
"""Characters Python's ``str.split`` splits on but BERT's normalizer deletes (they are
control characters to it): a text holding one is counted whole."""


class TokenCounter:
    """``counter(text)``: the number of tokens ``tokenizer`` gives ``text`` without special
    tokens, exactly; word by word (cached) where the tokenizer allows it."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.by_word = _splits_like_bert(tokenizer)
        self._words: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        if not self.by_word or _NOT_SPLIT_ALIKE.search(text):
            return len(self.tokenizer.encode(text, add_special_tokens=False).ids)
        words = text.split()
        known = self._words  # kept here: _learn may start the cache over
        missing = [w for w in dict.fromkeys(words) if w not in known]
        if not missing:
            return sum(known[w] for w in words)
        learned = self._learn(missing)
        return sum(learned[w] if w in learned else known[w] for w in words)

    def _learn(self, words: list[str]) -> dict[str, int]:
        """Count ``words`` (no whitespace in any) in one call: tokens are given to the word
        their first character falls in."""
        if len(self._words) + len(words) > CACHE_WORDS:
            self._words = {}
        starts, pos = [], 0
        for w in words:
            starts.append(pos)
            pos += len(w) + 1
        enc = self.tokenizer.encode(" ".join(words), add_special_tokens=False)
        counts = [0] * len(words)
        for start, _end in enc.offsets:
            counts[bisect_right(starts, start) - 1] += 1
        learned = dict(zip(words, counts))
        self._words.update(learned)
        return learned


def _splits_like_bert(tokenizer: Any) -> bool:
    """Whether no token of ``tokenizer`` can cross whitespace: BERT's normalizer (or none)
    and pre-tokenizer, and nothing added to a text as a whole."""
    from tokenizers import normalizers, pre_tokenizers

    norm = tokenizer.normalizer
    if norm is not None and not isinstance(norm, normalizers.BertNormalizer):
        return False
    if not isinstance(tokenizer.pre_tokenizer, pre_tokenizers.BertPreTokenizer):
        return False
    # an added token holding whitespace is matched across words
    added = tokenizer.get_added_tokens_decoder().values()
    if any(any(ch.isspace() for ch in t.content) for t in added):
        return False
    # a truncating or padding counter counts the whole text, not each word
    return tokenizer.truncation is None and tokenizer.padding is None
