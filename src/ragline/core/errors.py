"""One exception hierarchy. Every message says what went wrong and how to fix it."""

from __future__ import annotations


class RaglineError(Exception):
    """Base of every error ragline raises on purpose."""


class ConfigError(RaglineError):
    """A setting or argument is invalid."""


class LimitError(ConfigError):
    """A request is larger than a configured limit (the message names the setting)."""


class ParseError(RaglineError):
    """A file could not be turned into text. ``path`` names the file, ``reason`` says why."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class UnsupportedFormatError(ParseError):
    """No parser handles this file type."""


class EmptyDocumentError(ParseError):
    """The file holds no extractable text."""


class EncodingError(ParseError):
    """The file's bytes are not text in any encoding ragline can detect."""


class StoreError(RaglineError):
    """The database could not be reached or used."""


class ModelMismatchError(RaglineError):
    """A collection was built with one embedding model and is used with another."""


class AccessError(RaglineError):
    """A search could not be restricted to the caller's permissions, so it was refused."""


class NotFoundError(RaglineError):
    """A named document, collection or object does not exist."""


class MissingDependencyError(RaglineError):
    """An optional dependency is not installed; the message names the extra."""


class ParseTimeoutError(ParseError):
    """Parsing one file took longer than the per-file time limit; the worker was stopped."""


class ParseResourceError(ParseError):
    """Parsing one file needed more memory than the per-file limit, or crashed its worker."""


class FilterError(ConfigError):
    """A search filter that no document the caller may read can match (an unknown key,
    a value never seen for its key); the message lists the known keys or values."""
