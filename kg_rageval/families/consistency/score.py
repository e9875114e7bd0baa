"""The consistency family (issue #31, "Self-consistency"): agreement over n answers sampled at a
temperature above 0, as agreement of the **concept sets** the answers name, through the
ontology — two answers that name a concept and its child agree in part, where an exact-repeat
check would call them different.

Record section (``docs/consistency.md``)::

    "consistency": {"temperature": 0.7,
                    "samples": [{"text": "...", "concepts": ["DOID:1612"]},
                                {"text": "...", "concepts": ["DOID:3459"]}, ...]}

Conventions (each record is scored alone, then the records are averaged, so slices and
branches pool exactly):

* **Pairs.** Every unordered pair of the record's n ≥ 2 samples counts once: n(n−1)/2 pairs.
* ``concept_agreement`` — mean over pairs of the Jaccard index |A ∩ B| / |A ∪ B| of the two
  concept sets (ids resolved by the one :class:`~kg_rageval.ontology.IdResolver`, so a CURIE,
  an IRI and an alternative id of a concept are the same concept). Two empty sets (both answers
  name no concept) agree: J(∅, ∅) = 1; how often a sample is empty is reported beside it
  (``empty_sample_rate``).
* ``hier_agreement`` — the same Jaccard over the ancestor-or-self closures of the sets, the
  roots (depth 0) left out (every concept shares them: they would give free credit), as in the
  hierarchical P/R/F1 of the hierarchy family. A concept not in the ontology (a fault of the
  system under test: counted in ``not_in_ontology_rate``, never an abort) is an opaque element
  with no ancestor.
* ``text_agreement`` — mean over pairs of the exact match of the texts after case folding and
  whitespace collapsing, over records whose samples all carry a text (the exact-repeat view).
* ``modal_share`` — the share of the samples whose concept set is the most frequent one (the
  majority vote of self-consistency decoding); ``unanimous_rate`` — records whose samples
  all name the same concept set.

The family needs the ontology (a :class:`~kg_rageval.base.errors.ConfigError` without one):
concepts are compared through it.

Unscored records (counted, with their code): no section — ``no_section``; fewer than
``min_samples`` samples — ``missing_prediction`` (the sampling run is incomplete); a
``temperature`` of 0 or below — ``not_applicable`` (greedy samples repeat by construction: their
agreement says nothing about consistency).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from itertools import combinations
from typing import Any

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.ontology import IdOptions, IdResolver
from kg_rageval.records import Record, located, record_error
from kg_rageval.records.fields import all_slice_keys, section
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, mean_of, ratio

_SAMPLE = {"text", "concepts"}


class ConsistencyFamily(Family):
    name = "consistency"
    version = "1"
    stats = (
        "n",
        "concept_sum",
        "hier_sum",
        "n_hier",
        "text_sum",
        "n_text",
        "modal_sum",
        "unanimous",
        "samples",
        "samples_empty",
        "ids",
        "ids_unknown",
        "ids_inactive",
    )

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        why = "no record with at least two samples"
        return {
            "concept_agreement.mean": mean_of(
                "concept_agreement.mean", s["concept_sum"], s["n"], missing=why
            ),
            "hier_agreement.mean": mean_of(
                "hier_agreement.mean",
                s["hier_sum"],
                s["n_hier"],
                missing="no record with at least two samples",
            ),
            "text_agreement.mean": mean_of(
                "text_agreement.mean",
                s["text_sum"],
                s["n_text"],
                missing="no record whose samples all have a text",
            ),
            "modal_share.mean": mean_of("modal_share.mean", s["modal_sum"], s["n"], missing=why),
            "unanimous_rate": ratio("unanimous_rate", s["unanimous"], s["n"], missing=why),
            "empty_sample_rate": ratio("empty_sample_rate", s["samples_empty"], s["samples"], missing=why),
            "not_in_ontology_rate": ratio(
                "not_in_ontology_rate", s["ids_unknown"], s["ids"], missing="no concept named"
            ),
            "inactive_rate": ratio("inactive_rate", s["ids_inactive"], s["ids"], missing="no concept named"),
        }


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    """|a ∩ b| / |a ∪ b|, and 1.0 for two empty sets (module docstring)."""
    union = len(a | b)
    return 1.0 if union == 0 else len(a & b) / union


def pairwise_mean(items: list[Any], agree: Any) -> float:
    """Mean of ``agree(x, y)`` over the unordered pairs of ``items`` (len ≥ 2)."""
    vals = [agree(x, y) for x, y in combinations(items, 2)]
    return math.fsum(vals) / len(vals)


def _norm_text(t: str) -> str:
    return " ".join(t.casefold().split())


def samples_of(rec: Record) -> tuple[list[str | None], list[list[str]], float | None]:
    """The checked texts, concept lists and temperature of a record's section."""
    sec = section(rec, "consistency") or {}
    bad = set(sec) - {"samples", "temperature"}
    if bad:
        raise record_error(
            rec, f"consistency.{sorted(bad)[0]}", "unknown field; expected samples or temperature"
        )
    temp = sec.get("temperature")
    if temp is not None and (
        isinstance(temp, bool) or not isinstance(temp, (int, float)) or not math.isfinite(temp)
    ):
        raise record_error(rec, "consistency.temperature", f"expected a number, found {temp!r}")
    samples = sec.get("samples")
    if not isinstance(samples, list):
        raise record_error(rec, "consistency.samples", f"expected a list of samples, found {samples!r}")
    texts: list[str | None] = []
    concepts: list[list[str]] = []
    for i, s in enumerate(samples):
        f = f"consistency.samples.{i}"
        if not isinstance(s, dict):
            raise record_error(rec, f, f"expected an object, found {type(s).__name__}")
        unk = set(s) - _SAMPLE
        if unk:
            raise record_error(rec, f"{f}.{sorted(unk)[0]}", "unknown field; expected text or concepts")
        t = s.get("text")
        if t is not None and not isinstance(t, str):
            raise record_error(rec, f"{f}.text", f"expected a string, found {type(t).__name__}")
        c = s.get("concepts", [])
        if not isinstance(c, list) or not all(isinstance(x, str) for x in c):
            raise record_error(rec, f"{f}.concepts", f"expected a list of concept ids, found {c!r}")
        texts.append(t)
        concepts.append(c)
    return texts, concepts, None if temp is None else float(temp)


class _Closure:
    """Resolved concept sets and their ancestor-or-self closures (roots left out)."""

    def __init__(self, ontology: Any, options: IdOptions):
        self.o = ontology
        self.resolver = IdResolver(ontology, options)
        self._up: dict[int, tuple[int, ...]] = {}  # node index -> its closure, roots left out

    def closure(self, i: int) -> tuple[int, ...]:
        """Ancestor-or-self indices of node ``i`` at depth > 0 (computed once per node)."""
        up = self._up.get(i)
        if up is None:
            o = self.o
            anc = o.anc_idx[o.anc_ptr[i] : o.anc_ptr[i + 1]].tolist()
            depth = o.depth_min
            up = self._up[i] = tuple(a for a in (*anc, i) if int(depth[a]) > 0)
        return up

    def sets(
        self, rec: Record, concepts: list[list[str]]
    ) -> tuple[list[frozenset[Any]], list[frozenset[Any]], dict[str, int]]:
        flat = [c for cs in concepts for c in cs]
        counts = {"ids": len(flat), "ids_unknown": 0, "ids_inactive": 0}
        places = [(i, j) for i, cs in enumerate(concepts) for j in range(len(cs))]
        res = self.resolver.resolve(
            flat,
            "pred",
            lambda k: located(rec, f"consistency.samples.{places[k][0]}.concepts[{places[k][1]}]"),
        )
        counts["ids_unknown"] = int(res.unknown.sum())
        counts["ids_inactive"] = int(res.inactive.sum())
        closure = self.closure
        idx = res.idx.tolist()
        exact, hier = [], []
        k = 0
        for cs in concepts:
            ex: set[Any] = set()
            hi: set[Any] = set()
            for c in cs:
                i = idx[k]
                k += 1
                if i < 0:
                    ex.add(("unknown", c))
                    hi.add(("unknown", c))
                    continue
                ex.add(i)
                hi.update(closure(i))
            exact.append(frozenset(ex))
            hier.append(frozenset(hi))
        return exact, hier, counts


def score_consistency(
    ontology: Any,
    records: Iterable[Record],
    *,
    min_samples: int = 2,
    **ids: Any,
) -> Evaluation:
    """One row per record with at least ``min_samples`` samples at a temperature above 0
    (module docstring for every convention)."""
    if min_samples < 2:
        raise InputError(
            f"consistency: min_samples must be at least 2 (agreement needs a pair), not {min_samples}"
        )
    if ontology is None:
        raise ConfigError("consistency: needs the ontology (concept sets are compared through it)")
    closure = _Closure(ontology, IdOptions.of(**ids))
    records = list(records)
    rows, unscored = [], []
    for rec in records:
        if rec.get("consistency") is None:
            unscored.append(unscored_entry(rec["id"], "no consistency section", Reason.NO_SECTION))
            continue
        texts, concepts, temp = samples_of(rec)
        if temp is not None and temp <= 0:
            unscored.append(
                unscored_entry(
                    rec["id"], f"temperature {temp:g}: greedy samples repeat", Reason.NOT_APPLICABLE
                )
            )
            continue
        if len(concepts) < min_samples:
            unscored.append(
                unscored_entry(
                    rec["id"],
                    f"{len(concepts)} samples (< min_samples {min_samples})",
                    Reason.MISSING_PREDICTION,
                )
            )
            continue
        exact, hier, counts = closure.sets(rec, concepts)
        modal = Counter(exact).most_common(1)[0][1]
        row: dict[str, Any] = {
            "record_id": rec["id"],
            **row_keys(rec),
            "n": 1,
            "concept_sum": pairwise_mean(exact, jaccard),
            "modal_sum": modal / len(exact),
            "unanimous": int(modal == len(exact)),
            "samples": len(exact),
            "samples_empty": sum(1 for s in exact if not s),
            "n_samples": len(exact),
            **counts,
        }
        row["hier_sum"], row["n_hier"] = pairwise_mean(hier, jaccard), 1
        if all(t is not None for t in texts):
            norm = [_norm_text(t) for t in texts if t is not None]
            row["text_sum"], row["n_text"] = pairwise_mean(norm, lambda a, b: float(a == b)), 1
        rows.append(row)
    keys = sorted(
        set(all_slice_keys(records))
        | {k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")}
    )
    return build_evaluation(
        ConsistencyFamily(),
        rows,
        keys=keys,
        details=["n_samples"],
        unscored=unscored,
        meta={"min_samples": min_samples},
    )
