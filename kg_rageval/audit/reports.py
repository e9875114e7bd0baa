"""Write every configured report of an audit into one directory, atomically and under a lock.

The report set is evidence, so it is either complete and consistent or clearly incomplete:

1. an exclusive lock (``DIR/.kg-rageval.lock``, ``flock``: released by the kernel when the
   process dies, even on ``kill -9``) keeps two audits from writing into one ``--out``; a
   second one fails at once (exit 2) naming the directory. ``kg-rageval audit`` takes it
   before the audit starts and holds it until its reports are written (then
   ``write_reports(..., lock=False)``), so no other run's reports can land in the folder while
   this audit computes;
2. every file is written into a fresh run directory ``DIR/.run-<id>/`` and flushed to disk;
   ``manifest.json`` is written last and holds the sha256 of every report file;
3. an older report set in ``DIR`` is moved aside into ``DIR/previous/`` (its manifest first), the
   new files are renamed into ``DIR`` and the new manifest last.

A crash, ``kill -9``, a full disk or a read-only directory at any point leaves either the old
set moved aside and no ``manifest.json`` (incomplete: ``--verify`` refuses it), or a manifest
whose file hashes vouch for exactly the files beside it; the temporary run directory of a
crashed audit is removed by the next one. A report never mixes files of two runs without
``--verify`` noticing, since it checks every hash.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kg_rageval.audit.manifest import numbers_of
from kg_rageval.audit.prov_trail import PROV
from kg_rageval.base.errors import InputError
from kg_rageval.base.hashing import file_hash
from kg_rageval.base.outputs import writing
from kg_rageval.base.spool import SpooledText, write_text

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.audit.result import AuditResult

FILES = {"json": "report.json", "markdown": "report.md", "html": "report.html", "junit": "junit.xml"}
MANIFEST = "manifest.json"
LOCK = ".kg-rageval.lock"
PREVIOUS = "previous"
ALL_FILES = (*FILES.values(), MANIFEST)


sha256_file = file_hash
"""``sha256:<hex>`` of a written report (:func:`kg_rageval.base.hashing.file_hash`)."""


@contextlib.contextmanager
def out_lock(out: Path) -> Iterator[None]:
    """Exclusive, non-blocking lock on ``out`` (created if missing; an :class:`InputError` when
    another audit — or another holder in this process — has it)."""
    import fcntl

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fh = open(out / LOCK, "a+")
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise InputError(
                "another kg-rageval audit is writing reports into this directory; "
                "wait for it or use another --out",
                source=str(out),
            ) from None
        yield
    finally:
        fh.close()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def prov_trail_turtle(result: AuditResult) -> str | SpooledText | None:
    """The PROV-O trail (Turtle) the provenance family built for the audited run, if any: a
    ``str``, or the :class:`~kg_rageval.base.spool.SpooledText` of a streamed audit (write it with
    :func:`kg_rageval.base.spool.write_text`)."""
    run = result.families.get("provenance")
    for ev in run.evaluations if run is not None else []:
        if ev.family.name == "prov_trail" and isinstance(ev.meta.get("turtle"), (str, SpooledText)):
            return ev.meta["turtle"]
    return None


def write_reports(
    result: AuditResult, out_dir: str | Path, formats: list[str] | None = None, *, lock: bool = True
) -> dict[str, str]:
    """Write ``report.json``, ``report.md``, ``report.html``, ``junit.xml`` (as configured) and
    always ``manifest.json`` (manifest + the numbers ``--verify`` compares + the sha256 of
    every report file), and ``prov.ttl`` (the PROV-O trail) when the provenance family built
    one, atomically as described in the module docstring. Returns
    ``{kind: path}``. ``lock=False`` when the caller already holds :func:`out_lock` on
    ``out_dir`` (``kg-rageval audit`` holds it for the whole audit)."""
    from kg_rageval.audit.report_html import write_html
    from kg_rageval.audit.report_json import dumps, write_json
    from kg_rageval.audit.report_junit import write_junit
    from kg_rageval.audit.report_markdown import write_markdown

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    chosen: list[str] = list(formats or result.config.report.formats)
    writers = {"json": write_json, "markdown": write_markdown, "html": write_html, "junit": write_junit}
    with out_lock(out) if lock else contextlib.nullcontext():
        for stale in out.glob(".run-*"):  # left by a crashed audit (we hold the lock)
            shutil.rmtree(stale, ignore_errors=True)
        run = out / f".run-{uuid.uuid4().hex[:12]}"
        run.mkdir()
        try:
            hashes: dict[str, str] = {}
            for f in chosen:
                p = run / FILES[f]
                with writing(out / FILES[f]):
                    writers[f](result, p)
                    _fsync(p)
                hashes[FILES[f]] = sha256_file(p)
            trail = prov_trail_turtle(result)
            if trail is not None:
                tp = run / PROV
                with writing(out / PROV):
                    write_text(trail, tp)
                    _fsync(tp)
                hashes[PROV] = sha256_file(tp)
            mp = run / MANIFEST
            with writing(out / MANIFEST):
                mp.write_text(
                    dumps({"manifest": result.manifest, "numbers": numbers_of(result), "reports": hashes})
                    + "\n",
                    encoding="utf-8",
                )
                _fsync(mp)
            json.loads(mp.read_text(encoding="utf-8"))
            _move_aside(out)
            for name in hashes:
                os.replace(run / name, out / name)
            os.replace(mp, out / MANIFEST)  # last: its presence means the set is complete
        finally:
            shutil.rmtree(run, ignore_errors=True)
    written = {f: str(out / FILES[f]) for f in chosen}
    if PROV in hashes:
        written["prov"] = str(out / PROV)
    written["manifest"] = str(out / MANIFEST)
    return written


def _move_aside(out: Path) -> None:
    """Move an older report set out of the way into ``out/previous/`` (manifest first, so a
    crash in between leaves no manifest vouching for a partial set)."""
    present = [n for n in (*ALL_FILES, PROV) if (out / n).exists()]
    if not present:
        return
    prev = out / PREVIOUS
    if prev.exists():
        shutil.rmtree(prev)
    prev.mkdir()
    for name in sorted(present, key=lambda n: n != MANIFEST):
        os.replace(out / name, prev / name)
