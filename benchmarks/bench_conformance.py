"""Conformance benchmarks: validating many outputs against a big-enum schema, and the size and
compile time of schemas over 350,000 ids.

    .venv/bin/python benchmarks/bench_conformance.py                # all parts
    .venv/bin/python benchmarks/bench_conformance.py --part validate --n 100000 --enum 10000
    .venv/bin/python benchmarks/bench_conformance.py --part large --large 350000

Part ``validate``: a flat ontology with ``--enum`` concept ids (node type ``concept``) and a spec
with a node field, a list field (up to 3 ids) and a number; ``--n`` outputs, 90 % valid and
10 % with one failure each (unknown id, missing field, wrong type, extra field, too many
items). Times: the stock jsonschema Draft 2020-12 validator (on a sample, extrapolated: its
``enum`` compares against each member), our set-based jsonschema validator, ``check_schema``
with failure kinds under each engine (compiled, jsonschema, pydantic), the pydantic model,
full ``score_conformance`` per engine, and the lookup (pattern + set) schema; agreement of
the engines is checked on every output.

Part ``index``: the outlines_core ``Index`` over a 95-token vocabulary (printable ASCII, one
character per token) for enums of ``--index-sizes`` ids and for a lookup pattern: build
time, states, serialized size.

Part ``large``: the SNOMED-shaped synthetic DAG (``benchmarks/synthetic.py``) with ``--large``
ids in one field: derive time, JSON size, validator first-call time, pydantic model build
time, outlines_core regex size/time, for the enum and the lookup schema.
Figures vary with machine load; compare ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kg_rageval.families.conformance import check_schema, derive_schema, parse_spec, score_conformance
from kg_rageval.ontology import OntologyBuilder


def flat_ontology(n: int):
    b = OntologyBuilder(f"flat-{n}")
    b.add_node("root", label="root")
    for i in range(n):
        b.add_node(f"C:{i}", label=f"concept {i}", node_type="concept")
        b.add_edge(f"C:{i}", "root")
    return b.build()


def make_outputs(n: int, n_ids: int, seed: int = 0) -> list:
    rng = random.Random(seed)
    outs = []
    for k in range(n):
        o = {
            "concept": f"C:{rng.randrange(n_ids)}",
            "related": [f"C:{rng.randrange(n_ids)}" for _ in range(rng.randrange(4))],
            "score": rng.random(),
        }
        if k % 10 == 9:
            kind = (k // 10) % 5
            if kind == 0:
                o["concept"] = f"C:{n_ids + rng.randrange(1000)}"
            elif kind == 1:
                del o["concept"]
            elif kind == 2:
                o["score"] = "high"
            elif kind == 3:
                o["note"] = "extra"
            else:
                o["related"] = [f"C:{i}" for i in range(4)]
        outs.append(o)
    return outs


def timed(fn, *a, **kw):
    t0 = time.perf_counter()
    r = fn(*a, **kw)
    return r, time.perf_counter() - t0


def best_of(fn, k: int = 3) -> float:
    """Fastest of ``k`` runs (short loops are dominated by machine-load noise otherwise)."""
    return min(timed(fn)[1] for _ in range(k))


SPEC = {
    "title": "Bench",
    "fields": {
        "concept": {"node_type": "concept", "required": True},
        "related": {"kind": "list", "node_type": "concept", "max_items": 3},
        "score": {"kind": "number"},
    },
}


def part_validate(n: int, n_ids: int, stock_sample: int) -> dict:
    onto = flat_ontology(n_ids)
    outs = make_outputs(n, n_ids)
    res: dict = {"outputs": n, "enum_ids": n_ids}
    d, t = timed(derive_schema, onto, parse_spec({**SPEC, "enum_threshold": n_ids}))
    res["derive_s"] = round(t, 3)
    res["schema_bytes"] = d.size_bytes
    v = d.validator
    _, t = timed(lambda: [v.is_valid(o) for o in outs])
    res["jsonschema_setenum_is_valid_s"] = round(t, 3)
    valid = sum(v.is_valid(o) for o in outs)
    res["valid"] = valid
    ref, t = timed(lambda: [check_schema(d, o, engine="jsonschema")[1] for o in outs])
    res["jsonschema_check_schema_s"] = round(t, 3)
    d.checker  # noqa: B018 - compile once
    comp, t = timed(lambda: [check_schema(d, o, engine="compiled")[1] for o in outs])
    res["compiled_check_schema_s"] = round(t, 3)
    key = lambda fs: sorted((f["kind"], f["path"]) for f in fs)  # noqa: E731
    res["compiled_agrees_with_jsonschema"] = all(key(a) == key(b) for a, b in zip(comp, ref))
    sv = d.stock_validator
    sample = outs[:stock_sample]
    agree = sum(sv.is_valid(o) == v.is_valid(o) for o in sample)
    res["stock_sample"] = stock_sample
    res["stock_agreement"] = f"{agree}/{stock_sample}"
    _, t = timed(lambda: [sv.is_valid(o) for o in sample])
    res["stock_is_valid_s_extrapolated"] = round(t * n / stock_sample, 1)
    model, t = timed(d.pydantic_model)
    res["pydantic_build_s"] = round(t, 3)
    pv, t = timed(lambda: sum(d.accepts_fast(o) for o in outs))
    res["pydantic_validate_s"] = round(t, 3)
    res["pydantic_agrees"] = pv == valid
    _, t = timed(lambda: [check_schema(d, o, engine="pydantic") for o in outs])
    res["pydantic_engine_check_schema_s"] = round(t, 3)
    records = [{"id": str(i), "answer": {"output": o}} for i, o in enumerate(outs)]
    totals = {}
    for engine in ("compiled", "jsonschema", "pydantic"):
        ev, t = timed(score_conformance, onto, records, d, engine=engine)
        res[f"score_conformance_{engine}_s"] = round(t, 3)
        totals[engine] = ev.totals()
    res["engines_agree"] = totals["compiled"] == totals["jsonschema"] == totals["pydantic"]
    res["schema_validity"] = round(ev.metrics()["schema_validity"].value, 4)
    dl = derive_schema(onto, parse_spec({**SPEC, "enum_threshold": 100}))
    res["lookup_schema_bytes"] = dl.size_bytes
    lv = dl.validator
    lval, t = timed(lambda: sum(lv.is_valid(o) for o in outs))
    res["lookup_jsonschema_is_valid_s"] = round(t, 3)
    res["lookup_agrees"] = lval == valid
    dl.checker  # noqa: B018 - compile once
    lc, t = timed(lambda: sum(not check_schema(dl, o)[1] for o in outs))
    res["lookup_compiled_check_schema_s"] = round(t, 3)
    res["lookup_compiled_agrees"] = lc == valid
    return res


def part_large(n: int) -> dict:
    from outlines_core.json_schema import build_regex_from_schema

    from benchmarks.synthetic import build_ontology
    from kg_rageval.families.conformance.outlines_backend import decoder_schema

    res: dict = {"ids": n}
    onto, t = timed(build_ontology, n)
    res["build_ontology_s"] = round(t, 1)
    spec = {"title": "Large", "fields": {"concept": {"within": "SCT:0", "required": True}}}
    for mode, thr in (("enum", 10**7), ("lookup", 10_000)):
        d, t = timed(derive_schema, onto, parse_spec({**spec, "enum_threshold": thr}))
        r = {"derive_s": round(t, 2), "schema_bytes": d.size_bytes}
        v = d.validator
        _, t = timed(v.is_valid, {"concept": "SCT:17"})
        r["validator_first_call_s"] = round(t, 3)
        t = best_of(lambda: [v.is_valid({"concept": f"SCT:{i}"}) for i in range(10_000)])  # noqa: B023 - timed now
        r["jsonschema_validate_10k_s_best_of_3"] = round(t, 3)
        _, t = timed(lambda: d.checker)  # noqa: B023 - timed now
        r["compiled_checker_build_s"] = round(t, 3)
        t = best_of(lambda: [check_schema(d, {"concept": f"SCT:{i}"}) for i in range(10_000)])  # noqa: B023 - timed now
        r["compiled_check_10k_s_best_of_3"] = round(t, 3)
        _, t = timed(d.pydantic_model)
        r["pydantic_build_s"] = round(t, 2)
        rx, t = timed(build_regex_from_schema, json.dumps(decoder_schema(d)))
        r["outlines_regex_chars"] = len(rx)
        r["outlines_regex_s"] = round(t, 2)
        res[mode] = r
    return res


def part_index(sizes=(100, 1000, 10_000)) -> dict:
    from kg_rageval.families.conformance.outlines_backend import build_index

    vocab = {chr(c): [c] for c in range(32, 127)}
    out = {}
    for k in sizes:
        onto = flat_ontology(k)
        d = derive_schema(
            onto,
            parse_spec(
                {"fields": {"concept": {"node_type": "concept", "required": True}}, "enum_threshold": 10**7}
            ),
        )
        idx, t = timed(build_index, d, vocab, eos_token_id=0)
        out[k] = {
            "index_s": round(t, 3),
            "states": len(idx.get_transitions()),
            "serialized_bytes": len(idx.__reduce__()[1][0]),
        }
    d = derive_schema(
        flat_ontology(1000),
        parse_spec({"fields": {"concept": {"node_type": "concept", "required": True}}, "enum_threshold": 10}),
    )
    idx, t = timed(build_index, d, vocab, eos_token_id=0)
    out["lookup pattern"] = {
        "index_s": round(t, 3),
        "states": len(idx.get_transitions()),
        "serialized_bytes": len(idx.__reduce__()[1][0]),
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["validate", "large", "index", "all"], default="all")
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--enum", type=int, default=10_000)
    ap.add_argument("--stock-sample", type=int, default=1_000)
    ap.add_argument("--large", type=int, default=350_000)
    ap.add_argument(
        "--index-sizes", default="100,1000,10000", help="enum sizes for the outlines_core Index part"
    )
    a = ap.parse_args()
    if a.part in ("validate", "all"):
        print("validate", json.dumps(part_validate(a.n, a.enum, a.stock_sample), indent=1), flush=True)
    if a.part in ("index", "all"):
        sizes = tuple(int(x) for x in a.index_sizes.split(","))
        print("index", json.dumps(part_index(sizes), indent=1), flush=True)
    if a.part in ("large", "all"):
        print("large", json.dumps(part_large(a.large), indent=1), flush=True)


if __name__ == "__main__":
    main()
