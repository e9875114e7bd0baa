"""Build a linking test set from an ontology's own labels and synonyms, with held-out NIL.

:func:`build_linking_set` draws concepts, writes one short query per concept with its surface
form embedded in a template, and records the gold mention span. A share of *leaf* concepts is
**held out**: their mentions are gold NIL (``id: null``) with ``nearest`` = their first parent,
and linkers are built with ``exclude=held_out`` so they cannot know them — the situation of a
concept missing from the ontology, where a good linker abstains and a bad one over-links to a
near miss.

Surface-form variants (``slices.variant``), drawn per query:

* ``label`` — the preferred label as written;
* ``case`` — lower-cased with hyphens and spaces swapped and a trailing full stop removed
  (tests normalisation);
* ``synonym`` — a synonym (falls back to ``label`` when the concept has none);
* ``typo`` — two adjacent letters of the longest word swapped (tests robustness; a dictionary
  cannot match it).

Deterministic for a seed.
"""

from __future__ import annotations

import random
from typing import Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.records import record_error, record_text

TEMPLATES = (
    "What is {}?",
    "Tell me about {} please.",
    "Which mitigations apply to {}",
    "{}: how is it detected?",
    "Explain {} in two sentences.",
)

VARIANTS = ("label", "case", "synonym", "typo")


def _variant(rng: random.Random, label: str, synonyms: tuple[str, ...], kind: str) -> tuple[str, str]:
    if kind == "synonym":
        if synonyms:
            return rng.choice(sorted(synonyms)), "synonym"
        kind = "label"
    if kind == "case":
        s = label.lower().replace("-", "\x00").replace(" ", "-").replace("\x00", " ").rstrip(".")
        return (s if s.strip(" -") else label), "case"
    if kind == "typo":
        words = label.split(" ")
        k = max(range(len(words)), key=lambda i: len(words[i]))
        w = words[k]
        if len(w) >= 4:
            j = rng.randrange(1, len(w) - 2)
            words[k] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]
            if words[k] != w:
                return " ".join(words), "typo"
        kind = "label"
    return label, "label"


def build_linking_set(
    ontology,
    *,
    n: int | None = None,
    held_out: float = 0.15,
    variants: tuple[str, ...] = VARIANTS,
    seed: int = 0,
    node_types: tuple[str, ...] | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """``(records, held_out_ids)``.

    Parameters
    ----------
    n : int, optional
        Number of queries (default: one per eligible concept).
    held_out : float
        Share of the queries whose concept is held out (drawn among leaves with a parent).
    variants : tuple of str
        Surface-form variants to draw from (see the module docstring).
    node_types : tuple of str, optional
        Only concepts of these node types.
    """
    rng = random.Random(seed)
    ids, labels, syns = ontology.ids, ontology.labels, ontology.synonyms
    vroot = 0 if ontology.virtual_root else -1
    child_ptr, _ = ontology.child_ptr_idx
    eligible = [
        i
        for i in range(len(ids))
        if i != vroot
        and i != 0
        and labels[i]
        and int(ontology.status[i]) == 0
        and (node_types is None or ontology.node_types[i] in node_types)
    ]
    # surface forms shared by several concepts make a poor held-out concept: skip those
    from kg_rageval.families.linking.dictionary import normalize

    owners: dict[tuple[str, ...], set[int]] = {}
    for i in range(len(ids)):  # every node, deprecated and revoked ones included
        if i == vroot:
            continue
        for f in ((labels[i],) if labels[i] else ()) + syns[i]:
            owners.setdefault(normalize(f), set()).add(i)
    leaves = [
        i
        for i in eligible
        if child_ptr[i + 1] == child_ptr[i]
        and all(len(owners.get(normalize(f), ())) == 1 for f in (labels[i], *syns[i]))
    ]
    rng.shuffle(eligible)
    total = len(eligible) if n is None else min(n, len(eligible))
    n_out = int(round(held_out * total))
    out_nodes = rng.sample(leaves, min(n_out, len(leaves)))
    out_set = set(out_nodes)
    chosen = out_nodes + [i for i in eligible if i not in out_set][: total - len(out_nodes)]
    rng.shuffle(chosen)
    records = []
    for k, i in enumerate(chosen):
        form, kind = _variant(rng, labels[i], syns[i], rng.choice(variants))
        template = rng.choice(TEMPLATES)
        start = template.index("{}")
        text = template.format(form)
        gold: dict[str, Any] = {"start": start, "end": start + len(form), "id": ids[i]}
        if i in out_set:
            gold["id"] = None
            parents = ontology.parent_indices(i)
            gold["nearest"] = ids[int(parents[0])]
            gold["held_out"] = ids[i]
        nt = ontology.node_types[i]
        if nt:
            gold["type"] = nt
        records.append(
            {
                "id": f"q{k:05d}",
                "text": text,
                "slices": {"variant": kind, "nil": "held-out" if i in out_set else "in-kb"},
                "mentions": {"gold": [gold]},
            }
        )
    return records, sorted(ids[i] for i in out_nodes)


def _text(r: dict[str, Any]) -> str:
    t = record_text(r)
    if t is None:
        raise record_error(r, "text", "needs a 'text' or 'query' string to link")
    return t


def run_linker(linker, records: list[dict[str, Any]], *, mode: str = "detect") -> list[dict[str, Any]]:
    """Copies of ``records`` with ``mentions.pred`` filled by ``linker``.

    ``mode="detect"``: the linker finds mentions in ``text`` (else ``query``) with
    ``linker.predict_many`` over all texts when it has one (the dictionary linker), else
    ``linker.find`` per text.
    ``mode="gold_spans"``: the linker links each gold span's text (``linker.link`` /
    ``link_many``), so only the link decision (node or NIL) is evaluated.
    """
    if mode not in ("detect", "gold_spans"):
        raise ConfigError(f"mode must be 'detect' or 'gold_spans', not {mode!r}")
    out = []
    texts_of = [_text(r) for r in records]
    if mode == "detect" and hasattr(linker, "predict_many"):  # one batched call (the dictionary linker)
        batched = linker.predict_many(texts_of)
    if mode == "gold_spans":
        spans = [(k, g) for k, r in enumerate(records) for g in r["mentions"]["gold"]]
        texts = [texts_of[k][g["start"] : g["end"]] for k, g in spans]
        starts = [g["start"] for _, g in spans]
        if hasattr(linker, "link_many"):
            links = linker.link_many(texts, starts)
        else:
            links = [linker.link(t, start=s) for t, s in zip(texts, starts)]
        preds: dict[int, list] = {}
        for (k, _), lk in zip(spans, links):
            preds.setdefault(k, []).append(lk.to_mention())
    for k, r in enumerate(records):
        r2 = {**r, "mentions": {**(r.get("mentions") or {})}}
        if mode == "detect":
            r2["mentions"]["pred"] = (
                batched[k]
                if hasattr(linker, "predict_many")
                else [lk.to_mention() for lk in linker.find(texts_of[k])]
            )
        else:
            r2["mentions"]["pred"] = preds.get(k, [])
        out.append(r2)
    return out
