"""Bolt integration: load ontologies from a graph database and write results back.

The server tests run against a real Bolt server: ArcadeDB (``arcadedb-embedded``, started by
the session fixture on a free loopback port) and, when ``KG_RAGEVAL_NEO4J_URI`` is set, a Neo4j
server too (credentials from ``KG_RAGEVAL_NEO4J_USER`` / ``KG_RAGEVAL_NEO4J_PASSWORD``). Every
test works under its own random label, so nothing else in a shared database is touched.
"""

from __future__ import annotations

import os
import secrets

import numpy as np
import pytest

from kg_rageval.base.errors import ConfigError, InputError
from kg_rageval.ontology import load_ontology
from kg_rageval.ontology.loaders.neo4j import (
    PRESETS,
    GraphMapping,
    auth_from_env,
    load_neo4j,
    redact_uri,
    resolve_mapping,
)
from kg_rageval.results.evaluation import Evaluation
from kg_rageval.results.family import Family
from kg_rageval.results.metric import ratio

neo4j = pytest.importorskip("neo4j")


# ---------------------------------------------------------------------- servers
@pytest.fixture(scope="session")
def _arcadedb(tmp_path_factory):
    from kg_rageval.integrations.arcadedb import BoltServerUnavailable, start_arcadedb_bolt

    try:
        server = start_arcadedb_bolt(tmp_path_factory.mktemp("arcadedb"))
    except BoltServerUnavailable as exc:
        pytest.skip(f"ArcadeDB Bolt server could not start: {exc}")
    yield server
    server.stop()


@pytest.fixture(scope="session", params=["arcadedb", "neo4j"])
def bolt(request):
    """``(uri, auth, database)`` of a running Bolt server."""
    if request.param == "neo4j":
        uri = os.environ.get("KG_RAGEVAL_NEO4J_URI")
        if not uri:
            pytest.skip("KG_RAGEVAL_NEO4J_URI is not set: no Neo4j server to test against")
        return uri, auth_from_env(None), os.environ.get("KG_RAGEVAL_NEO4J_DATABASE")
    server = request.getfixturevalue("_arcadedb")
    return server.uri, server.auth, server.database


@pytest.fixture
def graph(bolt):
    """An open driver plus a unique label for this test; its nodes are deleted afterwards."""
    uri, auth, database = bolt
    driver = neo4j.GraphDatabase.driver(uri, auth=auth)
    label = "T" + secrets.token_hex(6)

    def run(query, **params):
        with driver.session(database=database) as s:
            return s.run(query, params).data()

    yield {"uri": uri, "auth": auth, "database": database, "driver": driver, "label": label, "run": run}
    run(f"MATCH (n:`{label}`) DETACH DELETE n")
    run("MATCH (e:EvalResult) WHERE e.run_id STARTS WITH $p DETACH DELETE e", p=label)
    driver.close()


VEHICLES = [
    ("vehicle", "Vehicle", None),
    ("car", "Car", ["automobile", "auto"]),
    ("sedan", "Sedan", None),
    ("hatchback", "Hatchback", None),
    ("boat", "Boat", None),
    ("submarine", "Submarine", None),
    ("amphibious_car", "Amphibious car", None),
]
VEHICLE_EDGES = [
    ("car", "vehicle"),
    ("sedan", "car"),
    ("hatchback", "car"),
    ("boat", "vehicle"),
    ("submarine", "boat"),
    ("amphibious_car", "car"),
    ("amphibious_car", "boat"),
]


def _store_vehicles(g, *, rel="IS_A"):
    L = g["label"]
    g["run"](
        f"UNWIND $rows AS r CREATE (n:`{L}` {{code: r.code, name: r.name}}) "
        "WITH n, r WHERE r.aka IS NOT NULL SET n.aka = r.aka",
        rows=[{"code": c, "name": n, "aka": a} for c, n, a in VEHICLES],
    )
    g["run"](
        f"UNWIND $rows AS r MATCH (c:`{L}` {{code: r.c}}), (p:`{L}` {{code: r.p}}) "
        f"CREATE (c)-[:`{rel}`]->(p)",
        rows=[{"c": c, "p": p} for c, p in VEHICLE_EDGES],
    )


def _vehicle_mapping(label):
    return GraphMapping(
        node_label=label,
        id_property="code",
        label_properties=("name",),
        synonym_properties=("aka",),
        relationships=("IS_A",),
    )


# ---------------------------------------------------------------------- loading
@pytest.mark.slow
def test_load_custom_mapping_equals_builder(graph, vehicles):
    _store_vehicles(graph)
    o = load_neo4j(
        graph["uri"], auth=graph["auth"], database=graph["database"], mapping=_vehicle_mapping(graph["label"])
    )
    assert sorted(o.ids) == sorted(vehicles.ids)
    assert o.content_hash == vehicles.content_hash  # same nodes, labels, statuses and edges
    assert o.ancestors("amphibious_car") == ["vehicle", "car", "boat"]
    assert o.synonyms[o.index("car")] == ("automobile", "auto")
    assert o.relation("hatchback", "submarine") == "cousin"
    assert "bolt://" in o.source and "root" not in o.source


@pytest.mark.slow
def test_load_through_registry_and_alias(graph):
    _store_vehicles(graph)
    opts = dict(
        auth=graph["auth"],
        database=graph["database"],
        mapping={
            "node_label": graph["label"],
            "id_property": "code",
            "label_properties": ["name"],
            "relationships": ["IS_A"],
        },
    )
    o = load_ontology(graph["uri"], format="neo4j", **opts)
    o2 = load_ontology(graph["uri"], format="bolt", driver=graph["driver"], **opts)
    assert len(o) == len(o2) == 7 and o.n_edges == 7 and o.content_hash == o2.content_hash


@pytest.mark.slow
def test_n10s_owl_preset(graph):
    """The shape of ``n10s.rdf.import`` with prefixed names: multi-valued rdfs__label lists,
    owl__deprecated, rdfs__subClassOf; resources without the class label are not concepts."""
    L, run = graph["label"], graph["run"]
    run(f"CREATE (:Resource:`{L}` {{uri: 'http://ex/Root', rdfs__label: ['Root', 'Wurzel']}})")
    run(
        f"CREATE (:Resource:`{L}` {{uri: 'http://ex/A', rdfs__label: 'A', skos__altLabel: ['a1'],"
        " rdfs__comment: 'the A class'})"
    )
    run(f"CREATE (:Resource:`{L}` {{uri: 'http://ex/Old', rdfs__label: 'Old', owl__deprecated: true}})")
    run(f"CREATE (:Resource:`{L}` {{rdfs__label: 'blank node class'}})")  # no uri
    run(f"CREATE (:Resource:`{L}x` {{uri: 'http://ex/Individual'}})")
    for c, p in [("A", "Root"), ("Old", "A")]:
        run(
            f"MATCH (c:`{L}` {{uri: $c}}), (p:`{L}` {{uri: $p}}) CREATE (c)-[:rdfs__subClassOf]->(p)",
            c="http://ex/" + c,
            p="http://ex/" + p,
        )
    run(f"MATCH (c:`{L}x`), (p:`{L}` {{uri: 'http://ex/A'}}) CREATE (c)-[:rdfs__subClassOf]->(p)")
    o = load_neo4j(
        graph["uri"], auth=graph["auth"], database=graph["database"], mapping="n10s-owl", node_label=L
    )
    assert o.ids == ("http://ex/Root", "http://ex/A", "http://ex/Old")
    assert o.labels == ("Root", "A", "Old")
    assert o.synonyms == (("Wurzel",), ("a1",), ())
    assert o.definitions[1] == "the A class"
    assert o.status_of("http://ex/Old") == "deprecated" and o.is_active("http://ex/A")
    assert o.diagnostics == {"nodes_without_id": 1}
    run(f"MATCH (n:`{L}x`) DETACH DELETE n")


@pytest.mark.slow
def test_skos_narrower_direction(graph):
    L, run = graph["label"], graph["run"]
    run(f"UNWIND ['top', 'mid', 'leaf'] AS u CREATE (:`{L}` {{uri: u, skos__prefLabel: toUpper(u)}})")
    for p, c in [("top", "mid"), ("mid", "leaf")]:
        run(f"MATCH (p:`{L}` {{uri: $p}}), (c:`{L}` {{uri: $c}}) CREATE (p)-[:skos__narrower]->(c)", p=p, c=c)
    o = load_neo4j(
        graph["uri"],
        auth=graph["auth"],
        database=graph["database"],
        mapping="n10s-skos-narrower",
        node_label=L,
    )
    assert o.ids == ("top", "mid", "leaf") and o.depth("leaf") == 2 and o.label("leaf") == "LEAF"
    broader = load_neo4j(
        graph["uri"],
        auth=graph["auth"],
        database=graph["database"],
        mapping="n10s-skos",
        node_label=L,
        relationships=("skos__narrower",),
    )
    assert broader.ids == ("leaf", "mid", "top")  # read the other way round


@pytest.mark.slow
def test_bad_password_is_not_printed(bolt):
    uri, auth, database = bolt
    if auth is None:
        pytest.skip("server without authentication")
    secret = "wrong-" + secrets.token_hex(4)
    with pytest.raises(InputError, match="authentication failed") as exc:
        load_neo4j(uri, auth=(auth[0], secret), database=database)
    assert secret not in str(exc.value)


def test_unreachable_server_is_an_input_error():
    from kg_rageval.integrations.arcadedb import free_port

    with pytest.raises(InputError, match="cannot reach"):
        load_neo4j(f"bolt://127.0.0.1:{free_port()}", auth=("u", "p"))


# ---------------------------------------------------------------------- mapping (no server)
@pytest.mark.parametrize("bad", ["Class` ) DETACH DELETE n //", "a b", "1abc", "", "x-y", "é"])
def test_identifiers_are_validated(bad):
    with pytest.raises(ConfigError, match="must match"):
        GraphMapping(node_label=bad)
    with pytest.raises(ConfigError):
        GraphMapping(relationships=(bad,))
    with pytest.raises(ConfigError):
        GraphMapping(id_property=bad)


def test_queries_are_quoted_and_directed():
    m = GraphMapping(
        node_label="Concept",
        id_property="id",
        label_properties=("prefLabel",),
        relationships=("broader", "SCO"),
    )
    assert m.edge_query() == (
        "MATCH (c:`Concept`)-[:`broader`|`SCO`]->(p:`Concept`) RETURN c.`id` AS child, p.`id` AS parent"
    )
    assert m.node_query() == "MATCH (n:`Concept`) RETURN n.`id` AS id, n.`prefLabel` AS l0"
    assert "<-[:`skos__narrower`]-" in PRESETS["n10s-skos-narrower"].edge_query()


def test_resolve_mapping():
    assert resolve_mapping("n10s-skos").relationships == ("skos__broader",)
    assert resolve_mapping("n10s-owl", node_label="X").node_label == "X"
    assert resolve_mapping({"node_label": "C", "relationships": "broader"}).relationships == ("broader",)
    with pytest.raises(ConfigError, match="unknown graph mapping preset"):
        resolve_mapping("nope")
    with pytest.raises(ConfigError, match="unknown graph mapping option.*labell"):
        resolve_mapping(None, labell="x")
    with pytest.raises(ConfigError, match="direction"):
        GraphMapping(direction="up")


def test_credentials(monkeypatch):
    monkeypatch.delenv("KG_RAGEVAL_NEO4J_USER", raising=False)
    monkeypatch.delenv("KG_RAGEVAL_NEO4J_PASSWORD", raising=False)
    assert auth_from_env(None) is None
    monkeypatch.setenv("KG_RAGEVAL_NEO4J_USER", "alice")
    monkeypatch.setenv("KG_RAGEVAL_NEO4J_PASSWORD", "s3cret")
    assert auth_from_env(None) == ("alice", "s3cret")
    assert auth_from_env({"user": "bob", "password": "pw"}) == ("bob", "pw")
    assert redact_uri("neo4j://alice:s3cret@db.example:7687/x") == "neo4j://db.example:7687/x"


# ---------------------------------------------------------------------- writing results
class Toy(Family):
    """accuracy = correct / total; precision = tp / n_pred (missing when nothing predicted)."""

    name = "toy"
    stats = ("correct", "total", "tp", "n_pred")

    def finalize(self, s):
        return {
            "accuracy": ratio("accuracy", s["correct"], s["total"], missing="no rows"),
            "precision": ratio("precision", s["tp"], s["n_pred"], missing="no predictions"),
        }


def _toy_eval():
    gold = ["sedan", "sedan", "hatchback", "submarine", "amphibious_car", "not-in-graph"]
    correct = [1, 0, 1, 0, 1, 1]
    return Evaluation(
        Toy(),
        np.arange(6).astype(str),
        {"correct": correct, "total": [1] * 6, "tp": [0] * 6, "n_pred": [0] * 6},
        keys={"gold_node": np.asarray(gold, dtype=object)},
    )


def test_result_rows_from_rollup(vehicles):
    from kg_rageval.integrations.neo4j_writer import result_rows

    family, rows = result_rows(_toy_eval(), vehicles)
    by = {r["id"]: r["props"] for r in rows}
    assert family == "toy" and set(by) == {
        "vehicle",
        "car",
        "boat",
        "sedan",
        "hatchback",
        "submarine",
        "amphibious_car",
    }
    # car pools sedan x2, hatchback, amphibious_car: 3 of 4 correct
    assert by["car"]["accuracy"] == 0.75 and by["car"]["n"] == 4 and by["car"]["depth"] == 1
    assert by["boat"]["accuracy"] == 0.5  # submarine wrong, amphibious_car right
    assert by["vehicle"]["accuracy"] == 0.6 and by["vehicle"]["n"] == 5
    assert by["car"]["precision"] is None and by["car"]["precision_missing"] == "no predictions"


@pytest.mark.slow
def test_write_eval_result_nodes(graph, vehicles):
    from kg_rageval.integrations.neo4j_writer import write_results

    _store_vehicles(graph)
    mapping = _vehicle_mapping(graph["label"])
    run_id = graph["label"] + "-run1"
    s = write_results(
        graph["driver"],
        _toy_eval(),
        run_id=run_id,
        ontology=vehicles,
        mapping=mapping,
        database=graph["database"],
        batch_size=3,
    )
    assert (s.rows, s.written, s.n_not_found) == (7, 7, 0)
    # the "which branches fail" query from docs/integrations.md
    q = (
        f"MATCH (e:EvalResult {{run_id: $run}})-[:EVALUATES]->(c:`{graph['label']}`) "
        "WHERE e.accuracy < $t RETURN c.code AS node, e.accuracy AS acc, e.n AS n ORDER BY acc, node"
    )
    rows = graph["run"](q, run=run_id, t=0.7)
    assert rows == [
        {"node": "submarine", "acc": 0.0, "n": 1},
        {"node": "boat", "acc": 0.5, "n": 2},
        {"node": "sedan", "acc": 0.5, "n": 2},
        {"node": "vehicle", "acc": 0.6, "n": 5},
    ]
    e = graph["run"]("MATCH (e:EvalResult {run_id: $run, node_id: 'car'}) RETURN e", run=run_id)[0]["e"]
    assert e["family"] == "toy" and "precision" not in e and e["precision_missing"] == "no predictions"
    # writing the same run again replaces, never duplicates
    write_results(
        graph["driver"],
        _toy_eval(),
        run_id=run_id,
        ontology=vehicles,
        mapping=mapping,
        database=graph["database"],
    )
    n = graph["run"]("MATCH (e:EvalResult {run_id: $run})-[r:EVALUATES]->() RETURN count(r) AS n", run=run_id)
    assert n == [{"n": 7}]


@pytest.mark.slow
def test_write_properties_and_not_found(graph, vehicles):
    from kg_rageval.integrations.neo4j_writer import write_results

    _store_vehicles(graph)
    mapping = _vehicle_mapping(graph["label"])
    rollup = {"car": {"n": 4, "metrics": {"accuracy": 0.75}}, "ghost": {"n": 1, "metrics": {"accuracy": 1.0}}}
    s = write_results(
        graph["driver"],
        rollup,
        run_id=graph["label"] + "-a",
        mapping=mapping,
        mode="properties",
        database=graph["database"],
    )
    assert s.written == 1 and s.not_found == ["ghost"]
    car = graph["run"](f"MATCH (c:`{graph['label']}` {{code: 'car'}}) RETURN c")[0]["c"]
    assert car["kgr_accuracy"] == 0.75 and car["kgr_n"] == 4 and car["kgr_run_id"].endswith("-a")
    # a later run where the metric is missing removes the stale value and says why
    from kg_rageval.results.metric import Metric

    later = {"car": {"n": 0, "metrics": {"accuracy": Metric("accuracy", None, missing="no rows")}}}
    write_results(
        graph["driver"],
        later,
        run_id=graph["label"] + "-b",
        mapping=mapping,
        mode="properties",
        database=graph["database"],
    )
    car = graph["run"](f"MATCH (c:`{graph['label']}` {{code: 'car'}}) RETURN c")[0]["c"]
    assert "kgr_accuracy" not in car and car["kgr_accuracy_missing"] == "no rows"
    assert car["code"] == "car" and car["name"] == "Car"  # the concept's own data is untouched


def test_writer_refuses_bad_options(vehicles):
    from kg_rageval.integrations.neo4j_writer import write_query, write_results

    with pytest.raises(ConfigError, match="run_id"):
        write_results("bolt://127.0.0.1:1", {}, run_id="")
    with pytest.raises(ConfigError, match="mode"):
        write_results("bolt://127.0.0.1:1", {}, run_id="r", mode="csv")
    with pytest.raises(ConfigError, match="result label"):
        write_query("nodes", GraphMapping(), result_label="Eval Result")
    with pytest.raises(ConfigError, match="needs the ontology"):
        write_results("bolt://127.0.0.1:1", _toy_eval(), run_id="r")


# ---------------------------------------------------------------------- end to end: CLI and audit
def _mapping_file(tmp_path, label):
    p = tmp_path / "mapping.yaml"
    p.write_text(
        f"node_label: {label}\nid_property: code\nlabel_properties: [name]\n"
        "synonym_properties: [aka]\nrelationships: [IS_A]\n"
    )
    return p


def _env_credentials(monkeypatch, graph):
    if graph["auth"] is not None:
        monkeypatch.setenv("KG_RAGEVAL_NEO4J_USER", graph["auth"][0])
        monkeypatch.setenv("KG_RAGEVAL_NEO4J_PASSWORD", graph["auth"][1])


@pytest.mark.slow
def test_ontology_commands_take_a_bolt_uri_and_mapping_file(graph, vehicles, tmp_path, monkeypatch, capsys):
    import json

    from kg_rageval.cli.main import main
    from kg_rageval.ontology.cache import load_compiled

    _store_vehicles(graph)
    _env_credentials(monkeypatch, graph)
    mapping = _mapping_file(tmp_path, graph["label"])
    db = ["--database", graph["database"]] if graph["database"] else []
    assert (
        main(["ontology", "inspect", graph["uri"], "--mapping", str(mapping), *db, "--format", "json"]) == 0
    )
    out = capsys.readouterr().out
    d = json.loads(out)
    assert (d["nodes"], d["edges"], d["roots"]) == (7, 7, ["vehicle"])
    assert d["content_hash"] == vehicles.content_hash
    if graph["auth"]:
        assert graph["auth"][1] not in out  # the password is never printed
    assert main(["ontology", "validate", graph["uri"], "--mapping", str(mapping), *db]) == 0
    capsys.readouterr()
    kgro = tmp_path / "v.kgro"
    assert main(["ontology", "compile", graph["uri"], "--mapping", str(mapping), *db, "-o", str(kgro)]) == 0
    capsys.readouterr()
    assert load_compiled(kgro).content_hash == vehicles.content_hash
    # a preset name that does not exist, a mapping file that does not exist: exit 2
    assert main(["ontology", "inspect", graph["uri"], "--mapping", "n10s-nope", *db]) == 2
    assert "unknown graph mapping preset 'n10s-nope'" in capsys.readouterr().err
    assert main(["ontology", "inspect", graph["uri"], "--mapping", str(tmp_path / "no.yaml"), *db]) == 2
    assert "no such graph mapping file" in capsys.readouterr().err


@pytest.mark.slow
def test_audit_reads_the_graph_and_writes_back(graph, tmp_path, monkeypatch, capsys):
    import json

    from kg_rageval.cli.main import main

    _store_vehicles(graph)
    _env_credentials(monkeypatch, graph)
    _mapping_file(tmp_path, graph["label"])
    records = [
        ("r1", "sedan", "sedan"),
        ("r2", "sedan", "hatchback"),
        ("r3", "submarine", "boat"),
        ("r4", "hatchback", "hatchback"),
    ]
    (tmp_path / "records.jsonl").write_text(
        "".join(json.dumps({"id": i, "labels": {"gold": g, "pred": p}}) + "\n" for i, g, p in records)
    )
    run_id = graph["label"] + "-audit"
    opts = {"mapping": "mapping.yaml"}  # relative to the config file
    if graph["database"]:
        opts["database"] = graph["database"]
    config = {
        "name": "graph",
        "ontology": {"path": graph["uri"], "options": opts},
        "records": "records.jsonl",
        "families": {"hierarchy": {}},
        "min_rows": 1,  # toy data; the minimum itself: tests/audit/test_hostile_min_rows.py
        "gates": ["hierarchy.exact_accuracy >= 0.5"],
        "report": {"formats": ["json"], "write_back": {"mode": "properties", "run_id": run_id}},
    }
    cfg = tmp_path / "audit.json"
    cfg.write_text(json.dumps(config))
    assert main(["audit", "--config", str(cfg), "--format", "json", "--quiet"]) == 0
    out = capsys.readouterr().out
    payload = json.loads(out)
    wb = payload["write_back"]
    assert wb["mode"] == "properties" and wb["run_id"] == run_id and wb["family"] == "audit"
    assert wb["written"] == 6 and wb["n_not_found"] == 0  # the 6 nodes with gold rows under them
    if graph["auth"]:
        assert graph["auth"][1] not in out
    car = graph["run"](f"MATCH (c:`{graph['label']}` {{code: 'car'}}) RETURN c")[0]["c"]
    # car pools r1 (exact), r2 (sibling), r4 (exact): 2 of 3
    assert car["kgr_hierarchy_exact_accuracy"] == pytest.approx(2 / 3) and car["kgr_n"] == 3
    assert car["kgr_run_id"] == run_id and car["kgr_family"] == "audit"
    # credentials in the config are refused
    config["ontology"]["options"]["password"] = "x"
    cfg.write_text(json.dumps(config))
    assert main(["audit", "--config", str(cfg), "--quiet"]) == 2
    assert "credentials come from the environment only" in capsys.readouterr().err
