"""Text analysis shared by indexing and querying: one analyzer, used identically on both sides."""

from .analyzer import Analyzer, get_analyzer, split_sentences
from .language import SNOWBALL_BY_ISO, LanguageGuess, detect_language, iso_to_tesseract

__all__ = [
    "SNOWBALL_BY_ISO",
    "Analyzer",
    "LanguageGuess",
    "detect_language",
    "get_analyzer",
    "iso_to_tesseract",
    "split_sentences",
]
