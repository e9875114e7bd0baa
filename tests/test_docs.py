"""Docs that run: every command and code example in README.md and docs/ is executed here
against the bundled data (``ontologies/``, ``fixtures/``), in a scratch directory.

What each fenced block gets:

* ```` ```python ```` — executed (``exec``) in a fresh namespace;
* ```` ```bash ```` / ```` ```sh ```` — each ``kg-rageval ...`` command is run through the CLI
  in-process (``> FILE`` redirects stdout into FILE); its exit code must be 0, or the one its
  trailing comment (``# exit 1: a gate fails``) or an ``exit N`` marker names; any other
  command must be marked ``skip``;
* an untagged block whose lines start with ``kg-rageval`` is a synopsis: every ``--option``
  it names must appear in that command's ``--help``;
* a ``yaml`` block marked ``spec ONTOLOGY`` is a conformance spec: it must derive a schema
  on that bundled ontology.

A block that cannot run carries an explicit marker on the line before its fence, with the
reason: ``<!-- docs-test: skip: needs a Neo4j server -->``. Other markers:
``<!-- docs-test: requires java owlready2 -->`` (skipped, with that reason, when one of the
names is neither a command on the PATH nor an importable module: an optional extra on a core
install),
``<!-- docs-test: exit 1 -->``, ``<!-- docs-test: spec ontologies/enterprise-attack-18.1.json.gz -->``,
``<!-- docs-test: graph-mapping -->`` (a ``yaml`` mapping file for the graph loader).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from kg_rageval.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([A-Za-z]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"^<!--\s*docs-test:\s*(.*?)\s*-->[ \t]*$")
BUNDLED = ("ontologies", "fixtures", "shapes")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    text: str
    marker: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks() -> list[Block]:
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            mk = MARKER.match(before.strip())
            out.append(
                Block(
                    str(page.relative_to(ROOT)),
                    line,
                    m.group(1).lower(),
                    m.group(2),
                    mk.group(1) if mk else None,
                )
            )
    return out


BLOCKS = _blocks()


def _select(pred) -> list:
    return [pytest.param(b, id=b.id) for b in BLOCKS if pred(b)]


def _is_synopsis(b: Block) -> bool:
    first = next((ln for ln in b.text.splitlines() if ln.strip()), "")
    return b.lang == "" and first.startswith("kg-rageval ")


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A scratch directory where the bundled data sits at the paths the docs use."""
    for name in BUNDLED:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _honour_marker(b: Block) -> dict:
    """Skip as the block's marker says; return the marker's other settings."""
    if b.marker is None:
        return {}
    if b.marker.startswith("skip"):
        reason = b.marker[4:].lstrip(":— -").strip()
        assert reason, f"{b.id}: a docs-test skip marker must give its reason"
        pytest.skip(f"{b.id}: {reason}")
    if b.marker.startswith("requires "):
        import importlib.util

        for name in b.marker.split()[1:]:  # a command, or a module of an optional extra
            if shutil.which(name) is None and importlib.util.find_spec(name) is None:
                pytest.skip(f"{b.id}: needs {name}")
        return {}
    if b.marker.startswith("exit "):
        return {"exit": int(b.marker.split()[1])}
    if b.marker.startswith("spec "):
        return {"spec": b.marker.split(None, 1)[1]}
    if b.marker == "graph-mapping":
        return {}
    raise AssertionError(f"{b.id}: unknown docs-test marker {b.marker!r}")


def test_every_page_has_examples_and_markers_are_known():
    assert len(BLOCKS) > 40
    for b in BLOCKS:
        if b.marker:
            assert re.match(r"(skip\b.*\S|requires \w+( \w+)*|exit \d+|spec \S+|graph-mapping)$", b.marker), (
                b.id
            )


@pytest.mark.parametrize("block", _select(lambda b: b.lang == "python"))
def test_python_example_runs(block: Block, workdir):
    _honour_marker(block)
    code = compile(block.text, block.id, "exec")
    with contextlib.redirect_stdout(io.StringIO()):
        exec(code, {"__name__": "docs_example"})


def _commands(text: str) -> list[tuple[str, int | None]]:
    """``(command, expected exit code)``: a trailing comment saying ``exit N`` sets it."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for ln in joined.splitlines():
        ln = ln.strip()
        if not ln or ln.startswith("#"):
            continue
        comment = re.search(r"\s#\s[^'\"]*$", ln)
        m = re.search(r"\bexit (\d+)\b", comment.group(0)) if comment else None
        out.append((ln, int(m.group(1)) if m else None))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("block", _select(lambda b: b.lang in ("bash", "sh", "shell")))
def test_shell_example_runs(block: Block, workdir):
    settings = _honour_marker(block)
    for command, expected in _commands(block.text):
        for part in command.split("&&"):
            tokens = shlex.split(part, comments=True)
            out_file = None
            if ">" in tokens:
                k = tokens.index(">")
                tokens, out_file = tokens[:k], tokens[k + 1]
            assert tokens and tokens[0] in ("kg-rageval", ".venv/bin/kg-rageval"), (
                f"{block.id}: {part.strip()!r} is not a kg-rageval command; run it here or mark the "
                "block <!-- docs-test: skip: reason -->"
            )
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                code = main(tokens[1:])
            if out_file:
                Path(out_file).write_text(buf.getvalue(), encoding="utf-8")
            want = expected if expected is not None else settings.get("exit", 0)
            assert code == want, f"{block.id}: {part.strip()!r} exited {code}, not {want}"


def _help(path: tuple[str, ...]) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main([*path, "--help"]) == 0, path
    return buf.getvalue()


@pytest.mark.parametrize("block", _select(_is_synopsis))
def test_synopsis_options_exist(block: Block):
    _honour_marker(block)
    text = re.sub(r"\\\n", " ", block.text)
    current: tuple[str, ...] | None = None
    options: dict[tuple[str, ...], set[str]] = {}
    for line in text.splitlines():
        if line.startswith("kg-rageval "):
            words = []
            for w in line.split()[1:]:
                if not re.fullmatch(r"[a-z][a-z-]*", w):
                    break
                words.append(w)
            current = tuple(words)
            options.setdefault(current, set())
        if current is not None:
            for opt in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line):
                options[current].add(opt)
    assert options, block.id
    for path, opts in options.items():
        helptext = _help(path)
        missing = sorted(o for o in opts if o not in helptext)
        assert not missing, f"{block.id}: `kg-rageval {' '.join(path)}` has no {', '.join(missing)}"


@pytest.mark.parametrize(
    "block", _select(lambda b: b.lang == "yaml" and (b.marker or "").startswith("spec "))
)
def test_spec_example_derives_on_the_bundled_ontology(block: Block, workdir):
    import yaml

    from kg_rageval.families.conformance import derive_schema, parse_spec
    from kg_rageval.ontology import load_ontology

    settings = _honour_marker(block)
    onto = load_ontology(settings["spec"])
    derived = derive_schema(onto, parse_spec(yaml.safe_load(block.text), source=block.id))
    assert derived.json_schema["properties"]


def test_ci_run_passes_its_arguments_to_pytest():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    last = [ln for ln in script.splitlines() if ln.strip()][-1]
    assert last.startswith("exec ") and "-m pytest" in last and last.endswith('"$@"'), last


@pytest.mark.parametrize("block", _select(lambda b: b.lang == "yaml" and b.marker == "graph-mapping"))
def test_graph_mapping_example_resolves(block: Block):
    import yaml

    from kg_rageval.ontology.loaders.neo4j import resolve_mapping

    m = resolve_mapping(yaml.safe_load(block.text))
    assert m.node_label and m.relationships
