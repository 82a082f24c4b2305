"""One parser for backend specs and one registry per stage, from a spec to a factory.

A spec names a backend: a bare name (``minilm``, ``e5``) or ``KIND:TARGET``, where the
target is whatever that kind needs: a path (``onnx:/models/bge``), a URL
(``tei:http://host:8080``) or ``MODEL@URL`` (``openai:nomic-embed-text@http://host:11434/v1``;
the model name may itself hold ``:`` and ``@``, the URL starts at the last ``@http``).

Each stage (embedders, rerankers, generators) keeps a :class:`Registry`; the built-in
backends register there, and third-party packages add their own through the entry point
group ``ragline.<stage>`` (e.g. ``ragline.embedders``), whose object is called with the
registry: ``def register(registry): registry.add("mykind", factory, usage=..., about=...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from .errors import ConfigError


@dataclass(frozen=True)
class Spec:
    """A parsed backend spec: ``kind`` and what follows its colon."""

    text: str
    kind: str
    target: str = ""

    def model_at_url(self, default_url: str | None = None) -> tuple[str, str]:
        """``MODEL@URL`` (or ``MODEL`` with ``default_url``) → (model, url); credentials in
        the URL are refused (keys come from environment variables or key files)."""
        at = max(self.target.rfind("@http://"), self.target.rfind("@https://"))
        if at >= 0:
            model, url = self.target[:at], self.target[at + 1 :]
        elif default_url is not None:
            model, url = self.target, default_url
        else:
            raise ConfigError(
                f"{self.text!r} names no server; write {self.kind}:MODEL@http://host:port/v1"
            )
        if not model:
            raise ConfigError(
                f"{self.text!r} names no model; write {self.kind}:MODEL@http://host:port/v1"
            )
        if "@" in url.split("//", 1)[1].split("/", 1)[0]:
            raise ConfigError(
                f"put no credentials in the URL of {self.text!r}; set the key in the "
                "backend's environment variable instead"
            )
        return model, url

    def url(self) -> str:
        """The target as an http(s) URL (``tei:http://host:8080``)."""
        if not self.target.startswith(("http://", "https://")):
            raise ConfigError(f"{self.text!r} needs a URL: {self.kind}:http://host:port")
        return self.target

    def path(self) -> str:
        if not self.target:
            raise ConfigError(f"{self.text!r} needs a path: {self.kind}:/path/to/model")
        return self.target


def parse_spec(text: str) -> Spec:
    """``KIND:TARGET`` or a bare ``NAME`` (kind NAME, empty target)."""
    text = text.strip()
    kind, sep, target = text.partition(":")
    return Spec(text, kind.lower() if sep else text.lower(), target if sep else "")


Factory = Callable[[Spec, dict[str, Any]], Any]


@dataclass(frozen=True)
class _Entry:
    factory: Factory
    usage: str
    about: str


class Registry:
    """The backends of one stage, by kind (and bare-name aliases)."""

    def __init__(self, stage: str, *, noun: str, also: str = "") -> None:
        """``also``: a choice handled outside the registry, named in errors."""
        self.stage = stage
        self.noun = noun
        self.also = also
        self._entries: dict[str, _Entry] = {}
        self._plugins_loaded = False

    def add(
        self, kind: str, factory: Factory, *, usage: str, about: str, aliases: tuple[str, ...] = ()
    ) -> None:
        entry = _Entry(factory, usage, about)
        for name in (kind, *aliases):
            self._entries[name.lower()] = entry

    def create(self, text: str, **options: Any) -> Any:
        """The backend ``text`` names, built with ``options``; an unknown kind lists the
        choices (installed plug-ins included)."""
        spec = parse_spec(text)
        entry = self._entries.get(spec.kind)
        if entry is None:
            self._load_plugins()
            entry = self._entries.get(spec.kind)
        if entry is None:
            raise ConfigError(f"unknown {self.noun} {text!r}; choose one of: {self.choices()}")
        return entry.factory(spec, options)

    def usages(self) -> dict[str, str]:
        """Usage → description, one per backend (aliases folded)."""
        seen: dict[int, tuple[str, str]] = {}
        for e in self._entries.values():
            seen.setdefault(id(e), (e.usage, e.about))
        return dict(seen.values())

    def choices(self) -> str:
        return ", ".join([*self.usages(), *([self.also] if self.also else [])])

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for ep in entry_points(group=f"ragline.{self.stage}"):
            try:
                ep.load()(self)
            except Exception as exc:  # a broken plug-in must not hide the built-ins
                raise ConfigError(
                    f"the ragline plug-in {ep.name!r} ({ep.value}) failed to register: {exc}"
                ) from exc
