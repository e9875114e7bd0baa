"""A BEIR folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``) and optionally a
run file into golden records (``docs/interop.md``, *BEIR*).

One record per query judged in the split's qrels (BEIR evaluates those), in qrels order:

========================================  ====================================================
``queries.jsonl`` ``_id``                 ``id``
``queries.jsonl`` ``text``                ``query``
``qrels/<split>.tsv`` rows of the query   ``retrieval.gold`` ``{corpus-id: score}`` (graded;
                                          grade 0 = judged not relevant, kept)
the run's rows of the query               ``retrieval.run`` ``{doc: score}`` (ranked as
                                          trec_eval ranks: score descending, then doc id
                                          descending)
any other query key (``title``,           ``source.extra.<key>``
``metadata``)
========================================  ====================================================

The qrels and the run are read by the retrieval family's readers
(:func:`kg_rageval.families.retrieval.load_qrels` / ``load_run``: TREC or JSON runs), so
scoring the records (``retrieval.ndcg@10``) gives the numbers ``kg-rageval score retrieval
--qrels --run`` gives. Nothing is invented: a judged query absent from ``queries.jsonl`` has no
``query`` (counted), a judged query absent from the run has no ``retrieval.run`` (counted: a
missing run for the retrieval family). Run queries with no judgements (``run_only``), judged
documents not in the corpus (``gold_not_in_corpus``) and retrieved ones not in it
(``run_not_in_corpus``) are counted and the first ids listed in ``counts``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kg_rageval.base.errors import InputError
from kg_rageval.interop._common import Builder, Imported, bad, iter_rows, kind

FIELDS = ("id", "query", "retrieval.gold", "retrieval.run")
_LIST = 20


def _num(g: float) -> float | int:
    return int(g) if float(g).is_integer() else float(g)


def _ids(path: Path, what: str) -> dict[str, tuple[int, dict[str, Any]]]:
    out: dict[str, tuple[int, dict[str, Any]]] = {}
    for row, obj in iter_rows(path):
        rid = obj.get("_id")
        if isinstance(rid, int) and not isinstance(rid, bool):
            rid = str(rid)
        if not isinstance(rid, str) or not rid:
            raise bad(path, row, "_id", f"expected a non-empty string id, found {kind(rid)}")
        if rid in out:
            raise bad(path, row, "_id", f"duplicate {what} id {rid!r} (first on row {out[rid][0]})")
        out[rid] = (row, obj)
    return out


def read(path: str | Path, *, split: str = "test", run: str | Path | None = None) -> Imported:
    """Read a BEIR folder (and a run file); see the module docstring."""
    from kg_rageval.families.retrieval import load_qrels, load_run

    folder = Path(path)
    if not folder.is_dir():
        raise InputError(
            "a BEIR dataset is a folder (corpus.jsonl, queries.jsonl, qrels/)", source=str(folder)
        )
    qrels_path = folder / "qrels" / f"{split}.tsv"
    for p in (folder / "corpus.jsonl", folder / "queries.jsonl", qrels_path):
        if not p.is_file():
            raise InputError(f"the BEIR folder has no {p.relative_to(folder)}", source=str(folder))
    corpus = _ids(folder / "corpus.jsonl", "document")
    queries = _ids(folder / "queries.jsonl", "query")
    qrels = load_qrels(qrels_path, format="beir").to_dict()
    runs: dict[str, dict[str, float]] = {}
    if run is not None:
        runs = load_run(run).to_dict()
    b = Builder("beir", folder / "queries.jsonl", FIELDS)
    gold_missing: list[str] = []
    run_missing: list[str] = []
    n_gold_missing = n_run_missing = 0
    for n, (qid, gold) in enumerate(qrels.items(), 1):
        row, q = queries.get(qid, (n, {}))
        rec: dict[str, Any] = {"id": b.take_id(row, qid, "_id")}
        text = q.get("text")
        if text is None:
            b.lack("query")
        elif not isinstance(text, str):
            raise bad(b.path, row, "text", f"expected a string, found {kind(text)}")
        else:
            rec["query"] = text
        retrieval: dict[str, Any] = {"gold": {d: _num(g) for d, g in gold.items()}}
        for d in gold:
            if d not in corpus:
                n_gold_missing += 1
                if len(gold_missing) < _LIST:
                    gold_missing.append(f"{qid}/{d}")
        if qid in runs:
            retrieval["run"] = {d: float(s) for d, s in runs[qid].items()}
            for d in runs[qid]:
                if d not in corpus:
                    n_run_missing += 1
                    if len(run_missing) < _LIST:
                        run_missing.append(f"{qid}/{d}")
        else:
            b.lack("retrieval.run")
        rec["retrieval"] = retrieval
        extra = {k: v for k, v in q.items() if k not in ("_id", "text") and v is not None}
        if qid not in queries:
            extra["not_in_queries"] = True
        b.add(rec, row, extra)
    if run is None:
        b.missing.pop("retrieval.run")
    out = b.result()
    run_only = [q for q in runs if q not in qrels]
    out.counts = {
        "split": split,
        "n_corpus": len(corpus),
        "n_queries_file": len(queries),
        "n_gold_not_in_corpus": n_gold_missing,
        "gold_not_in_corpus": gold_missing,
    }
    if run is not None:
        out.counts.update(
            {
                "run": str(run),
                "n_run_only": len(run_only),
                "run_only": run_only[:_LIST],
                "n_run_not_in_corpus": n_run_missing,
                "run_not_in_corpus": run_missing,
            }
        )
    return out
