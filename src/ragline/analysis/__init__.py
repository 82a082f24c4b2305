"""Text analysis shared by indexing and querying: one analyzer, used identically on both sides."""

from .analyzer import Analyzer, get_analyzer, split_sentences

__all__ = ["Analyzer", "get_analyzer", "split_sentences"]
