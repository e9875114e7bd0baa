"""Context construction (seed Part 4): citation coverage, lost in the middle, compression.

Inputs per record: the supplied context ``retrieval.contexts`` (``{"id", "text"}`` objects or
strings), ``answer.citations``, the correctness label (``reference.correct``, else SQuAD exact
match of ``answer.text`` against ``reference.answer``, as generation calibration), and the
optional section::

    "context": {"gold_position": 3,        # 0-based position of the gold chunk in the context
                "n_chunks": 10,            # else the length of retrieval.contexts
                "tokens": 1200,            # tokens supplied (after compression)
                "original_tokens": 4800}   # tokens before compression

``gold_position`` absent: the position of the first supplied chunk whose id is in
``retrieval.gold`` (grade > 0), if any.

Metrics (sums, so they break down and roll up):

* ``citation_coverage = Σ distinct cited supplied chunks / Σ distinct supplied chunks`` over
  records with a non-empty context carrying ids; ``citation_coverage_macro`` the mean of the
  per-record ratios; ``empty_context_rate`` — records whose context is empty, kept apart
  (they have no coverage); ``cited_outside_context_rate`` — distinct cited ids that were not
  supplied / distinct cited ids;
* ``accuracy_gold_first`` / ``_middle`` / ``_last`` — accuracy by the gold chunk's position
  (first = position 0, last = position n−1, middle = the rest; a one-chunk context is
  *first*); ``middle_gap = (first + last)/2 − middle`` (positive: lost in the middle);
* ``compression_ratio = Σ tokens / Σ original_tokens``; ``accuracy`` beside it, and the row key
  ``compression_bin`` (``≤0.25``, ``0.25-0.5``, ``0.5-0.75``, ``>0.75``) to break accuracy down
  by how hard the context was compressed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kg_rageval.records import Record, record_error
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, mean_of, ratio

POSITIONS = ("first", "middle", "last")


class ContextFamily(Family):
    name = "context"
    version = "1"
    stats = (
        (
            "n",
            "n_empty_context",
            "n_with_ids",
            "supplied",
            "cited",
            "cited_outside",
            "cited_total",
            "coverage_sum",
            "n_labelled",
            "correct",
        )
        + tuple(f"{k}_{p}" for p in POSITIONS for k in ("n", "correct"))
        + ("tokens", "original_tokens", "n_compressed")
    )

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        out = {
            "citation_coverage": ratio(
                "citation_coverage",
                s["cited"],
                s["supplied"],
                missing="no record with a non-empty context carrying chunk ids",
            ),
            "citation_coverage_macro": mean_of(
                "citation_coverage_macro",
                s["coverage_sum"],
                s["n_with_ids"],
                missing="no record with a non-empty context carrying chunk ids",
            ),
            "empty_context_rate": ratio(
                "empty_context_rate", s["n_empty_context"], s["n"], missing="no record with a context"
            ),
            "cited_outside_context_rate": ratio(
                "cited_outside_context_rate", s["cited_outside"], s["cited_total"], missing="no citations"
            ),
            "accuracy": ratio(
                "accuracy", s["correct"], s["n_labelled"], missing="no record with a correctness label"
            ),
            "compression_ratio": ratio(
                "compression_ratio",
                s["tokens"],
                s["original_tokens"],
                missing="no record with context.tokens and context.original_tokens",
            ),
        }
        acc = {}
        for p in POSITIONS:
            m = ratio(
                f"accuracy_gold_{p}",
                s[f"correct_{p}"],
                s[f"n_{p}"],
                missing=f"no labelled record with the gold chunk {p}",
            )
            out[m.name] = acc[p] = m
        if any(acc[p].value is None for p in POSITIONS):
            gone = [p for p in POSITIONS if acc[p].value is None]
            out["middle_gap"] = Metric(
                "middle_gap", None, missing=f"no labelled record with the gold chunk {gone[0]}"
            )
        else:
            first, middle, last = (acc[p].require() for p in POSITIONS)
            out["middle_gap"] = Metric("middle_gap", (first + last) / 2 - middle)
        return out


def _int(record: Record, field: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise record_error(record, field, f"expected a non-negative integer, found {v!r}")
    return v


def position_bucket(position: int, n_chunks: int) -> str:
    """``first`` (position 0), ``last`` (position n−1, n > 1) or ``middle``."""
    if position == 0:
        return "first"
    return "last" if position == n_chunks - 1 else "middle"


def compression_bin(ratio_: float) -> str:
    for edge, name in ((0.25, "<=0.25"), (0.5, "0.25-0.5"), (0.75, "0.5-0.75")):
        if ratio_ <= edge:
            return name
    return ">0.75"


def score_context(ontology: Any, records: Iterable[Record]) -> Evaluation:
    """One row per record with ``retrieval.contexts`` or a ``context`` section (others:
    unscored ``no context``). ``ontology`` is not needed (rows carry ``gold_node``)."""
    from kg_rageval.families.generation.calibration import _correct
    from kg_rageval.records.fields import citations, contexts, gold_documents, section

    rows, unscored = [], []
    for rec in records:
        ctx = contexts(rec)
        sec = section(rec, "context")
        if ctx is None and sec is None:
            unscored.append(unscored_entry(rec["id"], "no context", Reason.NO_SECTION))
            continue
        sec = sec or {}
        unknown = set(sec) - {"gold_position", "n_chunks", "tokens", "original_tokens"}
        if unknown:
            raise record_error(
                rec,
                f"context.{sorted(unknown)[0]}",
                "unknown field; expected gold_position, n_chunks, tokens or original_tokens",
            )
        row: dict[str, Any] = {"record_id": rec["id"], **row_keys(rec), "n": 1}
        ids = [d for d, _ in ctx or [] if d is not None]
        n_chunks = (
            _int(rec, "context.n_chunks", sec["n_chunks"])
            if sec.get("n_chunks") is not None
            else (len(ctx) if ctx is not None else None)
        )
        cites = set(citations(rec) or [])
        if ctx is not None and not ctx:
            row["n_empty_context"] = 1
        elif ids:
            supplied = set(ids)
            cited = cites & supplied
            row.update(
                n_with_ids=1,
                supplied=len(supplied),
                cited=len(cited),
                coverage_sum=len(cited) / len(supplied),
            )
            row["cited_outside"], row["cited_total"] = len(cites - supplied), len(cites)
        pos = sec.get("gold_position")
        if pos is not None:
            pos = _int(rec, "context.gold_position", pos)
            if n_chunks is not None and pos >= n_chunks:
                raise record_error(
                    rec, "context.gold_position", f"{pos} is not below the {n_chunks} chunks supplied"
                )
        elif ids:
            gold = gold_documents(rec) or set()
            pos = next((i for i, (d, _) in enumerate(ctx or []) if d in gold), None)
        ok = _correct(rec)
        if ok is not None:
            row["n_labelled"], row["correct"] = 1, float(ok)
        bucket = None
        if pos is not None and n_chunks:
            bucket = position_bucket(pos, n_chunks)
            if ok is not None:
                row[f"n_{bucket}"], row[f"correct_{bucket}"] = 1, float(ok)
        row["gold_position_bucket"] = bucket
        tok, orig = sec.get("tokens"), sec.get("original_tokens")
        row["compression_bin"] = None
        if tok is not None and orig is not None:
            tok, orig = _int(rec, "context.tokens", tok), _int(rec, "context.original_tokens", orig)
            if orig == 0 or tok > orig:
                raise record_error(
                    rec,
                    "context.tokens",
                    f"{tok} tokens supplied from {orig} original tokens; "
                    "expected 0 < tokens <= original_tokens",
                )
            row.update(tokens=tok, original_tokens=orig, n_compressed=1)
            row["compression_bin"] = compression_bin(tok / orig)
        rows.append(row)
    keys = sorted({k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")})
    return build_evaluation(
        ContextFamily(), rows, keys=keys + ["gold_position_bucket", "compression_bin"], unscored=unscored
    )


__all__ = ["ContextFamily", "compression_bin", "position_bucket", "score_context"]
