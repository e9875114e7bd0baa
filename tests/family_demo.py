"""The bundled demo as test data for every registered family (shared by tests/scoring/test_contract.py
and tests/scoring/test_streaming.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kg_rageval.scoring import get_scorer


def add_relation_questions(path: Path, onto: Any) -> None:
    """The demo has no relation answers: give each record with a gold concept a list question
    ("which subtypes of <gold>?", answered with the first subtype) so the relations family
    meets the same records as every other family."""
    lines = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        gold = ((rec.get("labels") or {}).get("gold") or [None])[0]
        if gold in onto:
            subtypes = onto.children(gold) or [gold]
            rec["relations"] = {"node": gold, "gold_answers": subtypes, "answers": subtypes[:1]}
        lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")


def family_inputs(name: str, demo: dict) -> dict:
    """The demo's extra input files (corpus, spec) that family ``name`` declares."""
    return {i.name: demo["inputs"][i.name] for i in get_scorer(name).inputs if i.name in demo["inputs"]}


def add_quality_sections(records: list[dict], onto: Any = None) -> list[dict]:
    """Copies of the demo records with a ``judges`` and a ``system`` section, so the judge and
    system families meet the same records as the others (the demo has neither): judge ``j1``
    says correct on records 1, 2, 4, 5, ... (index % 3 != 0), the human on index % 4 != 0;
    latencies, tokens, cost and an LLM cache hit on even indices; a ``parsing`` page pair (an
    OCR slip on odd indices, an unrecognised table on every third); a ``nuggets`` section (five
    nuggets, two okay only on every fifth, assignments cycling, the human differing on odd ones);
    with ``onto``, a ``chunking`` section (the record's gold concept as category with its ontology
    path; two chunks, the second cutting a table on odd indices and without a source on every
    third)."""
    out = []
    for i, r in enumerate(records):

        def verdict(ok: bool) -> dict:
            return {"verdict": "correct"} if ok else {"verdict": "incorrect", "missing_facts": ["x"]}

        human = "correct" if i % 4 else "incorrect"
        judges = [
            {
                "rubric": "answer_correctness",
                "judge": "j1",
                "item": f"q{i}",
                "output": verdict(i % 3 != 0),
                "human": human,
            }
        ]
        system = {
            "latency_ms": {"retrieve": 10 + i, "generate": 100 + 3 * i, "total": 120 + 4 * i},
            "cost_usd": 0.001 * (i % 5),
            "tokens": {"prompt": 100 + i, "completion": 20},
            "cache": {"llm": i % 2 == 0},
        }
        extra: dict = {"judges": judges, "system": system}
        ret = r.get("retrieval") or {}
        ranked = [d if isinstance(d, str) else d.get("id") for d in (ret.get("run") or [])]
        ranked = [d for d in dict.fromkeys(ranked) if isinstance(d, str)]
        if ret.get("gold") and ranked:  # the rewrite family: variants built from the retrieved list
            gold_node = ((r.get("labels") or {}).get("gold") or [None])[0]
            hyde: dict = {"ranked": ranked[::-1], "latency_ms": 300 + i}
            if isinstance(gold_node, str):
                hyde["concepts"] = [gold_node]
            extra["rewrite"] = {
                "variants": {
                    "raw": {"ranked": ranked, "latency_ms": 40 + i},
                    "expansion": {"ranked": ranked[1:] + ranked[:1], "latency_ms": 60 + i},
                    "hyde": hyde,
                    "multi_query_1": {"ranked": ranked[::2], "latency_ms": 50},
                    "multi_query_2": {"ranked": ranked[1::2], "latency_ms": 55},
                }
            }
            extra["iterative"] = {  # the iterative family: two steps, the second finds the run's tail
                "steps": [
                    {"query": "q", "results": ranked[:3], "calls": 1, "time_ms": 100 + i, "tokens": 200},
                    {"query": "q2", "results": ranked[3:], "calls": 1, "time_ms": 150, "tokens": 300},
                ],
                "correct": i % 3 != 0,
            }
        page = f"Page {i} of record {r['id']}: Mars has two moons, Phobos and Deimos."
        parsing = {
            "reference": page,
            "extracted": page.replace("moons", "m00ns") if i % 2 else page,
            "tables": [{"reference": "<table><tr><td>a</td></tr></table>", "extracted": None}]
            if i % 3 == 0
            else [],
        }
        extra["parsing"] = parsing
        gold = ((r.get("labels") or {}).get("gold") or [None])[0]
        if isinstance(gold, str):  # the consistency family: three samples, the third names X on odd indices
            other = [gold] if i % 2 == 0 else ["X:not-in-ontology"]
            extra["consistency"] = {
                "temperature": 0.7,
                "samples": [
                    {"text": "a", "concepts": [gold]},
                    {"text": "A ", "concepts": [gold]},
                    {"text": "b", "concepts": other},
                ],
            }
        if isinstance(gold, str):  # the routing family: the route is the gold node or an unknown id
            modes = ("no_retrieval", "one_shot", "iterative")
            extra["routing"] = {
                "intent": {
                    "gold": "lookup" if i % 2 else "compare",
                    "pred": "lookup" if i % 3 else "compare",
                },
                "route": {"gold": gold, "pred": gold if i % 4 else "X:not-in-ontology"},
                "mode": {"gold": modes[i % 3], "pred": modes[(i // 2) % 3], "cost": float(i % 3)},
            }
        labels = ("support", "partial_support", "not_support")
        imps = ["okay"] * 2 if i % 5 == 4 else ["vital"] * 3 + ["okay"] * 2  # every fifth: no vital nugget
        extra["nuggets"] = {  # the nuggets family: assignments cycle, the human differs on odd indices
            "topic_id": f"t{i}",
            "items": [
                {
                    "text": f"fact {j}",
                    "importance": imp,
                    "assignment": labels[(i + j) % 3],
                    "human_assignment": labels[(i + j + i % 2) % 3],
                }
                for j, imp in enumerate(imps)
            ],
        }
        if onto is not None and isinstance(gold, str) and gold in onto:
            path = [
                a
                for a in onto.ancestors(gold, include_self=True)
                if a != onto.root_id or not onto.virtual_root
            ]
            doc = f"doc-{i}"
            meta = {"parent_doc": doc, "ancestry": path}
            extra["chunking"] = {
                "doc_id": doc,
                "category": gold,
                "structure": [{"kind": "table", "start": 40, "end": 80}],
                "chunks": [
                    {
                        "id": f"{doc}#0",
                        "start": 0,
                        "end": 60 if i % 2 else 100,
                        "parent_section": "1",
                        "source": {"doc_id": doc, "page": 1},
                        **meta,
                    },
                    {
                        "id": f"{doc}#1",
                        "start": 60 if i % 2 else 100,
                        "end": 200,
                        "parent_section": "2",
                        "source": None if i % 3 == 0 else {"doc_id": doc, "section": "2"},
                        **meta,
                    },
                ],
            }
        if onto is not None and isinstance(gold, str) and gold in onto:
            preds = sorted({q.id for q in onto.properties} | set(onto.graph.predicates)) or ["related_to"]
            # a depth-1 type and, on odd indices, another one: the same figures with and without
            # the ontology (flat types); tests/families/extraction covers the hierarchy credit
            tops = sorted(onto.children(onto.root_id))
            etype = next((a for a in onto.ancestors(gold, include_self=True) if a in tops), gold)
            wrong = next((c for c in tops if c != etype), etype)
            extra["extraction"] = {  # the extraction family: the second entity's type is off on odd indices
                "tokens": ["a", "b", "c", "d"],
                "gold_tags": [f"B-{etype}", "O", "O", f"B-{etype}"],
                "pred_tags": [f"B-{etype}", "O", "O", f"B-{wrong}" if i % 2 else f"B-{etype}"],
                "relations": {
                    "gold": [{"subject": "a", "relation": preds[0], "object": "d"}],
                    "pred": [
                        {"subject": "a", "relation": preds[0] if i % 3 else "no_relation", "object": "d"}
                    ],
                },
            }
        extra["index"] = {  # the index family: one of three exact neighbours missed on odd indices
            "ann": ["v0", "v1", "v2"] if i % 2 == 0 else ["v0", "v1", "v9"],
            "exact": ["v0", "v1", "v2"],
            "stale": i % 4 == 3,
            "commit_ts": 1796378400 + i,
            "searchable_ts": 1796378400 + 2 * i + 1,
        }
        extra["cleaning"] = {  # the cleaning family: one labelled part of each kind per record
            "doc_id": f"doc-{i}",
            "text": "caf\u00e9 report\u200b" if i % 3 == 0 else "plain report text",
            "boilerplate": {"gold": [[0, 10]], "removed": [[0, 10]] if i % 2 == 0 else [[0, 8]]},
            "language": {"gold": "en", "pred": "en" if i % 4 else "de"},
            "duplicates": {"gold": [f"doc-{i ^ 1}"], "pred": [f"doc-{i ^ 1}"] if i % 3 else []},
            "pii": {
                "gold": [{"start": 2, "end": 7, "type": "EMAIL"}],
                "pred": [{"start": 2, "end": 7 if i % 2 else 6, "type": "EMAIL"}],
            },
        }
        out.append({k: v for k, v in r.items() if not k.startswith("_")} | extra)
    return out
