"""The one place kg-rageval imports something named by a string.

A ``"package.module:attribute"`` load string (a scorer's input loader, an ontology loader, a
lazy CLI subcommand, a judge or paraphrase plugin) or a lazily imported package attribute
resolves through :func:`import_target`; callers that face user input word the
``ImportError`` / ``AttributeError`` it lets through (naming the config key and plugin).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def import_target(target: str, *, package: str | None = None) -> Any:
    """The attribute that ``"module:attribute"`` names (``"module"`` alone: the module).
    ``package`` anchors a relative module (``".calibration"``), as in
    :func:`importlib.import_module`. A module that cannot be imported raises its
    ``ImportError``; a missing attribute raises ``AttributeError``."""
    module, sep, attr = target.partition(":")
    mod = importlib.import_module(module, package)
    return getattr(mod, attr) if sep else mod


def lazy_exports(
    package: str, module_of: dict[str, str], namespace: dict[str, Any], exported: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` (PEP 562) of a package whose public names
    are imported from their submodules on first use: ``module_of`` maps each name to its
    module (``".calibration"``, relative to ``package``); a name once loaded is kept in the
    package's ``namespace`` (its ``globals()``), so it is imported once; ``exported`` (its
    ``__all__``) is listed by ``dir()``. An unknown name is the usual ``AttributeError``.

        __getattr__, __dir__ = lazy_exports(__name__, _MODULE_OF, globals(), __all__)
    """

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = import_target(f"{module}:{name}", package=package)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exported))

    return __getattr__, __dir__
