"""Benchmark: the memory of each stage of an audit, after the families have scored the records.

    .venv/bin/python benchmarks/bench_audit_stages.py DIR/audit.yaml [--out OUT] [--tracemalloc]

``DIR`` from ``benchmarks/bench_audit.py --n N --keep DIR``. Runs the audit and writes its
reports as ``kg-rageval audit -c DIR/audit.yaml -o OUT`` does, and prints for each stage (the
families' counts, the gates with their bootstrap, the baseline comparison, slices, failure
drivers, per-node roll-ups, failing records, relations, the reports) the resident memory
before it, its high-water mark while it ran (Linux: ``VmHWM``, reset before each stage through
``/proc/self/clear_refs``) and after it, and its CPU time; with ``--tracemalloc``, also the
peak and the kept growth of the memory Python and NumPy allocate in it (slower). The last
lines give the families' high-water mark (before the first stage), the process's CPU time and
the highest mark of all.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _status() -> dict[str, float]:
    """``VmRSS`` and ``VmHWM`` of this process in MB."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    return out


def _reset_high_water() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


class Probe:
    """Wraps stage functions; records one line per call and the highest mark seen."""

    def __init__(self, traced: bool) -> None:
        self.traced = traced
        self.lines: list[str] = []
        self.highest = 0.0
        self.families_mark: float | None = None

    def wrap(self, module: Any, name: str, label: str) -> None:
        fn: Callable[..., Any] = getattr(module, name)

        def staged(*args: Any, **kwargs: Any) -> Any:
            before = _status()
            self.highest = max(self.highest, before["VmHWM"])
            if self.families_mark is None:
                self.families_mark = before["VmHWM"]
            if self.traced and not tracemalloc.is_tracing():
                tracemalloc.start()
            _reset_high_water()
            held = tracemalloc.get_traced_memory()[0] if self.traced else 0
            if self.traced:
                tracemalloc.reset_peak()
            cpu = time.process_time()
            out = fn(*args, **kwargs)
            cpu = time.process_time() - cpu
            after = _status()
            self.highest = max(self.highest, after["VmHWM"])
            line = (
                f"{label:16s} rss {before['VmRSS']:7.0f} MB  high-water {after['VmHWM']:7.0f} MB "
                f"(+{after['VmHWM'] - before['VmRSS']:5.0f})  after {after['VmRSS']:7.0f} MB  cpu {cpu:6.2f} s"
            )
            if self.traced:
                now, peak = tracemalloc.get_traced_memory()
                line += (
                    f"  traced peak +{(peak - held) / 2**20:6.1f} MB, kept +{(now - held) / 2**20:6.1f} MB"
                )
            self.lines.append(line)
            return out

        setattr(module, name, staged)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", type=Path)
    ap.add_argument(
        "--out", type=Path, default=None, help="write the reports here (default: a temporary folder)"
    )
    ap.add_argument("--tracemalloc", action="store_true", help="also trace the allocations of each stage")
    args = ap.parse_args()

    import tempfile

    from kg_rageval.audit import failing, pernode, reports, runner
    from kg_rageval.audit.config import load_config

    probe = Probe(args.tracemalloc)
    probe.wrap(runner, "_family_counts", "family counts")
    probe.wrap(runner, "_run_baseline", "baseline")
    probe.wrap(runner, "evidence_gate_metrics", "gates+bootstrap")
    probe.wrap(pernode, "slice_breakdowns", "slices")
    probe.wrap(pernode, "failure_drivers", "drivers")
    probe.wrap(pernode, "node_rollups", "node roll-ups")
    probe.wrap(failing, "failing_records", "failing records")
    probe.wrap(pernode, "relation_counts", "relations")
    probe.wrap(reports, "write_reports", "reports")
    config = load_config(args.config)
    with tempfile.TemporaryDirectory() as tmp:
        res = runner.run_audit(config, progress=False)
        reports.write_reports(res, args.out or Path(tmp))
    for line in probe.lines:
        print(line)
    print(
        f"records {res.n_records}; families' high-water mark {probe.families_mark:.0f} MB; "
        f"process CPU {time.process_time():.2f} s; highest mark {probe.highest:.0f} MB"
    )
    print("phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in res.timings.items()))


if __name__ == "__main__":
    main()
