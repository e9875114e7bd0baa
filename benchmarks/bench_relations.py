"""Relations benchmark: score 1,000,000 answer triples against the ATT&CK 18.1 graph.

    python benchmarks/bench_relations.py [--triples 1000000] [--ontology PATH]

Builds records from the Enterprise 18.1 knowledge graph (``../shared/data/attack/
enterprise-attack-kg-18.1.json.gz``): each record asks for the ``uses`` triples of one group or
software (its gold: up to 20 of them) and answers about as many triples — 60 % exact, 15 % the
technique of a sub-technique or the reverse (partial credit), 25 % a random graph triple — with
claims equal to the answer. Times the scoring only (records and ontology are built first) and
the load of the graph; prints JSON. Target (docs/performance.md): 1M answer triples in under 5 s,
the graph loaded in under 2 s.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT = ROOT.parent / "shared" / "data" / "attack" / "enterprise-attack-kg-18.1.json.gz"


def build_records(onto, n_triples: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    uses = onto.triples(predicate="uses")
    by_subject: dict[str, list] = {}
    for t in uses:
        by_subject.setdefault(t[0], []).append(t)
    subjects = sorted(by_subject)
    records, total = [], 0
    while total < n_triples:
        s = subjects[len(records) % len(subjects)]
        gold = by_subject[s][:20]
        answer = []
        for t in gold:
            x = rng.random()
            if x < 0.60:
                answer.append(list(t))
            elif x < 0.75:
                obj = t[2]
                if obj in onto and onto.parents(obj) and onto.node_types[onto.index(obj)] == "sub-technique":
                    obj = onto.parents(obj)[0]
                elif obj in onto and onto.children(obj):
                    obj = onto.children(obj)[0]
                answer.append([t[0], t[1], obj])
            else:
                answer.append(list(rng.choice(uses)))
        answer = answer[: n_triples - total]
        total += len(answer)
        records.append(
            {"id": f"q{len(records)}", "relations": {"gold": [list(t) for t in gold], "answer": answer}}
        )
    return records


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--triples", type=int, default=1_000_000)
    ap.add_argument("--ontology", default=str(DEFAULT))
    args = ap.parse_args()
    from kg_rageval.ontology import load_ontology
    from kg_rageval.scoring import get_scorer

    t0 = time.perf_counter()
    onto = load_ontology(args.ontology)
    load_s = time.perf_counter() - t0
    records = build_records(onto, args.triples)
    t0 = time.perf_counter()
    ev = get_scorer("relations").score(onto, records).single
    score_s = time.perf_counter() - t0
    m = ev.metrics()
    print(
        json.dumps(
            {
                "ontology": args.ontology,
                "load_s": round(load_s, 3),
                "records": len(records),
                "answer_triples": args.triples,
                "score_s": round(score_s, 3),
                "triples_per_s": round(args.triples / score_s),
                "triple_precision": m["triple_precision"].value,
                "soft_triple_precision": m["soft_triple_precision"].value,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
