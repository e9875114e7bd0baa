"""The ``index`` section of a record (``docs/records.md``, *index*): one query answered by an
approximate nearest-neighbour (ANN) index, with the exact neighbours to check it against, and
the freshness of the index, read and checked in one place::

    "index": {"ann": ["d3", "d7", "d1"], "exact": ["d3", "d1", "d9"],
              "ann_distances": [0.10, 0.31, 0.20], "exact_distances": [0.10, 0.20, 0.25],
              "stale": false, "doc_id": "d9",
              "commit_ts": "2026-12-04T10:00:00Z", "searchable_ts": 1796378403.5}

``ann``: the ids the ANN index returned, best first (``[]``: it returned nothing — counted as
misses; absent or ``null`` with ``exact`` given: the system produced no answer, a missing run).
``exact``: the exact brute-force neighbours, best first (at least ``k`` of them, or every item
the index holds). ``exact_ranks``: instead of ``exact``, the 1-based exact rank of each ``ann``
id (``null``: beyond the exact list). ``ann_distances`` / ``exact_distances``: optional, the
true distances of those ids (smaller is closer: give ``-ip`` for inner product); with both the
ann-benchmarks tie rule applies (:mod:`kg_rageval.families.index.score`). ``stale``: whether
the query was answered against a stale index (optional boolean). ``commit_ts`` /
``searchable_ts``: when a document (``doc_id``, optional) was committed and when the index
could first return it — numbers (seconds since the epoch) or ISO 8601 strings with a time
zone; ``searchable_ts: null`` with a ``commit_ts``: not yet searchable. Ids are strings or
integers (row numbers of the vectors). A wrong type, an unknown field, a repeated or
non-finite value raises an ``InputError`` naming the file, record, line and field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kg_rageval.records._io import Record, record_error

_FIELDS = frozenset(
    {
        "ann",
        "exact",
        "exact_ranks",
        "ann_distances",
        "exact_distances",
        "stale",
        "doc_id",
        "commit_ts",
        "searchable_ts",
    }
)


@dataclass(frozen=True)
class IndexSection:
    ann: tuple[str, ...] | None
    exact: tuple[str, ...] | None
    exact_ranks: tuple[int | None, ...] | None
    ann_distances: tuple[float, ...] | None
    exact_distances: tuple[float, ...] | None
    stale: bool | None
    doc_id: str | None
    commit_ts: float | None
    searchable_ts: float | None
    has_searchable: bool
    """Whether the section states ``searchable_ts`` (``null`` included: not yet searchable)."""


def _ids(record: Record, field: str, v: Any) -> tuple[str, ...] | None:
    if v is None:
        return None
    if not isinstance(v, list):
        raise record_error(record, field, f"expected a list of ids, found {type(v).__name__}")
    out = []
    for j, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, (str, int)) or x == "":
            raise record_error(
                record, f"{field}[{j}]", f"expected a non-empty string or integer id, found {x!r}"
            )
        out.append(str(x))
    return tuple(out)


def _floats(record: Record, field: str, v: Any) -> tuple[float, ...] | None:
    if v is None:
        return None
    if not isinstance(v, list):
        raise record_error(record, field, f"expected a list of numbers, found {type(v).__name__}")
    out = []
    for j, x in enumerate(v):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise record_error(record, f"{field}[{j}]", f"expected a finite number, found {x!r}")
        out.append(float(x))
    return tuple(out)


def _ranks(record: Record, field: str, v: Any) -> tuple[int | None, ...] | None:
    if v is None:
        return None
    if not isinstance(v, list):
        raise record_error(record, field, f"expected a list of ranks, found {type(v).__name__}")
    out: list[int | None] = []
    for j, x in enumerate(v):
        if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 1):
            raise record_error(record, f"{field}[{j}]", f"expected a 1-based rank or null, found {x!r}")
        out.append(x)
    return tuple(out)


def timestamp(record: Record, field: str, v: Any) -> float | None:
    """Seconds since the epoch of a number or an ISO 8601 string with a time zone."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise record_error(
            record, field, "expected seconds since the epoch or an ISO 8601 string, found bool"
        )
    if isinstance(v, (int, float)):
        if not math.isfinite(v):
            raise record_error(record, field, f"expected a finite timestamp, found {v!r}")
        return float(v)
    if isinstance(v, str):
        try:
            t = datetime.fromisoformat(v.replace("Z", "+00:00") if v.endswith("Z") else v)
        except ValueError:
            raise record_error(record, field, f"{v!r} is not an ISO 8601 timestamp") from None
        if t.tzinfo is None:
            raise record_error(record, field, f"{v!r} has no time zone (add Z or +00:00)")
        return t.timestamp()
    raise record_error(
        record, field, f"expected seconds since the epoch or an ISO 8601 string, found {type(v).__name__}"
    )


def index_section(record: Record) -> IndexSection | None:
    """The record's ``index`` section checked (``None`` when absent); see the module docstring."""
    s = record.get("index")
    if s is None:
        return None
    if not isinstance(s, dict):
        raise record_error(record, "index", f"expected an object, found {type(s).__name__}")
    unknown = set(s) - _FIELDS
    if unknown:
        raise record_error(
            record, f"index.{sorted(unknown)[0]}", f"unknown field; expected {', '.join(sorted(_FIELDS))}"
        )
    ann = _ids(record, "index.ann", s.get("ann"))
    exact = _ids(record, "index.exact", s.get("exact"))
    ranks = _ranks(record, "index.exact_ranks", s.get("exact_ranks"))
    if exact is not None and ranks is not None:
        raise record_error(record, "index.exact_ranks", "give exact or exact_ranks, not both")
    if exact is not None and len(set(exact)) != len(exact):
        dup = next(x for i, x in enumerate(exact) if x in exact[:i])
        raise record_error(record, "index.exact", f"id {dup!r} is repeated in the exact neighbours")
    if ranks is not None and (ann is None or len(ranks) != len(ann)):
        raise record_error(
            record,
            "index.exact_ranks",
            f"needs one rank per ann id ({0 if ann is None else len(ann)}), found {len(ranks)}",
        )
    ad = _floats(record, "index.ann_distances", s.get("ann_distances"))
    ed = _floats(record, "index.exact_distances", s.get("exact_distances"))
    if (ad is None) != (ed is None):
        given = "ann_distances" if ad is not None else "exact_distances"
        other = "exact_distances" if ad is not None else "ann_distances"
        raise record_error(record, f"index.{other}", f"required with {given} (the tie rule needs both)")
    if ad is not None and (ann is None or len(ad) != len(ann)):
        raise record_error(
            record,
            "index.ann_distances",
            f"needs one distance per ann id ({0 if ann is None else len(ann)}), found {len(ad)}",
        )
    if ed is not None:
        if exact is None:
            raise record_error(record, "index.exact_distances", "needs the exact ids beside it (index.exact)")
        if len(ed) != len(exact):
            raise record_error(
                record,
                "index.exact_distances",
                f"needs one distance per exact id ({len(exact)}), found {len(ed)}",
            )
        if any(b < a for a, b in zip(ed, ed[1:])):
            raise record_error(
                record, "index.exact_distances", "must be ascending (best first, smaller is closer)"
            )
    stale = s.get("stale")
    if stale is not None and not isinstance(stale, bool):
        raise record_error(
            record, "index.stale", f"expected true, false or null, found {type(stale).__name__}"
        )
    doc_id = s.get("doc_id")
    if doc_id is not None and (isinstance(doc_id, bool) or not isinstance(doc_id, (str, int))):
        raise record_error(
            record, "index.doc_id", f"expected a string or integer id, found {type(doc_id).__name__}"
        )
    commit = timestamp(record, "index.commit_ts", s.get("commit_ts"))
    searchable = timestamp(record, "index.searchable_ts", s.get("searchable_ts"))
    if searchable is not None and commit is None:
        raise record_error(
            record, "index.commit_ts", "required with searchable_ts (the lag is searchable - commit)"
        )
    if commit is not None and searchable is not None and searchable < commit:
        raise record_error(
            record, "index.searchable_ts", f"searchable {searchable - commit:+.3f} s before its commit"
        )
    return IndexSection(
        ann,
        exact,
        ranks,
        ad,
        ed,
        stale,
        None if doc_id is None else str(doc_id),
        commit,
        searchable,
        "searchable_ts" in s,
    )


__all__ = ["IndexSection", "index_section", "timestamp"]
