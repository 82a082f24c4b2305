"""Index versions: several builds of one collection (embedder, chunking, analyzer), one
active. Version 1 is the collection as first created (physical name = the collection
name); version k ≥ 2 lives in its own physical collection ``NAME--vk`` with its own
documents, chunks, postings and vectors, built from the stored documents beside the live
version. Which version answers queries is one row in ``index_versions``; switching it is
one transaction.
"""

from __future__ import annotations

VERSION_SEPARATOR = "--v"


def version_collection_name(name: str, version: int) -> str:
    """The physical collection holding ``version`` of collection ``name``."""
    return name if version == 1 else f"{name}{VERSION_SEPARATOR}{version}"
