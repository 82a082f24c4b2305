"""Chunking: parsed documents → token-bounded chunks whose spans index the document text.

:class:`SectionChunker` follows headings and is the default; :class:`RecursiveChunker`
splits unstructured text. Both count tokens with the function they are given (the
embedder's tokenizer in production) or estimate whitespace words × 1.3.
"""

from .recursive import RecursiveChunker, estimate_tokens
from .section import SectionChunker, breadcrumb

__all__ = ["RecursiveChunker", "SectionChunker", "breadcrumb", "estimate_tokens"]
