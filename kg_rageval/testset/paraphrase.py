"""Optional paraphrase generators for test-set queries.

A paraphraser rewrites each templated query; the record keeps the original
(``testset.paraphrase.original``) and the generator's name, model, prompt hash and seed, and the
test-set manifest records the prompt, model and seed. Gold mentions are re-located in the new
text (case-insensitive; in their order, so "leukemia" after "chronic leukemia" is not placed
inside it; spans never overlap); a mention whose surface form the generator did not
keep is dropped and counted (``n_mentions_dropped``) — never left pointing at the wrong span.

Two generators:

* a Python callable ``"module:function"``, called as
  ``fn(text, *, seed, kind, prompt, model) -> str`` (deterministic callables keep the set
  reproducible);
* an OpenAI-compatible chat-completions endpoint (``endpoint`` = base URL, e.g.
  ``http://localhost:8000/v1``): one ``POST {endpoint}/chat/completions`` per query with
  ``model``, ``temperature``, ``seed`` and the prompt as the system message. The key, if any, is
  read from the environment variable ``api_key_env`` and never written anywhere.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request
from collections.abc import Callable
from typing import Any

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.base.imports import import_target
from kg_rageval.testset.config import ParaphraseConfig


class Paraphraser:
    """Applies ``rewrite(text, seed=, kind=) -> str`` to records (see the module docstring)."""

    def __init__(self, rewrite: Callable[..., str], *, name: str, cfg: ParaphraseConfig):
        self.rewrite, self.name, self.cfg = rewrite, name, cfg

    def describe(self) -> dict[str, Any]:
        return {
            "generator": self.name,
            "model": self.cfg.model,
            "prompt": self.cfg.prompt,
            "prompt_sha256": hashlib.sha256(self.cfg.prompt.encode()).hexdigest(),
            "seed": self.cfg.seed,
            "temperature": self.cfg.temperature,
            "kinds": self.cfg.kinds,
        }

    def apply(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        dropped = 0
        changed = 0
        for n, rec in enumerate(records):
            ts = rec.get("testset", {})
            kind = ts.get("kind")
            if self.cfg.kinds is not None and kind not in self.cfg.kinds:
                continue
            seed = self.cfg.seed + n
            old = rec["query"]
            new = self.rewrite(old, seed=seed, kind=kind, prompt=self.cfg.prompt, model=self.cfg.model)
            if not isinstance(new, str) or not new.strip():
                raise InputError(
                    f"paraphrase generator {self.name} returned no text for record {rec['id']!r}"
                )
            new = new.strip()
            if new == old:
                continue
            changed += 1
            rec["query"] = new
            ment = rec.get("mentions")
            if ment:
                kept: list[dict[str, Any]] = []
                low = new.lower()
                after = 0
                for m in sorted(ment["gold"], key=lambda m: m["start"]):
                    pos = _locate(low, old[m["start"] : m["end"]].lower(), after, kept)
                    if pos < 0:
                        dropped += 1
                        continue
                    end = pos + (m["end"] - m["start"])
                    kept.append({**m, "start": pos, "end": end})
                    after = end
                if kept:
                    ment["gold"] = kept
                else:
                    del rec["mentions"]
            ts["paraphrase"] = {
                "original": old,
                "generator": self.name,
                "model": self.cfg.model,
                "seed": seed,
                "prompt_sha256": hashlib.sha256(self.cfg.prompt.encode()).hexdigest(),
            }
        return {**self.describe(), "n_changed": changed, "n_mentions_dropped": dropped}


def _locate(text: str, surface: str, after: int, taken: list[dict[str, Any]]) -> int:
    """Where ``surface`` occurs in ``text``: first after ``after`` (mentions keep their order),
    else anywhere not overlapping a span already placed; -1 when it is gone."""
    pos = text.find(surface, after)
    if pos >= 0:
        return pos
    pos = text.find(surface)
    while pos >= 0:
        if all(pos + len(surface) <= t["start"] or pos >= t["end"] for t in taken):
            return pos
        pos = text.find(surface, pos + 1)
    return -1


def load_callable(spec: str) -> Callable[..., str]:
    """``"package.module:function"`` → the function (a clear error when it cannot be found)."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ConfigError(f"paraphrase.callable: expected 'module:function', not {spec!r}")
    try:
        mod = import_target(module)
    except ImportError as exc:
        raise ConfigError(f"paraphrase.callable: cannot import {module!r}: {exc}") from None
    fn = getattr(mod, attr, None)
    if not callable(fn):
        raise ConfigError(f"paraphrase.callable: {module!r} has no callable {attr!r}")
    return fn


def endpoint_rewriter(cfg: ParaphraseConfig) -> Callable[..., str]:
    """A rewrite function over an OpenAI-compatible ``/chat/completions`` endpoint."""
    if not cfg.model:
        raise ConfigError("paraphrase.model is required with paraphrase.endpoint")
    url = cfg.endpoint.rstrip("/") + "/chat/completions"  # type: ignore[union-attr]
    key = os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""

    def rewrite(text: str, *, seed: int, kind: str | None, prompt: str, model: str | None) -> str:
        body = json.dumps(
            {
                "model": model,
                "temperature": cfg.temperature,
                "seed": seed,
                "messages": [{"role": "system", "content": prompt}, {"role": "user", "content": text}],
            }
        )
        req = urllib.request.Request(
            url,
            data=body.encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {key}"} if key else {}),
            },
        )
        try:
            with urllib.request.urlopen(req, timeout=cfg.timeout_s) as resp:
                raw = resp.read(1_000_000)
        except OSError as exc:
            raise InputError(f"paraphrase endpoint {cfg.endpoint}: {exc}") from None
        try:
            return str(json.loads(raw)["choices"][0]["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError):
            raise InputError(f"paraphrase endpoint {cfg.endpoint}: not a chat-completions response") from None

    return rewrite


def make_paraphraser(cfg: ParaphraseConfig) -> Paraphraser:
    """The paraphraser a ``[paraphrase]`` config section describes."""
    if bool(cfg.callable) == bool(cfg.endpoint):
        raise ConfigError("paraphrase: set exactly one of 'callable' and 'endpoint'")
    if cfg.callable:
        return Paraphraser(load_callable(cfg.callable), name=cfg.callable, cfg=cfg)
    return Paraphraser(endpoint_rewriter(cfg), name=f"openai-compatible:{cfg.endpoint}", cfg=cfg)
