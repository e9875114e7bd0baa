"""CER / WER counts: ours (:mod:`kg_rageval.families.parsing.align`) against jiwer 4 on the same
generated page pairs (issue #30; docs/performance.md, "CER and WER of pages"). Not a test.

    python benchmarks/cer_bench.py [--n 100000] [--words 60] [--seed 1] [--repeat 1]

A page is ``--words`` words drawn from a small mixed-script vocabulary (Latin, accents,
a titlecase digraph, CJK); its extraction has OCR-style noise at a rate drawn from
{0, 1%, 5%, 20%} per page (a character dropped, replaced or doubled with a stray one). Both
sides compute the character counts (``jiwer.process_characters``) and the word counts
(``jiwer.process_words``) of every pair, one pair a call (a page is a record). The
(hits, S, D, I) of every pair are checked equal before anything is timed. Best CPU time
(``time.process_time``) of ``--repeat`` rounds; the ratio is ours / jiwer (above 1: slower).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from kg_rageval.families.parsing.align import char_counts, word_counts  # noqa: E402

WORDS = "the invoice total due amount tax rate page section table Phobos Deimos moons ǅ éa 東京".split()


def pages(n: int, words: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        ref = " ".join(rng.choice(WORDS) for _ in range(words))
        rate = rng.choice((0.0, 0.01, 0.05, 0.2))
        hyp: list[str] = []
        for ch in ref:
            u = rng.random()
            if u < rate / 3:
                continue
            if u < 2 * rate / 3:
                hyp.append(rng.choice("x0l1 "))
            elif u < rate:
                hyp.extend((ch, rng.choice("x0l1 ")))
            else:
                hyp.append(ch)
        out.append((ref, "".join(hyp)))
    return out


def main(argv: list[str] | None = None) -> None:
    import jiwer

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--words", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args(argv)
    pairs = pages(a.n, a.words, a.seed)

    def ours() -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        return [(tuple(char_counts(r, h)), tuple(word_counts(r, h))) for r, h in pairs]

    def reference() -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        out = []
        for r, h in pairs:
            c, w = jiwer.process_characters([r], [h]), jiwer.process_words([r], [h])
            out.append(
                (
                    (c.hits, c.substitutions, c.deletions, c.insertions),
                    (w.hits, w.substitutions, w.deletions, w.insertions),
                )
            )
        return out

    t0 = time.process_time()
    mine = ours()
    first = {"ours": time.process_time() - t0}
    t0 = time.process_time()
    theirs = reference()
    first["jiwer"] = time.process_time() - t0
    bad = sum(x != y for x, y in zip(mine, theirs))
    assert bad == 0, f"{bad} pairs differ from jiwer"
    best = dict(first)
    for _ in range(a.repeat - 1):
        for name, fn in (("ours", ours), ("jiwer", reference)):
            t0 = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t0)
    chars = sum(len(r) for r, _ in pairs) / len(pairs)
    print(f"{a.n} page pairs, {chars:.0f} reference characters a page; counts equal jiwer on all")
    for name, t in best.items():
        print(f"{name:>6}: {t:.2f} s CPU ({1e6 * t / a.n:.0f} µs a pair, characters and words)")
    print(f" ratio: ours / jiwer = {best['ours'] / best['jiwer']:.2f}x")


if __name__ == "__main__":
    main()
