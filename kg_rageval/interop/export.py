"""Results out as tables (``docs/interop.md``, "Out"): per-record results as Parquet, and a
RAGAS-compatible table (RAGAS's column names, then kg-rageval's per-record metric columns) so
a team reads RAGAS's and kg-rageval's scores for the same rows side by side.

pyarrow is imported inside the functions that need it (the core install does not need it).

Per-record results (:func:`results_table`, :func:`write_parquet`), one table per evaluation
(``<family>.<member>.parquet``; a one-member family: ``<family>.parquet``):

* ``record_id`` (string) — the record's id;
* the evaluation's key columns (``gold_node``, ``slice:<name>``, ...; null where a row has none);
* its detail columns (as stored; a column whose values Arrow cannot hold in one type — mixed
  or nested values — is written as their JSON text);
* its stats columns (float64): the per-row sums the metrics are computed from.

The metrics of each evaluation go to ``<family>.<member>.metrics.parquet``: ``metric``
(canonical ``<family>.<metric>``), ``value``, ``numerator``, ``denominator`` (float64, null
when unknown), ``missing`` (string: why the value is undefined, else null).

A per-record metric value (:func:`record_metrics`) is the family's own formula over that
record's stats (its rows' sums): null when the metric is undefined for the record (an empty
denominator) or the record was not scored by that evaluation — never 0 or 1 in its place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.evaluation_set import EvaluationSet

RAGAS_COLUMNS = ("user_input", "retrieved_contexts", "response", "reference", "reference_contexts")
"""The leading columns of :func:`ragas_table`, as RAGAS names them."""


def _pa() -> Any:
    from kg_rageval.base.errors import InputError

    try:
        import pyarrow as pa
    except ImportError:
        raise InputError("Parquet export needs pyarrow: pip install pyarrow") from None
    return pa


def _members(results: Evaluation | EvaluationSet | Iterable[Any]) -> list[tuple[str, str, Evaluation]]:
    """``(family, member, evaluation)`` for an Evaluation, an EvaluationSet or an iterable of them."""
    if isinstance(results, Evaluation):
        return [(results.family.name, results.family.name, results)]
    if isinstance(results, EvaluationSet):
        return [(results.family, m, ev) for m, ev in results.items()]
    out: list[tuple[str, str, Evaluation]] = []
    for r in results:
        out.extend(_members(r))
    return out


def _array(pa: Any, values: list[Any]) -> Any:
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return pa.array(
            [None if v is None else json.dumps(v, ensure_ascii=False, default=str) for v in values],
            type=pa.string(),
        )


def results_table(ev: Evaluation) -> Any:
    """One evaluation's per-row results as a ``pyarrow.Table`` (columns in the module docstring)."""
    pa = _pa()
    rows = ev.rows()
    names = ["record_id", *ev.keys, *ev.details, *ev.stats]
    cols = {}
    for n in dict.fromkeys(names):
        values = [r.get(n) for r in rows]
        if n == "record_id":
            cols[n] = pa.array([str(v) for v in values], type=pa.string())
        elif n in ev.stats:
            cols[n] = pa.array(values, type=pa.float64())
        else:
            cols[n] = _array(pa, values)
    return pa.table(cols) if rows else pa.table({n: pa.array([], type=pa.string()) for n in cols})


def metrics_table(family: str, ev: Evaluation) -> Any:
    pa = _pa()
    ms = ev.metrics()
    return pa.table(
        {
            "metric": pa.array([f"{family}.{k}" for k in ms], type=pa.string()),
            "value": pa.array([m.value for m in ms.values()], type=pa.float64()),
            "numerator": pa.array([m.numerator for m in ms.values()], type=pa.float64()),
            "denominator": pa.array([m.denominator for m in ms.values()], type=pa.float64()),
            "missing": pa.array([m.missing for m in ms.values()], type=pa.string()),
        }
    )


def write_parquet(results: Evaluation | EvaluationSet | Iterable[Any], folder: str | Path) -> list[Path]:
    """Write each evaluation's per-record results and metrics into ``folder`` (created), each
    file atomically; returns the paths written."""
    import os

    import pyarrow.parquet as pq

    from kg_rageval.base.outputs import atomic_path, writing

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for family, member, ev in _members(results):
        stem = family if member == family else f"{family}.{member}"
        for path, table in (
            (out / f"{stem}.parquet", results_table(ev)),
            (out / f"{stem}.metrics.parquet", metrics_table(family, ev)),
        ):
            tmp = atomic_path(path)
            try:
                with writing(path):
                    pq.write_table(table, tmp)
                os.replace(tmp, path)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            written.append(path)
    return written


def record_metrics(family: str, ev: Evaluation) -> dict[str, dict[str, float | None]]:
    """``{record_id: {"<family>.<metric>": value or None}}``: each metric by the family's own
    formula over the record's stats (the sums of its rows)."""
    rows = len(ev)
    if not rows:
        return {}
    ids = np.asarray([str(x) for x in ev.record_ids.tolist()], dtype=object)
    uniq, inverse = np.unique(ids, return_inverse=True)
    sums = {
        k: np.bincount(inverse, weights=np.asarray(v, dtype=float), minlength=len(uniq))
        for k, v in ev.stats.items()
    }
    out: dict[str, dict[str, float | None]] = {}
    for i, rid in enumerate(uniq.tolist()):
        ms = ev.family.finalize({k: float(s[i]) for k, s in sums.items()})
        out[rid] = {f"{family}.{k}": m.value for k, m in ms.items()}
    return out


def _texts(contexts: Any) -> list[str] | None:
    if not isinstance(contexts, list):
        return None
    out = []
    for c in contexts:
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, Mapping) and isinstance(c.get("text"), str):
            out.append(c["text"])
    return out


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _section(record: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = record.get(name)
    return value if isinstance(value, Mapping) else {}


def ragas_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record's RAGAS columns: ``user_input`` (``query``; a multi-turn conversation kept
    under ``source.extra.user_input`` as its JSON text), ``retrieved_contexts`` (the texts of
    ``retrieval.contexts``), ``response`` (``answer.text``), ``reference`` (``reference.answer``;
    a list of answers as JSON text), ``reference_contexts`` (``source.extra.reference_contexts``)."""
    src = _section(record, "source")
    ragas = _section(src, "extra") or _section(src, "ragas")  # `kg-rageval import`'s unmapped fields
    retrieval = _section(record, "retrieval")
    answer = _section(record, "answer")
    reference = _section(record, "reference")
    ui = ragas.get("user_input")
    ref_ctx = ragas.get("reference_contexts")
    return {
        "user_input": _as_text(ui) if isinstance(ui, list) else record.get("query"),
        "retrieved_contexts": _texts(retrieval.get("contexts")),
        "response": answer.get("text") if isinstance(answer.get("text"), str) else None,
        "reference": _as_text(reference.get("answer")),
        "reference_contexts": ref_ctx if isinstance(ref_ctx, list) else None,
    }


def ragas_table(
    records: Iterable[Mapping[str, Any]], results: Evaluation | EvaluationSet | Iterable[Any]
) -> Any:
    """One row per record: ``id``, the :data:`RAGAS_COLUMNS`, then one float64 column per
    kg-rageval metric (``<family>.<metric>``, sorted), null where the record has no value."""
    pa = _pa()
    per: dict[str, dict[str, float | None]] = {}
    names: set[str] = set()
    for family, _member, ev in _members(results):
        for rid, ms in record_metrics(family, ev).items():
            per.setdefault(rid, {}).update(ms)
            names.update(ms)
    records = list(records)
    cols: dict[str, Any] = {"id": pa.array([str(r.get("id")) for r in records], type=pa.string())}
    rows = [ragas_row(r) for r in records]
    cols["user_input"] = pa.array([r["user_input"] for r in rows], type=pa.string())
    cols["retrieved_contexts"] = pa.array([r["retrieved_contexts"] for r in rows], type=pa.list_(pa.string()))
    cols["response"] = pa.array([r["response"] for r in rows], type=pa.string())
    cols["reference"] = pa.array([r["reference"] for r in rows], type=pa.string())
    cols["reference_contexts"] = pa.array([r["reference_contexts"] for r in rows], type=pa.list_(pa.string()))
    for n in sorted(names):
        cols[n] = pa.array([per.get(str(r.get("id")), {}).get(n) for r in records], type=pa.float64())
    return pa.table(cols)


def write_ragas_table(
    records: Iterable[Mapping[str, Any]],
    results: Evaluation | EvaluationSet | Iterable[Any],
    path: str | Path,
) -> Path:
    """:func:`ragas_table` written to ``path``: Parquet, or CSV when it ends in ``.csv`` (list
    cells as JSON text)."""
    import os

    from kg_rageval.base.outputs import atomic_path, writing

    table = ragas_table(records, results)
    p = Path(path)
    tmp = atomic_path(p)
    try:
        with writing(p):
            if p.suffix.lower() == ".csv":
                import csv

                with open(tmp, "w", newline="", encoding="utf-8") as fh:
                    w = csv.writer(fh)
                    w.writerow(table.column_names)
                    for row in table.to_pylist():
                        w.writerow(
                            [
                                ""
                                if v is None
                                else json.dumps(v, ensure_ascii=False)
                                if isinstance(v, list)
                                else v
                                for v in row.values()
                            ]
                        )
            else:
                import pyarrow.parquet as pq

                pq.write_table(table, tmp)
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return p
