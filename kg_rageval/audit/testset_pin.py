"""The test-set pin: an audit that cites a test-set manifest (``testset_manifest`` in its config)
verifies it, it does not only cite it.

Two hashes are recomputed, each the way ``kg-rageval testset`` wrote it
(:func:`kg_rageval.testset.check.testset_manifest`):

* the manifest's own ``hash``: sha256 over the canonical JSON of every other key
  (:func:`~kg_rageval.base.hashing.document_hash`) — an edited manifest no longer gives the
  hash it states;
* the gold labels it pins: :func:`~kg_rageval.records.gold.labels_hash` over the records the
  audit reads must equal the ``labels_sha256`` of one of the manifest's sets (or of all its
  sets together, its top-level ``labels_sha256``) — a gold label edited in any record, a record
  added or dropped, changes it. Predictions are not gold, so adding them changes nothing.

When either differs the audit's ``testset_manifest.verified`` gate fails with a reason that
starts ``tampered evidence:`` and names the manifest and the hash that differs (so the audit
exits 1, whatever its other gates say); when both verify the gate passes and says which set
the records are. The check's result is the audit manifest's ``testset`` entry, and
``audit --verify`` compares it with the re-run's (:func:`pin_differences`).

A manifest that is not there, not JSON or not a JSON object is a config error (exit 2), read
through the bounded reader.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kg_rageval.audit.gates import Gate, GateResult

PIN_GATE = "testset_manifest.verified"
"""The metric name of the audit's own gate on the cited test-set manifest."""
TAMPERED = "tampered evidence"


def read_testset_manifest(path: Path, source: str | None = None) -> dict[str, Any]:
    """The cited manifest as a JSON object (bounded read); anything else is a
    :class:`~kg_rageval.base.errors.ConfigError` naming the config key (exit 2)."""
    from kg_rageval.base.errors import ConfigError, InputError
    from kg_rageval.base.safe_io import loads_json, read_document

    where = f"testset_manifest (resolved to {path})"
    if not path.is_file():
        raise ConfigError("the test-set manifest does not exist", source=source, location=where)
    try:
        raw = read_document(path, found="the test-set manifest")  # a limit it passes: exit 2, named
    except OSError as exc:
        raise ConfigError(
            f"cannot read the test-set manifest: {exc}", source=source, location=where
        ) from None
    try:
        doc = loads_json(bytes(raw), source=str(path))
    except (InputError, UnicodeDecodeError, RecursionError) as exc:
        raise ConfigError(
            f"the test-set manifest is not JSON: {exc}", source=source, location=where
        ) from None
    if not isinstance(doc, dict):
        raise ConfigError(
            f"the test-set manifest must be a JSON object, found {type(doc).__name__}",
            source=source,
            location=where,
        )
    return doc


def _pinned(doc: Mapping[str, Any]) -> list[tuple[str, str, Any, Any]]:
    """``(name, labels_sha256, records, file)`` of every label hash the manifest pins: each set,
    then all its sets together."""
    out: list[tuple[str, str, Any, Any]] = []
    sets = doc.get("sets")
    if isinstance(sets, Mapping):
        for name, s in sets.items():
            if isinstance(s, Mapping) and isinstance(s.get("labels_sha256"), str):
                out.append((f"set {name!r}", s["labels_sha256"], s.get("records"), s.get("file")))
    if isinstance(doc.get("labels_sha256"), str):
        n: int | None = None
        if isinstance(sets, Mapping):
            counts = [s.get("records") for s in sets.values() if isinstance(s, Mapping)]
            ints = [c for c in counts if isinstance(c, int) and not isinstance(c, bool)]
            n = sum(ints) if counts and len(ints) == len(counts) else None
        out.append(("all sets", doc["labels_sha256"], n, None))
    return out


def _expected(pinned: list[tuple[str, str, Any, Any]], records_file: str | None) -> tuple[str, str, Any, Any]:
    """The pin the audited records are most likely meant to be: the set of the same file name,
    else the only set, else all sets together."""
    name = Path(records_file).name if records_file else None
    for p in pinned:
        if name is not None and p[3] == name:
            return p
    sets = [p for p in pinned if p[0] != "all sets"]
    if len(sets) == 1:
        return sets[0]
    return next((p for p in pinned if p[0] == "all sets"), pinned[0])


def check_testset_pin(
    path: Path,
    records: Iterable[Mapping[str, Any]],
    *,
    doc: Mapping[str, Any] | None = None,
    records_file: str | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """The manifest at ``path`` (``doc`` when already read) checked against ``records`` (the
    audited records, read once): ``{"path", "hash" (stated), "sha256" (the file's),
    "content_hash" (recomputed), "labels_sha256" (recomputed over ``records``), "labels_set"
    (the pin it matches, or ``None``), "records", "verified", "problems"}``."""
    from kg_rageval.base.hashing import document_hash, file_hash
    from kg_rageval.records.gold import labels_hash

    if doc is None:
        doc = read_testset_manifest(path, source)
    problems: list[str] = []
    stated = doc.get("hash")
    try:
        content: str | None = document_hash(doc)
    except (TypeError, ValueError):
        content = None
    if not isinstance(stated, str):
        problems.append(f"it states no hash (its content gives {content})")
    elif content != stated:
        problems.append(
            f"its own hash differs: it states {stated}, its content gives "
            f"{content or 'no hash (a non-finite number)'}"
        )
    n = [0]

    def counted(rs: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
        for r in rs:
            n[0] += 1
            yield r

    labels: str | None
    try:
        labels = labels_hash(counted(records))
    except ValueError:  # a non-finite number in a gold section (JSON has none)
        labels = None
        problems.append("the gold labels of the audited records cannot be hashed (a non-finite number)")
    pinned = _pinned(doc)
    match = next((p for p in pinned if p[1] == labels), None) if labels is not None else None
    if labels is not None and match is None:
        if not pinned:
            problems.append(f"it pins no gold labels (no labels_sha256); the audited records give {labels}")
        else:
            name, h, k, _ = _expected(pinned, records_file)
            others = f" nor any other of its {len(pinned) - 1} label hashes" if len(pinned) > 1 else ""
            problems.append(
                f"gold labels hash differs: the audit's {n[0]} records give {labels}, the manifest pins "
                f"{h} ({name}{f', {k} records' if k is not None else ''}){others}"
            )
    return {
        "path": str(path),
        "hash": stated,
        "sha256": file_hash(path),
        "content_hash": content,
        "labels_sha256": labels,
        "labels_set": match[0] if match else None,
        "records": n[0],
        "verified": not problems,
        "problems": problems,
    }


def pin_gate(pin: Mapping[str, Any]) -> GateResult:
    """The ``testset_manifest.verified >= 1`` gate of a :func:`check_testset_pin` result: pass
    when both hashes verify, else fail as tampered evidence."""
    g = Gate(PIN_GATE, ">=", 1.0)
    if pin["verified"]:
        return GateResult(
            g,
            "pass",
            1.0,
            f"test-set manifest {pin['path']} verified: its hash {pin['hash']}; gold labels "
            f"{pin['labels_sha256']} ({pin['labels_set']}, {pin['records']} records)",
        )
    return GateResult(
        g, "fail", 0.0, f"{TAMPERED}: test-set manifest {pin['path']}: " + "; ".join(pin["problems"])
    )


def pin_differences(recorded: Any, now: Mapping[str, Any] | None) -> list[str]:
    """What ``audit --verify`` reports of the test-set pin: every problem of the re-run's check
    (``now``), and each hash the report recorded (``recorded``, its manifest's ``testset``) that
    the re-run does not give again."""
    if now is None:
        if recorded is None:
            return []
        return ["the report records a test-set manifest check, but the config cites no test-set manifest"]
    shown = now.get("path")
    out = [f"test-set manifest {shown} does not verify ({TAMPERED}): {p}" for p in now.get("problems", [])]
    if not isinstance(recorded, Mapping):
        out.append(f"the config cites test-set manifest {shown}, but the report records no check of it")
        return out
    if recorded.get("hash") != now.get("content_hash"):
        out.append(
            f"test-set manifest {shown}: the report recorded hash {recorded.get('hash')}, "
            f"its content now gives {now.get('content_hash')}"
        )
    if recorded.get("labels_sha256") != now.get("labels_sha256"):
        out.append(
            f"gold labels pinned by test-set manifest {shown}: the report recorded "
            f"{recorded.get('labels_sha256')}, the records now give {now.get('labels_sha256')}"
        )
    if recorded.get("verified") is not True:
        out.append(f"the report recorded test-set manifest {shown} as not verified")
    return out
