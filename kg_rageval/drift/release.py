"""Comparing an audit with a baseline audited on another ontology release.

A paired baseline delta means something only when both sides were scored against the same
ontology. The baseline's release is known from, in this order: ``baseline.ontology`` (the
release itself, CLI ``--baseline-ontology``), ``baseline.manifest`` (the baseline audit's
``manifest.json``: ``inputs.ontology.content_hash``), and the ``rebase`` marks of re-based
baseline records (``rebase.to``). Then (:func:`baseline_release`):

* **same release** (the hashes are equal, or nothing declares another release): compared as
  before on every paired record;
* **re-based**: the baseline records are the output of ``kg-rageval records rebase`` onto the
  candidate's release — the re-base report (``baseline.rebase_report``, default
  ``<baseline records>.rebase.json``) names the candidate's content hash as ``to`` and the
  sha256 of the baseline records file as its output. Records it flagged (an id with no
  mapping) are left out of the pairing; their number and share are reported;
* **unchanged nodes** (``baseline.ontology`` is another release): the baseline records are
  scored against *their* release and the pairing keeps only the records whose ontology ids
  (gold and predicted, on both sides; the fields of :mod:`kg_rageval.drift.rebase`) are all
  stable nodes between the releases (:attr:`OntologyDiff.stable_new`; a retrieval filter
  value must moreover have an unchanged subtree, :attr:`OntologyDiff.subtree_stable_new`) —
  the excluded records and their share are reported;
* otherwise the audit is **refused** (a :class:`~kg_rageval.errors.ConfigError`, exit 2)
  naming both releases and the two ways out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import ConfigError
from .rebase import _path, _Rebaser


class _Collector(_Rebaser):
    """Walks the same fields as the re-base and collects the ids, changing nothing."""

    def __init__(self, knows):
        self.ids: set[str] = set()
        self.filter_ids: set[str] = set()
        self._knows = knows
        self.touches = []

    def _add(self, value: str, fld: Any) -> None:
        (self.filter_ids if "filters[" in _path(fld) else self.ids).add(value)

    def one(self, value: Any, fld: str, side: str, *, typed: bool = True) -> Any:
        if isinstance(value, str) and value:
            self._add(value, fld)
        return value

    def many(self, value: Any, fld: str, side: str) -> Any:
        if isinstance(value, str):
            return self.one(value, fld, side)
        if isinstance(value, list):
            for k, v in enumerate(value):
                self.one(v, f"{fld}[{k}]", side)
        return value

    def deep(self, value: Any, fld: str, side: str) -> Any:
        if isinstance(value, str):
            if self._knows(value):
                self._add(value, fld)
        elif isinstance(value, list):
            for v in value:
                self.deep(v, fld, side)
        elif isinstance(value, dict):
            for v in value.values():
                self.deep(v, fld, side)
        return value


def record_ontology_ids(record: dict[str, Any], knows) -> tuple[set[str], set[str]]:
    """Every ontology id a record holds (the fields the re-base reads; in filter values and
    outputs only strings ``knows(s)`` accepts): ``(ids, ids in retrieval filters)``."""
    c = _Collector(knows)
    c.record(record)
    return c.ids, c.filter_ids


@dataclass
class BaselineRelease:
    """How a baseline is compared: ``mode`` is ``same``, ``rebased`` or ``unchanged_nodes``;
    ``ontology`` the release to score the baseline records with; ``keep`` the record ids the
    pairing may use (``None``: all); the rest is reported."""

    mode: str
    ontology: Any
    candidate: dict[str, Any]
    baseline: dict[str, Any] | None
    keep: set[str] | None = None
    excluded: int = 0
    considered: int = 0
    notes: list[str] = field(default_factory=list)

    def restrict(self, ids: Any, stats: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Per-record ``(ids, stats)`` of an evaluation, only the records :attr:`keep` names
        (all when ``keep`` is ``None``)."""
        if self.keep is None:
            return ids, stats
        import numpy as np

        sel = np.isin(np.asarray(ids).astype(str), np.asarray(sorted(self.keep), dtype=str))
        return ids[sel], {k: v[sel] for k, v in stats.items()}

    def to_dict(self) -> dict[str, Any]:
        share = (self.excluded / self.considered) if self.considered else None
        return {"mode": self.mode, "candidate_ontology": self.candidate, "baseline_ontology": self.baseline,
                "excluded_records": self.excluded, "considered_records": self.considered,
                "excluded_share": share, "notes": self.notes}


def _rel(o: Any) -> dict[str, Any]:
    return {"source": o.source, "version": getattr(o, "version", None), "content_hash": o.content_hash}


def _manifest_release(path: Path, source: str) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError("baseline manifest does not exist", source=source, location=f"baseline.manifest = {str(path)!r}")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"baseline manifest is not JSON: {exc}", source=str(path)) from None
    man = doc.get("manifest", doc) if isinstance(doc, dict) else {}
    ont = ((man.get("inputs") or {}).get("ontology") or {}) if isinstance(man, dict) else {}
    if not isinstance(ont, dict) or not ont.get("content_hash"):
        raise ConfigError("baseline manifest names no ontology content hash (inputs.ontology.content_hash)",
                          source=str(path))
    return {"source": ont.get("path"), "version": ont.get("version"), "content_hash": ont["content_hash"]}


def baseline_release(config: Any, ontology: Any, base_records: list[dict[str, Any]],
                     cand_records: Iterable[dict[str, Any]], baseline_ontology: Any = None) -> BaselineRelease:
    """Decide how the baseline may be compared (module docstring); raises ConfigError when
    it may not."""
    from ..audit.manifest import file_hash

    bcfg = config.baseline
    cand = _rel(ontology)
    declared: dict[str, Any] | None = None
    if getattr(bcfg, "manifest", None):
        declared = _manifest_release(config.path(bcfg.manifest), config.source)
    if baseline_ontology is not None:
        brel = _rel(baseline_ontology)
        if declared and declared["content_hash"] != brel["content_hash"]:
            raise ConfigError(
                f"baseline.ontology ({brel['source']}, {brel['content_hash']}) is not the release the baseline "
                f"manifest names ({declared['content_hash']})", source=config.source)
        declared = brel
    marks = {r["rebase"].get("to") for r in base_records
             if isinstance(r.get("rebase"), dict) and isinstance(r["rebase"].get("to"), str)}
    rebased_to = marks.pop() if len(marks) == 1 else None
    if len(marks) > 0:
        raise ConfigError("the baseline records carry re-base marks to several ontology releases", source=config.source)
    if declared is None and rebased_to is not None:
        declared = {"source": None, "version": None, "content_hash": rebased_to}
    if declared is None or declared["content_hash"] == cand["content_hash"]:
        note = [] if declared else ["the baseline declares no ontology release (baseline.manifest or "
                                    "baseline.ontology); assumed to be the candidate's"]
        return BaselineRelease("same", ontology, cand, declared, notes=note)

    # a re-base report whose output is this very baseline records file, onto this release
    bpath = config.path(bcfg.records)
    rpath = config.path(getattr(bcfg, "rebase_report", None)) if getattr(bcfg, "rebase_report", None) \
        else bpath.with_name(bpath.name + ".rebase.json")
    if rpath.exists():
        try:
            rep = json.loads(rpath.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"re-base report is not JSON: {exc}", source=str(rpath)) from None
        to_hash = ((rep.get("to") or {}).get("content_hash"))
        out_hash = ((rep.get("output") or {}).get("hash"))
        if to_hash == cand["content_hash"] and out_hash == file_hash(bpath):
            flagged = set(rep.get("flagged_records") or ())
            ids = [r["id"] for r in base_records]
            keep = {i for i in ids if i not in flagged}
            return BaselineRelease("rebased", ontology, cand, {**declared, "rebase_report": str(rpath)},
                                   keep=keep, excluded=len(ids) - len(keep), considered=len(ids),
                                   notes=[f"baseline records re-based onto the candidate's release "
                                          f"({len(ids) - len(keep)} flagged by the re-base left out)"])
    if baseline_ontology is None:
        raise ConfigError(
            f"the baseline was audited on another ontology release ({declared.get('version') or 'no version'}, "
            f"{declared['content_hash']}) than this audit ({cand['version'] or 'no version'}, "
            f"{cand['content_hash']}): deltas would compare two ontologies. Re-base the baseline records "
            f"(kg-rageval records rebase --from OLD --to NEW --data BASELINE --out REBASED; then point "
            f"baseline.records at REBASED) or compare on the nodes unchanged between the releases "
            f"(--baseline-ontology OLD, config baseline.ontology)", source=config.source)

    from .diff import diff_ontologies

    d = diff_ontologies(baseline_ontology, ontology)
    stable, stable_below = d.stable_ids(), d.stable_ids(subtree=True)
    new_known = ontology._index.__contains__
    old_known = baseline_ontology._index.__contains__

    def ok(rec: dict[str, Any], knows) -> bool:
        ids, filter_ids = record_ontology_ids(rec, knows)
        return ids <= stable and filter_ids <= stable_below

    cand_ok = {r["id"] for r in cand_records if ok(r, lambda s: new_known(s) or ontology.alias_of(s) is not None)}
    base_ids = [r["id"] for r in base_records]
    keep = {r["id"] for r in base_records
            if r["id"] in cand_ok and ok(r, lambda s: old_known(s) or baseline_ontology.alias_of(s) is not None)}
    return BaselineRelease(
        "unchanged_nodes", baseline_ontology, cand, declared, keep=keep,
        excluded=len(base_ids) - len(keep), considered=len(base_ids),
        notes=[f"compared on the {len(stable)} nodes unchanged between the releases "
               f"({d.counts()}); records with any other id are left out"])


def load_baseline_ontology(config: Any) -> Any:
    """The baseline's release named by ``baseline.ontology`` (path or ``{path, format,
    options}``), or ``None``."""
    spec = getattr(config.baseline, "ontology", None) if config.baseline else None
    if spec is None:
        return None
    from ..errors import InputError
    from ..ontology import load_ontology

    p = config.path(spec.path)
    if not Path(p).exists() and "://" not in spec.path:
        raise InputError("baseline ontology file does not exist", source=config.source,
                         location=f"baseline.ontology = {spec.path!r}")
    return load_ontology(p, format=spec.format, **spec.options)


def set_baseline_ontology(config: Any, path: str) -> None:
    """``--baseline-ontology PATH``: the baseline's release (needs a ``baseline`` section)."""
    if config.baseline is None:
        raise ConfigError("--baseline-ontology needs a baseline section in the config", source=config.source)
    from ..audit.config import OntologyInput

    config.baseline.ontology = OntologyInput(path=str(Path(path).resolve()))


def release_note(release: dict[str, Any] | None) -> str | None:
    """One line for the reports when the baseline is on another release: the mode and the
    excluded share (``None`` for the same release)."""
    if not release or release.get("mode") in (None, "same"):
        return None
    b = release.get("baseline_ontology") or {}
    how = ("baseline records re-based onto this release" if release["mode"] == "rebased"
           else "compared on the nodes unchanged between the releases")
    share = release.get("excluded_share")
    return (f"Baseline audited on another ontology release ({b.get('version') or 'no version'}, "
            f"{b.get('content_hash')}): {how}; {release.get('excluded_records')} of "
            f"{release.get('considered_records')} baseline records left out"
            + (f" ({share:.1%})." if share is not None else "."))
