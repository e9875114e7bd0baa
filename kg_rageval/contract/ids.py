"""The id-resolution options, declared once for every family that reads ontology ids.

Their meaning is implemented by :class:`kg_rageval.ontology.IdResolver` (see
:mod:`kg_rageval.ontology.resolver`); this module holds only the names, allowed values and
defaults, so the CLI and the audit config can offer them without importing NumPy.
"""

from __future__ import annotations

from typing import Any

from kg_rageval.contract.params import Param

ON_UNKNOWN = ("count", "error")
ON_UNKNOWN_GOLD = ("error", "count")
ON_STATUS = ("flag", "replace", "error")
ON_STATUS_GOLD = ("error", "replace", "flag")
NOT_IN_ONTOLOGY = "not_in_ontology"
"""The confusion category of a wrong prediction with an id the ontology lacks."""
INACTIVE = "inactive"
"""The confusion category of a wrong prediction whose predicted id is deprecated or revoked (and
flagged, ``on_status="flag"``); :meth:`kg_rageval.ontology.IdResolver.wrong_category` is the
one rule that files it, before any hierarchy relation."""

ID_PARAMS: tuple[Param, ...] = (
    Param(
        "on_unknown",
        "str",
        "count",
        "Predicted ids the ontology lacks: count them (the confusion category "
        "not_in_ontology; a fault of the system under test) or stop with an error.",
        choices=ON_UNKNOWN,
    ),
    Param(
        "on_unknown_gold",
        "str",
        "error",
        "Gold ids the ontology lacks: an input error naming file, line and "
        "field, or count them as not_in_ontology (gold that knowingly lies outside this release).",
        choices=ON_UNKNOWN_GOLD,
    ),
    Param(
        "on_status",
        "str",
        "flag",
        "Deprecated/revoked predicted ids: flag them with their replacement "
        "(scored where they stand), map them to their replacement, or stop with an error.",
        choices=ON_STATUS,
    ),
    Param(
        "on_status_gold",
        "str",
        "error",
        "Deprecated/revoked gold ids: an input error, map them to their "
        "replacement, or accept them (flagged).",
        choices=ON_STATUS_GOLD,
    ),
    Param(
        "aliases",
        "bool",
        True,
        "Resolve alternative ids (OBO alt_id, merged concepts) to their concept (counted in meta n_aliased).",
    ),
)
ID_DEFAULTS: dict[str, Any] = {p.name: p.default for p in ID_PARAMS}
"""The defaults, from the declaration (``IdOptions`` uses them: written once)."""
