"""Real entry points for the plugin tests: a ``*.dist-info`` folder with an ``entry_points.txt``
put on ``sys.path``, which :mod:`importlib.metadata` reads as an installed distribution."""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path


@contextlib.contextmanager
def installed_entry_points(
    root: Path,
    entries: Mapping[str, str],
    *,
    dist: str = "kg_rageval_test_plugin",
    group: str = "kg_rageval.families",
) -> Iterator[Path]:
    """Install ``{entry point name: "module:attribute"}`` in ``group`` as distribution ``dist``
    0.1 under ``root`` for the ``with`` block; afterwards the path, the families registered from
    it and their load records are gone."""
    from kg_rageval.scoring import PLUGIN_ERRORS, REGISTRY, plugins, unregister

    info = root / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        f"[{group}]\n" + "".join(f"{n} = {v}\n" for n, v in entries.items())
    )
    before = set(REGISTRY)
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    try:
        yield info
    finally:
        sys.path.remove(str(root))
        importlib.invalidate_caches()
        for name in set(REGISTRY) - before:
            unregister(name)
        for name in entries:
            PLUGIN_ERRORS.pop(name, None)
        plugins._LOADED.difference_update({k for k in plugins._LOADED if k[0] == group and k[1] in entries})
        plugins._SCANNED.pop(group, None)
