"""Missing runs: the records of a family that were left unscored or scored as empty predictions.

:func:`_family_counts` counts, per family, its records, the scored and unscored ones (by reason
and code) and its missing runs, which the audit holds against ``missing_runs.budget``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from kg_rageval.audit.families import FamilyRun
from kg_rageval.results.evaluation import Evaluation


def _fmt_reasons(reasons: Mapping[str, int]) -> str:
    return ", ".join(f"{k} ×{v}" for k, v in reasons.items())


def families_in_audit(config: Any, gates: Iterable[Any], index: Any) -> set[str]:
    """The families *in the audit*: those its config's ``families`` names, and those owning
    the metric of one of ``gates`` (global, slice and node gates; ``index``: the
    :class:`~.evidence.MetricIndex`). A family that ran only because ``families`` is empty
    ("all families") and that no gate reads is not: its absent sections stay "not applicable"."""
    from kg_rageval.base.errors import ConfigError

    out = set(config.families)
    for g in gates:
        metric = g.metric[len("delta:") :] if g.metric.startswith("delta:") else g.metric
        try:
            owner, _ = index.owner(metric)
        except ConfigError:  # a name the index cannot parse: no family owns it
            continue
        if owner is not None:
            out.add(owner.family)
    return out


def mark_missing_sections(runs: Mapping[str, FamilyRun], records: Any, in_audit: Iterable[str]) -> None:
    """Fill :attr:`~.families.FamilyRun.missing_sections` of every family of ``in_audit`` that
    ran and requires its section (:attr:`~kg_rageval.scoring.Scorer.section_required`): one
    entry (:func:`~kg_rageval.records.unscored`, code ``missing_section``) per audited record
    without the section, in record order. A family none of whose records carries the section
    did not run (``no_evidence``): its gates are missing evidence already."""
    from kg_rageval.records import Reason, unscored
    from kg_rageval.scoring import REGISTRY

    for fam in in_audit:
        run, spec = runs.get(fam), REGISTRY.get(fam)
        if run is None or spec is None or run.status != "ran" or not spec.section_required:
            continue
        if run.n_with_section >= len(records):
            run.missing_sections = []
            continue
        have = records.with_section(fam)
        what = " or ".join(repr(s) for s in spec.sections)
        reason = f"no {what} section ({fam} is in the audit: a missing run)"
        run.missing_sections = [
            unscored(rid, reason, Reason.MISSING_SECTION)
            for rid in records.id_array().tolist()
            if rid not in have
        ]


def _family_counts(
    run: FamilyRun, records: Any, patterns: Iterable[str] = (), metric_names: Iterable[str] = ()
) -> dict[str, Any]:
    """Scored, unscored (by reason and code) and missing-run counts of one family.

    A missing run is a record of the family that **any** of its evaluations reports missing —
    one evaluation scoring it does not hide another's missing run:

    * unscored with a reason *code* in :data:`~kg_rageval.records.MISSING_RUN_CODES`
      (``missing_prediction``, ``timeout``, ``invalid_output``, ``missing_section``): the
      family decides, the reason text is never matched;
    * lacking the section of a family in the audit that requires it
      (:attr:`~.families.FamilyRun.missing_sections`, :func:`mark_missing_sections`): counted
      once, under ``missing_section`` (the family's own ``no_section`` entry for the record is
      not counted again);
    * scored as an empty prediction: its per-record ``n_missing_run`` stat is positive
      (hierarchy, linking, retrieval, generation correctness and refusal);
    * only for unscored entries without a code (a family written before codes): a reason
      equal to one of ``patterns`` (``missing_runs.reasons``; case-insensitive, never a
      substring match);
    * counted in the numerator of one of ``metric_names`` (``invalid_judgment_rate``) of an
      evaluation without an ``n_missing_run`` stat (these have no record ids).

    The family's records are those carrying its section plus every record it reports missing;
    the missing-run rate is missing runs / family records. ``records``: the audit's records
    (:class:`~.stream.HeldRecords` or :class:`~.stream.StreamedRecords`; a list is taken as held).

    ``unscored_reasons`` / ``unscored_codes`` and ``scored_as_empty`` count **records**, each once
    per family: a record that two evaluations of the family leave unscored for the same reason
    (generation's faithfulness and unseen-concepts both say ``no answer``) is one record, not two
    (entries without a record id: the largest count of one evaluation)."""
    from kg_rageval.records import MISSING_RUN_CODES

    codes = {c.value if hasattr(c, "value") else str(c) for c in MISSING_RUN_CODES}
    pats = {p.strip().lower() for p in patterns}
    by_reason = _PerRecord()
    by_code = _PerRecord()
    missing_ids: set[str] = set()
    anonymous = 0
    scored: set[str] = set()
    scored_empty: set[str] = set()
    in_metrics: dict[str, float] = {}
    absent = {e["record_id"] for e in run.missing_sections}
    for e in run.missing_sections:
        by_reason.add(str(e["reason"]), e["record_id"])
        by_code.add(str(e["code"]), e["record_id"])
    missing_ids.update(absent)
    for ev in run.evaluations:
        by_reason.start()
        by_code.start()
        for u in ev.unscored:
            if absent and u.get("code") == "no_section" and str(u.get("record_id")) in absent:
                continue  # counted above, as missing_section
            reason = str(u.get("reason", "unscored"))
            rid = u.get("record_id", u.get("id"))
            by_reason.add(reason, rid)
            code = u.get("code")
            if code is not None:
                by_code.add(str(code), rid)
                if str(code) not in codes:
                    continue
            elif reason.strip().lower() not in pats:  # exact reasons, never substrings
                continue
            if rid is not None:
                missing_ids.add(str(rid))
            else:
                anonymous += 1
        if ev.family.rows_are_records:  # not the run manifests' rows
            scored.update(map(str, ev.record_ids.tolist()))
        if "n_missing_run" in ev.stats:
            empty = _positive_records(ev, "n_missing_run")
            scored_empty.update(str(x) for x in empty)
            missing_ids.update(str(x) for x in empty)
            continue
        ms = ev.metrics()
        for name in metric_names:
            m = ms.get(name)
            if m is not None and m.numerator:
                in_metrics[name] = in_metrics.get(name, 0.0) + float(m.numerator)
    if isinstance(records, list):
        from kg_rageval.audit.stream import HeldRecords

        records = HeldRecords(records)
    with_sec = records.with_section(run.name)
    family_records = with_sec | missing_ids
    missing = min(len(missing_ids) + anonymous + int(round(sum(in_metrics.values()))), len(family_records))
    return {
        "status": run.status,
        "reason": run.reason,
        "with_section": run.n_with_section,
        "family_records": len(family_records),
        "scored_records": len(scored),
        "missing_runs": missing,
        "scored_as_empty": len(scored_empty),
        "unscored_reasons": by_reason.counts(),
        "unscored_codes": by_code.counts(),
        "missing_in_metrics": {k: int(round(v)) for k, v in sorted(in_metrics.items())},
        "rows": sum(len(ev) for ev in run.evaluations),
        "seconds": round(run.seconds, 4),
        "versions": run.versions,
    }


def no_gold_shares(run: FamilyRun) -> list[tuple[Evaluation, int, int]]:
    """``(evaluation, records without gold, records)`` for each evaluation of ``run`` that left
    records unscored with code ``no_gold``: the records are the distinct ids it scored or left
    unscored for any reason but ``no_section`` (a record not about this family at all)."""
    out = []
    for ev in run.evaluations:
        no_gold: set[str] = set()
        seen: set[str] = set(map(str, ev.record_ids.tolist()))
        for u in ev.unscored:
            rid, code = u.get("record_id", u.get("id")), str(u.get("code"))
            if rid is None or code == "no_section":
                continue
            seen.add(str(rid))
            if code == "no_gold":
                no_gold.add(str(rid))
        if no_gold:
            out.append((ev, len(no_gold), len(seen)))
    return out


class _PerRecord:
    """Records per key (a reason or a code) over the evaluations of one family, each record
    once; entries without a record id count as the largest number one evaluation has."""

    def __init__(self) -> None:
        self.ids: dict[str, set[str]] = {}
        self.anonymous: dict[str, int] = {}
        self._here: dict[str, int] = {}

    def start(self) -> None:
        """Begin the next evaluation's entries."""
        for k, n in self._here.items():
            self.anonymous[k] = max(self.anonymous.get(k, 0), n)
        self._here = {}

    def add(self, key: str, record_id: Any) -> None:
        self.ids.setdefault(key, set())
        if record_id is None:
            self._here[key] = self._here.get(key, 0) + 1
        else:
            self.ids[key].add(str(record_id))

    def counts(self) -> dict[str, int]:
        self.start()
        return {k: len(v) + self.anonymous.get(k, 0) for k, v in sorted(self.ids.items())}


def _positive_records(ev: Evaluation, stat: str) -> list[str]:
    """The ids (sorted) of the records whose ``stat`` summed over their rows is positive — the
    records ``ev.per_record_stats()`` gives a positive ``stat``, from only the rows where it is
    not zero (the others add nothing to a record's sum): no sort of every record id."""
    col = np.asarray(ev.stats[stat])
    rows = np.flatnonzero(col != 0)
    if not len(rows):
        return []
    ids, inverse = np.unique(ev.record_ids[rows].astype(str), return_inverse=True)
    per = np.bincount(inverse.reshape(-1), weights=col[rows], minlength=len(ids))
    return ids[per > 0].tolist()
