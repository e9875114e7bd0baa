"""The test-set pin is checked, not only cited (issue #28).

A real test-set manifest is written by ``kg-rageval testset check`` over two sets; the audit
cites it and audits the release set with its predictions. Editing gold labels in 10 records
(which would lift the stub's accuracy from 18/30 to 28/30, a PASS without the pin) or editing
the manifest so its own hash no longer verifies is tampered evidence: the audit fails and
``audit --verify`` says NOT verified (exit 4). The hashes are recomputed here from the
definition (canonical JSON, sha256), not through the project's hashing code.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

NODES = ["sedan", "hatchback", "submarine", "boat", "amphibious_car", "car"]


def _canon(x) -> bytes:
    return json.dumps(x, sort_keys=True, ensure_ascii=True, separators=(",", ":")).encode()


def _sha(b: bytes) -> str:
    return "sha256:" + hashlib.sha256(b).hexdigest()


def _gold_hash(records: list[dict]) -> str:
    """The labels hash by its definition (docs/testset.md): each record's id, query, slices and
    gold labels, as canonical JSON, sorted by id, joined by newlines."""
    rows = sorted(
        (
            {
                "id": r["id"],
                "query": r["query"],
                "slices": r["slices"],
                "labels": {"gold": r["labels"]["gold"]},
            }
            for r in records
        ),
        key=lambda g: g["id"],
    )
    return _sha(b"\n".join(_canon(g) for g in rows))


def _records(prefix: str, n: int, n_wrong: int) -> list[dict]:
    out = []
    for i in range(n):
        gold = NODES[i % len(NODES)]
        pred = "vehicle" if i < n_wrong else gold
        out.append(
            {
                "id": f"{prefix}{i:02d}",
                "query": f"which {prefix} vehicle number {i} is meant by case {i * 7919}",
                "slices": {"intent": "lookup" if i % 2 else "compare"},
                "labels": {"gold": [gold], "pred": [pred]},
            }
        )
    return out


def _write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture()
def pinned(stub, tmp_path, cli, fixtures_dir):
    """``(dir, release records)``: sets/{development,release}.jsonl, the manifest ``testset check``
    wrote over them, and an audit config citing it (gate ``stub_accuracy >= 0.6``)."""
    shutil.copy(fixtures_dir / "audit" / "vehicles.csv", tmp_path / "vehicles.csv")
    sets = tmp_path / "sets"
    sets.mkdir()
    release = _records("rel", 30, 12)  # 18/30 correct = 0.6
    _write(sets / "development.jsonl", _records("dev", 12, 3))
    _write(sets / "release.jsonl", release)
    code, out, err = cli(["testset", "check", str(sets)])
    assert code == 0, err
    assert "verdict: no leakage" in out
    (tmp_path / "audit.yaml").write_text(
        "name: pinned\nontology: vehicles.csv\nrecords: sets/release.jsonl\n"
        "families: {stub: {}}\ngates: ['stub_accuracy >= 0.6']\nmissing_runs: {budget: 0}\n"
        "testset_manifest: sets/testset-manifest.json\n"
    )
    return tmp_path, release


def _audit(cli, d: Path, out: str = "out", chunk: int | None = None):
    args = ["audit", "-c", str(d / "audit.yaml"), "--out", str(d / out), "-q"]
    if chunk is not None:
        args += ["--chunk-size", str(chunk)]
    code, stdout, err = cli(args)
    doc = json.loads((d / out / "manifest.json").read_text())
    gates = {g["gate"]: g for g in doc["numbers"]["gates"]}
    return code, doc["manifest"], gates, stdout + err


def _verify(cli, d: Path, out: str = "out"):
    code, stdout, _ = cli(["audit", "--verify", str(d / out / "manifest.json"), "-q"])
    return code, stdout


def test_the_manifest_pins_the_gold_of_each_set(pinned):
    d, release = pinned
    man = json.loads((d / "sets" / "testset-manifest.json").read_text())
    assert man["sets"]["release"]["labels_sha256"] == _gold_hash(release)
    assert man["sets"]["release"]["records"] == 30
    body = {k: v for k, v in man.items() if k != "hash"}
    assert man["hash"] == _sha(_canon(body))


@pytest.mark.parametrize("chunk", [0, 7])  # held, and streamed in chunks of 7 records
def test_a_verified_pin_passes_and_is_recorded(pinned, cli, chunk):
    d, release = pinned
    man_path = d / "sets" / "testset-manifest.json"
    man = json.loads(man_path.read_text())
    code, manifest, gates, _ = _audit(cli, d, chunk=chunk)
    assert code == 0
    g = gates["testset_manifest.verified >= 1"]
    assert g["status"] == "pass" and g["observed"] == 1.0
    assert gates["stub_accuracy >= 0.6"]["observed"] == pytest.approx(18 / 30)
    pin = manifest["testset"]
    assert pin == {
        "path": str(man_path),
        "hash": man["hash"],
        "sha256": _sha(man_path.read_bytes()),
        "content_hash": man["hash"],
        "labels_sha256": _gold_hash(release),
        "labels_set": "set 'release'",
        "records": 30,
        "verified": True,
        "problems": [],
    }
    assert pin["sha256"] == manifest["inputs"]["testset_manifest"]["hash"]
    assert f"gold labels {_gold_hash(release)} (set 'release', 30 records)" in g["reason"]
    code, out = _verify(cli, d)
    assert code == 0 and "verified: identical numbers" in out


@pytest.mark.parametrize("chunk", [0, 7])
def test_gold_edited_in_10_records_is_tampered_evidence(pinned, cli, chunk):
    d, release = pinned
    pinned_hash = _gold_hash(release)
    code, *_ = _audit(cli, d, out="before")
    assert code == 0
    edited = [dict(r) for r in release]
    for r in edited[:10]:  # ten wrong answers made right by editing the gold
        r["labels"] = {"gold": r["labels"]["pred"], "pred": r["labels"]["pred"]}
    _write(d / "sets" / "release.jsonl", edited)
    code, manifest, gates, text = _audit(cli, d, chunk=chunk)
    assert gates["stub_accuracy >= 0.6"]["status"] == "pass"  # 28/30: a PASS without the pin
    assert gates["stub_accuracy >= 0.6"]["observed"] == pytest.approx(28 / 30)
    assert code == 1
    g = gates["testset_manifest.verified >= 1"]
    assert g["status"] == "fail" and g["observed"] == 0.0
    man_path = d / "sets" / "testset-manifest.json"
    assert g["reason"] == (
        f"tampered evidence: test-set manifest {man_path}: gold labels hash differs: the audit's 30 "
        f"records give {_gold_hash(edited)}, the manifest pins {pinned_hash} (set 'release', 30 records) "
        "nor any other of its 2 label hashes"
    )
    assert "tampered evidence" in text and "FAIL" in text
    assert manifest["testset"]["verified"] is False
    assert manifest["testset"]["labels_sha256"] == _gold_hash(edited) != pinned_hash
    # --verify of the passing report against the edited records: NOT verified, the pin named
    code, out = _verify(cli, d, out="before")
    assert code == 4 and "NOT verified" in out
    assert (
        f"test-set manifest {man_path} does not verify (tampered evidence): gold labels hash differs" in out
    )
    assert (
        f"gold labels pinned by test-set manifest {man_path}: the report recorded {pinned_hash}, "
        f"the records now give {_gold_hash(edited)}"
    ) in out
    assert "gate testset_manifest.verified >= 1: pass 1.0 -> fail 0.0" in out
    # --verify of the tampered report itself: the same numbers again, still NOT verified
    code, out = _verify(cli, d)
    assert code == 4 and "NOT verified" in out and "does not verify (tampered evidence)" in out


def test_an_added_or_dropped_record_changes_the_pin(pinned, cli):
    d, release = pinned
    _write(d / "sets" / "release.jsonl", release[:-1])
    code, _, gates, _ = _audit(cli, d)
    assert code == 1
    assert (
        "the audit's 29 records give " + _gold_hash(release[:-1])
        in gates["testset_manifest.verified >= 1"]["reason"]
    )


def test_predictions_are_not_gold(pinned, cli):
    """Changing predictions (what a system run adds) keeps the pin."""
    d, release = pinned
    changed = [
        {**r, "labels": {"gold": r["labels"]["gold"], "pred": ["boat"]}, "answer": {"text": "x"}}
        for r in release
    ]
    _write(d / "sets" / "release.jsonl", list(reversed(changed)))
    code, manifest, gates, _ = _audit(cli, d)
    assert gates["testset_manifest.verified >= 1"]["status"] == "pass"
    assert manifest["testset"]["labels_sha256"] == _gold_hash(release)


def test_an_edited_manifest_whose_hash_no_longer_verifies_is_tampered(pinned, cli):
    d, release = pinned
    man_path = d / "sets" / "testset-manifest.json"
    code, *_ = _audit(cli, d, out="before")
    assert code == 0
    man = json.loads(man_path.read_text())
    stale = man["hash"]
    man["leakage"]["near_duplicates"] = 0
    man["sets"]["release"]["records"] = 31
    man_path.write_text(json.dumps(man, indent=2))
    now = _sha(_canon({k: v for k, v in man.items() if k != "hash"}))
    assert now != stale
    code, manifest, gates, _ = _audit(cli, d)
    assert code == 1
    g = gates["testset_manifest.verified >= 1"]
    assert g["status"] == "fail"
    assert g["reason"] == (
        f"tampered evidence: test-set manifest {man_path}: its own hash differs: it states {stale}, "
        f"its content gives {now}"
    )
    assert manifest["testset"]["hash"] == stale and manifest["testset"]["content_hash"] == now
    code, out = _verify(cli, d, out="before")
    assert code == 4
    assert f"test-set manifest {man_path} does not verify (tampered evidence): its own hash differs" in out
    assert (
        f"test-set manifest {man_path}: the report recorded hash {stale}, its content now gives {now}" in out
    )
    code, out = _verify(cli, d)
    assert code == 4 and "its own hash differs" in out


def test_a_manifest_rehashed_over_edited_gold_still_fails_on_the_records(pinned, cli):
    """Re-hashing the manifest after editing the label hashes it pins does not help: its own
    hash verifies, but the audited records' gold must still match a pinned hash."""
    d, release = pinned
    man_path = d / "sets" / "testset-manifest.json"
    man = json.loads(man_path.read_text())
    man["sets"]["release"]["labels_sha256"] = "sha256:" + "0" * 64
    man["labels_sha256"] = "sha256:" + "1" * 64
    man["hash"] = _sha(_canon({k: v for k, v in man.items() if k != "hash"}))
    man_path.write_text(json.dumps(man))
    code, _, gates, _ = _audit(cli, d)
    assert code == 1
    reason = gates["testset_manifest.verified >= 1"]["reason"]
    assert "its own hash" not in reason
    assert f"the manifest pins sha256:{'0' * 64} (set 'release', 30 records)" in reason


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "the test-set manifest is not JSON"),
        ("[1, 2]", "the test-set manifest must be a JSON object, found list"),
    ],
)
def test_an_unreadable_manifest_is_exit_2(pinned, cli, content, message):
    d, _ = pinned
    (d / "sets" / "testset-manifest.json").write_text(content)
    code, out, err = cli(["audit", "-c", str(d / "audit.yaml"), "--out", str(d / "out"), "-q"])
    assert code == 2 and message in err and "testset_manifest (resolved to" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    (d / "sets" / "testset-manifest.json").unlink()
    code, _, err = cli(["audit", "-c", str(d / "audit.yaml"), "--out", str(d / "out"), "-q"])
    assert code == 2 and "the test-set manifest does not exist" in err


@pytest.mark.parametrize(
    "edit,problem",
    [
        (lambda m: m.pop("hash"), "it states no hash (its content gives sha256:"),
        (lambda m: m.update(extra="1e999"), "its own hash differs: it states sha256:"),
    ],
)
def test_a_manifest_without_a_verifiable_hash_is_tampered(pinned, cli, edit, problem):
    d, _ = pinned
    man_path = d / "sets" / "testset-manifest.json"
    man = json.loads(man_path.read_text())
    edit(man)
    text = json.dumps(man).replace('"1e999"', "1e999")  # a number JSON has no value for: no hash
    man_path.write_text(text)
    code, manifest, gates, _ = _audit(cli, d)
    assert code == 1 and manifest["testset"]["verified"] is False
    reason = gates["testset_manifest.verified >= 1"]["reason"]
    assert reason.startswith(f"tampered evidence: test-set manifest {man_path}: {problem}")
    if "extra" in man:
        assert reason.endswith("its content gives no hash (a non-finite number)")


def test_verify_notices_a_pin_dropped_from_the_config(pinned, cli):
    d, _ = pinned
    code, *_ = _audit(cli, d)
    assert code == 0
    cfg = d / "audit.yaml"
    cfg.write_text(cfg.read_text().replace("testset_manifest: sets/testset-manifest.json\n", ""))
    code, out = _verify(cli, d)
    assert code == 4
    assert "the report records a test-set manifest check, but the config cites no test-set manifest" in out
    assert "gate testset_manifest.verified >= 1: pass -> (absent)" in out
