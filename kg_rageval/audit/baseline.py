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
* otherwise the audit is **refused** (a :class:`~kg_rageval.base.errors.ConfigError`, exit 2)
  naming both releases and the two ways out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kg_rageval.base.errors import ConfigError
from kg_rageval.base.safe_io import read_document
from kg_rageval.drift.rebase import _path, _Rebaser


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
    pairing may use (a sorted numpy array of unique ids; ``None``: all); the rest is reported."""

    mode: str
    ontology: Any
    candidate: dict[str, Any]
    baseline: dict[str, Any] | None
    keep: np.ndarray | None = None
    excluded: int = 0
    considered: int = 0
    notes: list[str] = field(default_factory=list)

    def restrict(self, ids: Any, stats: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """Per-record ``(ids, stats)`` of an evaluation, only the records :attr:`keep` names
        (all when ``keep`` is ``None``)."""
        if self.keep is None:
            return ids, stats
        sel = np.isin(np.asarray(ids).astype(str), self.keep)
        return ids[sel], {k: v[sel] for k, v in stats.items()}

    def to_dict(self) -> dict[str, Any]:
        share = (self.excluded / self.considered) if self.considered else None
        return {
            "mode": self.mode,
            "candidate_ontology": self.candidate,
            "baseline_ontology": self.baseline,
            "excluded_records": self.excluded,
            "considered_records": self.considered,
            "excluded_share": share,
            "notes": self.notes,
        }


def _rel(o: Any) -> dict[str, Any]:
    return {"source": o.source, "version": getattr(o, "version", None), "content_hash": o.content_hash}


def _manifest_release(path: Path, source: str) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(
            "baseline manifest does not exist", source=source, location=f"baseline.manifest = {str(path)!r}"
        )
    try:
        doc = json.loads(read_document(path, found="the baseline manifest").decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"baseline manifest is not JSON: {exc}", source=str(path)) from None
    man = doc.get("manifest", doc) if isinstance(doc, dict) else {}
    ont = ((man.get("inputs") or {}).get("ontology") or {}) if isinstance(man, dict) else {}
    if not isinstance(ont, dict) or not ont.get("content_hash"):
        raise ConfigError(
            "baseline manifest names no ontology content hash (inputs.ontology.content_hash)",
            source=str(path),
        )
    return {"source": ont.get("path"), "version": ont.get("version"), "content_hash": ont["content_hash"]}


def _ids(values: Iterable[str]) -> np.ndarray:
    """Ids as one numpy unicode array (``<U1`` when empty)."""
    out = np.array(list(values), dtype=str)
    return out if len(out) else np.zeros(0, "U1")


class ReleaseCheck:
    """The release decision of :func:`baseline_release`, made while the baseline's records go
    by chunk by chunk (so a streamed audit holds neither side's records):

    1. ``ReleaseCheck(config, ontology, baseline_ontology)``: what the config declares (the
       baseline manifest, ``baseline.ontology``; their errors are raised here);
    2. :meth:`planned_ontology`: the release the baseline records are scored with, known
       before they are read (the candidate's, or ``baseline_ontology`` when the comparison
       will be on the unchanged nodes);
    3. :meth:`prepare` with the candidate's records (read once, only for the unchanged-nodes
       comparison: which candidate records hold only stable ids);
    4. :meth:`observe` every chunk of the baseline's records (ids, re-base marks, whether each
       record holds only stable ids), in file order;
    5. :meth:`result`: the :class:`BaselineRelease`, or the :class:`ConfigError` refusing it —
       the checks in the order :func:`baseline_release` has always made them.

    What it keeps of the records is compact: the ids as numpy arrays, the marks as a set of
    release hashes, one bool per record."""

    def __init__(self, config: Any, ontology: Any, baseline_ontology: Any = None) -> None:
        self.config, self.ontology, self.baseline_ontology = config, ontology, baseline_ontology
        bcfg = config.baseline
        self.cand = _rel(ontology)
        declared: dict[str, Any] | None = None
        if getattr(bcfg, "manifest", None):
            declared = _manifest_release(config.path(bcfg.manifest), config.source)
        if baseline_ontology is not None:
            brel = _rel(baseline_ontology)
            if declared and declared["content_hash"] != brel["content_hash"]:
                raise ConfigError(
                    f"baseline.ontology ({brel['source']}, {brel['content_hash']}) is not the release the baseline "
                    f"manifest names ({declared['content_hash']})",
                    source=config.source,
                )
            declared = brel
        self.declared = declared
        self._marks: set[Any] = set()
        self._ids: list[np.ndarray] = []
        self._ok: list[np.ndarray] = []
        self._report: tuple[Any, BaseException | None] | None = None
        self._stable: tuple[Any, frozenset[str], frozenset[str]] | None = (
            None  # (diff, stable ids, stable subtrees)
        )
        self._cand_ok: np.ndarray | None = None

    # ---------------------------------------------------------------- before the records
    def _matching_report(self) -> tuple[Path, np.ndarray] | None:
        """``(path, flagged ids)`` of a re-base report whose output is this very baseline records
        file, onto the candidate's release; ``None`` when there is none (read once; its error,
        a report that is not JSON, raised again on every call)."""
        if self._report is None:
            try:
                self._report = (self._read_report(), None)
            except ConfigError as exc:
                self._report = (None, exc)
        got, err = self._report
        if err is not None:
            raise err
        return got

    def _read_report(self) -> tuple[Path, np.ndarray] | None:
        from kg_rageval.audit.manifest import file_hash

        config, bcfg = self.config, self.config.baseline
        bpath = config.path(bcfg.records)
        rpath = (
            config.path(getattr(bcfg, "rebase_report", None))
            if getattr(bcfg, "rebase_report", None)
            else bpath.with_name(bpath.name + ".rebase.json")
        )
        if not rpath.exists():
            return None
        try:
            rep = json.loads(read_document(rpath, found="the re-base report").decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"re-base report is not JSON: {exc}", source=str(rpath)) from None
        to_hash = (rep.get("to") or {}).get("content_hash")
        out_hash = (rep.get("output") or {}).get("hash")
        if to_hash == self.cand["content_hash"] and out_hash == file_hash(bpath):
            flagged = [f for f in (rep.get("flagged_records") or ()) if isinstance(f, str)]
            return rpath, np.unique(_ids(flagged))
        return None

    def _unchanged_nodes(self) -> bool:
        """Whether the comparison will be on the unchanged nodes (decided by the config alone;
        ``False`` also when the re-base report does not read: :meth:`result` raises it)."""
        if (
            self.baseline_ontology is None
            or self.declared is None
            or self.declared["content_hash"] == self.cand["content_hash"]
        ):
            return False
        try:
            return self._matching_report() is None
        except ConfigError:
            return False

    def planned_ontology(self) -> Any:
        """The release the baseline records are scored with: the one :meth:`result` names
        (unless it refuses the comparison)."""
        return self.baseline_ontology if self._unchanged_nodes() else self.ontology

    def prepare(self, cand_records: Iterable[dict[str, Any]]) -> None:
        """For a comparison on the unchanged nodes: the ids of the candidate's records that
        hold only stable ids (``cand_records`` read once); nothing otherwise."""
        if not self._unchanged_nodes():
            return
        from kg_rageval.drift.diff import diff_ontologies

        ontology, bont = self.ontology, self.baseline_ontology
        d = diff_ontologies(bont, ontology)
        self._stable = (d, d.stable_ids(), d.stable_ids(subtree=True))
        new_known = ontology.id_index.__contains__
        ok = self._ok_for(lambda s: new_known(s) or ontology.alias_of(s) is not None)
        self._cand_ok = np.unique(_ids(r["id"] for r in cand_records if ok(r)))

    def _ok_for(self, knows: Any) -> Any:
        assert self._stable is not None
        _, stable, stable_below = self._stable

        def ok(rec: dict[str, Any]) -> bool:
            ids, filter_ids = record_ontology_ids(rec, knows)
            return ids <= stable and filter_ids <= stable_below

        return ok

    # ---------------------------------------------------------------- the baseline's records
    def observe(self, k: int, chunk: list[dict[str, Any]]) -> None:
        """Chunk ``k`` of the baseline's records (an observer of
        :func:`~kg_rageval.scoring.stream_families`)."""
        self._marks.update(
            r["rebase"].get("to")
            for r in chunk
            if isinstance(r.get("rebase"), dict) and isinstance(r["rebase"].get("to"), str)
        )
        self._ids.append(_ids(r["id"] for r in chunk))
        if self._stable is not None:
            bont = self.baseline_ontology
            old_known = bont.id_index.__contains__
            ok = self._ok_for(lambda s: old_known(s) or bont.alias_of(s) is not None)
            self._ok.append(np.fromiter((ok(r) for r in chunk), bool, len(chunk)))

    def ids(self) -> np.ndarray:
        """The baseline's record ids, in file order (one array)."""
        if len(self._ids) != 1:
            self._ids = [np.concatenate(self._ids) if self._ids else np.zeros(0, "U1")]
        return self._ids[0]

    def result(self) -> BaselineRelease:
        """How the baseline may be compared (module docstring); raises ConfigError when it may not."""
        config, ontology, cand, declared = self.config, self.ontology, self.cand, self.declared
        marks = set(self._marks)
        rebased_to = marks.pop() if len(marks) == 1 else None
        if len(marks) > 0:
            raise ConfigError(
                "the baseline records carry re-base marks to several ontology releases", source=config.source
            )
        if declared is None and rebased_to is not None:
            declared = {"source": None, "version": None, "content_hash": rebased_to}
        if declared is None or declared["content_hash"] == cand["content_hash"]:
            note = (
                []
                if declared
                else [
                    "the baseline declares no ontology release (baseline.manifest or "
                    "baseline.ontology); assumed to be the candidate's"
                ]
            )
            return BaselineRelease("same", ontology, cand, declared, notes=note)

        # a re-base report whose output is this very baseline records file, onto this release
        ids = self.ids()
        report = self._matching_report()
        if report is not None:
            rpath, flagged = report
            keep = np.unique(ids[~np.isin(ids, flagged)])
            n_out = len(ids) - len(keep)
            return BaselineRelease(
                "rebased",
                ontology,
                cand,
                {**declared, "rebase_report": str(rpath)},
                keep=keep,
                excluded=n_out,
                considered=len(ids),
                notes=[
                    f"baseline records re-based onto the candidate's release "
                    f"({n_out} flagged by the re-base left out)"
                ],
            )
        bont = self.baseline_ontology
        if bont is None:
            raise ConfigError(
                f"the baseline was audited on another ontology release ({declared.get('version') or 'no version'}, "
                f"{declared['content_hash']}) than this audit ({cand['version'] or 'no version'}, "
                f"{cand['content_hash']}): deltas would compare two ontologies. Re-base the baseline records "
                f"(kg-rageval records rebase --from OLD --to NEW --data BASELINE --out REBASED; then point "
                f"baseline.records at REBASED) or compare on the nodes unchanged between the releases "
                f"(--baseline-ontology OLD, config baseline.ontology)",
                source=config.source,
            )
        assert self._stable is not None and self._cand_ok is not None, "prepare() before the records"
        d, stable, _ = self._stable
        ok_b = np.concatenate(self._ok) if self._ok else np.zeros(0, bool)
        keep = np.unique(ids[ok_b & np.isin(ids, self._cand_ok)])
        return BaselineRelease(
            "unchanged_nodes",
            bont,
            cand,
            declared,
            keep=keep,
            excluded=len(ids) - len(keep),
            considered=len(ids),
            notes=[
                f"compared on the {len(stable)} nodes unchanged between the releases "
                f"({d.counts()}); records with any other id are left out"
            ],
        )


def baseline_release(
    config: Any,
    ontology: Any,
    base_records: list[dict[str, Any]],
    cand_records: Iterable[dict[str, Any]],
    baseline_ontology: Any = None,
) -> BaselineRelease:
    """Decide how the baseline may be compared (module docstring); raises ConfigError when
    it may not. The held form of :class:`ReleaseCheck` (the baseline's records in one list)."""
    check = ReleaseCheck(config, ontology, baseline_ontology)
    check.prepare(cand_records)
    check.observe(0, base_records)
    return check.result()


def load_baseline_ontology(config: Any) -> Any:
    """The baseline's release named by ``baseline.ontology`` (path or ``{path, format,
    options}``), or ``None``."""
    spec = getattr(config.baseline, "ontology", None) if config.baseline else None
    if spec is None:
        return None
    from kg_rageval.base.errors import InputError
    from kg_rageval.ontology import load_ontology

    p = config.path(spec.path)
    if not Path(p).exists() and "://" not in spec.path:
        raise InputError(
            "baseline ontology file does not exist",
            source=config.source,
            location=f"baseline.ontology = {spec.path!r}",
        )
    return load_ontology(p, format=spec.format, **spec.options)


def set_baseline_ontology(config: Any, path: str) -> None:
    """``--baseline-ontology PATH``: the baseline's release (needs a ``baseline`` section)."""
    if config.baseline is None:
        raise ConfigError("--baseline-ontology needs a baseline section in the config", source=config.source)
    from kg_rageval.audit.config import OntologyInput

    config.baseline.ontology = OntologyInput(path=str(Path(path).resolve()))


def release_note(release: dict[str, Any] | None) -> str | None:
    """One line for the reports when the baseline is on another release: the mode and the
    excluded share (``None`` for the same release)."""
    if not release or release.get("mode") in (None, "same"):
        return None
    b = release.get("baseline_ontology") or {}
    how = (
        "baseline records re-based onto this release"
        if release["mode"] == "rebased"
        else "compared on the nodes unchanged between the releases"
    )
    share = release.get("excluded_share")
    return (
        f"Baseline audited on another ontology release ({b.get('version') or 'no version'}, "
        f"{b.get('content_hash')}): {how}; {release.get('excluded_records')} of "
        f"{release.get('considered_records')} baseline records left out"
        + (f" ({share:.1%})." if share is not None else ".")
    )
