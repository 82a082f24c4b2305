"""A random multi-tenant world and the reference of who may read what, plus a probe that
sends one query through every entry point and checks each answer against it.

A document carries a unique canary word (in its title, file name and text; each version
its own). Reference (SECURITY.md, "Guarantees"): a key *searches* the current documents of
its tenant that have no groups or share one with the key; a key *reads* (lists, fetches by
id) those and, when it is an admin key, every document of its tenant. Nothing of any
other document may reach the key: no canary in any response field (besides the fields
that echo the caller's own query), no id of it in any list.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.serve.conftest import sse_events, wait_job

TENANTS = ("a", "b", "c")
GROUPS = ("red", "blue", "green")
DEPTS = ("ops", "law", "eng")
MODES = ("bm25", "vector", "hybrid", "rerank")
ECHO = {"query", "question", "queries", "plan", "bm25_query"}


@dataclass
class Doc:
    tenant: str
    groups: tuple[str, ...]
    dept: str
    canaries: list[str]  # one per version, oldest first
    id: str = ""  # the public id (doc_…)

    @property
    def canary(self) -> str:
        return self.canaries[-1]

    @property
    def name(self) -> str:
        return f"{self.canaries[0]}.md"

    def text(self) -> bytes:
        c = self.canary
        return (
            f"# Note {c}\n\nThe secret code word of this note is {c}. Keep it safe; "
            f"the {self.dept} team reviews it.\n"
        ).encode()


@dataclass(frozen=True)
class Key:
    tenant: str
    groups: tuple[str, ...]
    admin: bool
    secret: str
    id: int = 0  # internal

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secret}"}

    def may_search(self, d: Doc) -> bool:
        return d.tenant == self.tenant and (not d.groups or bool(set(d.groups) & set(self.groups)))

    def may_read(self, d: Doc) -> bool:
        return d.tenant == self.tenant and (self.admin or self.may_search(d))


def canary(*parts: Any) -> str:
    return "canary" + hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:10]


class Leak(AssertionError):
    pass


def scrub(obj: Any, echoed: Iterable[str] = ()) -> Any:
    """The response without the fields (and MCP text) that echo the caller's own query."""
    if isinstance(obj, dict):
        return {k: scrub(v, echoed) for k, v in obj.items() if k not in ECHO}
    if isinstance(obj, list):
        return [scrub(v, echoed) for v in obj]
    if isinstance(obj, str):
        for e in echoed:
            obj = obj.replace(e, "")
    return obj


@dataclass
class World:
    """Everything uploaded so far (all worlds of the module: earlier worlds are other
    tenants to later ones) and the checks."""

    live: Any
    counters: Any
    docs: list[Doc] = field(default_factory=list)
    keys: list[Key] = field(default_factory=list)
    jobs: dict[str, str] = field(default_factory=dict)  # public job id -> tenant
    traces: dict[str, Key] = field(default_factory=dict)  # trace id -> its key

    # -- building -------------------------------------------------------------------
    def admin_of(self, tenant: str) -> Key:
        for k in self.keys:
            if k.tenant == tenant and k.admin and not k.groups:
                return k
        return self.add_key(tenant, (), True)

    def add_key(self, tenant: str, groups: Iterable[str], admin: bool) -> Key:
        from ragline.store.keys import create_key

        secret, rec = create_key(
            self.live.index.db, tenant=tenant, groups=list(groups), admin=admin
        )
        k = Key(tenant, tuple(sorted(set(groups))), admin, secret, rec.id)
        self.keys.append(k)
        return k

    def upload(self, c: httpx.Client, batch: list[Doc]) -> None:
        """One upload job for a batch of documents of one tenant and group set."""
        up = self.admin_of(batch[0].tenant)
        files = [("files", (d.name, d.text())) for d in batch]
        groups = ",".join(batch[0].groups)
        dept = batch[0].dept
        r = c.post(
            "/v1/documents",
            files=files,
            data={"groups": groups, "metadata": json.dumps({"dept": dept})},
            headers=up.headers,
        )
        assert r.status_code == 202, r.text
        job = wait_job(c, r.json()["job"]["id"], up.headers, timeout=180)
        assert job["status"] == "done" and job["failed"] == 0, job
        self.jobs[job["id"]] = up.tenant
        listed = c.get("/v1/documents", headers=up.headers).json()["documents"]
        by_key = {d["doc_key"]: d["id"] for d in listed}
        for d in batch:
            d.id = by_key[f"upload:{d.name}"]

    # -- reference --------------------------------------------------------------------
    def forbidden(self, k: Key) -> set[str]:
        return {c for d in self.docs if not k.may_read(d) for c in d.canaries}

    def check(self, what: str, body: Any, k: Key, echoed: Iterable[str] = ()) -> None:
        text = json.dumps(scrub(body, echoed), ensure_ascii=False)
        leaked = sorted(c for c in self.forbidden(k) if c in text)
        if leaked:
            self.counters.leaks += 1
            raise Leak(f"{what} for {k} leaked {leaked}: {text[:1500]}")

    def searchable_ids(self, k: Key) -> set[str]:
        return {d.id for d in self.docs if k.may_search(d)}

    def readable_ids(self, k: Key) -> set[str]:
        return {d.id for d in self.docs if k.may_read(d)}


def post(c: httpx.Client, path: str, body: dict[str, Any], k: Key) -> httpx.Response:
    for _ in range(3):
        r = c.post(path, json=body, headers=k.headers)
        if r.status_code != 429:
            return r
        time.sleep(float(r.headers.get("retry-after", "1")))
    return r


def sse(c: httpx.Client, path: str, body: dict[str, Any], k: Key) -> Iterator[tuple[str, Any]]:
    with c.stream("POST", path, json=body, headers=k.headers) as r:
        assert r.status_code == 200, r.read()
        for event, data in sse_events(r.iter_lines()):
            if data == "[DONE]":
                continue
            yield event, json.loads(data)
