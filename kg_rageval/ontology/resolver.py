"""One id resolver for every family: the same options and the same defaults everywhere.

Every ontology id a family reads — gold and predicted labels, mention ids, structured
outputs, filter values, concepts — is resolved by :class:`IdResolver`. The decisions:

* **Lookup.** An id is found as given, else as its expanded CURIE (``prefix:local`` with the
  ontology's prefix map), else as the compacted IRI. With ``aliases=True`` (default) an
  alternative id (OBO ``alt_id``, merged concepts) resolves to its concept and is counted
  (``n_aliased``).
* **Unknown ids** (not in the ontology after the lookup). A *gold* id is an input error
  naming file, line and field (``on_unknown_gold="error"``, default; ``"count"`` accepts it
  as an opaque concept, for gold that knowingly lies outside the release). A *predicted* id is
  a fault of the system under test: counted in its own confusion category
  ``not_in_ontology`` and never an abort (``on_unknown="count"``, default; ``"error"``
  raises).
* **Deprecated or revoked ids.** A *gold* id is an input error (``on_status_gold="error"``,
  default; ``"replace"`` maps it to its replacement when it has one and flags it otherwise,
  ``"flag"`` accepts it). A
  *predicted* one is flagged with its replacement and scored where it stands
  (``on_status="flag"``, default; ``"replace"`` maps it to its replacement; ``"error"``
  raises).
* **The confusion category of a wrong prediction** (:meth:`IdResolver.wrong_category`, the
  one rule every family files its errors by): ``not_in_ontology`` when an id of the pair is
  unknown, else ``inactive`` when the predicted id is flagged deprecated/revoked, else the
  hierarchy relation of the pair decides (parent, sibling, cousin…): a flagged id is never
  filed as a relation of the node it no longer stands for.

:data:`kg_rageval.contract.ids.ID_PARAMS` declares these options once; every family that reads ontology ids lists
them among its parameters, so the CLI flags and config keys are the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kg_rageval.base.errors import InputError, UnknownIdError

if TYPE_CHECKING:  # pragma: no cover
    from kg_rageval.ontology.model import Ontology

from kg_rageval.contract.ids import (
    ID_DEFAULTS,
    ID_PARAMS,
    INACTIVE,
    NOT_IN_ONTOLOGY,
    ON_STATUS,
    ON_STATUS_GOLD,
    ON_UNKNOWN,
    ON_UNKNOWN_GOLD,
)

UNKNOWN = -1
"""Index of an id the ontology lacks (after CURIE/IRI and alias lookup)."""


@dataclass(frozen=True)
class IdOptions:
    """The resolver's options (see the module docstring for their meaning and defaults)."""

    on_unknown: str = ID_DEFAULTS["on_unknown"]
    on_unknown_gold: str = ID_DEFAULTS["on_unknown_gold"]
    on_status: str = ID_DEFAULTS["on_status"]
    on_status_gold: str = ID_DEFAULTS["on_status_gold"]
    aliases: bool = ID_DEFAULTS["aliases"]

    def __post_init__(self) -> None:
        for name, allowed in (
            ("on_unknown", ON_UNKNOWN),
            ("on_unknown_gold", ON_UNKNOWN_GOLD),
            ("on_status", ON_STATUS),
            ("on_status_gold", ON_STATUS_GOLD),
        ):
            v = getattr(self, name)
            if v not in allowed:
                raise InputError(f"{name} must be one of {', '.join(allowed)}, not {v!r}")

    @classmethod
    def of(cls, **options: Any) -> IdOptions:
        """The options from keywords (as a family function receives them); an unknown keyword or
        a bad value is a :class:`~kg_rageval.base.errors.ConfigError` naming it (the declaration
        :data:`~kg_rageval.contract.ids.ID_PARAMS` checks them)."""
        from kg_rageval.contract.params import validate_options

        return cls(**validate_options(ID_PARAMS, options, where="ids"))


@dataclass
class Resolution:
    """Resolved ids of one role (``gold`` or ``pred``), aligned with the input list.

    ``idx``: node index (``UNKNOWN`` = not in the ontology, kept because the options count
    it); ``inactive``: the id is deprecated or revoked (and was not replaced); ``replacement``:
    the replacement id of an inactive id (or ``None``); ``aliased`` / ``replaced``: counts."""

    idx: np.ndarray
    inactive: np.ndarray
    replacement: list[str | None]
    aliased: int = 0
    replaced: int = 0

    @property
    def unknown(self) -> np.ndarray:
        return self.idx < 0


class IdResolver:
    """Resolves ids against one ontology with one set of :class:`IdOptions`."""

    def __init__(self, ontology: Ontology, options: IdOptions | None = None, **kw: Any):
        self.ontology = ontology
        self.options = options if options is not None else IdOptions(**kw)

    # ---------------------------------------------------------------- lookup
    def lookup(self, ids: Sequence[str]) -> tuple[np.ndarray, int]:
        """Indices of ``ids`` (``UNKNOWN`` where absent) and how many resolved as aliases."""
        o = self.ontology
        idx = o.lookup(ids)
        n_alias = 0
        miss = np.flatnonzero(idx < 0)
        if miss.size and self.options.aliases and o.n_aliases:
            amap = o.aliases
            for j in miss.tolist():
                t = amap.get(ids[j])
                if t is not None:
                    idx[j] = t
                    n_alias += 1
        return idx, n_alias

    def node_id(self, node_id: str) -> str | None:
        """The canonical id of one node id (as :meth:`lookup`: CURIE/IRI, an alternative id
        → its concept with ``aliases``), or ``None`` when the ontology lacks it; the
        ``resolve`` argument of :func:`kg_rageval.records.gold_node`."""
        if node_id in self.ontology.id_index:  # the common case, without the vectorised lookup
            return node_id
        i = int(self.lookup([node_id])[0][0])
        return self.ontology.ids[i] if i >= 0 else None

    # ---------------------------------------------------------------- resolve
    def resolve(self, ids: Sequence[str], role: str, locate: Callable[[int], str]) -> Resolution:
        """Resolve ``ids`` of ``role`` (``"gold"`` or ``"pred"``); ``locate(j)`` names the file,
        record, line and field of ``ids[j]`` for error messages. Raises
        :class:`UnknownIdError` / :class:`InputError` per the options, listing every offending
        id and the first place."""
        if role not in ("gold", "pred"):
            raise ValueError(f"role must be 'gold' or 'pred', not {role!r}")
        o, opt = self.ontology, self.options
        idx, n_alias = self.lookup(ids)
        unknown = np.flatnonzero(idx < 0)
        if unknown.size and (opt.on_unknown_gold if role == "gold" else opt.on_unknown) == "error":
            raise self.unknown_error(ids, unknown, role, locate)
        replaced_by = np.asarray(o.replaced_by, dtype=np.int64)
        bad = np.flatnonzero(self.inactive(idx))
        inactive = np.zeros(len(ids), dtype=bool)
        replacement: list[str | None] = [None] * len(ids)
        n_rep = 0
        if bad.size:
            mode = opt.on_status_gold if role == "gold" else opt.on_status
            if mode == "error":
                raise self.status_error(ids, idx, bad, role, locate)
            rep = replaced_by[idx[bad]]
            if mode == "replace":
                has = rep >= 0
                idx[bad[has]] = rep[has]
                n_rep = int(has.sum())
                bad, rep = bad[~has], rep[~has]  # without a replacement: flagged
            inactive[bad] = True
            for j, r in zip(bad.tolist(), rep.tolist()):
                replacement[j] = o.ids[r] if r >= 0 else None
        return Resolution(idx, inactive, replacement, n_alias, n_rep)

    def inactive(self, idx: np.ndarray) -> np.ndarray:
        """Mask of the node indices ``idx`` (``UNKNOWN`` and other negative codes allowed) that
        are deprecated or revoked."""
        idx = np.asarray(idx, dtype=np.int64)
        status = np.asarray(self.ontology.status)
        return (idx >= 0) & (status[np.maximum(idx, 0)] != 0) if idx.size else np.zeros(0, dtype=bool)

    @staticmethod
    def wrong_category(unknown: np.ndarray, pred_inactive: np.ndarray) -> np.ndarray:
        """The category of each wrong prediction that the ids decide before any hierarchy
        relation: :data:`NOT_IN_ONTOLOGY` where an id of the pair is unknown, else
        :data:`INACTIVE` where the predicted id is flagged deprecated/revoked, else ``None``
        (the pair's relation decides). ``unknown`` and ``pred_inactive``: boolean masks of the
        same length. The one rule of the hierarchy and linking families."""
        unknown = np.asarray(unknown, dtype=bool)
        out = np.full(unknown.shape, None, dtype=object)
        out[np.asarray(pred_inactive, dtype=bool)] = INACTIVE
        out[unknown] = NOT_IN_ONTOLOGY
        return out

    # ---------------------------------------------------------------- errors
    def unknown_error(
        self, ids: Sequence[str], unknown: np.ndarray, role: str, locate: Callable[[int], str]
    ) -> UnknownIdError:
        o = self.ontology
        names = sorted({str(ids[j]) for j in unknown.tolist()})
        first = int(unknown[0])
        where = locate(first) + (f" and {unknown.size - 1} more places" if unknown.size > 1 else "")
        hints = []
        one = o.suggest(str(ids[first]))
        if one:
            hints.append(one)
        n_alt = sum(1 for u in names if u in o.aliases)
        if n_alt and not self.options.aliases:
            hints.append(f"{n_alt} of them are alternative ids: aliases=true maps them")
        opt = "on_unknown_gold" if role == "gold" else "on_unknown"
        hints.append(
            f"{'gold ids must be ontology ids' if role == 'gold' else 'predicted ids'}; "
            f"{opt}='count' (--{opt.replace('_', '-')} count) counts them instead"
        )
        return UnknownIdError(names, where=where, hint="; ".join(hints))

    def status_error(
        self, ids: Sequence[str], idx: np.ndarray, bad: np.ndarray, role: str, locate: Callable[[int], str]
    ) -> InputError:
        from kg_rageval.ontology.model import STATUS_NAMES

        o = self.ontology
        msgs = []
        for j in bad[:10].tolist():
            i = int(idx[j])
            rep = int(o.replaced_by[i])
            msgs.append(
                f"{ids[j]!r} is {STATUS_NAMES[int(o.status[i])]}"
                + (f" (replaced by {o.ids[rep]!r})" if rep >= 0 else "")
                + f" ({locate(j)})"
            )
        more = f" (and {bad.size - 10} more)" if bad.size > 10 else ""
        opt = "on_status_gold" if role == "gold" else "on_status"
        return InputError(
            f"deprecated or revoked {role} ids: {'; '.join(msgs)}{more}; pass {opt}='replace' or "
            f"'flag' (--{opt.replace('_', '-')}) to score them"
        )
