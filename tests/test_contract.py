"""Common tests of the scoring contract over the whole family registry (in the style of
scikit-learn's common estimator checks): every registered family and metric is reachable
from the CLI, the audit config and the pytest plugin under the same name; every declared
parameter has a CLI flag and a config key; a wrong option or value is exit 2 naming the key;
a gate evaluates identically in ``audit`` and ``assert_gates``; Dask equals in-process.

The data is the bundled demo (Disease Ontology cancer slim), which has a section for every
family; it is built once per module into a temporary directory."""

from __future__ import annotations

import pytest

from kg_rageval.cli.main import main
from kg_rageval.contract import REGISTRY, MetricName, get_scorer, resolve_metric
from kg_rageval.contract.builtin import BUILTIN
from kg_rageval.errors import ConfigError

FAMILIES = [sc.name for sc in BUILTIN]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from kg_rageval.demo import build_demo
    from kg_rageval.ontology import load_ontology
    from kg_rageval.records import read_records

    out = tmp_path_factory.mktemp("demo")
    built = build_demo(out, bootstrap=20)
    onto = load_ontology(out / "doid-cancer-slim.obo")
    return {"dir": out, "config": built["config"], "ontology": onto,
            "records": read_records(out / "records.jsonl"),
            "inputs": {"corpus": str(out / "corpus.jsonl"), "spec": str(out / "schema.yaml")}}


def _inputs(name: str, demo) -> dict:
    return {i.name: demo["inputs"][i.name] for i in get_scorer(name).inputs if i.name in demo["inputs"]}


# ---------------------------------------------------------------------- declarations
@pytest.mark.parametrize("name", FAMILIES)
def test_declaration_is_complete(name):
    sc = REGISTRY[name]
    assert sc.description and sc.sections and sc.metrics
    for p in sc.params:
        assert p.help, p.name
        if p.exposed and p.default is not None and p.default != ():
            assert p.coerce(p.default, "x") == (tuple(p.default) if isinstance(p.default, list) else p.default)
    names = [m.name for m in sc.metrics]
    assert len(names) == len(set(names)), "a metric declared twice"
    assert all(m.family == name for m in sc.metrics)
    assert {m.member for m in sc.metrics} <= set(sc.member_names)


@pytest.mark.parametrize("name", FAMILIES)
def test_every_param_has_a_cli_flag_and_a_config_key(name):
    import importlib

    from kg_rageval.cli.main import COMMANDS

    module, _, attr = COMMANDS["score"][name].partition(":")
    cmd = getattr(importlib.import_module(module), attr)
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
    result = sc.score(demo["ontology"], demo["records"], **_inputs(name, demo))
    produced = set(result.metrics())
    declared = {f"{name}.{m.name}" for m in sc.metrics if m.member in result}
    values = sc.template_values(sc.validate({})) if sc.template_values else {}
    declared = {f"{name}.{n}" for m in sc.metrics if m.member in result for n in m.expand(values)}
    assert produced == declared
    for key in produced:  # every produced name resolves to itself
        assert str(resolve_metric(key)) == key


# ---------------------------------------------------------------------- names
@pytest.mark.parametrize("text", ["retrieval.ndcg@10", "hierarchy.hierarchical_f1[node:TA0005]",
                                  "ci_low(generation.faithfulness)", "retrieval.mrr[slice:intent=lookup]",
                                  "delta:retrieval.recall@10", "ci_high(delta:hierarchy.hierarchical_f1)"])
def test_metric_name_round_trip(text):
    assert str(MetricName.parse(text)) == text
    assert str(resolve_metric(text)) == text


@pytest.mark.parametrize("alias,canonical", [
    ("nDCG@10", "retrieval.ndcg@10"), ("P@10", "retrieval.precision@10"), ("R@5", "retrieval.recall@5"),
    ("AP", "retrieval.map"), ("RR", "retrieval.mrr"), ("mrr", "retrieval.mrr"),
    ("retrieval.nDCG@5", "retrieval.ndcg@5"), ("ci_low(nDCG@10)", "ci_low(retrieval.ndcg@10)"),
    ("generation.faithfulness.faithfulness", "generation.faithfulness"), ("faithfulness", "generation.faithfulness"),
])
def test_aliases_resolve_to_one_canonical_name(alias, canonical):
    assert str(resolve_metric(alias)) == canonical


def test_resolution_errors_say_what_to_write():
    with pytest.raises(ConfigError, match=r"unknown metric 'mrrr' \(did you mean 'mrr'"):
        resolve_metric("mrrr")
    with pytest.raises(ConfigError, match="ambiguous metric 'hierarchical_f1': produced by "
                                          "hierarchy.hierarchical_f1, linking.hierarchical_f1"):
        resolve_metric("hierarchical_f1")
    assert str(resolve_metric("hierarchical_f1", scope=["hierarchy", "retrieval"])) == "hierarchy.hierarchical_f1"
    with pytest.raises(ConfigError, match=r"family 'retrieval' has no metric 'ndgc@10' \(did you mean 'ndcg@10'"):
        resolve_metric("retrieval.ndgc@10")
    with pytest.raises(ConfigError, match=r"k=20 is not produced by the options of family 'retrieval'"):
        resolve_metric("retrieval.recall@20")
    assert str(resolve_metric("retrieval.recall@20", options={"retrieval": {"k": [20]}})) == "retrieval.recall@20"


# ---------------------------------------------------------------------- audit config
@pytest.mark.parametrize("name", FAMILIES)
def test_wrong_option_or_value_is_exit_2_naming_the_key(name, demo, tmp_path, capsys):
    import yaml

    cfg = yaml.safe_load(open(demo["config"]))
    sc = REGISTRY[name]
    for opts, expect in ([({"bogus_option": 1}, f"families.{name}: unknown option 'bogus_option'")]
                         + [({p.name: "not-a-choice"}, f"families.{name}.{p.name}: 'not-a-choice' is not one of")
                            for p in sc.params if p.choices][:1]):
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

    gates = ["retrieval.recall@10 >= 0.9", "nDCG@10 >= 0.5", "hierarchy.hierarchical_f1[node:DOID:2531] >= 0.7",
             "retrieval.mrr[slice:intent=label_lookup] >= 0.8", "ci_low(retrieval.mrr) >= 0.5"]
    cfg = config_from_mapping({"ontology": "doid-cancer-slim.obo", "records": "records.jsonl",
                               "corpus": "corpus.jsonl", "families": {"hierarchy": {}, "retrieval": {}},
                               "gates": gates, "missing_runs": {"budget": 1.0},
                               "bootstrap": {"n_resamples": 100, "seed": 4}}, base_dir=demo["dir"])
    audit = run_audit(cfg, progress=False)
    evs = [*get_scorer("hierarchy").score(demo["ontology"], demo["records"]).values(),
           *get_scorer("retrieval").score(demo["ontology"], demo["records"], corpus=demo["inputs"]["corpus"]).values()]
    results, _ = check_gates(evs, gates, ontology=demo["ontology"], bootstrap=cfg.bootstrap)
    got = {str(r.gate): (r.status, r.observed) for r in results}
    want = {str(r.gate): (r.status, r.observed) for r in audit.gate_results if str(r.gate) in got}
    assert got == want and len(got) == len(gates)
    assert all(v[1] is not None for v in got.values())


# ---------------------------------------------------------------------- one call, one shape
@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_is_called_the_same_way(name, demo):
    from kg_rageval.evaluation import EvaluationSet

    res = get_scorer(name).score(demo["ontology"], demo["records"], **_inputs(name, demo))
    assert isinstance(res, EvaluationSet) and res.family == name
    assert list(res)[: len(res)] == [m for m in REGISTRY[name].member_names if m in res]
    with pytest.raises(ConfigError, match=f"{name}: unknown option 'bogus'"):
        get_scorer(name).score(demo["ontology"], demo["records"], bogus=1, **_inputs(name, demo))


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
            kw = _inputs(name, demo)
            single = get_scorer(name).score(demo["ontology"], demo["records"], **kw)
            dist = score_distributed(name, demo["ontology"], demo["records"], client=client, npartitions=3, **kw)
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
