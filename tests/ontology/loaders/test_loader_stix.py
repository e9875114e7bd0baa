"""STIX 2.x / ATT&CK loader: mapping rules on a mini bundle, counts on the real release."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from kg_rageval.base.errors import InputError
from kg_rageval.ontology import VIRTUAL_ROOT_ID, load_ontology
from kg_rageval.ontology.loaders.stix import load_stix


@pytest.fixture(scope="module")
def onto_dir(fixtures_dir):
    return fixtures_dir / "ontology"


@pytest.fixture(scope="module")
def mini(onto_dir):
    return load_ontology(onto_dir / "mini_attack.json")


def test_matrix_tactics_techniques(mini):
    o = mini
    assert o.root_id == "mini-attack" and not o.virtual_root
    assert o.children("mini-attack") == ["TA0006", "TA0004", "T1099"]
    assert o.parents("T1003") == ["TA0006"]
    assert sorted(o.parents("T1055")) == ["TA0004", "TA0006"]  # two tactics, two parents
    assert o.parents("T1003.001") == ["T1003"]  # subtechnique-of
    assert [o.depth(i) for i in ("mini-attack", "TA0006", "T1003", "T1003.001")] == [0, 1, 2, 3]
    types = dict(zip(o.ids, o.node_types))
    assert types["TA0006"] == "tactic" and types["T1003"] == "technique"
    assert types["T1003.001"] == "sub-technique" and types["mini-attack"] == "matrix"
    assert (
        o.label("T1003.001") == "LSASS Memory" and o.definitions[o.index("T1003")] == "OS Credential Dumping."
    )


def test_revoked_and_deprecated(mini):
    o = mini
    assert o.status_of("T1099") == "revoked" and o.replacement("T1099") == "T1055"
    assert o.parents("T1099") == ["mini-attack"]  # no tactic: placed under the root
    assert o.status_of("T1098") == "deprecated" and o.parents("T1098") == ["TA0004"]
    # revoked sub-technique without subtechnique-of: placed by its id prefix
    assert o.status_of("T1055.099") == "revoked" and o.parents("T1055.099") == ["T1055"]
    assert o.replacement("T1055.099") == "T1003.001"
    assert o.diagnostics == {"unplaced_objects_under_root": 1, "subtechniques_placed_by_id": 1}


def test_without_matrix_root_uses_virtual_root(onto_dir):
    o = load_stix(onto_dir / "mini_attack.json", matrix_root=False)
    # the revoked T1099 (no tactic, no children) hangs under the virtual root but is no root
    assert o.virtual_root and sorted(o.real_roots) == ["TA0004", "TA0006"]
    assert o.placed_under_root == ("T1099",) and o.parents("T1099") == [VIRTUAL_ROOT_ID]
    assert o.depth("T1003.001") == 3


def test_gzip_and_plain_agree(onto_dir, mini, tmp_path):
    gz = tmp_path / "mini.json.gz"
    gz.write_bytes(gzip.compress((onto_dir / "mini_attack.json").read_bytes()))
    assert load_ontology(gz).content_hash == mini.content_hash


def test_bad_bundles(onto_dir, tmp_path):
    with pytest.raises(InputError, match=r"bad_attack.json, line 4, column 4: malformed JSON"):
        load_ontology(onto_dir / "bad_attack.json")
    f = tmp_path / "x.json"
    f.write_text(json.dumps({"type": "not-a-bundle"}))
    with pytest.raises(InputError, match="expected a STIX 2.x bundle.*'not-a-bundle'"):
        load_stix(f)
    f.write_text(json.dumps({"type": "bundle", "objects": [{"type": "identity", "id": "identity--1"}]}))
    with pytest.raises(InputError, match="nothing to load"):
        load_stix(f)
    f.write_text(json.dumps({"type": "bundle", "objects": [{"id": "x"}]}))
    with pytest.raises(InputError, match=r"objects\[0\].*'type' and 'id'"):
        load_stix(f)
    f.write_bytes(b"\x1f\x8b\x08broken")
    with pytest.raises(InputError, match="corrupt gzip"):
        load_stix(f)


@pytest.mark.shared_data
def test_attack_enterprise_counts(shared_data):
    """Counts from ../shared/README.md: 835 attack-patterns (691 active = 216 techniques + 475
    sub-techniques; 132 revoked; 12 deprecated), 14 tactics, one matrix."""
    o = load_ontology(shared_data / "attack" / "enterprise-attack-techniques-18.1.json.gz")
    by = Counter((t, o.status_of(i)) for i, t in zip(o.ids, o.node_types))
    assert by[("technique", "active")] == 216 and by[("sub-technique", "active")] == 475
    assert by[("tactic", "active")] == 14 and by[("matrix", "active")] == 1
    s = o.summary()
    assert (s["nodes"], s["revoked"], s["deprecated"], s["with_replacement"]) == (850, 132, 12, 132)
    assert o.root_id == "enterprise-attack" and len(o.children("enterprise-attack")) == 14
    assert o.parents("T1003.001") == ["T1003"] and o.parents("T1003") == ["TA0006"]
    assert o.label("TA0006") == "Credential Access"
    assert o.status_of("T1215") == "revoked" and o.replacement("T1215") == "T1547.006"
    # every active technique sits under >= 1 tactic, every active sub-technique under 1 technique
    for i, t in zip(o.ids, o.node_types):
        if t == "technique":
            assert all(o.node_types[o.index(p)] == "tactic" for p in o.parents(i)), i
        elif t == "sub-technique":
            (p,) = o.parents(i)
            assert p == i.split(".")[0], i
    assert s["multi_parent_nodes"] == 74 and s["max_depth"] == 3
    assert o.diagnostics == {"subtechniques_placed_by_id": 2}  # T1053.001, T1547.011
    assert VIRTUAL_ROOT_ID not in o


def test_bytes_that_are_not_utf8_are_a_clear_error(tmp_path):
    from kg_rageval.ontology.loaders.stix import read_json

    p = tmp_path / "latin1.json"
    p.write_bytes(b'{"type": "bundle", "objects": [], "x": "\xe9"}')
    with pytest.raises(
        InputError, match=r"latin1\.json: not UTF-8 text: 'utf-8' codec can't decode byte 0xe9"
    ):
        read_json(p)
