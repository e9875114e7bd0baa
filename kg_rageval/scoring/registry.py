"""The one registry of metric families (name → :class:`~kg_rageval.scoring.scorer.Scorer`).

The built-in families (:mod:`kg_rageval.scoring.builtin`, :mod:`kg_rageval.scoring.quality`)
are registered on import; a plugin or a test adds its own with :func:`register`. One name
space: a family's name and its member names (``Scorer.member_names``, the ``Family.name`` of
its evaluations, which ``assert_gates`` maps back to the family) are used by no other
registered family, so :func:`register` refuses a family that reuses one (registering the
same declaration again is a no-op; replacing a family takes ``replace=True``). Families from
outside (entry points, ``module:attribute`` paths) come in through :mod:`.plugins`. The CLI,
the audit, the pytest plugin, ``score_distributed`` and ``kg-rageval metrics`` all read this
mapping. Standard library only.
"""

from __future__ import annotations

from typing import Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.contract.params import did_you_mean
from kg_rageval.scoring.scorer import Scorer

REGISTRY: dict[str, Scorer] = {}

PLUGIN_ERRORS: dict[str, str] = {}
"""``{entry point name: error}`` of the entry points that failed to load
(:func:`kg_rageval.scoring.plugins.load_entry_points`): reported by ``kg-rageval metrics`` and
by :func:`get_scorer` for an unknown family, never raised on their own."""


def register(scorer: Scorer, *, replace: bool = False) -> Scorer:
    """Add a family (its metric specs get the family's name) and return it as registered.

    Refused with :class:`ConfigError` when its name or one of its member names is the name or
    a member name of *another* registered family, or when a different family is registered
    under its name and ``replace`` is false. Registering an equal declaration again returns
    the registered one (idempotent). ``replace=True`` swaps the family of that name (its
    members must still be unique among the others)."""
    import dataclasses

    if not isinstance(scorer, Scorer):
        raise ConfigError(f"register() needs a kg_rageval.scoring.Scorer, got {type(scorer).__name__}")
    if any(m.family != scorer.name for m in scorer.metrics):
        scorer = dataclasses.replace(
            scorer, metrics=tuple(dataclasses.replace(m, family=scorer.name) for m in scorer.metrics)
        )
    old = REGISTRY.get(scorer.name)
    if old is not None and not replace:
        if old == scorer:
            return old
        raise ConfigError(
            f"family {scorer.name!r} is already registered ({old.target}); pass replace=True "
            f"to replace it with {scorer.target}"
        )
    mine = {scorer.name, *scorer.member_names}
    for name, other in REGISTRY.items():
        if name == scorer.name:
            continue
        clash = sorted(mine & {other.name, *other.member_names})
        if clash:
            raise ConfigError(
                f"family {scorer.name!r}: {', '.join(repr(c) for c in clash)} "
                f"{'is' if len(clash) == 1 else 'are'} already used by family {name!r} "
                "(family and member names must be unique: evaluations are traced back "
                "to their family by member name)"
            )
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
        if name in PLUGIN_ERRORS:
            raise ConfigError(f"family {name!r} is not available: {PLUGIN_ERRORS[name]}")
        broken = (
            f" ({len(PLUGIN_ERRORS)} entry point(s) failed to load: {', '.join(sorted(PLUGIN_ERRORS))})"
            if PLUGIN_ERRORS
            else ""
        )
        raise ConfigError(
            f"unknown family {name!r}{did_you_mean(name, REGISTRY)}; known: "
            f"{', '.join(sorted(REGISTRY))}{broken}"
        )
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
    from kg_rageval.scoring.ingestion import INGESTION
    from kg_rageval.scoring.quality import QUALITY
    from kg_rageval.scoring.reformulation import REFORMULATION

    for sc in BUILTIN + FILE_FAMILIES + QUALITY + REFORMULATION + INGESTION:
        register(sc)


_register_builtins()
