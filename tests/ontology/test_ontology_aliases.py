"""Alternative ids (aliases): builder rules, lookup, hints, cache, loaders, hash stability."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from kg_rageval.base.errors import OntologyError, UnknownIdError
from kg_rageval.ontology import OntologyBuilder, load_ontology
from kg_rageval.ontology.cache import load_compiled, save_compiled

# content hashes computed by kg-rageval before aliases existed (git HEAD at the time): an
# ontology without aliases must keep its hash. aliases.obo's changed once since, when its
# obsolete parentless term stopped being a root (issue #19: it now hangs under EX:0001).
VEHICLES_HASH = "sha256:01a7df6aee84de216d5272708d4f8862ed3589eded23d4140d8e5db8f5c7064e"
ALIASES_OBO_HASH_WITHOUT_ALIASES = "sha256:2bf742575e212eeabb964e5158c2a862392187efacb2f99236f3255c22c9c2cc"


def _tree() -> OntologyBuilder:
    b = OntologyBuilder("tree")
    b.add_node("D:1", label="disease")
    b.add_node("D:2", label="cancer")
    b.add_node("D:3", label="sarcoma")
    b.add_edge("D:2", "D:1")
    b.add_edge("D:3", "D:2")
    return b


@pytest.fixture(scope="module")
def onto_dir(fixtures_dir):
    return fixtures_dir / "ontology"


@pytest.fixture()
def tree():
    b = _tree()
    b.add_alias("D:90", "D:2", where="line 9")
    b.add_aliases(["D:91", "D:98"], ["D:2", "D:3"])
    return b.build()


# ---------------------------------------------------------------- builder rules
def test_aliases_stored_sorted_with_target_indices(tree):
    assert tree.alias_ids == ("D:90", "D:91", "D:98")
    assert tree.alias_targets.tolist() == [1, 1, 2]  # D:1 root 0, D:2 1, D:3 2
    assert tree.alias_targets.dtype == np.int32
    assert dict(tree.aliases) == {"D:90": 1, "D:91": 1, "D:98": 2}
    assert tree.n_aliases == 3 and tree.summary()["aliases"] == 3
    with pytest.raises(TypeError):
        tree.aliases["D:99"] = 0  # read-only view


def test_alias_equal_to_node_id_is_a_counted_warning_and_strict_refuses():
    b = _tree()
    b.add_alias("D:1", "D:2", where="line 7")
    with pytest.raises(
        OntologyError,
        match=r"1 alias\(es\) equal to a node id: 'D:1' \(alias of 'D:2', line 7\) "
        r"is also a node id \(refused in strict mode",
    ):
        b.build(strict=True)
    for conflicts in ("error", "keep-first"):  # conflicts= governs label conflicts only
        o = b.build(conflicts=conflicts)
        assert o.alias_ids == () and o.diagnostics == {"alias_conflicts": 1}
        assert o.warnings == (
            "'D:1' (alias of 'D:2', line 7) is also a node id: the node wins and the alias is dropped",
        )
        assert o.canonical("D:1") == "D:1"  # the node wins


def test_alias_with_unknown_target_is_dropped_and_counted():
    b = _tree()
    b.add_alias("D:90", "D:404")
    b.add_alias("D:91", "D:3")
    o = b.build()
    assert o.alias_ids == ("D:91",)
    assert o.diagnostics == {"unknown_alias_targets": 1}
    assert "'D:90' is an alias of 'D:404', which is not in the ontology" in o.warnings


def test_alias_naming_two_targets_is_dropped_and_counted_strict_refuses():
    b = _tree()
    b.add_alias("D:90", "D:2", where="line 3")
    b.add_alias("D:90", "D:2", where="line 4")  # a repeat is merged
    b.add_alias("D:90", "D:3", where="line 5")
    b.add_alias("D:91", "D:3", where="line 6")
    with pytest.raises(OntologyError, match=r"'D:90' names 'D:2' \(line 3\) and 'D:3' \(line 5\)"):
        b.build(strict=True)
    o = b.build()
    assert o.alias_ids == ("D:91",) and o.diagnostics == {"ambiguous_aliases": 1}
    assert o.warnings == (
        "'D:90' names 'D:2' (line 3) and 'D:3' (line 5): the alias is dropped (it resolves to neither)",
    )
    with pytest.raises(UnknownIdError):
        o.canonical("D:90")  # resolves to neither concept


def test_repeat_and_self_alias():
    b = _tree()
    b.add_alias("D:90", "D:2")
    b.add_alias("D:90", "D:2")
    b.add_alias("D:3", "D:3")
    o = b.build()
    assert o.alias_ids == ("D:90",) and o.diagnostics == {"self_aliases_dropped": 1}


def test_invalid_aliases_refused():
    b = _tree()
    with pytest.raises(OntologyError, match="invalid alias ''"):
        b.add_alias("", "D:1")
    with pytest.raises(OntologyError, match="invalid alias"):
        b.add_aliases(["ok", "bad\x00"], ["D:1", "D:1"])
    with pytest.raises(ValueError, match="2 aliases but 1 targets"):
        b.add_aliases(["a", "b"], ["D:1"])
    assert b.n_aliases == 0  # nothing half-added


# ---------------------------------------------------------------- lookup and hints
def test_canonical_alias_of_and_resolve(tree):
    assert tree.canonical("D:2") == "D:2"
    assert tree.canonical("D:90") == "D:2" and tree.canonical("D:98") == "D:3"
    assert tree.alias_of("D:91") == "D:2"
    assert tree.alias_of("D:2") is None and tree.alias_of("nope") is None
    assert tree.resolve("D:98") == "D:3"
    with pytest.raises(UnknownIdError):
        tree.canonical("D:404")
    assert "D:90" not in tree  # membership is for node ids only


def test_index_refuses_aliases_with_a_hint(tree):
    with pytest.raises(UnknownIdError) as e:
        tree.index("D:90")
    assert str(e.value) == (
        "unknown ontology id 'D:90'; 'D:90' is an alternative id of D:2 (cancer); map it with "
        "Ontology.canonical() (or a metric family's on_unknown option)"
    )
    with pytest.raises(UnknownIdError, match=r"1 of them is an alternative id \('D:98' → D:3\)"):
        tree.indices(["D:1", "D:98", "D:404"])
    with pytest.raises(UnknownIdError) as e:
        tree.index("D:404")
    assert "alternative id" not in str(e.value)


def test_resolve_alias_given_as_full_iri():
    b = OntologyBuilder("x", prefixes={"DOID": "http://purl.obolibrary.org/obo/DOID_"})
    b.add_node("DOID:162", label="cancer")
    b.add_alias("DOID:0000", "DOID:162")
    o = b.build()
    assert o.resolve("http://purl.obolibrary.org/obo/DOID_0000") == "DOID:162"


# ---------------------------------------------------------------- hash and cache
def test_hash_unchanged_without_aliases(vehicles, onto_dir):
    assert vehicles.alias_ids == () and vehicles.content_hash == VEHICLES_HASH
    o = load_ontology(onto_dir / "aliases.obo")
    bare = dataclasses.replace(o, alias_ids=(), alias_targets=np.zeros(0, dtype=np.int32))
    assert bare.content_hash == ALIASES_OBO_HASH_WITHOUT_ALIASES
    assert o.content_hash != ALIASES_OBO_HASH_WITHOUT_ALIASES  # aliases count when present


def test_hash_depends_on_alias_target(tree):
    b = _tree()
    b.add_aliases(["D:90", "D:91", "D:98"], ["D:2", "D:2", "D:2"])  # D:98 now names D:2
    assert b.build().content_hash != tree.content_hash
    b = _tree()
    b.add_aliases(["D:98", "D:91", "D:90"], ["D:3", "D:2", "D:2"])  # order does not matter
    assert b.build().content_hash == tree.content_hash


def test_cache_round_trip(tree, vehicles, tmp_path):
    back = load_compiled(save_compiled(tree, tmp_path / "t"))
    assert back.alias_ids == tree.alias_ids
    assert back.alias_targets.tolist() == tree.alias_targets.tolist()
    assert back.canonical("D:98") == "D:3"
    assert back.content_hash == tree.content_hash
    recomputed = dataclasses.replace(back, stored_hash=None)
    assert recomputed.content_hash == tree.content_hash
    # without aliases the file holds no alias arrays: the version-1 layout, unchanged
    path = save_compiled(vehicles, tmp_path / "v")
    with np.load(path, allow_pickle=False) as z:
        assert "alias_ids" not in z.files and "alias_targets" not in z.files
    v = load_compiled(path)
    assert v.alias_ids == () and dataclasses.replace(v, stored_hash=None).content_hash == VEHICLES_HASH


# ---------------------------------------------------------------- loaders
def test_obo_and_rdf_fixtures_agree(onto_dir):
    obo = load_ontology(onto_dir / "aliases.obo")
    ttl = load_ontology(onto_dir / "aliases.ttl")
    for o in (obo, ttl):
        assert o.alias_ids == ("EX:0090", "EX:0091", "EX:0098")
        assert [o.alias_of(a) for a in o.alias_ids] == ["EX:0002", "EX:0002", "EX:0003"]
        assert o.prefixes == {"EX": "http://purl.obolibrary.org/obo/EX_"}  # alt ids add none
    assert obo.content_hash == ttl.content_hash
    assert obo.diagnostics == {"alt_ids": 3, "obsolete_terms_placed_under_root": 1}


def test_obo_alias_errors(onto_dir):
    with pytest.raises(OntologyError, match=r"'EX:0001' \(alias of 'EX:0002', line 11\) is also a node id"):
        load_ontology(onto_dir / "alias_conflict.obo", strict=True)
    o = load_ontology(onto_dir / "alias_conflict.obo")
    assert o.alias_ids == () and o.diagnostics["alias_conflicts"] == 1
    with pytest.raises(
        OntologyError, match=r"'EX:0090' names 'EX:0002' \(line 11\) and 'EX:0003' \(line 17\)"
    ):
        load_ontology(onto_dir / "alias_two_targets.obo", strict=True)
    o = load_ontology(onto_dir / "alias_two_targets.obo")
    assert o.alias_ids == () and o.diagnostics == {"alt_ids": 2, "ambiguous_aliases": 1}


def test_mini_obo_alt_id(onto_dir):
    o = load_ontology(onto_dir / "mini.obo")
    assert o.alias_ids == ("EX:0099",) and o.canonical("EX:0099") == "EX:0002"


@pytest.mark.shared_data
def test_doid_cancer_slim_alt_ids(shared_data, tmp_path):
    obo = load_ontology(shared_data / "doid" / "DO_cancer_slim.obo")
    owl = load_ontology(shared_data / "doid" / "DO_cancer_slim.owl")
    assert obo.n_aliases == owl.n_aliases == 209
    assert obo.alias_ids == owl.alias_ids
    assert obo.alias_targets.tolist() == owl.alias_targets.tolist()
    # [Term] id: DOID:0001816 name: angiosarcoma / alt_id: DOID:267 / alt_id: DOID:4508
    assert obo.canonical("DOID:267") == obo.canonical("DOID:4508") == "DOID:0001816"
    assert owl.alias_of("DOID:4508") == "DOID:0001816"
    with pytest.raises(
        UnknownIdError, match=r"'DOID:267' is an alternative id of DOID:0001816 \(angiosarcoma\)"
    ):
        obo.index("DOID:267")
    assert obo.content_hash == owl.content_hash
    back = load_compiled(save_compiled(obo, tmp_path / "do"))
    assert back.alias_ids == obo.alias_ids and back.canonical("DOID:267") == "DOID:0001816"


def test_cli_inspect_shows_aliases(onto_dir):
    from click.testing import CliRunner

    from kg_rageval.cli.main import cli

    res = CliRunner().invoke(cli, ["ontology", "inspect", str(onto_dir / "aliases.obo")])
    assert res.exit_code == 0, res.output
    assert any(line.split()[-1] == "3" for line in res.output.splitlines() if "aliases" in line)
    res = CliRunner().invoke(cli, ["ontology", "inspect", str(onto_dir / "aliases.obo"), "--format", "json"])
    import json

    assert json.loads(res.output)["aliases"] == 3


# ---------------------------------------------------------------- hierarchy family
def test_hierarchy_on_unknown_alias(tree):
    from kg_rageval.families.hierarchy.family import score_hierarchy

    records = [
        {"id": "r1", "labels": {"gold": ["D:3"], "pred": ["D:98"]}},  # alias of D:3: exact
        {"id": "r2", "labels": {"gold": ["D:3"], "pred": ["D:90"]}},  # alias of D:2: parent
    ]
    # aliases resolve to their concept by default (the one resolver's convention)
    ev = score_hierarchy(tree, records)
    assert ev.meta["n_aliased"] == 2
    assert list(ev.details["relation"]) == ["exact", "parent"]
    with pytest.raises(UnknownIdError, match="'D:98'"):
        score_hierarchy(tree, records, aliases=False, on_unknown="error")
    with pytest.raises(UnknownIdError, match="'D:404'"):
        score_hierarchy(
            tree, records + [{"id": "r3", "labels": {"gold": ["D:3"], "pred": ["D:404"]}}], on_unknown="error"
        )
