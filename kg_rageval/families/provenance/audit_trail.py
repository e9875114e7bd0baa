"""Run-manifest checks and the PROV-O trail as Evaluations, so the audit can gate them.

* **manifests** (family ``run_manifests``): one row per run manifest (the first names the audited
  run). ``manifest_completeness`` = manifests with every required field recorded and no hash
  differing from the audited snapshot / manifests; ``manifest_hash_match_rate`` = manifests
  whose recorded corpus and ontology hashes equal the snapshot's / manifests recording both;
  ``manifest_consistency`` = later manifests pinning the same required fields as the first /
  later manifests (missing with fewer than two). Row details: ``missing``, ``mismatched``.
* **trail** (family ``prov_trail``): the PROV-O graph of the audited run
  (:func:`~kg_rageval.families.provenance.trail.build_trail` with the first manifest) checked against
  ``shapes/provenance.ttl`` (:func:`~kg_rageval.families.provenance.trail.check_trail`: pySHACL's verdicts), one row per answer:
  ``prov_traceable_rate`` = answers whose trail conforms / answers, where an answer's trail is
  the answer node, the documents it cites and its run (with the model agent): a violation on
  any of them makes the answer untraceable (so a run missing its seed makes every answer
  untraceable). The per-answer verdict does not depend on how the records are partitioned,
  so the rate is a sum like every metric. Without a run manifest the run records nothing the
  shape requires and every answer fails for that alone: the rate is then missing evidence
  (:data:`NO_RUN_MANIFEST`, numerator 0 and the answers as denominator kept), never a silent
  0 (stat ``run_recorded``: 1 per answer of a run with a manifest). ``meta["turtle"]`` holds the trail, which the audit
  writes beside its reports (``prov.ttl``); ``meta["messages"]`` the SHACL messages.

Both are streamable: the manifest rows describe the run, so partitions of the records keep one
copy (:meth:`ManifestFamily.complete`); the trails of partitions join into the trail of all
the records, byte for byte (:meth:`ProvTrailFamily.merge_meta`,
:mod:`~kg_rageval.families.provenance.trail_parts`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress
from typing import TYPE_CHECKING, Any

import numpy as np

from kg_rageval.families.provenance.manifest import REQUIRED, _get, check_manifest
from kg_rageval.records import Record
from kg_rageval.results.builders import build_evaluation, columns_evaluation
from kg_rageval.results.evaluation import Evaluation, take_rows
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, ratio

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.families.provenance.corpus import Corpus
    from kg_rageval.ontology import Ontology


class ManifestFamily(Family):
    name = "run_manifests"
    version = "1"
    rows_are_records = False  # one row per manifest
    stats = ("manifests", "complete", "with_hashes", "hashes_match", "later", "same_as_first")

    def complete(self, evaluation: Evaluation) -> None:
        """The rows describe the run, not its records: every partition of the records has
        the same rows (one per manifest, the first with ``later`` = 0), and concatenated
        partitions keep the first partition's."""
        later = evaluation.stats.get("later")
        if later is None:
            return
        starts = np.flatnonzero(later == 0)
        if len(starts) > 1:
            take_rows(evaluation, np.arange(int(starts[1])))

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        return {
            "manifest_completeness": ratio(
                "manifest_completeness", s["complete"], s["manifests"], missing="no run manifests"
            ),
            "manifest_hash_match_rate": ratio(
                "manifest_hash_match_rate",
                s["hashes_match"],
                s["with_hashes"],
                missing="no run manifest records both hashes",
            ),
            "manifest_consistency": ratio(
                "manifest_consistency", s["same_as_first"], s["later"], missing="fewer than two run manifests"
            ),
        }


NO_RUN_MANIFEST = (
    "no run manifest (families.provenance.manifests): the model run's model, decoding config, "
    "seed and snapshot hashes are not recorded, so no answer's trail can conform"
)
"""Why ``prov_traceable_rate`` is missing evidence when the audited run has no manifest."""


class ProvTrailFamily(Family):
    name = "prov_trail"
    version = "2"
    stats = ("answers", "traceable", "run_recorded")

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        """``traceable / answers``; missing evidence (value ``None``, numerator and
        denominator kept) when the trail's run has no manifest: every answer fails the shape
        then for want of the run's record, which says nothing about the answers."""
        if s["answers"] and not s.get("run_recorded", s["answers"]):
            return {
                "prov_traceable_rate": Metric(
                    "prov_traceable_rate", None, s["traceable"], s["answers"], NO_RUN_MANIFEST
                )
            }
        return {
            "prov_traceable_rate": ratio(
                "prov_traceable_rate", s["traceable"], s["answers"], missing="no answers in the trail"
            )
        }

    def keep_meta(self, meta: dict[str, Any], held: list[dict[str, Any]]) -> dict[str, Any]:
        """``meta`` with the trail's answer blocks spooled
        (:func:`~kg_rageval.families.provenance.trail_parts.spool_trail`), after the earlier
        partitions' in their spool: a concatenation holds the heads only, and the joined
        trail is one segment of the spool."""
        from kg_rageval.families.provenance.trail_parts import SpooledTrail, spool_trail

        spool = next(
            (t.spool for t in (m.get("turtle") for m in reversed(held)) if isinstance(t, SpooledTrail)), None
        )
        text = meta.get("turtle")
        kept = spool_trail(text, spool)
        return meta if kept is text else {**meta, "turtle": kept}

    def merge_meta(self, metas: list[dict[str, Any]]) -> dict[str, Any]:
        """The trail of all partitions (:func:`~kg_rageval.families.provenance.trail_parts.join_trails`):
        its Turtle, triples, violations and messages, as one call on all the records gives
        them. Metas without the parts (written by hand, read back from JSON) merge as any."""
        from kg_rageval.families.provenance.trail_parts import (
            SpooledTrail,
            TrailText,
            join_trails,
            trail_meta,
        )

        meta = super().merge_meta(metas)
        texts = [m.get("turtle") for m in metas]
        if all(isinstance(t, (TrailText, SpooledTrail)) and t.parts is not None for t in texts):
            try:
                meta.update(trail_meta(join_trails(texts)))  # type: ignore[arg-type]
            except ValueError:  # different runs: nothing to join
                pass
        return meta


def _pinned(m: Mapping[str, Any]) -> list[str]:
    return [json.dumps(_get(dict(m), f), sort_keys=True) for f in REQUIRED]


def score_manifests(
    manifests: Sequence[Mapping[str, Any]], *, corpus: Corpus | None = None, ontology: Ontology | None = None
) -> Evaluation:
    """The manifest checks as rows (see the module docstring)."""
    rows = []
    first = _pinned(manifests[0]) if manifests else None
    for k, m in enumerate(manifests):
        chk = check_manifest(
            dict(m),
            corpus_hash=corpus.hash if corpus is not None else None,
            ontology_hash=ontology.content_hash if ontology is not None else None,
        )
        both = all(
            isinstance(_get(dict(m), f), str) and _get(dict(m), f) for f in ("corpus_hash", "ontology_hash")
        )
        rows.append(
            {
                "record_id": str(m.get("run_id") or m.get("_source") or f"manifest {k + 1}"),
                "manifests": 1,
                "complete": int(chk["complete"]),
                "with_hashes": int(both),
                "hashes_match": int(both and not chk["mismatched"]),
                "later": int(k > 0),
                "same_as_first": int(k > 0 and _pinned(m) == first),
                "missing": " ".join(chk["missing"]) or None,
                "mismatched": " ".join(x["field"] for x in chk["mismatched"]) or None,
            }
        )
    return build_evaluation(ManifestFamily(), rows, details=("missing", "mismatched"))


def score_trail(
    records: Iterable[Record], *, manifest: Mapping[str, Any] | None = None, corpus: Corpus | None = None
) -> Evaluation:
    """Build and check the PROV-O trail of the audited run (see the module docstring): the
    triples of :func:`~kg_rageval.families.provenance.trail.build_trail`, checked against the bundled
    shape by :func:`~kg_rageval.families.provenance.trail.check_trail` (the verdicts pySHACL's
    :func:`~kg_rageval.families.provenance.prov.validate_prov` gives on the exported graph) and
    written as Turtle without building an rdflib graph."""
    from kg_rageval.families.provenance.citations import answer_columns, stored_ids
    from kg_rageval.families.provenance.trail import build_trail, trail_violations
    from kg_rageval.families.provenance.trail_parts import trail_meta, trail_text
    from kg_rageval.records.fields import record_columns

    records = list(records)
    trail = build_trail(records, manifest=dict(manifest) if manifest is not None else None, corpus=corpus)
    found = trail_violations(trail)
    bad = {f for f, _, _ in found}
    answer_pre, doc_pre = trail.answer_prefix, trail.doc_prefix
    run_level = sorted(f for f in bad if not f.startswith((answer_pre, doc_pre)))
    ids: Any = [rid for rid, _ in trail.answers]
    cols = answer_columns(records)
    if cols is not None:  # the trail was built from the chunk's columns: its answers in order
        ids = stored_ids(record_columns(records), list(compress(range(len(cols.present)), cols.present)))
    traceable: list[int] = []
    at: list[str | None] = []
    n = len(trail.answers)
    own_bad = bad.difference(run_level)  # violations on answers' and documents' own nodes
    if not own_bad:  # every answer has the run's verdict alone
        traceable, at = [0 if run_level else 1] * n, [" ".join(run_level[:5]) or None] * n
    for _, own in trail.answers if own_bad else ():  # the answer's node and its cited documents' nodes
        why = [f for f in own if f in bad] + run_level
        traceable.append(0 if why else 1)
        at.append(" ".join(why[:5]) or None)
    recorded = 0 if manifest is None else 1
    return columns_evaluation(
        ProvTrailFamily(),
        ids,
        ([1] * len(ids), traceable, [recorded] * len(ids)),
        details={"untraceable_at": at},
        meta=trail_meta(trail_text(trail, found)),
    )
