"""Confidence calibration: expected calibration error and a reliability table.

Input per record: ``answer.confidence`` (a number in [0, 1]) and a correctness label, taken
from ``reference.correct`` (bool) when present, else SQuAD exact match of ``answer.text``
against ``reference.answer`` (a refused answer counts as the empty string). Records lacking
either are unscored (``no confidence``, ``no correctness label``).

Bins: M equal-width bins over [0, 1] (default M = 10). Bin m (1-based) holds confidences in
((m−1)/M, m/M]; confidence 0 goes to the first bin. So 0.1 falls in bin 1 and 0.15 in bin 2.

    ECE = Σ_m |B_m|/n · |acc(B_m) − conf(B_m)| = Σ_m |Σ_{i∈B_m} correct_i − Σ_{i∈B_m} conf_i| / n

(Guo et al., 2017; the seed's formula); empty bins contribute nothing. ``brier`` is the mean of
(conf − correct)². Both are sums of per-bin statistics, so they merge and bootstrap.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kg_rageval.base.errors import ConfigError
from kg_rageval.families.generation.columns import column_evaluation, stored_key_columns
from kg_rageval.families.generation.squad import SquadScorer
from kg_rageval.records import Record, record_error
from kg_rageval.records.fields import (
    RecordColumns,
    all_slice_keys,
    answer_text,
    flag,
    record_columns,
    row_keys,
    section,
)
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, mean_of, named, ratio


def bin_index(confidence: float, n_bins: int) -> int:
    """0-based bin of ``confidence``: bins are right-closed ((m−1)/M, m/M], 0 joins bin 0."""
    return min(n_bins - 1, max(0, math.ceil(confidence * n_bins) - 1))


class CalibrationFamily(Family):
    name = "calibration"

    def __init__(self, n_bins: int = 10):
        if not isinstance(n_bins, int) or isinstance(n_bins, bool) or n_bins < 1:
            raise ConfigError(f"n_bins must be a positive integer, not {n_bins!r}")
        self.n_bins = n_bins
        self.version = f"1-M{n_bins}"
        per_bin = tuple(f"bin{m}_{s}" for m in range(n_bins) for s in ("n", "conf", "acc"))
        self.stats = ("n", "correct", "conf_sum", "brier_sum") + per_bin

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:
        n = sums["n"]
        gap = sum(abs(sums[f"bin{m}_acc"] - sums[f"bin{m}_conf"]) for m in range(self.n_bins))
        return named(
            ratio("ece", gap, n, missing="no answers with confidence and a correctness label"),
            ratio("accuracy", sums["correct"], n, missing="no calibrated answers"),
            mean_of("mean_confidence", sums["conf_sum"], n, missing="no calibrated answers"),
            mean_of("brier", sums["brier_sum"], n, missing="no calibrated answers"),
        )

    def complete(self, evaluation: Evaluation) -> None:
        """``meta["reliability"]``: the reliability table of the evaluation's totals (so a
        concatenation of partitions gets the table of all its rows)."""
        evaluation.meta["reliability"] = self.reliability_table(evaluation.totals())

    def reliability_table(self, sums: Mapping[str, float]) -> list[dict[str, Any]]:
        """One row per bin: bounds, count, mean confidence, accuracy, gap (None when empty)."""
        out = []
        for m in range(self.n_bins):
            k = sums[f"bin{m}_n"]
            conf = sums[f"bin{m}_conf"] / k if k else None
            acc = sums[f"bin{m}_acc"] / k if k else None
            out.append(
                {
                    "bin": m + 1,
                    "lower": m / self.n_bins,
                    "upper": (m + 1) / self.n_bins,
                    "n": int(k),
                    "confidence": conf,
                    "accuracy": acc,
                    "gap": None if conf is None or acc is None else abs(acc - conf),
                }
            )
        return out


def _correct(record: Record, squad: SquadScorer | None = None) -> bool | None:
    label = flag(record, "reference", "correct")
    if label is not None:
        return label
    ref = section(record, "reference") or {}
    refs = ref.get("answer")
    if refs is None or ref.get("answerable") is False:
        return None
    refs = [refs] if isinstance(refs, str) else refs
    if not isinstance(refs, list) or not refs or not all(isinstance(x, str) for x in refs):
        raise record_error(
            record,
            "reference.answer",
            f"expected a string or a non-empty list of strings, found {ref.get('answer')!r}",
        )
    pred = "" if flag(record, "answer", "refused") else (answer_text(record) or "")
    return bool((squad or SquadScorer()).exact_match(pred, refs))


def _column_rows(
    cols: RecordColumns, squad: SquadScorer
) -> tuple[list[int], list[Any], list[Any], list] | None:
    """The rows of :func:`score_calibration` read from the records' columns: positions,
    confidences, correctness labels and unscored entries in record order; ``None`` when a
    column the rows read is not well formed (the per-record loop then raises as it did)."""
    ids, conf_col = cols.ids(), cols.field("answer", "confidence")
    label_col, ref_col = cols.flags("reference", "correct"), cols.field("reference", "answer")
    answerable, refused = cols.field("reference", "answerable"), cols.flags("answer", "refused")
    texts = cols.texts("answer", "text")
    if ids is None or conf_col is None or label_col is None or ref_col is None:
        return None
    if answerable is None or refused is None or texts is None:
        return None
    if not set(map(type, conf_col)) <= {float, int, type(None)}:
        return None
    pos: list[int] = []
    confs: list[Any] = []
    oks: list[Any] = []
    unscored = []
    for k, (conf, label) in enumerate(zip(conf_col, label_col)):
        if conf is None:
            unscored.append(unscored_entry(ids[k], "no confidence", Reason.MISSING_INPUT))
            continue
        if not 0.0 <= conf <= 1.0:
            return None
        if label is None:
            refs = ref_col[k]
            if refs is None or answerable[k] is False:
                unscored.append(unscored_entry(ids[k], "no correctness label", Reason.NO_GOLD))
                continue
            if type(refs) is str:
                refs = [refs]
            elif type(refs) is not list or not refs or set(map(type, refs)) != {str}:
                return None
            pred = "" if refused[k] else (texts[k] or "")
            label = bool(squad.exact_match(pred, refs))
        pos.append(k)
        confs.append(float(conf))
        oks.append(label)
    return pos, confs, oks, unscored


def score_calibration(records: Iterable[Record], *, n_bins: int = 10) -> Evaluation:
    records = list(records)
    fam = CalibrationFamily(n_bins)
    squad = SquadScorer()
    cols = record_columns(records)
    fast = None if cols is None else _column_rows(cols, squad)
    if fast is not None and cols is not None:
        pos, confs, oks, unscored = fast
        rec_ids = cols.ids() or []  # read by _column_rows: never None here
        conf_f = np.asarray(confs, dtype=float)
        bins = np.minimum(n_bins - 1, np.maximum(0, np.ceil(conf_f * n_bins).astype(np.int64) - 1))
        return _evaluation(
            fam,
            [rec_ids[k] for k in pos],
            stored_key_columns(cols, pos),
            confs,
            oks,
            bins.tolist(),
            unscored,
            records,
        )
    unscored = []
    ids, key_rows, confs, oks, bins = [], [], [], [], []
    for r in records:
        ans = section(r, "answer")
        conf = None if ans is None else ans.get("confidence")
        if conf is None:
            unscored.append(unscored_entry(r["id"], "no confidence", Reason.MISSING_INPUT))
            continue
        if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0.0 <= conf <= 1.0:
            raise record_error(r, "answer.confidence", f"expected a number in [0, 1], found {conf!r}")
        ok = _correct(r, squad)
        if ok is None:
            unscored.append(unscored_entry(r["id"], "no correctness label", Reason.NO_GOLD))
            continue
        c = float(conf)
        ids.append(r["id"])
        key_rows.append(row_keys(r))
        confs.append(c)
        oks.append(ok)
        bins.append(bin_index(c, n_bins))
    keys = all_slice_keys(records)
    key_cols = {k: [kr.get(k) for kr in key_rows] for k in keys}
    return _evaluation(fam, ids, key_cols, confs, oks, bins, unscored, records)


def _evaluation(
    fam: CalibrationFamily,
    ids: list[Any],
    key_cols: Mapping[str, Any],
    confs: list[Any],
    oks: list[Any],
    bins: list[int],
    unscored: list,
    records: list[Record],
) -> Evaluation:
    n_bins = fam.n_bins
    accs = [float(ok) for ok in oks]
    conf_a, acc_a, m = (
        np.asarray(confs, dtype=float),
        np.asarray(accs, dtype=float),
        np.asarray(bins, dtype=np.int64),
    )
    stats = {
        "n": np.ones(len(ids)),
        "correct": acc_a,
        "conf_sum": conf_a,
        "brier_sum": [(c - a) ** 2 for c, a in zip(confs, accs)],
    }
    for k in range(n_bins):  # row i adds to its bin m_i only
        hit = m == k
        stats[f"bin{k}_n"] = hit
        stats[f"bin{k}_conf"] = np.where(hit, conf_a, 0.0)
        stats[f"bin{k}_acc"] = np.where(hit, acc_a, 0.0)
    ev = column_evaluation(
        fam,
        ids,
        stats,
        key_columns=key_cols,
        details={"confidence": confs, "is_correct": oks, "bin": (m + 1).tolist()},
        unscored=unscored,
    )
    fam.complete(ev)
    ev.meta["n_bins"] = n_bins
    ev.meta["bin_convention"] = "equal-width, right-closed ((m-1)/M, m/M], 0 in the first bin"
    return ev
