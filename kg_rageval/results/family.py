"""A metric family's declaration of its results: its stats, how sums become metrics, how partitions' ``meta`` combine.

:class:`Family` names the sufficient statistics a family's rows carry and finalizes their sums
into :class:`~kg_rageval.results.metric.Metric` objects; :func:`_merge_meta` is the default
combination of the ``meta`` of concatenated partitions (column and entry order:
:func:`_merged_names`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kg_rageval.results.metric import Metric


class Family:
    """A metric family: the names of its sufficient statistics and how sums become metrics.

    Subclasses set ``name``, ``version`` and ``stats`` and implement :meth:`finalize`, which
    must return the same metric names for any sums (missing ones as ``value=None``).
    ``version`` goes into every report manifest, so a changed definition gets a new version.
    """

    name: str = "family"
    version: str = "1"
    stats: tuple[str, ...] = ()
    rows_are_records: bool = True
    """``False`` for a family whose rows describe the run, not its records (one row per run
    manifest): the audit does not count their ids among the family's scored records."""
    additive_meta: tuple[str, ...] = ()
    """``meta`` entries that describe the rows, so partitions combine them when merged (see
    :func:`~.evaluation.concat_evaluations`): a number is summed, a list of ids becomes the sorted union
    (its first :data:`META_ID_LIST` entries, as the families write them). Declared in the
    order the family writes them in: a merge keeps every partition's order of entries and
    this one (see :func:`_merge_meta`)."""

    def complete(self, evaluation: Any) -> None:  # an Evaluation (evaluation.py imports this module)
        """Set the parts of ``evaluation`` that depend on all its rows at once (``meta``
        computed from the totals, such as calibration's reliability table; ``unscored`` codes
        that depend on whether any row was scored; the row order of a family that writes its
        rows grouped by something other than the record, as reproducibility by repeat; rows
        that describe the run rather than a record, as run manifests), in place. The family's
        scoring function calls it on its result, and a concatenation of partitions calls it
        again on the concatenated result (:func:`~.evaluation.concat_evaluations`,
        :class:`~.concatenation.Concatenation`, :meth:`~.evaluation.Evaluation.merge`), so streamed
        and partitioned results equal the one-call
        result. It must depend only on the evaluation (rows, totals, meta, unscored) and give
        the same result when called twice. Default: nothing to do."""

    def merge_meta(self, metas: list[dict[str, Any]]) -> dict[str, Any]:
        """``meta`` of concatenated partitions, given each partition's in order (at least
        two): :func:`_merge_meta` (the first partition's value of an entry wins,
        :attr:`additive_meta` are summed or united). A family whose ``meta`` describes all its
        records at once (the PROV-O trail's Turtle) overrides it so that the merged ``meta``
        equals the one of a single call on all the records."""
        return _merge_meta(self, metas)

    def keep_meta(self, meta: dict[str, Any], held: list[dict[str, Any]]) -> dict[str, Any]:
        """What a :class:`~.concatenation.Concatenation` keeps of one partition's ``meta`` until it merges
        them (``held``: what it keeps of the earlier partitions, in order), once there are
        two or more partitions. :meth:`merge_meta` of the kept metas must equal it of the
        given ones. Default: ``meta`` itself; a family with a large ``meta`` (the PROV-O
        trail's Turtle, which it spools to a temporary file) keeps a smaller equal one."""
        return meta

    def finalize(self, sums: Mapping[str, float]) -> dict[str, Metric]:  # pragma: no cover
        raise NotImplementedError

    @property
    def qualified_name(self) -> str:
        return f"kg_rageval.{self.name}.v{self.version}"


META_ID_LIST = 50
"""How many ids a family lists in a ``meta`` id list (``unknown_ids``, ...): the first ones in
sorted order."""


def _merged_names(parts: list[list[str]]) -> list[str]:
    """Column names of concatenated partitions, in an order consistent with every partition's
    own order (a column before another in one partition stays before it), so the order of a
    whole-input result is kept whichever partition a column first appears in. Columns that
    never stand side by side are taken by the first partition that has them, ``slice:*``
    keys by name (every family writes its slice keys sorted)."""
    if all(p == parts[0] for p in parts[1:]):
        return list(parts[0])
    import heapq

    rank: dict[str, tuple[int, str, int]] = {}
    preds: dict[str, set[str]] = {}
    for i, names in enumerate(parts):
        for j, name in enumerate(names):
            if name not in rank:
                rank[name] = (i, name if name.startswith("slice:") else "", j)
                preds[name] = set()
            if j:
                preds[name].add(names[j - 1])
    succ: dict[str, list[str]] = {n: [] for n in rank}
    for n, ps in preds.items():
        for q in ps:
            succ[q].append(n)
    left = {n: len(ps) for n, ps in preds.items()}
    ready = [(rank[n], n) for n, k in left.items() if k == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        _, n = heapq.heappop(ready)
        out.append(n)
        for m in succ[n]:
            left[m] -= 1
            if left[m] == 0:
                heapq.heappush(ready, (rank[m], m))
    if len(out) < len(rank):  # the partitions disagree on an order: first-seen order
        return list(rank)
    return out


def _merge_meta(family: Family, metas: list[dict[str, Any]]) -> dict[str, Any]:
    """``meta`` of concatenated partitions: the first partition's value of an entry wins (the
    pairwise ``{**other, **self}``), the family's :attr:`Family.additive_meta` are summed or
    united, ``rollup_skipped`` is dropped. Entries are in an order consistent with every
    partition's own order and with the declared order of ``additive_meta``
    (:func:`_merged_names`, as for columns), so an entry that only some partitions write (a
    count of aliased ids) stands where the whole-input call writes it."""
    if len(metas) == 1 or all(list(m) == list(metas[0]) for m in metas[1:]):
        order = list(metas[0])
    else:
        present = {k for m in metas for k in m}
        declared = [k for k in family.additive_meta if k in present]
        order = _merged_names([list(m) for m in metas] + [declared])
    meta: dict[str, Any] = {}
    for key in order:
        if key == "rollup_skipped":
            continue
        values = [m[key] for m in metas if key in m]
        if key not in family.additive_meta:
            meta[key] = values[0]
        elif all(isinstance(v, (list, tuple)) for v in values):
            meta[key] = sorted(set().union(*values))[:META_ID_LIST]
        else:
            meta[key] = sum(values)
    return meta
