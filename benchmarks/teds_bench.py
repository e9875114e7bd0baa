"""TEDS and TEDS-S: ours (:mod:`kg_rageval.families.parsing.teds`) against PubTabNet's
reference (``tests/families/parsing/pubtabnet_reference.py``) on the same generated tables
(issue #30; docs/performance.md, "TEDS of tables"). Not a test.

    python benchmarks/teds_bench.py [--n 400] [--seed 1] [--repeat 3] [--rows-scale 1]

The tables are the tests' PubTabNet-style generator (``thead`` / ``tbody``, ``colspan`` /
``rowspan``, ``<b>`` / ``<i>`` / ``<sup>`` in cells) with 0–3 perturbations each (row dropped
or added, cells merged, text changed, a span or a tag changed); ``--rows-scale k`` repeats each
table's body rows ``k`` times (larger tables: APTED's cost grows faster than the size). Both
sides compute TEDS and TEDS-S of every pair (the reference: two ``evaluate`` calls, as its
``TEDS(structure_only=...)`` objects are separate; ours: one ``teds_scores``). The scores are
checked equal (1e-12) before anything is timed. Best CPU time (``time.process_time``) of
``--repeat`` rounds, interleaved; the ratio is reference / ours.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "families" / "parsing")]

from pubtabnet_reference import ReferenceTEDS  # noqa: E402
from test_teds import _cases  # noqa: E402

from kg_rageval.families.parsing.teds import teds_scores  # noqa: E402


def _scale(table: str, k: int) -> str:
    if k == 1:
        return table
    m = re.search(r"<tbody>(.*)</tbody>", table)
    assert m is not None
    return table[: m.start(1)] + m.group(1) * k + table[m.end(1) :]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows-scale", type=int, default=1)
    a = ap.parse_args(argv)
    pairs = [(_scale(r, a.rows_scale), _scale(p, a.rows_scale)) for r, p in _cases(a.seed, a.n)]
    docs = [(f"<html><body>{r}</body></html>", f"<html><body>{p}</body></html>") for r, p in pairs]
    full, shape = ReferenceTEDS(), ReferenceTEDS(structure_only=True)

    def ours() -> list[tuple[float, float]]:
        return [tuple(teds_scores(r, p)) for r, p in pairs]  # type: ignore[misc]

    def reference() -> list[tuple[float, float]]:
        return [(full.evaluate(p, r), shape.evaluate(p, r)) for r, p in docs]

    a_scores, b_scores = ours(), reference()
    worst = max(max(abs(x - y), abs(u - v)) for (x, u), (y, v) in zip(a_scores, b_scores))
    assert worst <= 1e-12, worst
    best = {"ours": float("inf"), "reference": float("inf")}
    for _ in range(a.repeat):
        for name, fn in (("ours", ours), ("reference", reference)):
            t0 = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t0)
    nodes = sum(r.count("<td") + r.count("<tr") for r, _ in pairs) / len(pairs)
    print(f"{a.n} table pairs, about {nodes:.0f} tr+td per reference table, largest |diff| {worst:.1e}")
    for name, t in best.items():
        print(f"{name:>9}: {t:.3f} s CPU ({1000 * t / a.n:.2f} ms a pair, TEDS and TEDS-S)")
    print(f"    ratio: reference / ours = {best['reference'] / best['ours']:.2f}x")


if __name__ == "__main__":
    main()
