"""Opaque ids for the HTTP and MCP faces.

Inside, documents, chunks, jobs and keys have dense sequence ids (fast joins, small
indexes). Shown to a caller, those would count: the gap between two ids a reader sees is
how many documents other tenants or groups added in between. So the faces show each id
encrypted: ``doc_…``, ``chk_…``, ``job_…``, ``key_…``, a 64-bit block cipher of the
internal id (a four-round Feistel network over blake2b keyed with the installation's
secret, :func:`ragline.store.secrets.installation_secret`, one tweak per kind), written
in base32. Decryption gives the internal id back, so no mapping table is kept; a string
that does not decrypt to a valid id is simply an unknown id (404). Without the secret,
ids reveal nothing about order or count; with a kind prefix a chunk id cannot be passed
where a document id is expected.
"""

from __future__ import annotations

import base64
import hashlib
import re

KINDS = {"doc": 1, "chk": 2, "job": 3, "key": 4}
_MASK = (1 << 32) - 1
_ROUNDS = 4
_ID = re.compile(r"^([a-z]{3})_([a-z2-7]{13})$")


class IdCodec:
    """Encrypts and decrypts internal ids (non-negative, below 2**63)."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("the id secret must have at least 16 bytes")
        self._keys = {
            kind: hashlib.blake2b(
                secret, digest_size=32, person=b"ragline-ids" + bytes([n])
            ).digest()
            for kind, n in KINDS.items()
        }

    def _f(self, key: bytes, rnd: int, half: int) -> int:
        h = hashlib.blake2b(half.to_bytes(4, "big") + bytes([rnd]), key=key, digest_size=4)
        return int.from_bytes(h.digest(), "big")

    def encode(self, kind: str, n: int) -> str:
        if not 0 <= n < 1 << 63:
            raise ValueError(f"id out of range: {n}")
        key = self._keys[kind]
        left, right = n >> 32, n & _MASK
        for r in range(_ROUNDS):
            left, right = right, left ^ self._f(key, r, right)
        block = ((left << 32) | right).to_bytes(8, "big")
        return f"{kind}_{base64.b32encode(block).decode().rstrip('=').lower()}"

    def decode(self, kind: str, text: object) -> int | None:
        """The internal id ``text`` stands for, or None (malformed, other kind, invalid)."""
        m = _ID.match(text) if isinstance(text, str) else None
        if m is None or m.group(1) != kind:
            return None
        try:
            block = int.from_bytes(base64.b32decode(m.group(2).upper() + "==="), "big")
        except ValueError:
            return None
        key = self._keys[kind]
        left, right = block >> 32, block & _MASK
        for r in reversed(range(_ROUNDS)):
            left, right = right ^ self._f(key, r, left), left
        n = (left << 32) | right
        if n >= 1 << 63 or self.encode(kind, n) != text:  # one spelling per id
            return None
        return n
