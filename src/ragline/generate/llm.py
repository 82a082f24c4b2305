"""Chat-model backends for LLM answers and query techniques.

* ``openai:MODEL@URL`` — any OpenAI-compatible ``/chat/completions`` server (OpenAI, Ollama,
  vLLM, llama.cpp server, LM Studio), plain or streamed (server-sent events);
* ``anthropic:MODEL[@URL]`` — the Anthropic Messages API, plain or streamed, optionally
  with its citations feature (sources sent as document blocks, cited spans mapped back
  to ``[n]``);
* ``llamacpp:PATH.gguf`` — a local GGUF model in-process via ``llama-cpp-python``.

Keys come from an environment variable (``OPENAI_API_KEY``/``ANTHROPIC_API_KEY`` by
default) or a secrets file (``key_file``), read at each request; they are never stored
on the object, logged or put in an error message. Only the standard library is used for
HTTP, so streaming works without extra packages.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..core.backends import Registry, Spec
from ..core.errors import ConfigError, MissingDependencyError, RaglineError
from ..embed.openai_api import _server_message, estimate_tokens, post_with_retries

Message = Mapping[str, Any]
"""``{"role": "system" | "user" | "assistant", "content": str}``."""


class LLMError(RaglineError):
    """The chat model's server refused a request or answered something unusable."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Document:
    """A source passed to a model that cites natively (Anthropic citations)."""

    title: str
    text: str


class ChatModel(Protocol):
    """What generators and query techniques need from a language model."""

    name: str

    def count_tokens(self, text: str) -> int: ...

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> str: ...

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Iterator[str]: ...


def _read_key(env: str | None, key_file: str | Path | None) -> str | None:
    if key_file:
        try:
            return Path(key_file).read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            raise ConfigError(f"cannot read the API key file {key_file}: {exc.strerror}") from None
    return os.environ.get(env) if env else None


def _sse_events(resp: Any) -> Iterator[dict[str, Any]]:
    """``data:`` payloads of a server-sent-event stream, parsed as JSON, until ``[DONE]``."""
    for raw in resp:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            return
        try:
            yield json.loads(payload)
        except ValueError:
            raise LLMError(
                f"the server sent an unreadable stream event: {payload[:200]!r}"
            ) from None


class _HTTPChat:
    """Shared request plumbing of the HTTP backends; subclasses name their endpoint."""

    prefix = ""
    path = ""
    default_base_url = ""
    default_key_env = ""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        api_key_env: str | None = "",
        key_file: str | Path | None = None,
        timeout: float = 120.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
    ) -> None:
        base_url = base_url or self.default_base_url
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must start with http:// or https://, got {base_url!r}")
        if not model:
            raise ConfigError(f"name the served chat model: {self.prefix}:MODEL@http://host:port")
        if timeout <= 0 or max_retries < 0:
            raise ConfigError("timeout must be > 0 and max_retries ≥ 0")
        self.model = model
        self.url = base_url.rstrip("/") + self.path
        self.name = f"{self.prefix}:{model}"
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.requests = 0
        # "" = the backend's usual variable; None = send no key
        self._key_env = self.default_key_env if api_key_env == "" else api_key_env
        self._key_file = key_file

    def _headers(self) -> dict[str, str]:
        raise NotImplementedError

    def count_tokens(self, text: str) -> int:
        """A conservative estimate (the served tokenizer is not at hand): the larger of
        1.3 × words and UTF-8 bytes / 4, so the context budget errs small."""
        return estimate_tokens(text)

    def _hint(self, status: int | None) -> str:
        if status in (401, 403):
            return "; check the API key (environment variable or key file)"
        if status is None:
            return f"; is the server running at {self.url}?"
        return ""

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        def count() -> None:
            self.requests += 1

        _, data = post_with_retries(
            self.url,
            json.dumps(body).encode(),
            self._headers(),
            timeout=self.timeout,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
            what=f"chat request to {self.name}",
            hint=self._hint,
            fail=LLMError,
            on_attempt=count,
        )
        try:
            out = json.loads(data)
        except ValueError:
            raise LLMError(f"{self.name} answered something that is not JSON") from None
        if not isinstance(out, dict):
            raise LLMError(f"{self.name} answered an unexpected JSON value")
        return out

    def _open_stream(self, body: dict[str, Any]) -> Any:
        self.requests += 1
        req = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers=self._headers(), method="POST"
        )
        try:
            return urllib.request.urlopen(req, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            with exc:
                message = _server_message(exc.read())
            raise LLMError(
                f"streamed chat request to {self.name} failed: HTTP {exc.code}: {message}"
                f"{self._hint(exc.code)}",
                exc.code,
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise LLMError(
                f"streamed chat request to {self.name} failed: unreachable ({reason})"
                f"{self._hint(None)}"
            ) from None


class OpenAIChat(_HTTPChat):
    """An OpenAI-compatible ``POST {base_url}/chat/completions``."""

    prefix = "openai"
    path = "/chat/completions"
    default_base_url = "https://api.openai.com/v1"
    default_key_env = "OPENAI_API_KEY"

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        key = _read_key(self._key_env, self._key_file)
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def _body(self, messages: Sequence[Message], max_tokens: int, temperature: float) -> dict:
        return {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> str:
        out = self._post(self._body(messages, max_tokens, temperature))
        try:
            content = out["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LLMError(f"{self.name} answered without choices[0].message.content") from None
        return content or ""

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Iterator[str]:
        body = {**self._body(messages, max_tokens, temperature), "stream": True}
        with self._open_stream(body) as resp:
            for event in _sse_events(resp):
                for choice in event.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        yield piece


class AnthropicChat(_HTTPChat):
    """The Anthropic Messages API (``POST {base_url}/v1/messages``)."""

    VERSION = "2023-06-01"
    prefix = "anthropic"
    path = "/v1/messages"
    default_base_url = "https://api.anthropic.com"
    default_key_env = "ANTHROPIC_API_KEY"

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "anthropic-version": self.VERSION}
        key = _read_key(self._key_env, self._key_file)
        if key:
            h["x-api-key"] = key
        return h

    @staticmethod
    def _split(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
        system = "\n\n".join(str(m["content"]) for m in messages if m["role"] == "system")
        rest = [
            {"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"
        ]
        return system, rest

    def _body(self, messages: Sequence[Message], max_tokens: int, temperature: float) -> dict:
        system, rest = self._split(messages)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "messages": rest,
        }
        if system:
            body["system"] = system
        return body

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> str:
        out = self._post(self._body(messages, max_tokens, temperature))
        return "".join(
            b.get("text", "") for b in out.get("content") or [] if b.get("type") == "text"
        )

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Iterator[str]:
        body = {**self._body(messages, max_tokens, temperature), "stream": True}
        with self._open_stream(body) as resp:
            for event in _sse_events(resp):
                if event.get("type") == "content_block_delta":
                    piece = (event.get("delta") or {}).get("text")
                    if piece:
                        yield piece
                elif event.get("type") == "error":
                    raise LLMError(f"{self.name} stream error: {event.get('error')}")

    def complete_with_citations(
        self,
        system: str,
        documents: Sequence[Document],
        question: str,
        *,
        max_tokens: int = 512,
        temperature: float = 0.0,
    ) -> str:
        """Answer with Anthropic's citations feature: each source is a document block and
        each cited span comes back attached to a text block; the text is returned with
        ``[n]`` (1-based document number) after every block that cites."""
        content: list[dict[str, Any]] = [
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": d.text},
                "title": d.title[:500],
                "citations": {"enabled": True},
            }
            for d in documents
        ]
        content.append({"type": "text", "text": question})
        body = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "system": system,
            "messages": [{"role": "user", "content": content}],
        }
        out = self._post(body)
        parts: list[str] = []
        for block in out.get("content") or []:
            if block.get("type") != "text":
                continue
            text = block.get("text", "")
            nums = sorted(
                {
                    int(c["document_index"]) + 1
                    for c in block.get("citations") or []
                    if isinstance(c, dict) and isinstance(c.get("document_index"), int)
                }
            )
            marks = "".join(f"[{n}]" for n in nums)
            if marks:
                stripped = text.rstrip()
                text = stripped + marks + text[len(stripped) :]
            parts.append(text)
        return "".join(parts)


class LlamaCppChat:
    """A local GGUF model in-process (``pip install llama-cpp-python``)."""

    def __init__(self, model_path: str | Path, *, n_ctx: int = 4096, n_threads: int | None = None):
        try:
            from llama_cpp import Llama
        except ImportError:
            raise MissingDependencyError(
                "the llamacpp: generator needs llama-cpp-python: pip install llama-cpp-python"
            ) from None
        path = Path(model_path)
        if not path.is_file():
            raise ConfigError(f"no GGUF model file at {path}")
        self.name = f"llamacpp:{path.name}"
        self._llm = Llama(
            model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, verbose=False, seed=0
        )

    def count_tokens(self, text: str) -> int:
        """Exact, with the model's own tokenizer."""
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False))

    def complete(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> str:
        llm: Any = self._llm  # llama_cpp's message TypedDicts: ours are plain dicts
        out: Any = llm.create_chat_completion(
            messages=[dict(m) for m in messages], max_tokens=max_tokens, temperature=temperature
        )
        return out["choices"][0]["message"].get("content") or ""

    def stream(
        self, messages: Sequence[Message], *, max_tokens: int = 512, temperature: float = 0.0
    ) -> Iterator[str]:
        llm: Any = self._llm
        for chunk in llm.create_chat_completion(
            messages=[dict(m) for m in messages],
            max_tokens=max_tokens,
            temperature=temperature,
            stream=True,
        ):
            piece = chunk["choices"][0].get("delta", {}).get("content")
            if piece:
                yield piece


def _openai(spec: Spec, opt: dict[str, Any]) -> ChatModel:
    model, url = spec.model_at_url("https://api.openai.com/v1")
    return OpenAIChat(model, url, key_file=opt.get("key_file"))


def _anthropic(spec: Spec, opt: dict[str, Any]) -> ChatModel:
    model, url = spec.model_at_url("https://api.anthropic.com")
    return AnthropicChat(model, url, key_file=opt.get("key_file"))


def _llamacpp(spec: Spec, _opt: dict[str, Any]) -> ChatModel:
    return LlamaCppChat(spec.path())


CHAT_MODELS = Registry(
    "generators", noun="generator", also="extractive (the default; needs no model)"
)
CHAT_MODELS.add(
    "openai", _openai, usage="openai:MODEL@URL", about="an OpenAI-compatible chat server"
)
CHAT_MODELS.add(
    "anthropic", _anthropic, usage="anthropic:MODEL[@URL]", about="the Anthropic Messages API"
)
CHAT_MODELS.add(
    "llamacpp",
    _llamacpp,
    usage="llamacpp:/path/model.gguf",
    about="a local GGUF model in-process (llama-cpp-python)",
)


def get_chat_model(spec: str, *, key_file: str | Path | None = None) -> ChatModel:
    """A chat model from its spec (``openai:MODEL@URL``, ``anthropic:MODEL[@URL]``,
    ``llamacpp:PATH.gguf`` or a plug-in's); the extractive answerer needs none."""
    chat: ChatModel = CHAT_MODELS.create(spec, key_file=key_file)
    return chat
