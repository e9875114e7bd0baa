"""base/imports.py: the one resolver of ``"module:attribute"`` load strings."""

from __future__ import annotations

import os.path

import pytest

from kg_rageval.base.imports import import_target


def test_load_strings_resolve_and_fail_plainly():
    assert import_target("os.path:join") is os.path.join
    assert import_target("os.path") is os.path
    assert import_target(".errors:InputError", package="kg_rageval.base").__name__ == "InputError"
    with pytest.raises(ModuleNotFoundError, match="no_such_module_kgr"):
        import_target("no_such_module_kgr:f")
    with pytest.raises(AttributeError, match="no_such_attr"):
        import_target("os.path:no_such_attr")
