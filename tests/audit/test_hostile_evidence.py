"""Hostile inputs, part 2: evidence that can be trusted (issue #18).

Tampered and malformed ``.kgro`` caches, ``audit --verify`` against edited reports and
manifests, atomic report writes under a lock (with a fault-injection property test), escaping
of input-derived names, secrets in URIs and settings.
"""

from __future__ import annotations

import errno
import json
import shutil
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kg_rageval.audit.reports import ALL_FILES, LOCK, out_lock, sha256_file
from kg_rageval.audit.verify import verify_manifest
from kg_rageval.base.errors import InputError
from kg_rageval.ontology import OntologyBuilder, load_ontology
from kg_rageval.ontology.cache import load_compiled, save_compiled


@pytest.fixture()
def wd(workdir):
    return workdir


def _one_line_error(err: str) -> None:
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


# ---------------------------------------------------------------------- .kgro caches
def _rewrite(src: Path, dst: Path, **changes) -> Path:
    z = np.load(src, allow_pickle=False)
    arrays = {k: z[k] for k in z.files}
    arrays.update(changes)
    with open(dst, "wb") as fh:
        np.savez(fh, **arrays)
    return dst


@pytest.fixture()
def kgro(wd, monkeypatch):
    """A cache written under another machine's key: loading it runs every structural check."""
    onto = load_ontology(wd / "vehicles.csv")
    monkeypatch.setenv("KG_RAGEVAL_CACHE_KEY", "another machine")
    path = save_compiled(onto, wd / "vehicles.kgro")
    monkeypatch.delenv("KG_RAGEVAL_CACHE_KEY")
    return path, onto


@pytest.mark.parametrize("keyed", [True, False])
def test_tampered_cache_edges_refused(stub, wd, cli, monkeypatch, keyed):
    """A cache this machine wrote fails its keyed digest; one from elsewhere (another key) is
    verified in full and fails its recomputed content hash."""
    onto = load_ontology(wd / "vehicles.csv")
    if not keyed:
        monkeypatch.setenv("KG_RAGEVAL_CACHE_KEY", "a colleague's key")
    path = save_compiled(onto, wd / "vehicles.kgro")
    monkeypatch.delenv("KG_RAGEVAL_CACHE_KEY", raising=False)
    assert load_compiled(path).content_hash == onto.content_hash  # genuine: loads either way
    z = np.load(path)
    parent_idx = z["parent_idx"].copy()
    i, j = onto.index("submarine"), onto.index("car")
    # re-hang submarine under car, keeping the genuine content hash in the header
    row = int(z["parent_ptr"][i])
    parent_idx[row] = j
    bad = _rewrite(path, wd / "tampered.kgro", parent_idx=parent_idx)
    message = "keyed digest mismatch" if keyed else "content hash mismatch: the file says sha256:"
    with pytest.raises(InputError, match=message):
        load_compiled(bad)
    cfg = wd / "t.yaml"
    cfg.write_text(
        (wd / "pass.yaml").read_text().replace("ontology: vehicles.csv", "ontology: tampered.kgro")
    )
    code, out, err = cli(["audit", "-c", str(cfg), "--out", str(wd / "out")])
    assert code == 2 and out == ""
    _one_line_error(err)
    assert "the cache was modified" in err and "recompile it" in err
    assert not (wd / "out" / "manifest.json").exists()


def test_tampered_closure_refused(wd, monkeypatch):
    onto = load_ontology(wd / "vehicles.csv")
    monkeypatch.setenv("KG_RAGEVAL_CACHE_KEY", "another machine")  # no keyed shortcut: full check
    path = save_compiled(onto, wd / "vehicles.kgro")
    monkeypatch.delenv("KG_RAGEVAL_CACHE_KEY")
    z = np.load(path)
    anc = z["anc_idx"].copy()
    # make 'boat' an ancestor of 'sedan' in the closure only (edges and hash untouched)
    s = onto.index("sedan")
    a, b = int(z["anc_ptr"][s]), int(z["anc_ptr"][s + 1])
    anc[a] = onto.index("boat") if anc[a] != onto.index("boat") else anc[a]
    bad = _rewrite(path, wd / "closure.kgro", anc_idx=anc)
    with pytest.raises(
        InputError, match="ancestor closure does not follow from the edges|depths do not follow"
    ):
        load_compiled(bad)
    assert b > a


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda p: p.write_bytes(b"\x00garbage" * 10), "not a kg-rageval compiled ontology"),
        (lambda p: p.write_bytes(p.read_bytes()[:200]), "not a kg-rageval compiled ontology"),
        (
            lambda p: _rewrite(p, p, header=np.frombuffer(b"[1, 2", dtype=np.uint8)),
            "not a kg-rageval compiled ontology",
        ),
        (
            lambda p: _rewrite(p, p, parent_ptr=np.array([0, 5, 1], dtype=np.int64)),
            "not a valid index pointer",
        ),
        (
            lambda p: _rewrite(p, p, parent_idx=np.full_like(np.load(p)["parent_idx"], 999)),
            "points outside the 7 nodes",
        ),
        (lambda p: _rewrite(p, p, ids_len=np.array([1, 2], dtype=np.int64)), "string lengths do not match"),
        (lambda p: _rewrite(p, p, depth_min=np.zeros((2, 2), dtype=np.int32)), "not a 1-d integer array"),
    ],
)
def test_malformed_cache_is_a_clear_error(kgro, cli, make, message):
    path, _ = kgro
    make(path)
    code, out, err = cli(["ontology", "inspect", str(path)])
    assert code == 2
    _one_line_error(err)
    assert message in err


def test_nul_and_control_characters_in_labels_round_trip(tmp_path):
    b = OntologyBuilder("x")
    b.add_node("root", label="Root\x00with NUL")
    b.add_node("a", label="tab\there\x01 bell\x07", synonyms=["syn\x00one", ""])
    b.add_node("c", label=None)
    b.add_edge("a", "root")
    b.add_edge("c", "a")
    onto = b.build()
    back = load_compiled(save_compiled(onto, tmp_path / "n.kgro"))
    assert back.labels == onto.labels == ("Root\x00with NUL", "tab\there\x01 bell\x07", None)
    assert back.synonyms == onto.synonyms and back.ids == onto.ids
    assert back.content_hash == onto.content_hash


def test_control_character_in_id_refused_and_bidi_flagged(tmp_path, cli):
    p = tmp_path / "t.csv"
    p.write_text("child,parent\nroot,\nba\x01d,root\n")
    code, out, err = cli(["ontology", "inspect", str(p)])
    assert code == 2
    _one_line_error(err)
    assert "control character U+0001" in err
    p.write_text("child,parent\nroot,\nadmin\u202egpj.exe,root\n")
    onto = load_ontology(p)
    assert onto.diagnostics.get("bidi_ids") == 1
    assert any("bidirectional-override" in w for w in onto.warnings)


def test_closure_limit_refuses_before_allocating(cli, tmp_path):
    p = tmp_path / "chain.csv"
    n = 30_000
    p.write_text("child,parent\nc0,\n" + "".join(f"c{i},c{i - 1}\n" for i in range(1, n)))
    code, out, err = cli(["--limit", "max_closure_entries=1000000", "ontology", "inspect", str(p)])
    assert code == 2
    _one_line_error(err)
    assert f"needs at least {n * (n + 1) // 2} (node, ancestor) pairs" in err
    assert "beyond the limit max_closure_entries = 1000000" in err
    assert "--limit max_closure_entries=N" in err


# ---------------------------------------------------------------------- --verify
def _audit(cli, wd, config="pass.yaml", out="out"):
    code, stdout, err = cli(["audit", "-c", str(wd / config), "--out", str(wd / out), "-q"])
    return code, wd / out / "manifest.json"


def test_manifest_hashes_every_report_file(stub, wd, cli):
    code, man = _audit(cli, wd)
    assert code == 0
    doc = json.loads(man.read_text())
    assert set(doc["reports"]) == {"report.json", "report.md", "report.html", "junit.xml"}
    for name, h in doc["reports"].items():
        assert sha256_file(wd / "out" / name) == h
    assert doc["manifest"]["inputs"]["ontology"]["file_hash"].startswith("sha256:")


def test_verify_exits_1_when_the_verified_audit_failed(stub, wd, cli):
    code, man = _audit(cli, wd, config="fail.toml")
    assert code == 1
    code, out, _ = cli(["audit", "--verify", str(man), "-q"])
    assert code == 1
    assert "identical numbers" in out and "but the verified audit FAILED its gates" in out


@pytest.mark.parametrize(
    "edit,expect",
    [
        (
            lambda d: (d / "report.json").write_text(
                (d / "report.json").read_text().replace('"passed": true', '"passed": false')
            ),
            "report file report.json was changed after the audit wrote it",
        ),
        (lambda d: (d / "junit.xml").unlink(), "report file junit.xml is missing"),
        (lambda d: (d / "report.md").write_text("# Audit: PASSED\n"), "report file report.md was changed"),
    ],
)
def test_verify_rejects_edited_reports(stub, wd, cli, edit, expect):
    _, man = _audit(cli, wd)
    edit(wd / "out")
    code, out, _ = cli(["audit", "--verify", str(man), "-q"])
    assert code == 4 and "NOT verified" in out and expect in out


def test_verify_rejects_edited_manifest_numbers_and_missing_inputs(stub, wd, cli):
    _, man = _audit(cli, wd)
    doc = json.loads(man.read_text())
    doc["numbers"]["gates"][0]["status"] = "pass"
    doc["numbers"]["gates"][0]["observed"] = 0.99
    del doc["manifest"]["inputs"]["corpus"]
    man.write_text(json.dumps(doc))
    code, out, _ = cli(["audit", "--verify", str(man), "-q"])
    assert code == 4
    assert "the manifest's 'numbers' do not match its metrics_digest (edited)" in out
    assert "input corpus is read by the audit but not recorded in the manifest" in out


def test_verify_shows_which_gates_changed(stub, wd, cli):
    _, man = _audit(cli, wd)
    rec = wd / "records.jsonl"
    rec.write_text(rec.read_text().replace('"pred": ["boat"]', '"pred": ["submarine"]'))
    code, out, _ = cli(["audit", "--verify", str(man), "-q"])
    assert code == 4
    assert "input records changed" in out
    assert (
        "    gate stub_accuracy[slice:intent=compare] > 0.6: pass 0.6666666666666666 -> fail 0.3333333333333333"
        in out
    )


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "manifest is not JSON"),
        ("[1, 2]", "manifest must be a JSON object, found list"),
        (
            '{"manifest": {"inputs": []}}',
            "malformed manifest: 'metrics_digest' is missing or not a string; 'inputs' is",
        ),
        ('{"manifest": 3}', "malformed manifest: 'manifest' is not an object"),
        ("[" * 100000 + "]" * 100000, "manifest"),
    ],
)
def test_malformed_manifest_is_exit_2(tmp_path, cli, content, message):
    p = tmp_path / "manifest.json"
    p.write_text(content)
    code, out, err = cli(["audit", "--verify", str(p)])
    assert code == 2
    _one_line_error(err)
    assert message in err


# ---------------------------------------------------------------------- atomic writes and lock
def test_older_report_is_moved_aside_not_mixed(stub, wd, cli):
    code, man = _audit(cli, wd, config="fail.toml")
    old = json.loads(man.read_text())
    cfg = wd / "pass2.yaml"
    cfg.write_text(
        (wd / "pass.yaml").read_text().replace("formats", "formats") + "report: {formats: [json]}\n"
    )
    code, man = _audit(cli, wd, config="pass2.yaml")
    assert code == 0
    out = wd / "out"
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "manifest.json",
        "previous",
        "report.json",
    ]
    assert json.loads((out / "previous" / "manifest.json").read_text()) == old
    assert set(json.loads(man.read_text())["reports"]) == {"report.json"}
    assert not list(out.glob(".run-*"))
    code, stdout, _ = cli(["audit", "--verify", str(man), "-q"])
    assert code == 0


def test_two_audits_into_one_out_cannot_interleave(stub, wd, cli):
    out = wd / "out"
    out.mkdir()
    with out_lock(out):
        code, stdout, err = cli(["audit", "-c", str(wd / "pass.yaml"), "--out", str(out), "-q"])
    assert code == 2
    _one_line_error(err)
    assert "another kg-rageval audit is writing reports into this directory" in err
    assert [p.name for p in out.iterdir()] == [LOCK]


class Killed(BaseException):
    """Stands for kill -9: no handler runs (cleanup is disabled while it propagates)."""


def _faulty(monkeypatch, at: int, kind: str):
    """Make the ``at``-th file write or rename in the report writer fail with ``kind``."""
    import os as _os
    import pathlib

    import kg_rageval.audit.reports as reports

    calls = {"n": 0}
    real_write, real_replace, real_rmtree = pathlib.Path.write_text, _os.replace, shutil.rmtree

    def tick():
        calls["n"] += 1
        if calls["n"] == at:
            if kind == "kill":
                monkeypatch.setattr(reports.shutil, "rmtree", lambda *a, **k: None)
                raise Killed()
            raise OSError(errno.ENOSPC, "No space left on device")

    def write_text(self, data, *a, **k):
        if calls["n"] + 1 == at and kind == "disk_full":
            real_write(self, data[: len(data) // 2], *a, **k)  # a torn write
        tick()
        return real_write(self, data, *a, **k)

    def replace(src, dst):
        tick()
        return real_replace(src, dst)

    monkeypatch.setattr(pathlib.Path, "write_text", write_text)
    monkeypatch.setattr(reports.os, "replace", replace)
    return calls, real_rmtree


_ATTEMPT = st.tuples(
    st.sampled_from(["clean", "old"]),
    st.integers(min_value=0, max_value=11),
    st.sampled_from(["kill", "disk_full"]),
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attempts=st.lists(_ATTEMPT, min_size=1, max_size=3))
def test_no_fault_sequence_yields_a_verified_report_that_differs_from_a_clean_run(stub, wd, attempts):
    """Audits written one after another into one --out, each killed or hitting a full disk at
    any of its writes and renames (``at`` = 0: no fault): whatever is left is either refused
    by --verify or exactly one run's complete report set — the last one when it finished."""
    from kg_rageval.audit.config import load_config
    from kg_rageval.audit.reports import write_reports
    from kg_rageval.audit.runner import run_audit

    runs = {
        "clean": run_audit(load_config(wd / "pass.yaml"), progress=False),
        "old": run_audit(load_config(wd / "fail.toml"), progress=False),
    }
    out = wd / ("out-" + "-".join(f"{w}{a}{k[0]}" for w, a, k in attempts))
    shutil.rmtree(out, ignore_errors=True)
    finished = False
    for which, at, kind in attempts:
        with pytest.MonkeyPatch.context() as mp:
            if at:
                _faulty(mp, at, kind)
            try:
                write_reports(runs[which], out)
                finished = True
            except (OSError, Killed):
                finished = False
    man = out / "manifest.json"
    try:
        res = verify_manifest(man)
    except InputError:
        assert not finished  # no manifest: clearly incomplete
        return
    if not res["ok"]:
        assert not finished  # a finished write is always verified
        return
    doc = json.loads(man.read_text())
    report = json.loads((out / "report.json").read_text())
    matches = [
        w
        for w, r in runs.items()
        if doc["manifest"]["metrics_digest"] == r.manifest["metrics_digest"]
        and report["gates"] == [g.to_dict() for g in r.gate_results]
    ]
    assert len(matches) == 1  # one run's complete set, never a mix
    if finished:
        assert matches == [attempts[-1][0]]
    for name, h in doc["reports"].items():
        assert sha256_file(out / name) == h


def test_a_full_disk_names_the_file_it_could_not_write(stub, wd, cli, monkeypatch):
    import kg_rageval.audit.report_json as report_json

    def full(result, path):
        raise OSError(errno.ENOSPC, "No space left on device")  # as a write(2) on a full disk: no file name

    monkeypatch.setattr(report_json, "write_json", full)
    code, stdout, err = cli(["audit", "-c", str(wd / "pass.yaml"), "--out", str(wd / "out"), "-q"])
    assert code == 2
    _one_line_error(err)
    assert "No space left on device (writing " in err and str(wd / "out" / "report.json") in err
    assert not (wd / "out" / "manifest.json").exists()


# ---------------------------------------------------------------------- escaping
def test_names_are_escaped_in_markdown_html_junit(stub, wd, cli):
    evil_name = "x\n# PASSED\n<!-- hidden --> | cell | <script>alert(1)</script>\x00\u202e"
    recs = []
    for i, line in enumerate((wd / "records.jsonl").read_text().splitlines()):
        r = json.loads(line)
        r.setdefault("slices", {})["intent"] = "a|b\n## injected" if i % 2 else "<img src=x onerror=alert(1)>"
        recs.append(r)
    (wd / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    cfg = wd / "evil.json"
    cfg.write_text(
        json.dumps(
            {
                "name": evil_name,
                "ontology": "vehicles.csv",
                "records": "records.jsonl",
                "families": {"stub": {}},
                "gates": ["stub_accuracy >= 0.9"],
                "slice_gates": {"intent=<img src=x onerror=alert(1)>": ["stub_accuracy >= 0.1"]},
            }
        )
    )
    code, stdout, err = cli(["audit", "-c", str(cfg), "--out", str(wd / "out"), "-q"])
    assert code == 1, err
    md = (wd / "out" / "report.md").read_text()
    assert md.count("\n# ") == 0 and md.startswith("# Audit x \\# PASSED \\<\\!-- hidden --\\> \\| cell \\|")
    assert "<!--" not in md and "<script>" not in md and "\n## injected" not in md
    assert "(U+202E)" in md and "\x00" not in md
    for line in md.splitlines():
        if line.startswith(("| PASS", "| FAIL", "| MISSING")):  # gate rows keep their 4 cells
            assert len(line.replace("\\|", "").split("|")) == 6
    html = (wd / "out" / "report.html").read_text()
    # the report's own sorting/filtering script is the only one; the name injects none
    assert html.count("<script") == 1 and "<script>alert" not in html
    assert "<!-- hidden -->" not in html and "<img src=x" not in html
    assert "&lt;script&gt;" in html and "\x00" not in html
    root = ET.parse(wd / "out" / "junit.xml").getroot()  # valid XML despite the NUL
    assert root.find("testsuite").get("name").startswith("kg-rageval audit: x # PASSED")


# ---------------------------------------------------------------------- secrets
def test_bolt_password_never_printed(stub, wd, cli, monkeypatch):
    uri = "bolt://neo4j:hunter2-secret@127.0.0.1:1"
    code, out, err = cli(["ontology", "inspect", uri])
    assert code == 2 and "hunter2" not in out + err
    cfg = wd / "s.yaml"
    cfg.write_text(
        f"ontology: {uri}\nrecords: records.jsonl\ngates: ['x >= 1']\n"
        "judge: {model: m, api_key: sk-live-123, headers: {Authorization: Bearer abc}, "
        "base_url: 'https://u:pw-9@judge.local/v1?token=zzz'}\n"
    )
    for fmt in ("text", "json"):
        code, out, err = cli(["audit", "-c", str(cfg), "--format", fmt, "--out", str(wd / "o")])
        assert code == 2 and "hunter2" not in out + err
        assert "come from the environment only" in err  # a URI with credentials is refused, unprinted


def test_judge_keys_redacted_in_manifest_and_reports(stub, wd, cli):
    cfg = wd / "j.yaml"
    cfg.write_text(
        (wd / "pass.yaml").read_text()
        + "judge: {model: m, api_key: sk-live-123, api_key_env: OPENAI_API_KEY, "
        "headers: {Authorization: Bearer abc}, base_url: 'https://u:pw-9@judge.local/v1?token=zzz'}\n"
    )
    code, man = _audit(cli, wd, config="j.yaml")
    assert code == 0
    for name in ALL_FILES:
        text = (wd / "out" / name).read_text()
        for secret in ("sk-live-123", "Bearer abc", "pw-9", "zzz"):
            assert secret not in text, (name, secret)
    judge = json.loads(man.read_text())["manifest"]["judge"]
    assert judge == {
        "model": "m",
        "api_key": "***",
        "api_key_env": "OPENAI_API_KEY",
        "headers": {"Authorization": "***"},
        "base_url": "https://u:***@judge.local/v1?token=***",
    }
    code, out, _ = cli(["audit", "-c", str(cfg), "--format", "json", "-q"])
    assert "sk-live-123" not in out and "pw-9" not in out


_AUDIT_SCRIPT = """
import sys
from kg_rageval.audit.families import FamilySpec, register_family
register_family(FamilySpec("stub", "kg_rageval.audit.stub:score_stub", ("labels",)))
from kg_rageval.cli.main import main
sys.exit(main(["audit", "-c", sys.argv[1], "--out", sys.argv[2], "-q"]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.3, 0.6, 0.9, 1.2, 1.5, 2.0])
def test_real_kill_9_never_leaves_an_accepted_mixed_report(stub, wd, delay):
    """A real ``kill -9`` of an audit process at some moment while an older report set of
    another audit sits in ``--out``: the set left behind is either verified and exactly one
    run's, or refused by --verify."""
    import os
    import signal
    import subprocess
    import sys
    import time as _time

    from kg_rageval.audit.config import load_config
    from kg_rageval.audit.reports import write_reports
    from kg_rageval.audit.runner import run_audit

    out = wd / "out"
    old = run_audit(load_config(wd / "fail.toml"), progress=False)
    write_reports(old, out)
    clean = run_audit(load_config(wd / "pass.yaml"), progress=False)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.Popen(
        [sys.executable, "-c", _AUDIT_SCRIPT, str(wd / "pass.yaml"), str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _time.sleep(delay)
    finished = proc.poll() is not None
    if not finished:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    try:
        res = verify_manifest(out / "manifest.json")
    except InputError:
        return  # no manifest: clearly incomplete
    assert res["ok"], res["differences"]
    report = json.loads((out / "report.json").read_text())
    assert report["gates"] in (
        [r.to_dict() for r in clean.gate_results],
        [r.to_dict() for r in old.gate_results],
    )


def test_verify_refuses_a_manifest_larger_than_the_limit(tmp_path):
    from kg_rageval.audit.verify import _load_manifest
    from kg_rageval.base.errors import LimitExceeded
    from kg_rageval.base.limits import limits

    man = tmp_path / "manifest.json"
    man.write_text(json.dumps({"manifest": {}, "pad": "x" * 48}))  # 75 bytes
    with (
        limits({"max_doc_bytes": 74}),
        pytest.raises(LimitExceeded, match=r"manifest\.json.*the manifest is 75 bytes.*max_doc_bytes = 74"),
    ):
        _load_manifest(man)


def test_the_out_lock_is_held_for_the_whole_audit_not_only_the_write(stub, wd, cli, monkeypatch):
    """A second audit into the same --out is refused while the first is still computing, so a
    failing audit's folder can never end up holding another run's PASS reports."""
    import kg_rageval.audit.runner as runner
    from kg_rageval.base.errors import InputError

    out = wd / "out"
    real = runner.run_audit
    seen = []

    def run_audit(*a, **kw):
        with pytest.raises(
            InputError, match="another kg-rageval audit is writing reports into this directory"
        ):
            with out_lock(out):  # what a second audit would try while this one computes
                pass
        seen.append("held")
        return real(*a, **kw)

    monkeypatch.setattr(runner, "run_audit", run_audit)
    code, _, _ = cli(["audit", "-c", str(wd / "pass.yaml"), "--out", str(out), "-q"])
    assert code == 0 and seen == ["held"] and (out / "manifest.json").exists()
    with out_lock(out):  # released afterwards
        pass
