"""An OpenAI-compatible chat-completions client for rubric judges (stdlib only).

Works with any server that speaks ``POST {base_url}/chat/completions`` (OpenAI, vLLM, Ollama,
llama.cpp server, LiteLLM). What it adds to a bare HTTP call:

* **structured output** — a verdict schema is sent as ``response_format =
  {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}``;
* **retries with exponential backoff** on 429, 5xx, timeouts and connection errors: the wait
  before retry ``k`` (0-based) is ``min(max_backoff, backoff · 2**k)``, or the server's
  ``Retry-After`` seconds when given (capped the same way); other 4xx fail at once;
* **a deadline per request**: ``timeout`` seconds bound the whole request (connect, headers
  and body), not each read, so a server that trickles bytes cannot hold a call open; a request
  past its deadline is a timeout (retried like one);
* **no redirects**: a 3xx answer is a failure naming where it pointed, never followed, so the
  API key goes only to the configured host;
* **bounded concurrency** — :meth:`ChatClient.complete_many` runs at most ``concurrency``
  requests at a time (threads), results in input order;
* an **on-disk cache** keyed by ``sha256`` of model + messages + schema + sampling settings: a
  repeated request is answered from ``cache_dir`` without a call (and costs nothing). Each
  entry carries an HMAC-SHA256 under this machine's key (:mod:`kg_rageval.base.machine_key`)
  over its request key and answer: an entry that was edited, copied to another request's file,
  written without a key or damaged is **asked again** (counted in ``cache_rejected``), never
  trusted; without a machine key nothing is read from the cache;
* **token and cost accounting** — prompt/completion tokens from the response's ``usage``,
  cost = tokens × ``prices`` (USD per million tokens), totals in :meth:`ChatClient.usage`
  for the run manifest.

The API key is read from the environment variable ``api_key_env`` at request time; it is never
stored on the client, printed, logged, cached or written into a manifest
(:meth:`ChatClient.settings` shows only whether it is set, as ``"***"``); a password or key in
the URL itself is masked in settings and error messages (:mod:`kg_rageval.base.redact`). A
server that echoes the key back (in an answer or an error body) has it replaced by ``"***"``
before the text is kept, cached, scored or written anywhere.
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg_rageval.base.errors import ConfigError, KgRagevalError
from kg_rageval.base.machine_key import key_id, keyed_digest, machine_key

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses retried (rate limits, timeouts, transient server errors); any 5xx is too."""

Message = Mapping[str, str]

MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""A larger answer is a failure (a judge verdict is a few hundred bytes)."""

MIN_SCRUBBED_KEY = 8
"""An API key shorter than this is not searched for in answers (replacing every occurrence of
a one- or two-character "key" would corrupt the text; real keys are far longer)."""


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
    cache_rejected: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    status_counts: dict[str, int] = field(default_factory=dict)


def _prices(prices: Mapping[str, float] | None) -> dict[str, float]:
    p = dict(prices or {})
    unknown = set(p) - {"prompt", "completion"}
    if unknown:
        raise ConfigError(
            f"prices: unknown key(s) {sorted(unknown)}; use 'prompt' and 'completion' "
            "(USD per million tokens)"
        )
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
            raise ConfigError(
                "judge client: timeout > 0, max_retries >= 0, backoff >= 0 and concurrency >= 1 are required"
            )
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
        handlers: list[urllib.request.BaseHandler] = [
            _NoRedirect(),
            _DeadlineHTTPHandler(),
            _DeadlineHTTPSHandler(),
        ]
        if host in ("127.0.0.1", "localhost", "::1"):
            handlers.insert(0, urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)
        self._lock = threading.Lock()
        self._usage = Usage()

    # ------------------------------------------------------------------ settings
    def settings(self) -> dict[str, Any]:
        """The client's settings for a manifest; the key itself never appears."""
        from kg_rageval.base.redact import MASK, redact

        key_set = bool(self.api_key_env and os.environ.get(self.api_key_env))
        return {
            "base_url": redact(self.base_url),
            "model": self.model,
            "api_key_env": self.api_key_env,
            "api_key": MASK if key_set else None,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "backoff": self.backoff,
            "max_backoff": self.max_backoff,
            "concurrency": self.concurrency,
            "cache_dir": str(self.cache_dir) if self.cache_dir else None,
            "prices_usd_per_million_tokens": dict(self.prices),
            "temperature": self.temperature,
            "seed": self.seed,
            "strict_schema": self.strict_schema,
        }

    def __repr__(self) -> str:
        from kg_rageval.base.redact import redact

        return f"ChatClient(base_url={redact(self.base_url)!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    def usage(self) -> dict[str, Any]:
        """Totals so far: requests, HTTP calls, retries, cache hits, cache entries refused (edited,
        unsigned or damaged: asked again), failures, tokens, cost."""
        with self._lock:
            u = self._usage
            return {
                "model": self.model,
                "requests": u.requests,
                "http_calls": u.http_calls,
                "retries": u.retries,
                "cache_hits": u.cache_hits,
                "cache_rejected": u.cache_rejected,
                "failures": u.failures,
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens,
                "total_tokens": u.prompt_tokens + u.completion_tokens,
                "cost_usd": round(u.cost_usd, 10),
                "http_status": dict(sorted(u.status_counts.items())),
            }

    def _count(self, **inc: Any) -> None:
        with self._lock:
            for k, v in inc.items():
                if k == "status":
                    self._usage.status_counts[str(v)] = self._usage.status_counts.get(str(v), 0) + 1
                else:
                    setattr(self._usage, k, getattr(self._usage, k) + v)

    # ------------------------------------------------------------------ requests
    def body(
        self,
        messages: Sequence[Message] | str,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "verdict",
    ) -> dict[str, Any]:
        """The request body sent (a plain prompt becomes one user message)."""
        msgs = (
            [{"role": "user", "content": messages}]
            if isinstance(messages, str)
            else [dict(m) for m in messages]
        )
        body: dict[str, Any] = {"model": self.model, "messages": msgs}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.seed is not None:
            body["seed"] = self.seed
        if schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": dict(schema), "strict": self.strict_schema},
            }
        return body

    @staticmethod
    def cache_key(body: Mapping[str, Any]) -> str:
        """``sha256`` of the canonical JSON of the request body (model, messages, schema and
        sampling settings; never the key, which is not part of the body)."""
        return hashlib.sha256(
            json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        ).hexdigest()

    def _cache_path(self, key: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / key[:2] / f"{key}.json"

    def complete(
        self,
        messages: Sequence[Message] | str,
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "verdict",
    ) -> Completion:
        """One chat completion (from the cache when the same request was made before).
        Raises :class:`BackendError` when the call fails for good."""
        body = self.body(messages, schema, schema_name)
        key = self.cache_key(body)
        self._count(requests=1)
        path = self._cache_path(key)
        if path is not None and path.is_file():
            hit = _read_cache_entry(path, key)
            if hit is None:
                self._count(cache_rejected=1)  # edited, unsigned, misplaced or damaged: ask again
            else:
                self._count(cache_hits=1)
                return Completion(hit[0], hit[1], hit[2], 0.0, True, 0, self.model)
        try:
            data, attempts = self._post(body)
            content, pt, ct = self._parse(data)
        except BackendError:
            self._count(failures=1)
            raise
        content = self._scrub(content)
        cost = (pt * self.prices["prompt"] + ct * self.prices["completion"]) / 1e6
        self._count(prompt_tokens=pt, completion_tokens=ct, cost_usd=cost)
        if path is not None:
            _write_cache_entry(path, key, self.model, content, pt, ct)
        return Completion(content, pt, ct, cost, False, attempts, self.model)

    def _api_key(self) -> str | None:
        return (os.environ.get(self.api_key_env) or None) if self.api_key_env else None

    def _scrub(self, text: str) -> str:
        """``text`` with every echo of the API key replaced by ``***`` (keys shorter than
        :data:`MIN_SCRUBBED_KEY` are not searched for)."""
        from kg_rageval.base.redact import MASK

        key = self._api_key()
        if key and len(key) >= MIN_SCRUBBED_KEY and key in text:
            return text.replace(key, MASK)
        return text

    def complete_many(
        self,
        requests: Sequence[Sequence[Message] | str],
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "verdict",
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
                    res = Completion(
                        res.content, res.prompt_tokens, res.completion_tokens, 0.0, True, 0, res.model
                    )
            out.append(res)
        return out

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self._api_key()
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def _wait(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(self.max_backoff, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(self.max_backoff, self.backoff * (2**attempt))

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
            deadline = _Deadline(self.timeout)
            req.deadline = deadline  # type: ignore[attr-defined]  # read by the _Deadline*Handler
            retry_after = None
            try:
                with deadline:
                    with self._opener.open(req, timeout=self.timeout) as resp:
                        self._count(status=resp.status)
                        raw = _read_bounded(resp, MAX_RESPONSE_BYTES)
                    if deadline.expired:
                        raise TimeoutError
                if len(raw) > MAX_RESPONSE_BYTES:
                    raise BackendError(
                        f"{shown}: response larger than 16 MiB", status=200, attempts=attempt + 1
                    )
                try:
                    return json.loads(raw.decode("utf-8")), attempt + 1
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    raise BackendError(
                        f"{shown}: response is not JSON ({exc})", status=200, attempts=attempt + 1
                    ) from None
            except urllib.error.HTTPError as exc:
                status = exc.code
                self._count(status=status)
                retry_after = exc.headers.get("Retry-After") if exc.headers else None
                detail = self._scrub(exc.read(500).decode("utf-8", "replace").strip())
                last = f"HTTP {status}" + (f": {detail}" if detail else "")
                if status not in RETRY_STATUS and status < 500:
                    raise BackendError(
                        f"{shown}: {redact(last)}", status=status, attempts=attempt + 1
                    ) from None
            except TimeoutError:
                status, last = None, f"timed out after {self.timeout:g} s"
                self._count(status="timeout")
            except urllib.error.URLError as exc:
                reason = exc.reason
                if deadline.expired or isinstance(reason, (TimeoutError, socket.timeout)):
                    status, last = None, f"timed out after {self.timeout:g} s"
                    self._count(status="timeout")
                else:
                    status, last = None, f"connection failed: {reason}"
                    self._count(status="connection_error")
            except (ConnectionError, OSError, http.client.HTTPException) as exc:
                if deadline.expired:  # the deadline closed the socket under a read
                    status, last = None, f"timed out after {self.timeout:g} s"
                    self._count(status="timeout")
                else:
                    status, last = None, f"connection failed: {self._scrub(str(exc))}"
                    self._count(status="connection_error")
            if attempt < self.max_retries:
                self._sleep(self._wait(attempt, retry_after))
        raise BackendError(
            f"{shown}: {redact(last)} (after {self.max_retries + 1} attempts)",
            status=status,
            attempts=self.max_retries + 1,
        )

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


# ---------------------------------------------------------------------- the signed cache
def _entry_digest(key: bytes, request_key: str, entry: Mapping[str, Any]) -> str:
    """HMAC over the request key (so an entry copied to another request's file fails) and the
    entry's model, answer and token counts."""
    body = json.dumps(
        {k: entry.get(k) for k in ("model", "content", "prompt_tokens", "completion_tokens")},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return keyed_digest(key, b"kg-rageval judge cache v1", request_key.encode(), body.encode("utf-8"))


def _read_cache_entry(path: Path, request_key: str) -> tuple[str, int, int] | None:
    """``(content, prompt_tokens, completion_tokens)`` of a cache entry that verifies under this
    machine's key; ``None`` for one that does not (or cannot: no key) — it is asked again."""
    key = machine_key()
    if key is None:
        return None
    try:
        if path.stat().st_size > MAX_RESPONSE_BYTES + 4096:
            return None
        hit = json.loads(path.read_text(encoding="utf-8"))
        if (
            not isinstance(hit, dict)
            or hit.get("request") != request_key
            or hit.get("mac_key") != key_id(key)
        ):
            return None
        if not hmac.compare_digest(str(hit.get("mac", "")), _entry_digest(key, request_key, hit)):
            return None
        content, pt, ct = hit["content"], hit["prompt_tokens"], hit["completion_tokens"]
        if not isinstance(content, str) or not all(type(t) is int and t >= 0 for t in (pt, ct)):
            return None
        return content, pt, ct
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cache_entry(path: Path, request_key: str, model: str, content: str, pt: int, ct: int) -> None:
    """Write one signed entry atomically (nothing is written without a machine key: an unsigned
    entry could never be trusted)."""
    key = machine_key(create=True)
    if key is None:
        return
    entry: dict[str, Any] = {"model": model, "content": content, "prompt_tokens": pt, "completion_tokens": ct}
    entry.update(request=request_key, mac_key=key_id(key), mac=_entry_digest(key, request_key, entry))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(json.dumps(entry, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


# ---------------------------------------------------------------------- transport
def _read_bounded(resp: Any, limit: int) -> bytes:
    """The response body, at most ``limit + 1`` bytes, read in pieces (``read1`` returns what
    has arrived) so that the request's :class:`_Deadline` can cut a trickling body short."""
    chunks: list[bytes] = []
    n = 0
    while n <= limit:
        piece = resp.read1(min(65536, limit + 1 - n))
        if not piece:
            break
        chunks.append(piece)
        n += len(piece)
    return b"".join(chunks)


class _Deadline:
    """One request's deadline: after ``seconds`` it shuts the request's sockets down, which ends
    any read blocked on them (headers or body), and marks the request ``expired``."""

    def __init__(self, seconds: float):
        self.expired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def track(self, sock: socket.socket) -> None:
        """Watch a connected socket (urllib drops the connection's own reference to it once the
        headers are read, while the response still reads from it)."""
        with self._lock:
            self._socks.append(sock)
            expired = self.expired
        if expired:
            self._fire()

    def _fire(self) -> None:
        with self._lock:
            self.expired = True
            socks = list(self._socks)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._timer.cancel()


def _tracked(conn_cls: type[http.client.HTTPConnection], req: urllib.request.Request) -> Callable[..., Any]:
    deadline: _Deadline | None = getattr(req, "deadline", None)

    def make(host: str, **kw: Any) -> http.client.HTTPConnection:
        conn = conn_cls(host, **kw)
        if deadline is not None:
            connect = conn.connect

            def connect_tracked() -> None:
                connect()
                if conn.sock is not None:
                    deadline.track(conn.sock)

            conn.connect = connect_tracked  # type: ignore[method-assign]
        return conn

    return make


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_tracked(http.client.HTTPConnection, req), req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> Any:
        kw: dict[str, Any] = {"context": getattr(self, "_context", None)}
        if hasattr(self, "_check_hostname"):  # Python < 3.12
            kw["check_hostname"] = self._check_hostname
        return self.do_open(_tracked(http.client.HTTPSConnection, req), req, **kw)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuses every redirect: the request (and its ``Authorization`` header) goes only to the
    configured ``base_url``."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> None:
        from kg_rageval.base.redact import redact

        to = urllib.parse.urlsplit(newurl)
        where = (
            f"{to.scheme}://{to.hostname}" + (f":{to.port}" if to.port else "")
            if to.hostname
            else redact(newurl)
        )
        raise BackendError(
            f"{redact(req.full_url)}: HTTP {code} redirect to {where} refused — the judge client "
            "never follows redirects, so the API key goes only to the configured host; set "
            "base_url to the final address",
            status=code,
        )
