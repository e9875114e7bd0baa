"""The one place kg-rageval imports something named by a string.

A ``"package.module:attribute"`` load string (a scorer's input loader, an ontology loader, a
lazy CLI subcommand, a judge or paraphrase plugin) or a lazily imported package attribute
resolves through :func:`import_target`; callers that face user input word the
``ImportError`` / ``AttributeError`` it lets through (naming the config key and plugin).
"""

from __future__ import annotations

import importlib
from typing import Any


def import_target(target: str, *, package: str | None = None) -> Any:
    """The attribute that ``"module:attribute"`` names (``"module"`` alone: the module).
    ``package`` anchors a relative module (``".calibration"``), as in
    :func:`importlib.import_module`. A module that cannot be imported raises its
    ``ImportError``; a missing attribute raises ``AttributeError``."""
    module, sep, attr = target.partition(":")
    mod = importlib.import_module(module, package)
    return getattr(mod, attr) if sep else mod
