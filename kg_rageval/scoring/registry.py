"""The one registry of metric families (name → :class:`~kg_rageval.scoring.scorer.Scorer`).

The built-in families (:mod:`kg_rageval.scoring.builtin`) are registered on import; a plugin
or a test adds its own with :func:`register` (a later family with the same name replaces the
earlier one). The CLI, the audit, the pytest plugin, ``score_distributed`` and
``kg-rageval metrics`` all read this mapping. Standard library only.
"""

from __future__ import annotations

from typing import Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.contract.params import did_you_mean
from kg_rageval.scoring.scorer import Scorer

REGISTRY: dict[str, Scorer] = {}


def register(scorer: Scorer) -> Scorer:
    """Add or replace a family; its metric specs get the family's name."""
    from dataclasses import replace

    if any(m.family != scorer.name for m in scorer.metrics):
        scorer = replace(scorer, metrics=tuple(replace(m, family=scorer.name) for m in scorer.metrics))
    REGISTRY[scorer.name] = scorer
    return scorer


def unregister(name: str) -> None:
    REGISTRY.pop(name, None)


def get_scorer(name: str | Scorer) -> Scorer:
    """The registered family ``name`` (a :class:`Scorer` is returned as it is); an unknown
    name raises :class:`ConfigError` with a "did you mean" and the known families."""
    if isinstance(name, Scorer):
        return name
    sc = REGISTRY.get(name)
    if sc is None:
        raise ConfigError(f"unknown family {name!r}{did_you_mean(name, REGISTRY)}; known: "
                          f"{', '.join(sorted(REGISTRY))}")
    return sc


def score(family: str, ontology: Any, records: Any, **kwargs: Any):
    """``get_scorer(family).score(ontology, records, **kwargs)``: the library entry point."""
    return get_scorer(family).score(ontology, records, **kwargs)


def family_of_member(member: str) -> str | None:
    """The registered family whose evaluations include one named ``member`` (``Family.name``)."""
    for name, sc in REGISTRY.items():
        if member in sc.member_names:
            return name
    return None


def _register_builtins() -> None:
    from kg_rageval.scoring.builtin import BUILTIN, FILE_FAMILIES
    from kg_rageval.scoring.quality import QUALITY

    for sc in BUILTIN + FILE_FAMILIES + QUALITY:
        register(sc)


_register_builtins()
