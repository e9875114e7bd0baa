"""Common tests of the scoring contract over the whole family registry (in the style of
scikit-learn's common estimator checks): every registered family and metric is reachable
from the CLI, the audit config and the pytest plugin under the same name; every declared
parameter has a CLI flag and a config key; a wrong option or value is exit 2 naming the key;
a gate evaluates identically in ``audit`` and ``assert_gates``; Dask equals in-process.

The data is the bundled demo (Disease Ontology cancer slim), which has a section for every
family; it is built once per module into a temporary directory."""

from __future__ import annotations

import json

import pytest
from family_demo import add_quality_sections, add_relation_questions, family_inputs
from plugin_helpers import installed_entry_points
from stream_helpers import FIXTURES

from kg_rageval.base.errors import ConfigError
from kg_rageval.cli.main import main
from kg_rageval.contract import MetricName
from kg_rageval.scoring import REGISTRY, get_scorer, load_entry_points, resolve_metric
from kg_rageval.scoring.properties import EXEMPT, PROPERTIES, command_of, has_property, undeclared

PLUGINS = {"exact_label": "plugin_family:EXACT_LABEL"}
"""Plugin families registered for this module through a real entry point (tests/plugin_family.py)."""
FAMILIES = [*REGISTRY, *(n for n in PLUGINS if n not in REGISTRY)]
"""Every registered family (built-in ones, ones registered at collection) and the plugin ones."""
QUALITY = (
    "judge",
    "system",
    "rewrite",
    "iterative",
    "parsing",
    "consistency",
    "nuggets",
    "chunking",
    "index",
    "extraction",
    "cleaning",
    "routing",
)
"""Families scored on the demo records with judges and system sections (add_quality_sections)."""


def _declared(name: str):
    """The Scorer of ``name``: registered, or the plugin's (before its entry point is loaded)."""
    import importlib

    if name in REGISTRY:
        return REGISTRY[name]
    module, _, attr = PLUGINS[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def with_property(prop: str) -> list:
    """The families that have ``prop`` (a test per family) — the declarations decide; a family
    declared neither way fails test_every_family_declares_every_property."""
    return [n for n in FAMILIES if has_property(_declared(n), prop)]


def without_property(prop: str) -> list:
    return [n for n in FAMILIES if n not in with_property(prop)]


@pytest.fixture(scope="module", autouse=True)
def plugin_families(tmp_path_factory):
    with installed_entry_points(tmp_path_factory.mktemp("site"), PLUGINS):
        assert set(load_entry_points()) == set(PLUGINS) - set(REGISTRY) or set(PLUGINS) <= set(REGISTRY)
        yield


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    import json as _json

    from kg_rageval.demo import build_demo
    from kg_rageval.ontology import load_ontology
    from kg_rageval.records import read_records

    out = tmp_path_factory.mktemp("demo")
    built = build_demo(out, bootstrap=20)
    onto = load_ontology(out / "doid-cancer-slim.obo")
    add_relation_questions(out / "records.jsonl", onto)
    records = read_records(out / "records.jsonl")
    quality = add_quality_sections(records, onto)
    (out / "quality.jsonl").write_text("".join(_json.dumps(r) + "\n" for r in quality))
    return {
        "dir": out,
        "config": built["config"],
        "ontology": onto,
        "records": records,
        "quality_records": read_records(out / "quality.jsonl"),
        "inputs": {
            "corpus": str(out / "corpus.jsonl"),
            "spec": str(out / "schema.yaml"),
            # the file families (trec, shacl): their evidence is these files
            "qrels": str(FIXTURES / "trec_eval" / "qrels.test"),
            "run": str(FIXTURES / "trec_eval" / "results.test"),
            "shapes": str(FIXTURES.parent / "shapes" / "output-attack.ttl"),
        },
    }


def records_for(name: str, demo: dict) -> list:
    return demo["quality_records"] if name in QUALITY else demo["records"]


def data_file(name: str, demo: dict) -> str:
    return str(demo["dir"] / ("quality.jsonl" if name in QUALITY else "records.jsonl"))


# ---------------------------------------------------------------------- the property table
def test_every_family_declares_every_property():
    """Each registered family has each declared property or is exempt from it with a reason
    (scikit-learn's "we shouldn't forget any metrics"); none is both."""
    assert set(FAMILIES) <= set(REGISTRY)
    assert undeclared() == {}
    for prop, fams in EXEMPT.items():
        assert prop in PROPERTIES
        assert all(why.strip() for why in fams.values()), prop


def test_an_undeclared_family_is_caught():
    from kg_rageval.scoring import Scorer

    extra = {**REGISTRY, "newcomer": Scorer("newcomer", "x:y", ("labels",), streamable=False)}
    got = undeclared(extra)
    assert set(got) == set(PROPERTIES) and all(v == ["newcomer"] for v in got.values())


def test_the_common_tests_cover_the_whole_registry():
    assert FAMILIES == [*REGISTRY]  # the plugin family is registered: nothing left out
    assert {"judge", "system", "context", "exact_label"} <= set(FAMILIES)


# ---------------------------------------------------------------------- each declared property, tested
def _metric_values(res) -> dict:
    return {k: (m.value, m.numerator, m.denominator) for k, m in res.metrics().items()}


@pytest.mark.parametrize("name", with_property("streamable"))
def test_streamable_families_score_a_path_in_chunks_like_the_list(name, demo, tmp_path):
    import json as _json

    recs = records_for(name, demo)
    path = tmp_path / "r.jsonl"
    path.write_text(
        "".join(_json.dumps({k: v for k, v in r.items() if not k.startswith("_")}) + "\n" for r in recs)
    )
    sc = get_scorer(name)
    whole = sc.score(demo["ontology"], recs, **family_inputs(name, demo))
    chunked = sc.score(demo["ontology"], str(path), chunk_size=7, **family_inputs(name, demo))
    a, b = _metric_values(chunked), _metric_values(whole)
    assert len(recs) > 7 and list(a) == list(b) and a
    for k in a:  # sums in another order: equal up to the last bits
        assert [x is None for x in a[k]] == [x is None for x in b[k]], k
        assert [x for x in a[k] if x is not None] == pytest.approx(
            [x for x in b[k] if x is not None], rel=1e-12, abs=1e-12
        ), k


@pytest.mark.parametrize("name", with_property("reads_ontology_ids"))
def test_id_reading_families_take_the_one_id_policy(name, demo):
    from kg_rageval.contract.ids import ID_PARAMS

    sc = get_scorer(name)
    assert [p for p in sc.params if p.name in {q.name for q in ID_PARAMS}] == list(ID_PARAMS)
    with pytest.raises(ConfigError, match=f"{name}.on_unknown: 'bogus' is not one of"):
        sc.score(demo["ontology"], records_for(name, demo), on_unknown="bogus", **family_inputs(name, demo))


@pytest.mark.parametrize("name", with_property("needs_ontology"))
def test_ontology_families_do_not_score_without_one(name, demo):
    with pytest.raises(Exception):  # noqa: B017 — any error; never numbers without the ontology
        get_scorer(name).score(None, records_for(name, demo), **family_inputs(name, demo))


@pytest.mark.parametrize("name", without_property("needs_ontology"))
def test_ontology_free_families_score_the_same_without_one(name, demo):
    sc = get_scorer(name)
    kw = family_inputs(name, demo)
    with_onto = sc.score(demo["ontology"], records_for(name, demo), **kw)
    assert _metric_values(sc.score(None, records_for(name, demo), **kw)) == _metric_values(with_onto)


@pytest.mark.parametrize("name", with_property("per_node_rollup"))
def test_rollup_families_key_rows_by_gold_node(name, demo):
    from kg_rageval.audit.pernode import safe_rollup

    res = get_scorer(name).score(demo["ontology"], records_for(name, demo), **family_inputs(name, demo))
    keyed = [ev for ev in res.values() if "gold_node" in ev.keys and len(ev)]
    assert keyed, f"{name}: no member keys gold_node"
    nodes = safe_rollup(keyed[0], demo["ontology"])
    assert nodes and all(e["n"] > 0 for e in nodes.values())
    assert {n for n in keyed[0].keys["gold_node"].tolist() if n is not None} <= set(nodes)


# ---------------------------------------------------------------------- declarations
@pytest.mark.parametrize("name", FAMILIES)
def test_declaration_is_complete(name):
    sc = REGISTRY[name]
    # a file family (trec) reads no record section: its evidence is its required input files
    assert sc.description and sc.metrics and (sc.sections or any(i.required for i in sc.inputs))
    for p in sc.params:
        assert p.help, p.name
        if p.exposed and p.default is not None and p.default != ():
            assert p.coerce(p.default, "x") == (
                tuple(p.default) if isinstance(p.default, list) else p.default
            )
    names = [m.name for m in sc.metrics]
    assert len(names) == len(set(names)), "a metric declared twice"
    assert all(m.family == name for m in sc.metrics)
    assert {m.member for m in sc.metrics} <= set(sc.member_names)


def _score_command(name: str):
    """The click command of ``kg-rageval score <command of name>`` (a plugin's is built)."""
    import click

    from kg_rageval.cli.main import score

    cmd = score.get_command(click.Context(score), command_of(name))
    assert cmd is not None, f"no 'kg-rageval score {command_of(name)}'"
    return cmd


@pytest.mark.parametrize("name", with_property("score_command"))
def test_every_param_has_a_cli_flag_and_a_config_key(name):
    cmd = _score_command(name)
    by_dest = {p.name: p for p in cmd.params}
    sc = REGISTRY[name]
    for p in sc.params:
        if not p.exposed:
            continue
        assert p.name in by_dest, f"score {name}: no flag for {p.name}"
        assert p.flag in by_dest[p.name].opts, (p.flag, by_dest[p.name].opts)
        assert sc.validate({p.name: p.default})[p.name] == p.default  # a config key
    for i in sc.inputs:
        assert i.flag in by_dest[i.name].opts


@pytest.mark.parametrize("name", FAMILIES)
def test_declared_metrics_are_the_metrics_produced(name, demo):
    """The declaration is the truth: the family produces exactly its declared metric names
    (members that need an input absent here, such as reproducibility, are left out)."""
    sc = REGISTRY[name]
    result = sc.score(demo["ontology"], records_for(name, demo), **family_inputs(name, demo))
    produced = set(result.metrics())
    opts = sc.validate({})
    values = {k: set(v) for k, v in (sc.template_values(opts) if sc.template_values else {}).items()}
    for key in produced:  # word placeholders ({stage:word}) take the values the records name
        found = sc.find_metric(key.split(".", 1)[1])
        assert found is not None, f"{key} is not declared"
        for ph, v in found[1].items():
            if f"{{{ph}:word}}" in found[0].name:
                values.setdefault(ph, set()).add(v)
    if sc.template_values is None and any("{" in m.name for m in sc.metrics if m.member in result):
        assert produced  # an option picks the measures (trec): every produced name is declared (above)
    else:
        declared = {
            f"{name}.{n}"
            for m in sc.metrics
            if m.member in result and m.applies(opts)
            for n in m.expand(values)
        }
        assert produced == declared and produced
    for key in produced:  # every produced name resolves to itself
        assert str(resolve_metric(key)) == key


# ---------------------------------------------------------------------- names
@pytest.mark.parametrize(
    "text",
    [
        "retrieval.ndcg@10",
        "hierarchy.hierarchical_f1[node:TA0005]",
        "ci_low(generation.faithfulness)",
        "retrieval.mrr[slice:intent=lookup]",
        "delta:retrieval.recall@10",
        "ci_high(delta:hierarchy.hierarchical_f1)",
    ],
)
def test_metric_name_round_trip(text):
    assert str(MetricName.parse(text)) == text
    assert str(resolve_metric(text)) == text


@pytest.mark.parametrize(
    "alias,canonical",
    [
        ("nDCG@10", "retrieval.ndcg@10"),
        ("P@10", "retrieval.precision@10"),
        ("R@5", "retrieval.recall@5"),
        ("AP", "retrieval.map"),
        ("RR", "retrieval.mrr"),
        ("mrr", "retrieval.mrr"),
        ("retrieval.nDCG@5", "retrieval.ndcg@5"),
        ("ci_low(nDCG@10)", "ci_low(retrieval.ndcg@10)"),
        ("generation.faithfulness.faithfulness", "generation.faithfulness"),
        ("faithfulness", "generation.faithfulness"),
    ],
)
def test_aliases_resolve_to_one_canonical_name(alias, canonical):
    assert str(resolve_metric(alias)) == canonical


def test_resolution_errors_say_what_to_write():
    with pytest.raises(ConfigError, match=r"unknown metric 'mrrr' \(did you mean 'mrr'"):
        resolve_metric("mrrr")
    with pytest.raises(
        ConfigError,
        match="ambiguous metric 'hierarchical_f1': produced by "
        "hierarchy.hierarchical_f1, linking.hierarchical_f1",
    ):
        resolve_metric("hierarchical_f1")
    assert (
        str(resolve_metric("hierarchical_f1", scope=["hierarchy", "retrieval"]))
        == "hierarchy.hierarchical_f1"
    )
    with pytest.raises(
        ConfigError, match=r"family 'retrieval' has no metric 'ndgc@10' \(did you mean 'ndcg@10'"
    ):
        resolve_metric("retrieval.ndgc@10")
    with pytest.raises(ConfigError, match=r"k=20 is not produced by the options of family 'retrieval'"):
        resolve_metric("retrieval.recall@20")
    assert (
        str(resolve_metric("retrieval.recall@20", options={"retrieval": {"k": [20]}}))
        == "retrieval.recall@20"
    )


# ---------------------------------------------------------------------- audit config
@pytest.mark.parametrize("name", FAMILIES)
def test_wrong_option_or_value_is_exit_2_naming_the_key(name, demo, tmp_path, capsys):
    import yaml

    cfg = yaml.safe_load(open(demo["config"]))
    sc = REGISTRY[name]
    for opts, expect in [({"bogus_option": 1}, f"families.{name}: unknown option 'bogus_option'")] + [
        (
            {p.name: "not-a-choice"},
            f"families.{name}.{p.name}"
            + ("[0]" if p.kind.endswith("_list") else "")
            + ": 'not-a-choice' is not one of",
        )
        for p in sc.params
        if p.choices
    ][:1]:
        cfg["families"] = {name: opts}
        path = demo["dir"] / f"bad_{name}.yaml"
        path.write_text(yaml.safe_dump(cfg))
        assert main(["audit", "--config", str(path), "--quiet", "--out", str(tmp_path)]) == 2
        assert expect in capsys.readouterr().err


def test_misspelt_gate_metric_is_exit_2_even_if_its_family_is_not_configured(demo, tmp_path, capsys):
    import yaml

    cfg = yaml.safe_load(open(demo["config"]))
    cfg["families"] = {"hierarchy": {}}
    cfg["gates"] = ["generation.faithfulnes >= 0.5"]
    cfg.pop("baseline")
    path = demo["dir"] / "typo.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["audit", "--config", str(path), "--quiet", "--out", str(tmp_path)]) == 2
    assert "did you mean 'faithfulness'" in capsys.readouterr().err


def test_gate_is_decided_identically_in_audit_and_assert_gates(demo):
    """Same data, same gates (plain, aliased, scoped, bounded): the same observed values."""
    from kg_rageval.audit.config import config_from_mapping
    from kg_rageval.audit.runner import run_audit
    from kg_rageval.pytest_plugin import check_gates

    gates = [
        "retrieval.recall@10 >= 0.9",
        "nDCG@10 >= 0.5",
        "hierarchy.hierarchical_f1[node:DOID:2531] >= 0.7",
        "retrieval.mrr[slice:intent=label_lookup] >= 0.8",
        "ci_low(retrieval.mrr) >= 0.5",
    ]
    cfg = config_from_mapping(
        {
            "ontology": "doid-cancer-slim.obo",
            "records": "records.jsonl",
            "corpus": "corpus.jsonl",
            "families": {"hierarchy": {}, "retrieval": {}},
            "gates": gates,
            "missing_runs": {"budget": 1.0},
            "bootstrap": {"n_resamples": 100, "seed": 4},
        },
        base_dir=demo["dir"],
    )
    audit = run_audit(cfg, progress=False)
    evs = [
        *get_scorer("hierarchy").score(demo["ontology"], demo["records"]).values(),
        *get_scorer("retrieval")
        .score(demo["ontology"], demo["records"], corpus=demo["inputs"]["corpus"])
        .values(),
    ]
    results, _ = check_gates(evs, gates, ontology=demo["ontology"], bootstrap=cfg.bootstrap)
    got = {str(r.gate): (r.status, r.observed) for r in results}
    want = {str(r.gate): (r.status, r.observed) for r in audit.gate_results if str(r.gate) in got}
    assert got == want and len(got) == len(gates)
    assert all(v[1] is not None for v in got.values())


# ---------------------------------------------------------------------- one call, one shape
@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_is_called_the_same_way(name, demo):
    from kg_rageval.results.evaluation_set import EvaluationSet

    res = get_scorer(name).score(demo["ontology"], records_for(name, demo), **family_inputs(name, demo))
    assert isinstance(res, EvaluationSet) and res.family == name
    assert list(res)[: len(res)] == [m for m in REGISTRY[name].member_names if m in res]
    with pytest.raises(ConfigError, match=f"{name}: unknown option 'bogus'"):
        get_scorer(name).score(
            demo["ontology"], records_for(name, demo), bogus=1, **family_inputs(name, demo)
        )


@pytest.mark.slow
def test_dask_equals_in_process_for_every_family(demo):
    pytest.importorskip("distributed")
    from kg_rageval.integrations.dask import local_client, score_distributed

    try:
        client = local_client(n_workers=2, threads_per_worker=1)
    except Exception as exc:  # pragma: no cover - sandbox without process spawning
        pytest.skip(f"cannot start a LocalCluster: {exc}")
    try:
        for name in FAMILIES:
            kw = family_inputs(name, demo)
            single = get_scorer(name).score(demo["ontology"], records_for(name, demo), **kw)
            dist = score_distributed(
                name, demo["ontology"], records_for(name, demo), client=client, npartitions=3, **kw
            )
            assert list(dist) == list(single), name
            a, b = dist.metrics(), single.metrics()
            assert list(a) == list(b), name
            for k in a:  # fractional stats may differ in the last bits (summation order)
                assert (a[k].value is None) == (b[k].value is None), k
                assert a[k].missing == b[k].missing, k
                if a[k].value is not None:
                    assert a[k].value == pytest.approx(b[k].value, rel=1e-12, abs=1e-12), k
            for member in single:
                assert dist[member].record_ids.tolist() == single[member].record_ids.tolist(), (name, member)
                assert dist[member].unscored == single[member].unscored, (name, member)
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()


# ---------------------------------------------------------------------- one id resolver
def _status_ontology():
    from kg_rageval.ontology import OntologyBuilder

    b = OntologyBuilder("status")
    for n in ("root", "a", "b"):
        b.add_node(n)
    b.add_node("old", status="deprecated", replaced_by="a")
    for c in ("a", "b", "old"):
        b.add_edge(c, "root")
    return b.build()


def test_one_id_policy_in_hierarchy_and_linking():
    """The same defaults everywhere: a predicted id the ontology lacks is counted
    (not_in_ontology), a deprecated predicted id is flagged with its replacement, a deprecated
    or unknown gold id is an input error naming the record and field."""
    from kg_rageval.base.errors import InputError, UnknownIdError

    o = _status_ontology()
    lab = [
        {"id": "1", "labels": {"gold": ["a"], "pred": ["zz"]}},
        {"id": "2", "labels": {"gold": ["b"], "pred": ["old"]}},
    ]
    men = [
        {
            "id": "1",
            "text": "xx yy",
            "mentions": {
                "gold": [{"start": 0, "end": 2, "id": "a"}],
                "pred": [{"start": 0, "end": 2, "id": "zz"}],
            },
        },
        {
            "id": "2",
            "text": "xx yy",
            "mentions": {
                "gold": [{"start": 0, "end": 2, "id": "b"}],
                "pred": [{"start": 0, "end": 2, "id": "old"}],
            },
        },
    ]
    hres = get_scorer("hierarchy").score(o, lab)
    h = hres.metrics()
    assert (
        h["hierarchy.error_count_not_in_ontology"].value == 1
        and h["hierarchy.error_count_inactive"].value == 1
    )
    assert hres.single.details["replacement"].tolist() == [None, "a"]
    ln = get_scorer("linking").score(o, men)
    lm = ln.metrics()
    assert lm["linking.unknown_ids"].value == 1 and lm["linking.inactive_ids"].value == 1
    assert ln.single.details["replacement"].tolist() == [None, "a"]
    bad_lab = [{"id": "3", "labels": {"gold": ["old"], "pred": ["a"]}}]
    bad_men = [
        {"id": "3", "text": "xx", "mentions": {"gold": [{"start": 0, "end": 2, "id": "old"}], "pred": []}}
    ]
    for fam, recs, field in (
        ("hierarchy", bad_lab, "labels.gold[0]"),
        ("linking", bad_men, "mentions.gold[0].id"),
    ):
        with pytest.raises(
            InputError, match=rf"'old' is deprecated \(replaced by 'a'\).*record '3'.*{re_escape(field)}"
        ):
            get_scorer(fam).score(o, recs)
        # the same option, the same name, in both families
        get_scorer(fam).score(o, recs, on_status_gold="replace")
    for fam, recs in (
        ("hierarchy", [{"id": "4", "labels": {"gold": ["nope"], "pred": ["a"]}}]),
        (
            "linking",
            [
                {
                    "id": "4",
                    "text": "xx",
                    "mentions": {"gold": [{"start": 0, "end": 2, "id": "nope"}], "pred": []},
                }
            ],
        ),
    ):
        with pytest.raises(UnknownIdError, match="record '4'.*unknown ontology id 'nope'"):
            get_scorer(fam).score(o, recs)
    assert [p.name for p in REGISTRY["hierarchy"].params if p.name.startswith(("on_", "aliases"))] == [
        p.name for p in REGISTRY["linking"].params if p.name.startswith(("on_", "aliases"))
    ]


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


# ---------------------------------------------------------------------- the same output everywhere
SHAPE = {
    "command",
    "family",
    "data",
    "ontology",
    "counts",
    "metrics",
    "unscored",
    "breakdowns",
    "evaluations",
}


def _score_cli(name, demo, *extra):
    import io
    from contextlib import redirect_stdout

    args = [
        "score",
        command_of(name),
        "-O",
        str(demo["dir"] / "doid-cancer-slim.obo"),
        "-d",
        data_file(name, demo),
    ]
    for i in get_scorer(name).inputs:
        if i.name in demo["inputs"]:
            args += [i.flag, demo["inputs"][i.name]]
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(args + list(extra))
    return code, buf.getvalue()


@pytest.mark.parametrize("name", with_property("score_command"))
def test_score_json_has_one_shape(name, demo):
    code, out = _score_cli(name, demo, "--format", "json")
    assert code == 0
    p = json.loads(out)
    assert SHAPE <= set(p) and "rows" not in p  # the same --rows default (off) everywhere
    assert p["command"] == f"score {command_of(name)}" and p["family"] == name
    assert set(p["counts"]) == {"records", "scored_records", "rows", "unscored"}
    assert p["counts"]["records"] == len(records_for(name, demo))
    assert all(k.startswith(f"{name}.") for k in p["metrics"])  # canonical names only
    assert all(str(resolve_metric(k)) == k for k in p["metrics"])
    code, out = _score_cli(name, demo, "--format", "json", "--rows", "--ci", "20")
    p = json.loads(out)
    assert p["rows"] and {"member", "record_id"} <= set(p["rows"][0])
    with_ci = [m for m in p["metrics"].values() if m.get("ci")]
    assert with_ci and all(m["ci"][0] <= m["value"] <= m["ci"][1] for m in with_ci)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["retrieval", "generation"])
def test_score_csv_and_to_pandas(name, demo):
    import csv
    import io

    code, out = _score_cli(name, demo, "--format", "csv")
    assert code == 0
    table = list(csv.DictReader(io.StringIO(out)))
    assert set(table[0]) == {"metric", "value", "numerator", "denominator", "ci_low", "ci_high", "missing"}
    res = get_scorer(name).score(demo["ontology"], demo["records"], **family_inputs(name, demo))
    assert [r["metric"] for r in table] == list(res.metrics())
    pd = pytest.importorskip("pandas")
    frame = res.to_pandas()
    assert isinstance(frame, pd.DataFrame) and len(frame) == sum(len(ev) for ev in res.values())
    assert list(res.to_pandas("metrics")["metric"]) == list(res.metrics())
    code, out = _score_cli(name, demo, "--format", "csv", "--rows")
    assert len(list(csv.DictReader(io.StringIO(out)))) == len(frame)


# ---------------------------------------------------------------------- no import circles
def test_no_import_cycles_between_modules():
    """No two modules of the package import each other, directly or through others (imports
    under TYPE_CHECKING and inside functions count too; package ``__init__`` re-exports do not)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "kg_rageval"
    mods = {}
    for p in root.rglob("*.py"):
        parts = list(p.relative_to(root.parent).with_suffix("").parts)
        init = parts[-1] == "__init__"
        mods[".".join(parts[:-1] if init else parts)] = (p, init)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, (p, init) in mods.items():
        pkg = m if init else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1] if node.level else []
                tgt = (
                    ".".join(base + ([node.module] if node.module else []))
                    if node.level
                    else node.module or ""
                )
                for c in [tgt] + [f"{tgt}.{a.name}" for a in node.names]:
                    if c in mods and c != m and not mods[c][1]:
                        edges[m].add(c)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(v: str) -> None:
        state[v] = 1
        stack.append(v)
        for w in edges[v]:
            if state.get(w) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(w) :] + [w]))
            if w not in state:
                visit(w)
        stack.pop()
        state[v] = 2

    for m, (_, init) in mods.items():
        if not init and m not in state:
            visit(m)


@pytest.mark.parametrize(
    "name", [n for n in FAMILIES if n not in REGISTRY or REGISTRY[n].sections]
)  # file families: no record
def test_slice_keys_are_normalised_the_same_way(name, demo):
    """``{"tier": 0}`` is the key ``slice:tier`` with the text ``"0"`` in every family."""
    recs = [
        dict(r, slices={**(r.get("slices") or {}), "tier": i % 2, "flag": True})
        for i, r in enumerate(records_for(name, demo))
    ]
    res = get_scorer(name).score(demo["ontology"], recs, **family_inputs(name, demo))
    for ev in res.values():
        if len(ev) and "slice:tier" in ev.keys:
            assert set(ev.keys["slice:tier"].tolist()) <= {"0", "1"}
            assert set(ev.keys["slice:flag"].tolist()) <= {"true"}
    assert any("slice:tier" in ev.keys for ev in res.values())


def test_a_measure_the_records_family_lacks_belongs_to_the_trec_family():
    """One alias table: a measure ``retrieval`` does not compute from records is ``trec``'s."""
    assert str(resolve_metric("Judged@10")) == "trec.Judged@10"
    with pytest.raises(
        ConfigError,
        match=r"'retrieval.Judged@10' is the measure trec.Judged@10, which family "
        r"'retrieval' does not compute from records",
    ):
        resolve_metric("retrieval.Judged@10")


@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_is_reachable_from_the_pytest_plugin(name, demo):
    """``assert_gates`` reads every family's result under the same canonical names."""
    from kg_rageval.pytest_plugin import check_gates

    res = get_scorer(name).score(demo["ontology"], records_for(name, demo), **family_inputs(name, demo))
    defined = [k for k, m in res.metrics().items() if m.value is not None][:5]
    results, _ = check_gates(res, [f"{k} >= -1" for k in defined], ontology=demo["ontology"], min_rows=1)
    assert [r.observed for r in results] == [res.metrics()[k].value for k in defined]
    assert all(r.status == "pass" for r in results)


def test_conformance_follows_the_same_id_policy(demo):
    from kg_rageval.base.errors import UnknownIdError

    o, spec = demo["ontology"], demo["inputs"]["spec"]
    good = next(i for i in o.ids if i.startswith("DOID:") and o.is_active(i))
    recs = [
        {
            "id": "a",
            "answer": {"output": {"disease": "DOID:nope"}},
            "reference": {"output": {"disease": good}},
        },
        {"id": "b", "answer": {"output": {"disease": good}}, "reference": {"output": {"disease": good}}},
    ]
    m = get_scorer("conformance").score(o, recs, spec=spec).metrics()
    assert (
        m["conformance.entity_vocabulary"].numerator == 1
        and m["conformance.entity_vocabulary"].denominator == 2
    )
    with pytest.raises(UnknownIdError, match=r"record 'a'.*answer.output.disease.*'DOID:nope'"):
        get_scorer("conformance").score(o, recs, spec=spec, on_unknown="error")
    bad_gold = [
        {
            "id": "c",
            "answer": {"output": {"disease": good}},
            "reference": {"output": {"disease": "DOID:nope"}},
        }
    ]
    with pytest.raises(UnknownIdError, match=r"record 'c'.*reference.output.disease.*'DOID:nope'"):
        get_scorer("conformance").score(o, bad_gold, spec=spec)
    counted = get_scorer("conformance").score(o, bad_gold, spec=spec, on_unknown_gold="count")
    assert counted.single.rows()[0]["problems"]["reference_unknown_ids"] == [
        {"value": "DOID:nope", "slot": "disease"}
    ]


def test_retrieval_filter_ids_follow_the_same_id_policy(demo):
    from kg_rageval.base.errors import UnknownIdError

    recs = [dict(r) for r in demo["records"] if (r.get("retrieval") or {}).get("filters")][:5]
    assert recs, "the demo logs filters"
    bad = dict(
        recs[0],
        retrieval={
            **recs[0]["retrieval"],
            "filters": [{"field": "category", "op": "within", "value": "DOID:nope"}],
        },
    )
    recs[0] = bad
    res = get_scorer("retrieval").score(demo["ontology"], recs, corpus=demo["inputs"]["corpus"])
    assert res.single.meta["filter_ids_not_in_ontology"] == ["DOID:nope"]  # counted, matches nothing
    with pytest.raises(UnknownIdError, match="'DOID:nope'"):
        get_scorer("retrieval").score(
            demo["ontology"], recs, corpus=demo["inputs"]["corpus"], on_unknown="error"
        )


@pytest.mark.slow
def test_audit_report_uses_canonical_names_only(demo):
    """One name per number: every metric key of the demo audit is canonical (it had 755 keys,
    most of them aliases of each other, before the one metric registry)."""
    from kg_rageval.audit.config import load_config
    from kg_rageval.audit.runner import run_audit

    res = run_audit(load_config(demo["config"]), progress=False)
    assert all(str(resolve_metric(k)) == k for k in res.metrics)
    plain = [k for k in res.metrics if "[" not in k and not k.startswith("delta:")]
    assert len(plain) == len(set(plain)) and len(res.metrics) < 400
