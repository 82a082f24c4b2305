"""Answer generation: turn retrieved hits into a cited answer, or abstain."""

from .citations import (
    check_citations,
    citation_from_hit,
    parse_markers,
    render_cited,
    renumber_markers,
    strip_markers,
)
from .extractive import DEFAULT_MIN_EVIDENCE, ExtractiveAnswerer, split_units

__all__ = [
    "DEFAULT_MIN_EVIDENCE",
    "ExtractiveAnswerer",
    "check_citations",
    "citation_from_hit",
    "parse_markers",
    "render_cited",
    "renumber_markers",
    "split_units",
    "strip_markers",
]
