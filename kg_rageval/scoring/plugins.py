"""Families from outside the package: entry points and ``module:attribute`` paths (``docs/plugins.md``).

* **Entry points.** A distribution declares families in the entry point group
  :data:`ENTRY_POINT_GROUP` (``kg_rageval.families``), each loading a
  :class:`~kg_rageval.scoring.scorer.Scorer`::

      [project.entry-points."kg_rageval.families"]
      exact_label = "my_package.family:EXACT_LABEL"

  :func:`load_entry_points` registers them. It is called explicitly where families are read
  — ``kg-rageval score``, ``kg-rageval metrics``, the audit config and the pytest plugin's
  gate checks — never on ``import kg_rageval``. Each entry point is loaded once per process.
* **Paths.** :func:`load_family` imports ``"module:attribute"`` (the audit config's
  ``plugins:`` list) and registers it.

Loading is safe: a broken entry point (its import raises, it names no ``Scorer``, its name
or a member name is taken — an entry point family never shadows a built-in one) is not
registered; its error, naming the entry point and its distribution, is kept in
:data:`~kg_rageval.scoring.registry.PLUGIN_ERRORS` and reported by ``kg-rageval metrics`` and
by any lookup of an unknown family (:func:`~kg_rageval.scoring.registry.get_scorer`), so it
breaks no command that does not use it. A path given explicitly raises its error at once.
Standard library only.
"""

from __future__ import annotations

from typing import Any

from kg_rageval.base.errors import ConfigError
from kg_rageval.base.imports import import_target
from kg_rageval.scoring.registry import PLUGIN_ERRORS, register
from kg_rageval.scoring.scorer import Scorer

ENTRY_POINT_GROUP = "kg_rageval.families"
"""The entry point group whose entries each load one :class:`Scorer`."""

_LOADED: set[tuple[str, str, str]] = set()  # (group, name, value) of entry points already tried
_SCANNED: dict[str, tuple[str, ...]] = {}  # group -> sys.path when its entry points were last read


def _builtin_names() -> set[str]:
    from kg_rageval.scoring.builtin import BUILTIN
    from kg_rageval.scoring.quality import QUALITY

    return {n for sc in BUILTIN + QUALITY for n in (sc.name, *sc.member_names)}


def _check(obj: Any, where: str) -> Scorer:
    if not isinstance(obj, Scorer):
        raise ConfigError(f"{where} is a {type(obj).__name__}, not a kg_rageval.scoring.Scorer")
    shadowed = sorted({obj.name, *obj.member_names} & _builtin_names())
    if shadowed:
        raise ConfigError(
            f"{where}: family {obj.name!r} may not shadow the built-in name"
            f"{'s' if len(shadowed) > 1 else ''} {', '.join(repr(s) for s in shadowed)}"
        )
    return obj


def load_entry_points(group: str = ENTRY_POINT_GROUP) -> list[str]:
    """Register the family of every entry point of ``group`` not tried yet; returns the names
    registered now. A broken entry point is skipped and its error kept in ``PLUGIN_ERRORS``
    (keyed by the entry point's name), never raised. The entry points are read again only when
    ``sys.path`` has changed since the last call (reading them costs about 0.1 s)."""
    import sys
    from importlib.metadata import entry_points

    added: list[str] = []
    if _SCANNED.get(group) == tuple(sys.path):  # nothing new can be installed on the same path
        return added
    _SCANNED[group] = tuple(sys.path)
    for ep in entry_points(group=group):
        key = (group, ep.name, ep.value)
        if key in _LOADED:
            continue
        _LOADED.add(key)
        dist = getattr(ep, "dist", None)
        origin = f" of {dist.name} {dist.version}" if dist is not None else ""
        where = f"entry point {ep.name!r} ({ep.value}{origin}, group {group!r})"
        try:
            sc = _check(ep.load(), where)
            if sc.name != ep.name:
                raise ConfigError(f"{where} loads family {sc.name!r}: the entry point must be named after it")
            register(sc)
        except Exception as exc:
            msg = (
                str(exc)
                if isinstance(exc, ConfigError) and where in str(exc)
                else f"{where} failed to load: {type(exc).__name__}: {exc}"
            )
            PLUGIN_ERRORS[ep.name] = msg
            continue
        PLUGIN_ERRORS.pop(ep.name, None)
        added.append(sc.name)
    return added


def load_family(path: str, *, where: str = "plugin") -> Scorer:
    """Import ``"module:attribute"`` (a :class:`Scorer`) and register it (the same declaration
    again is a no-op); every failure is a :class:`ConfigError` naming ``where`` and ``path``."""
    module, colon, attr = path.partition(":")
    if not colon or not module or not attr:
        raise ConfigError(f"{where}: {path!r} is not a 'module:attribute' path")
    label = f"{where} {path!r}"
    try:
        obj = import_target(path)
    except Exception as exc:
        raise ConfigError(f"{label} failed to load: {type(exc).__name__}: {exc}") from None
    sc = _check(obj, label)
    try:
        return register(sc)
    except ConfigError as exc:
        raise ConfigError(f"{label}: {exc}") from None


__all__ = ["ENTRY_POINT_GROUP", "load_entry_points", "load_family"]
