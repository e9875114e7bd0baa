"""The TREC 2024 RAG Track nugget files as records with a ``nuggets`` section.

The formats are AutoNuggetizer's (``castorini/nuggetizer``), one JSON object a line:

* an **assignment file** (``assign`` output), one answer a line:
  ``{"qid": "...", "run_id": "...", "query": "...", "answer_text": "...",
  "nuggets": [{"text": "...", "importance": "vital", "assignment": "support"}]}``
  (``topic_id`` is read for ``qid``; ``run_id``, ``query``, ``answer_text`` optional);
* a **nugget file** (``create`` output), one topic a line:
  ``{"qid": "...", "query": "...", "nuggets": [{"text": "...", "importance": "okay"}]}`` — it
  gives the importance of an assignment nugget (matched by topic and text) that lacks one;
* a **human assignment file**: an assignment file of the assessors' labels, joined to the
  judge's answers by ``(run_id, qid)`` and nugget text; each becomes ``human_assignment``.

A record's id is ``<run_id>:<qid>`` (``qid`` without a run id), ``query`` the query text,
``slices.run`` the run id (so the scores break down per run). A bad line is an
:class:`~kg_rageval.base.errors.InputError` naming the file, line and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.records import iter_jsonl


def _err(path: Path, line: int, field: str, msg: str) -> InputError:
    return InputError(msg, source=str(path), location=f"line {line}, field {field}")


def _lines(path: str | Path) -> list[tuple[Path, int, str, str | None, dict[str, Any]]]:
    """``(path, line, qid, run_id, object)`` of each line of a nugget or assignment file."""
    p = Path(path)
    out = []
    for n, obj in iter_jsonl(p):
        if not isinstance(obj, dict):
            raise _err(p, n, "(line)", f"expected a JSON object, found {type(obj).__name__}")
        qid = obj.get("qid", obj.get("topic_id"))
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if not isinstance(qid, str) or not qid:
            raise _err(p, n, "qid", f"expected the topic id, found {qid!r}")
        run = obj.get("run_id")
        if run is not None and not isinstance(run, str):
            raise _err(p, n, "run_id", f"expected a string, found {run!r}")
        if not isinstance(obj.get("nuggets"), list):
            raise _err(p, n, "nuggets", f"expected a list of nuggets, found {obj.get('nuggets')!r}")
        for i, ng in enumerate(obj["nuggets"]):
            if not isinstance(ng, dict) or not isinstance(ng.get("text"), str):
                raise _err(p, n, f"nuggets.{i}.text", f"expected a nugget with a text, found {ng!r}")
        out.append((p, n, qid, run, obj))
    return out


def read_trec_nuggets(
    assignments: str | Path, *, nuggets: str | Path | None = None, human: str | Path | None = None
) -> list[dict[str, Any]]:
    """Records with a ``nuggets`` section from the track's files (module docstring)."""
    importance: dict[tuple[str, str], str] = {}
    if nuggets is not None:
        for _p, _n, qid, _run, obj in _lines(nuggets):
            for ng in obj["nuggets"]:
                if ng.get("importance") is not None:
                    importance[(qid, ng["text"])] = ng["importance"]
    records: list[dict[str, Any]] = []
    by_id: dict[str, tuple[int, dict[str, Any]]] = {}
    for p, n, qid, run, obj in _lines(assignments):
        rid = f"{run}:{qid}" if run else qid
        if rid in by_id:
            raise _err(p, n, "qid", f"answer {rid!r} is given twice (first on line {by_id[rid][0]})")
        items = []
        for i, ng in enumerate(obj["nuggets"]):
            item: dict[str, Any] = {"text": ng["text"]}
            imp = ng.get("importance", importance.get((qid, ng["text"])))
            if imp is None:
                raise _err(
                    p, n, f"nuggets.{i}.importance", "no importance (and no nugget file that gives one)"
                )
            item["importance"] = imp
            if ng.get("assignment") is not None:
                item["assignment"] = ng["assignment"]
            items.append(item)
        rec: dict[str, Any] = {
            "id": rid,
            "_source": str(p),
            "_line": n,
            "nuggets": {"topic_id": qid, "items": items},
        }
        q = obj.get("query")
        if isinstance(q, dict):
            q = q.get("text")
        if isinstance(q, str):
            rec["query"] = q
        if isinstance(obj.get("answer_text"), str):
            rec["answer"] = {"text": obj["answer_text"]}
        if run:
            rec["slices"] = {"run": run}
        by_id[rid] = (n, rec)
        records.append(rec)
    if human is not None:
        for p, n, qid, run, obj in _lines(human):
            rid = f"{run}:{qid}" if run else qid
            if rid not in by_id:
                raise _err(p, n, "qid", f"answer {rid!r} is not in the assignment file {assignments}")
            by_text = {it["text"]: it for it in by_id[rid][1]["nuggets"]["items"]}
            for i, ng in enumerate(obj["nuggets"]):
                it = by_text.get(ng["text"])
                if it is None:
                    raise _err(
                        p, n, f"nuggets.{i}.text", f"nugget {ng['text']!r} is not among the answer's nuggets"
                    )
                it["human_assignment"] = ng.get("assignment")
    return records
