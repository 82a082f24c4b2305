"""Who is calling: API key → tenant, groups, admin; and a per-key rate limit.

Keys come as ``Authorization: Bearer KEY`` (what the OpenAI client sends) or
``X-API-Key: KEY``. Lookups go by the key's hash, so an unknown key and a revoked key take
the same path and give the same 401.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from ..core.types import Principal
from ..store.keys import ApiKey


@dataclass(frozen=True)
class Caller:
    key: ApiKey

    @property
    def tenant(self) -> str:
        return self.key.tenant

    @property
    def groups(self) -> tuple[str, ...]:
        return self.key.groups

    @property
    def admin(self) -> bool:
        return self.key.admin

    @property
    def principal(self) -> Principal:
        return self.key.principal


class RateLimiter:
    """A token bucket per key: ``limit`` requests per minute, bursts up to ``limit``."""

    def __init__(self) -> None:
        self._buckets: dict[int, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key_id: int, limit: int) -> float:
        """0 when the request may go; else the seconds until it may (Retry-After)."""
        rate = limit / 60.0
        now = time.monotonic()
        with self._lock:
            tokens, last = self._buckets.get(key_id, (float(limit), now))
            tokens = min(float(limit), tokens + (now - last) * rate)
            if tokens >= 1.0:
                self._buckets[key_id] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key_id] = (tokens, now)
            return (1.0 - tokens) / rate


def retry_after(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))


_bearer = HTTPBearer(auto_error=False, description="API key: Authorization: Bearer rl_…")
_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key (alternative)")


def _caller(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    x_api_key: Annotated[str | None, Depends(_header)],
) -> Caller:
    return request.app.state.server.caller(bearer, x_api_key)


def _admin(c: Annotated[Caller, Depends(_caller)]) -> Caller:
    if not c.admin:
        raise HTTPException(403, "this needs an admin key (ragline keys create --admin)")
    return c


Who = Annotated[Caller, Depends(_caller)]
"""A route parameter: the authenticated, rate-limited caller."""
Admin = Annotated[Caller, Depends(_admin)]
"""A route parameter: the caller, who must hold an admin key."""
