"""One version, reported the same everywhere: pyproject.toml's ``[project] version``,
``kg_rageval.__version__`` (which the audit manifest's ``tool.version`` reads), ``kg-rageval
--version`` and the newest entry of CHANGELOG.md."""

from __future__ import annotations

import re
from pathlib import Path

import kg_rageval
from kg_rageval.cli.main import main

ROOT = Path(__file__).resolve().parents[1]


def _pyproject_version() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    project = text.split("[project]", 1)[1].split("\n[", 1)[0]
    found = re.findall(r'^version = "([^"]+)"$', project, re.M)
    assert len(found) == 1, found
    return found[0]


def test_package_version_is_pyprojects():
    assert kg_rageval.__version__ == _pyproject_version() == "0.2.0"


def test_cli_version_is_the_package_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"kg-rageval, version {kg_rageval.__version__}\n"


def test_changelog_newest_entry_is_this_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", text, re.M)
    assert versions[:2] == [kg_rageval.__version__, "0.1.0"], versions
