"""Judge records with a live LLM: build each rubric's items from the record fields, ask the
judge, append the entries to the records' ``judges`` sections.

Items come from the records (``docs/judges.md``):

* ``answer_correctness`` — ``query``, ``answer.text``, ``reference.answer`` (records without
  an answer or a reference are skipped);
* ``refusal`` — ``query``, ``retrieval.contexts`` (joined), ``answer.text``;
* ``citation_support`` — one item per ``answer.claims[]`` citation (``{"text", "citations"}``)
  whose passage is in ``retrieval.contexts``;
* ``pairwise`` — needs two answers: the record's ``answer.text`` (A) against
  ``baseline.answer.text`` (B), judged in both orders (AB and BA) for the position check;
* ``nugget_support`` — one item per ``nuggets.items[]`` nugget (``query``, ``answer.text``, the
  nugget's ``text``; item ``nugget:<index>``): AutoNuggetizer's assignment asked of the judge.

A record that already has an entry of this rubric from this judge is not judged again.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from kg_rageval.families.judges.client import ChatClient
from kg_rageval.families.judges.llm import RubricJudge
from kg_rageval.records import Record


def _text(rec: Record, *path: str) -> str | None:
    cur: Any = rec
    for p in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(p)
    if isinstance(cur, list) and cur and all(isinstance(x, str) for x in cur):
        return " | ".join(cur)
    return cur if isinstance(cur, str) else None


def items_for(rec: Record, rubric: str) -> list[dict[str, Any]]:
    """The items of ``rubric`` one record offers (see the module docstring)."""
    from kg_rageval.records.fields import contexts

    q = _text(rec, "query") or _text(rec, "text")
    ans = _text(rec, "answer", "text")
    if rubric == "answer_correctness":
        ref = _text(rec, "reference", "answer")
        return (
            [{"question": q, "answer": ans, "reference": ref}] if ans is not None and ref is not None else []
        )
    if rubric == "refusal":
        ctx = contexts(rec) or []
        return [
            {
                "question": q,
                "answer": ans or "(refused)" if (rec.get("answer") or {}).get("refused") else ans,
                "context": "\n".join(f"[{d or i}] {t}" for i, (d, t) in enumerate(ctx, 1)) or "(none)",
            }
        ]
    if rubric == "citation_support":
        passages = {d: t for d, t in (contexts(rec) or []) if d is not None}
        out = []
        for k, claim in enumerate((rec.get("answer") or {}).get("claims") or []):
            if not isinstance(claim, dict) or not isinstance(claim.get("text"), str):
                continue
            for c in claim.get("citations") or []:
                if c in passages:
                    out.append(
                        {"claim": claim["text"], "citation": c, "passage": passages[c], "item": f"{k}:{c}"}
                    )
        return out
    if rubric == "pairwise":
        b = _text(rec, "baseline", "answer", "text")
        if ans is None or b is None:
            return []
        lengths = {"A": len(ans.split()), "B": len(b.split())}
        return [
            {"question": q, "answer_a": ans, "answer_b": b, "order": "AB", "lengths": lengths},
            {"question": q, "answer_a": b, "answer_b": ans, "order": "BA", "lengths": lengths},
        ]
    if rubric == "nugget_support":
        sec = rec.get("nuggets")
        raw = sec.get("items") if isinstance(sec, dict) else None
        if ans is None or not isinstance(raw, list):
            return []
        return [
            {"question": q, "answer": ans, "nugget": it["text"], "item": f"nugget:{k}"}
            for k, it in enumerate(raw)
            if isinstance(it, dict) and isinstance(it.get("text"), str)
        ]
    raise KeyError(f"unknown rubric {rubric!r}")


def judge_records(
    records: Iterable[Record], rubric: str, client: ChatClient, *, name: str | None = None
) -> list[Record]:
    """Copies of ``records`` with this judge's entries appended (one request per item, at most
    ``client.concurrency`` at a time)."""
    judge = RubricJudge(rubric, client, name=name)
    out = [copy.deepcopy(r) for r in records]
    todo: list[tuple[int, dict[str, Any]]] = []
    for i, rec in enumerate(out):
        done = any(
            isinstance(e, dict) and e.get("rubric") == rubric and e.get("judge", "judge") == judge.name
            for e in rec.get("judges") or []
        )
        if not done:
            todo.extend((i, item) for item in items_for(rec, rubric))
    entries = judge.judge_many([item for _, item in todo])
    for (i, item), entry in zip(todo, entries):
        if "item" in item:
            entry["item"] = item["item"]
        if "lengths" in item:
            entry["lengths"] = item["lengths"]
        out[i].setdefault("judges", []).append(entry)
    return out


LIVE_PARAMS = (
    "endpoint",
    "model",
    "rubrics",
    "judge_name",
    "api_key_env",
    "cache_dir",
    "concurrency",
    "timeout",
    "max_retries",
    "price_prompt",
    "price_completion",
)
"""The judge family's parameters that configure a live judge (``kg_rageval.scoring.quality``)."""


def live_judge(
    records: Iterable[Record],
    *,
    endpoint: str | None,
    model: str | None,
    rubrics: Iterable[str] = ("answer_correctness",),
    judge_name: str | None = None,
    api_key_env: str | None = "OPENAI_API_KEY",
    cache_dir: str | None = None,
    concurrency: int = 4,
    timeout: float = 60.0,
    max_retries: int = 4,
    price_prompt: float = 0.0,
    price_completion: float = 0.0,
) -> tuple[list[Record], dict[str, Any]]:
    """Judge ``records`` for each of ``rubrics`` with a new :class:`ChatClient` (prices in USD
    per million tokens); returns the judged records and ``{"settings", "usage"}`` (key
    redacted) for the manifest."""
    from kg_rageval.base.errors import ConfigError

    rubrics = list(rubrics)
    if not endpoint or not model or not rubrics:
        raise ConfigError("judges: a live judge needs an endpoint, a model and at least one rubric")
    client = ChatClient(
        endpoint,
        model,
        api_key_env=api_key_env,
        cache_dir=cache_dir,
        concurrency=concurrency,
        timeout=timeout,
        max_retries=max_retries,
        prices={"prompt": price_prompt, "completion": price_completion},
    )
    out = list(records)
    for rub in rubrics:
        out = judge_records(out, rub, client, name=judge_name)
    return out, {"settings": client.settings(), "usage": client.usage()}
