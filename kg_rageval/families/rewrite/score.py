"""The rewrite family (seed article Part 4, "Queryinterpretatie en herschrijven"): what query
expansion, HyDE and multi-query rewriting gain over the raw query, on the same golden set.

Record section (``docs/records.md``, ``docs/rewrite.md``); the gold documents are the record's
``retrieval.gold`` (the one golden set every variant is scored on)::

    "rewrite": {"variants": {
        "raw":           {"ranked": ["d3", "d1"], "latency_ms": 40},
        "expansion":     {"ranked": ["d1", "d7"], "latency_ms": 65},
        "hyde":          {"ranked": ["d9", "d1"], "latency_ms": 310, "concepts": ["DOID:1612"]},
        "multi_query_1": {"ranked": ["d1"], "latency_ms": 50},
        "multi_query_2": {"ranked": ["d4"], "latency_ms": 55}}}

Per record and cut-off k (mergeable sums, so every metric has per-node / per-slice roll-ups
and bootstrap CIs by record):

* ``<v>.recall@k`` = |relevant ∩ top k of v| / |relevant| for v in raw, expansion, hyde, and
  ``multi_query`` (the union of the top k of *every* ``multi_query_i`` the record gives);
* ``<v>.delta.recall@k`` = mean over the records that have both v and ``raw`` of
  recall_v − recall_raw — the paired delta (gate ``ci_low(rewrite.expansion.delta.recall@10)
  >= 0.02``: the pre-registered minimum useful gain);
* ``multi_query.union_<N>.recall@k`` / ``.delta.recall@k`` / ``.latency_ms.mean`` for
  N = 1..``max_rewrites`` (default 5; a size no record reaches is missing evidence): the union of the top k of the first N rewrites (``multi_query_1..N``), on the
  records that have all N; its latency is the sum of the N latencies (rewrites retrieved one
  after the other; ``union_latency="max"``: in parallel);
* ``<v>.latency_ms.mean`` over the records whose variant gives ``latency_ms``;
* ``hyde.off_topic_rate`` = HyDE records whose hypothetical answer names a concept outside the
  gold concept's branch (the ancestor-or-self of the gold node at ``branch_depth``, root 0) /
  HyDE records with ``concepts`` and a gold node. A concept the ontology lacks is off-topic (the
  hypothetical answer is system output: its fault is counted, never an abort). Each such row carries the key
  ``slice:hyde_topic`` (``off_topic`` / ``on_topic``), so
  ``rewrite.hyde.delta.recall@10[slice:hyde_topic=off_topic]`` is a gate.

A record without a ``rewrite`` section is unscored (``no rewrite section``), one without
relevant gold documents is unscored (``no relevant gold``): no recall on an empty denominator.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kg_rageval.records import Record, record_error
from kg_rageval.records.fields import gold_documents, section
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, mean_of, ratio

VARIANTS = ("raw", "expansion", "hyde", "multi_query")
"""The scored variants; ``multi_query`` is the union of the ``multi_query_<i>`` rewrites."""
_MQ = re.compile(r"^multi_query_([1-9][0-9]*)$")
_FIELDS = {"ranked", "latency_ms", "concepts"}


class RewriteFamily(Family):
    """Stats per cut-off k and variant v: ``v.recall@k`` (sum), ``v.n``; ``v.delta.recall@k``,
    ``v.n_paired``; ``v.latency`` / ``v.n_latency``; per union size N the same under
    ``union_N``; ``hyde.n_topic`` / ``hyde.n_off_topic``."""

    name = "rewrite"
    version = "1"

    def __init__(self, ks: Sequence[int] = (10,), max_union: int = 0):
        self.ks = tuple(int(k) for k in ks)
        self.max_union = int(max_union)
        self.groups = list(VARIANTS) + [f"multi_query.union_{n}" for n in range(1, self.max_union + 1)]
        st: list[str] = ["n"]
        for g in self.groups:
            st += [f"{g}.n", f"{g}.n_paired", f"{g}.latency", f"{g}.n_latency"]
            for k in self.ks:
                st += [f"{g}.recall@{k}", f"{g}.delta.recall@{k}"]
        self.stats = (*st, "hyde.n_topic", "hyde.n_off_topic")

    def union(self, other: RewriteFamily) -> RewriteFamily:
        return RewriteFamily(sorted(set(self.ks) | set(other.ks)), max(self.max_union, other.max_union))

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        out: dict[str, Metric] = {}
        for g in self.groups:
            for k in self.ks:
                name = f"{g}.recall@{k}"
                out[name] = mean_of(
                    name, s[name], s[f"{g}.n"], missing=f"no record with relevant gold has {g}"
                )
                if g != "raw":
                    dn = f"{g}.delta.recall@{k}"
                    out[dn] = mean_of(
                        dn,
                        s[dn],
                        s[f"{g}.n_paired"],
                        missing=f"no record with relevant gold has both {g} and raw",
                    )
            ln = f"{g}.latency_ms.mean"
            out[ln] = mean_of(
                ln, s[f"{g}.latency"], s[f"{g}.n_latency"], missing=f"no record gives {g} latency_ms"
            )
        out["hyde.off_topic_rate"] = ratio(
            "hyde.off_topic_rate",
            s["hyde.n_off_topic"],
            s["hyde.n_topic"],
            missing="no HyDE record with concepts and a gold node",
        )
        return out


def _number(rec: Record, field: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise record_error(rec, field, f"expected a finite non-negative number, found {v!r}")
    return float(v)


def _variants(rec: Record) -> dict[str, dict[str, Any]]:
    sec = section(rec, "rewrite") or {}
    unknown = set(sec) - {"variants"}
    if unknown:
        raise record_error(rec, f"rewrite.{sorted(unknown)[0]}", "unknown field; expected variants")
    vs = sec.get("variants")
    if not isinstance(vs, dict) or not vs:
        raise record_error(rec, "rewrite.variants", f"expected a non-empty object of variants, found {vs!r}")
    out: dict[str, dict[str, Any]] = {}
    for name, v in vs.items():
        f = f"rewrite.variants.{name}"
        if name not in ("raw", "expansion", "hyde") and not _MQ.match(str(name)):
            raise record_error(
                rec, f, "unknown variant; expected raw, expansion, hyde or multi_query_<n> (n >= 1)"
            )
        if not isinstance(v, dict):
            raise record_error(rec, f, f"expected an object, found {type(v).__name__}")
        bad = set(v) - _FIELDS
        if bad:
            raise record_error(
                rec, f"{f}.{sorted(bad)[0]}", "unknown field; expected ranked, latency_ms or concepts"
            )
        ranked = v.get("ranked")
        if not isinstance(ranked, list) or not all(isinstance(d, str) for d in ranked):
            raise record_error(rec, f"{f}.ranked", f"expected a list of document ids, found {ranked!r}")
        if len(set(ranked)) != len(ranked):
            dup = next(d for i, d in enumerate(ranked) if d in ranked[:i])
            raise record_error(rec, f"{f}.ranked", f"document {dup!r} is listed more than once")
        lat = v.get("latency_ms")
        concepts = v.get("concepts")
        if concepts is not None and (
            name != "hyde" or not isinstance(concepts, list) or not all(isinstance(c, str) for c in concepts)
        ):
            raise record_error(rec, f"{f}.concepts", "expected a list of concept ids (hyde only)")
        out[str(name)] = {
            "ranked": ranked,
            "latency": None if lat is None else _number(rec, f"{f}.latency_ms", lat),
            "concepts": concepts,
        }
    mq = sorted(int(_MQ.match(n).group(1)) for n in out if _MQ.match(n))  # type: ignore[union-attr]
    if mq and mq != list(range(1, len(mq) + 1)):
        raise record_error(rec, "rewrite.variants", f"multi_query rewrites must be numbered 1..n, found {mq}")
    return out


def _off_topic(ontology: Any, rec: Record, gold: str | None, concepts: list[str], depth: int) -> bool | None:
    """Whether a concept lies outside every branch (ancestor-or-self at ``depth``) of ``gold``;
    ``None`` without a known gold node or concepts."""
    if not isinstance(gold, str) or gold not in ontology or not concepts:
        return None
    g = ontology.index(gold)
    anc = ontology.anc_idx[ontology.anc_ptr[g] : ontology.anc_ptr[g + 1]].tolist()
    branches = [a for a in anc if int(ontology.depth_min[a]) == depth] or [g]
    for c in concepts:
        if c not in ontology:  # the system named a concept the ontology lacks: off every branch, counted
            return True
        ci = ontology.index(c)
        if not any(ontology.is_ancestor_index(b, ci) or b == ci for b in branches):
            return True
    return False


def score_rewrite(
    ontology: Any,
    records: Iterable[Record],
    *,
    k: Sequence[int] = (10,),
    max_rewrites: int = 5,
    branch_depth: int = 1,
    union_latency: str = "sum",
) -> Evaluation:
    """One row per record with a ``rewrite`` section and relevant gold (module docstring)."""
    from kg_rageval.base.errors import ConfigError

    if ontology is None:
        raise ConfigError("rewrite: needs the ontology (HyDE concepts are checked against the gold branch)")
    ks = sorted({int(x) for x in k})
    records = list(records)
    parsed = []
    unscored = []
    for rec in records:
        if rec.get("rewrite") is None:
            unscored.append(unscored_entry(rec["id"], "no rewrite section", Reason.NO_SECTION))
            continue
        vs = _variants(rec)
        gold = gold_documents(rec)
        if not gold:
            unscored.append(unscored_entry(rec["id"], "no relevant gold", Reason.NO_GOLD))
            continue
        parsed.append((rec, vs, gold))
    max_union = int(max_rewrites)
    fam = RewriteFamily(ks, max_union)
    rows = []
    for rec, vs, gold in parsed:
        row: dict[str, Any] = {"record_id": rec["id"], **row_keys(rec), "n": 1}
        mq = [vs[f"multi_query_{i}"] for i in range(1, sum(1 for n in vs if _MQ.match(n)) + 1)]
        groups: dict[str, tuple[list[set[str]], float | None]] = {}
        for v in ("raw", "expansion", "hyde"):
            if v in vs:
                groups[v] = ([set(vs[v]["ranked"][:kk]) for kk in ks], vs[v]["latency"])
        if mq:
            lats = [m["latency"] for m in mq]
            for n in range(1, len(mq) + 1):
                tops = [set().union(*(set(m["ranked"][:kk]) for m in mq[:n])) for kk in ks]
                part = lats[:n]
                lat = (
                    None
                    if any(x is None for x in part)
                    else (sum(part) if union_latency == "sum" else max(part))
                )  # type: ignore[arg-type,type-var]
                groups[f"multi_query.union_{n}"] = (tops, lat)
            groups["multi_query"] = groups[f"multi_query.union_{len(mq)}"]
            for n in range(max_union + 1, len(mq) + 1):  # beyond max_rewrites: only in multi_query
                groups.pop(f"multi_query.union_{n}")
        rec_raw = groups.get("raw")
        for g, (tops, lat) in groups.items():
            row[f"{g}.n"] = 1
            if lat is not None:
                row[f"{g}.latency"], row[f"{g}.n_latency"] = lat, 1
            for kk, top in zip(ks, tops):
                r = len(top & gold) / len(gold)
                row[f"{g}.recall@{kk}"] = r
                if g != "raw" and rec_raw is not None:
                    row[f"{g}.delta.recall@{kk}"] = r - len(rec_raw[0][ks.index(kk)] & gold) / len(gold)
            if g != "raw" and rec_raw is not None:
                row[f"{g}.n_paired"] = 1
        topic = None
        if "hyde" in vs and vs["hyde"]["concepts"] is not None:
            off = _off_topic(ontology, rec, row.get("gold_node"), vs["hyde"]["concepts"], branch_depth)
            if off is not None:
                row["hyde.n_topic"], row["hyde.n_off_topic"] = 1, int(off)
                topic = "off_topic" if off else "on_topic"
        row["slice:hyde_topic"] = topic
        rows.append(row)
    from kg_rageval.records.fields import all_slice_keys

    keys = sorted(
        set(all_slice_keys(records))
        | {kk for r in rows for kk in r if kk == "gold_node" or kk.startswith("slice:")}
    )
    return build_evaluation(
        fam, rows, keys=keys, unscored=unscored, meta={"frontier": frontier(rows, ks, max_union)}
    )


def frontier(rows: list[dict[str, Any]], ks: Sequence[int], max_union: int) -> list[dict[str, Any]]:
    """The recall–latency points of raw and of the unions of N = 1..n rewrites (recall at the
    largest k, mean latency, on each point's own records), each marked ``pareto`` when no other
    point has at least its recall at no more latency with one of them strictly better."""
    k = max(ks) if ks else 10
    pts = []
    for g in ["raw", *(f"multi_query.union_{n}" for n in range(1, max_union + 1))]:
        have = [r for r in rows if r.get(f"{g}.n")]
        lat = [r[f"{g}.latency"] for r in have if r.get(f"{g}.n_latency")]
        if not have:
            continue
        pts.append(
            {
                "point": g,
                "n": len(have),
                f"recall@{k}": sum(r.get(f"{g}.recall@{k}", 0.0) for r in have) / len(have),
                "latency_ms": (sum(lat) / len(lat)) if lat and len(lat) == len(have) else None,
            }
        )
    key = f"recall@{k}"
    for p in pts:
        p["pareto"] = p["latency_ms"] is not None and not any(
            q is not p
            and q["latency_ms"] is not None
            and q[key] >= p[key]
            and q["latency_ms"] <= p["latency_ms"]
            and (q[key] > p[key] or q["latency_ms"] < p["latency_ms"])
            for q in pts
        )
    return pts
