"""An OpenAI-compatible chat-completions client for rubric judges (stdlib only).

Works with any server that speaks ``POST {base_url}/chat/completions`` (OpenAI, vLLM, Ollama,
llama.cpp server, LiteLLM). What it adds to a bare HTTP call:

* **structured output** — a verdict schema is sent as ``response_format =
  {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}``;
* **retries with exponential backoff** on 429, 5xx, timeouts and connection errors: the wait
  before retry ``k`` (0-based) is ``min(max_backoff, backoff · 2**k)``, or the server's
  ``Retry-After`` seconds when given (capped the same way); other 4xx fail at once;
* **timeouts** per request (``timeout`` seconds);
* **bounded concurrency** — :meth:`ChatClient.complete_many` runs at most ``concurrency``
  requests at a time (threads), results in input order;
* an **on-disk cache** keyed by ``sha256`` of model + messages + schema + sampling settings: a
  repeated request is answered from ``cache_dir`` without a call (and costs nothing);
* **token and cost accounting** — prompt/completion tokens from the response's ``usage``,
  cost = tokens × ``prices`` (USD per million tokens), totals in :meth:`ChatClient.usage`
  for the run manifest.

The API key is read from the environment variable ``api_key_env`` at request time; it is never
stored on the client, printed, logged, cached or written into a manifest
(:meth:`ChatClient.settings` shows only whether it is set, as ``"***"``); a password or key in
the URL itself is masked in settings and error messages (:mod:`kg_rageval.base.redact`).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from kg_rageval.base.errors import ConfigError, KgRagevalError

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses retried (rate limits, timeouts, transient server errors); any 5xx is too."""

Message = Mapping[str, str]


class BackendError(KgRagevalError):
    """A chat-completions call failed for good (after its retries, or a non-retryable status).
    ``status`` is the last HTTP status (``None`` for a timeout or connection error)."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1):
        self.status = status
        self.attempts = attempts
        super().__init__(message)


@dataclass(frozen=True)
class Completion:
    """One answer: the message ``content``, token counts, cost, and how it was obtained."""

    content: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False
    attempts: int = 1
    model: str = ""


@dataclass
class Usage:
    """Running totals of one client (thread-safe updates through :meth:`ChatClient._count`)."""

    requests: int = 0
    http_calls: int = 0
    retries: int = 0
    cache_hits: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    status_counts: dict[str, int] = field(default_factory=dict)


def _prices(prices: Mapping[str, float] | None) -> dict[str, float]:
    p = dict(prices or {})
    unknown = set(p) - {"prompt", "completion"}
    if unknown:
        raise ConfigError(f"prices: unknown key(s) {sorted(unknown)}; use 'prompt' and 'completion' "
                          "(USD per million tokens)")
    for k, v in p.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ConfigError(f"prices.{k} must be a non-negative number (USD per million tokens), not {v!r}")
    return {"prompt": float(p.get("prompt", 0.0)), "completion": float(p.get("completion", 0.0))}


class ChatClient:
    """A chat-completions client; see the module docstring. ``base_url`` ends before
    ``/chat/completions`` (e.g. ``http://127.0.0.1:8000/v1``)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        concurrency: int = 4,
        cache_dir: str | Path | None = None,
        prices: Mapping[str, float] | None = None,
        temperature: float | None = 0.0,
        seed: int | None = None,
        strict_schema: bool = False,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"judge base_url must be an http(s) URL, not {base_url!r}")
        if not model:
            raise ConfigError("judge model name is empty")
        if timeout <= 0 or max_retries < 0 or backoff < 0 or concurrency < 1:
            raise ConfigError("judge client: timeout > 0, max_retries >= 0, backoff >= 0 and "
                              "concurrency >= 1 are required")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.concurrency = int(concurrency)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.prices = _prices(prices)
        self.temperature = temperature
        self.seed = seed
        self.strict_schema = strict_schema
        self._sleep = sleep
        host = urllib.parse.urlsplit(self.base_url).hostname or ""
        # a local server (vLLM, Ollama, llama.cpp on this machine) is never reached through a proxy
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({})) \
            if host in ("127.0.0.1", "localhost", "::1") else urllib.request.build_opener()
        self._lock = threading.Lock()
        self._usage = Usage()

    # ------------------------------------------------------------------ settings
    def settings(self) -> dict[str, Any]:
        """The client's settings for a manifest; the key itself never appears."""
        from kg_rageval.base.redact import MASK, redact

        key_set = bool(self.api_key_env and os.environ.get(self.api_key_env))
        return {
            "base_url": redact(self.base_url), "model": self.model, "api_key_env": self.api_key_env,
            "api_key": MASK if key_set else None, "timeout": self.timeout,
            "max_retries": self.max_retries, "backoff": self.backoff, "max_backoff": self.max_backoff,
            "concurrency": self.concurrency, "cache_dir": str(self.cache_dir) if self.cache_dir else None,
            "prices_usd_per_million_tokens": dict(self.prices), "temperature": self.temperature,
            "seed": self.seed, "strict_schema": self.strict_schema,
        }

    def __repr__(self) -> str:
        from kg_rageval.base.redact import redact

        return f"ChatClient(base_url={redact(self.base_url)!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    def usage(self) -> dict[str, Any]:
        """Totals so far: requests, HTTP calls, retries, cache hits, failures, tokens, cost."""
        with self._lock:
            u = self._usage
            return {"model": self.model, "requests": u.requests, "http_calls": u.http_calls,
                    "retries": u.retries, "cache_hits": u.cache_hits, "failures": u.failures,
                    "prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens,
                    "total_tokens": u.prompt_tokens + u.completion_tokens,
                    "cost_usd": round(u.cost_usd, 10), "http_status": dict(sorted(u.status_counts.items()))}

    def _count(self, **inc: Any) -> None:
        with self._lock:
            for k, v in inc.items():
                if k == "status":
                    self._usage.status_counts[str(v)] = self._usage.status_counts.get(str(v), 0) + 1
                else:
                    setattr(self._usage, k, getattr(self._usage, k) + v)

    # ------------------------------------------------------------------ requests
    def body(self, messages: Sequence[Message] | str, schema: Mapping[str, Any] | None = None,
             schema_name: str = "verdict") -> dict[str, Any]:
        """The request body sent (a plain prompt becomes one user message)."""
        msgs = [{"role": "user", "content": messages}] if isinstance(messages, str) else [dict(m) for m in messages]
        body: dict[str, Any] = {"model": self.model, "messages": msgs}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.seed is not None:
            body["seed"] = self.seed
        if schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": schema_name, "schema": dict(schema), "strict": self.strict_schema}}
        return body

    @staticmethod
    def cache_key(body: Mapping[str, Any]) -> str:
        """``sha256`` of the canonical JSON of the request body (model, messages, schema and
        sampling settings; never the key, which is not part of the body)."""
        return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False,
                                         separators=(",", ":")).encode("utf-8")).hexdigest()

    def _cache_path(self, key: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / key[:2] / f"{key}.json"

    def complete(self, messages: Sequence[Message] | str, *, schema: Mapping[str, Any] | None = None,
                 schema_name: str = "verdict") -> Completion:
        """One chat completion (from the cache when the same request was made before).
        Raises :class:`BackendError` when the call fails for good."""
        body = self.body(messages, schema, schema_name)
        key = self.cache_key(body)
        self._count(requests=1)
        path = self._cache_path(key)
        if path is not None and path.is_file():
            try:
                hit = json.loads(path.read_text(encoding="utf-8"))
                content = hit["content"]
                if isinstance(content, str):
                    self._count(cache_hits=1)
                    return Completion(content, int(hit.get("prompt_tokens", 0)),
                                      int(hit.get("completion_tokens", 0)), 0.0, True, 0, self.model)
            except (OSError, ValueError, KeyError, TypeError):
                pass  # a damaged cache entry is ignored and overwritten
        try:
            data, attempts = self._post(body)
            content, pt, ct = self._parse(data)
        except BackendError:
            self._count(failures=1)
            raise
        cost = (pt * self.prices["prompt"] + ct * self.prices["completion"]) / 1e6
        self._count(prompt_tokens=pt, completion_tokens=ct, cost_usd=cost)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(json.dumps({"model": self.model, "content": content, "prompt_tokens": pt,
                                       "completion_tokens": ct}, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, path)
        return Completion(content, pt, ct, cost, False, attempts, self.model)

    def complete_many(self, requests: Sequence[Sequence[Message] | str], *,
                      schema: Mapping[str, Any] | None = None, schema_name: str = "verdict"
                      ) -> list[Completion | BackendError]:
        """Many completions, at most ``concurrency`` at a time; each result is a
        :class:`Completion` or the :class:`BackendError` of that request, in input order.
        Identical requests in one batch are sent once; the repeats are answered like cache
        hits (``cached=True``, no cost)."""
        def one(req: Sequence[Message] | str) -> Completion | BackendError:
            try:
                return self.complete(req, schema=schema, schema_name=schema_name)
            except BackendError as exc:
                return exc

        keys = [self.cache_key(self.body(r, schema, schema_name)) for r in requests]
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        unique = sorted(first.values())
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            done = dict(zip(unique, pool.map(one, [requests[i] for i in unique])))
        out: list[Completion | BackendError] = []
        for i, k in enumerate(keys):
            j = first[k]
            res = done[j]
            if i != j:
                self._count(requests=1)
                if isinstance(res, Completion):
                    self._count(cache_hits=1)
                    res = Completion(res.content, res.prompt_tokens, res.completion_tokens, 0.0, True, 0, res.model)
            out.append(res)
        return out

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def _wait(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(self.max_backoff, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(self.max_backoff, self.backoff * (2 ** attempt))

    def _post(self, body: Mapping[str, Any]) -> tuple[Any, int]:
        from kg_rageval.base.redact import redact

        url = f"{self.base_url}/chat/completions"
        shown = redact(url)  # what error messages name (no userinfo password, no ?api_key=)
        payload = json.dumps(body).encode("utf-8")
        last = ""
        status: int | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._count(retries=1)
            self._count(http_calls=1)
            req = urllib.request.Request(url, data=payload, headers=self._headers(), method="POST")
            retry_after = None
            try:
                with self._opener.open(req, timeout=self.timeout) as resp:
                    self._count(status=resp.status)
                    raw = resp.read(16 * 1024 * 1024 + 1)
                if len(raw) > 16 * 1024 * 1024:
                    raise BackendError(f"{shown}: response larger than 16 MiB", status=200, attempts=attempt + 1)
                try:
                    return json.loads(raw.decode("utf-8")), attempt + 1
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    raise BackendError(f"{shown}: response is not JSON ({exc})", status=200,
                                       attempts=attempt + 1) from None
            except urllib.error.HTTPError as exc:
                status = exc.code
                self._count(status=status)
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                detail = exc.read(500).decode("utf-8", "replace").strip()
                last = f"HTTP {status}" + (f": {detail}" if detail else "")
                if status not in RETRY_STATUS and status < 500:
                    raise BackendError(f"{shown}: {redact(last)}", status=status, attempts=attempt + 1) from None
            except (TimeoutError, socket.timeout):
                status, last = None, f"timed out after {self.timeout:g} s"
                self._count(status="timeout")
            except urllib.error.URLError as exc:
                reason = exc.reason
                if isinstance(reason, (TimeoutError, socket.timeout)):
                    status, last = None, f"timed out after {self.timeout:g} s"
                    self._count(status="timeout")
                else:
                    status, last = None, f"connection failed: {reason}"
                    self._count(status="connection_error")
            except (ConnectionError, OSError) as exc:
                status, last = None, f"connection failed: {exc}"
                self._count(status="connection_error")
            if attempt < self.max_retries:
                self._sleep(self._wait(attempt, retry_after))
        raise BackendError(f"{shown}: {redact(last)} (after {self.max_retries + 1} attempts)", status=status,
                           attempts=self.max_retries + 1)

    @staticmethod
    def _parse(data: Any) -> tuple[str, int, int]:
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise BackendError("response has no choices[0].message.content") from None
        if not isinstance(content, str):
            raise BackendError(f"choices[0].message.content is {type(content).__name__}, expected text")
        usage = data.get("usage") if isinstance(data, dict) else None
        usage = usage if isinstance(usage, dict) else {}

        def tok(name: str) -> int:
            v = usage.get(name, 0)
            return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else 0

        return content, tok("prompt_tokens"), tok("completion_tokens")
