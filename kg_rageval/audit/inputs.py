"""The audit's inputs: the ontology, records and extra input files a config names, read once.

:func:`load_inputs` reads them (a file the config names must exist: the error names the config
key); :func:`load_config_ontology` loads the ontology with its loader options
(:func:`ontology_options`), a graph database URI (:func:`is_graph_uri`) with its mapping
(:func:`config_mapping`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kg_rageval.audit.config import AuditConfig
from kg_rageval.base.errors import ConfigError, InputError


# ---------------------------------------------------------------------- inputs
def _require_file(path: Path, what: str, key: str, config: AuditConfig) -> None:
    """An input file named by the config must exist: the error names the config key."""
    if not path.exists():
        raise InputError(
            f"{what} does not exist", source=config.source, location=f"{key} (resolved to {path})"
        )


def is_graph_uri(path: str) -> bool:
    """Whether an ontology path is a graph database URI (the ``neo4j`` loader's)."""
    from kg_rageval.ontology.loaders import detect_format

    return "://" in path and detect_format(path) == "neo4j"


def config_mapping(config: AuditConfig, mapping: Any, key: str) -> Any:
    """A graph ``mapping`` named in the config: a mapping file path resolved against the
    config's directory (it must exist); presets and dicts unchanged."""
    from kg_rageval.ontology.loaders.neo4j import MAPPING_FILE_SUFFIXES, PRESETS

    if (
        isinstance(mapping, str)
        and mapping not in PRESETS
        and mapping.lower().endswith(MAPPING_FILE_SUFFIXES)
    ):
        mpath = config.path(mapping)
        _require_file(mpath, "graph mapping file", f"{key} = {mapping!r}", config)
        return str(mpath)
    return mapping


def ontology_options(config: AuditConfig) -> dict[str, Any]:
    """The loader options of ``config.ontology`` (values checked, errors naming
    ``ontology.options.<key>``), a mapping file resolved against the config."""
    from kg_rageval.ontology.loaders.options import check_option_values

    try:
        options = check_option_values(config.ontology.options, where="ontology.options")
    except ConfigError as exc:
        raise ConfigError(str(exc), source=config.source) from None
    if "mapping" in options:
        options["mapping"] = config_mapping(config, options["mapping"], "ontology.options.mapping")
    return options


def load_config_ontology(config: AuditConfig) -> Any:
    """The ontology ``config.ontology`` names: a file relative to the config, or a graph
    database URI (format ``neo4j`` unless given) with its mapping; loader options checked
    against the loader (an unknown one is exit 2 naming it)."""
    from kg_rageval.ontology import load_ontology

    raw = config.ontology.path
    options = ontology_options(config)
    if is_graph_uri(raw):
        return load_ontology(raw, format=config.ontology.format or "neo4j", **options)
    opath = config.path(raw)
    _require_file(opath, "ontology file", f"ontology.path = {raw!r}", config)
    return load_ontology(opath, format=config.ontology.format, **options)


def load_inputs(config: AuditConfig, *, records: bool = True) -> dict[str, Any]:
    """Ontology, records, corpus, spec, judgments and the cited test-set manifest (a JSON object,
    :mod:`.testset_pin`) named by the config (InputError on any
    unreadable input: exit code 2). ``records=False``: the records file is checked to exist but
    not read (a streamed audit reads it in chunks; ``inputs["records"]`` is ``None``)."""
    from kg_rageval.records import read_records

    ontology = load_config_ontology(config)
    rpath = config.path(config.records)
    _require_file(rpath, "records file", f"records = {config.records!r}", config)
    held: list[dict] | None = None
    if not records:
        pass
    elif config.records_format:  # an import (docs/interop.md): RAGAS, DeepEval, ...
        from kg_rageval.interop.formats import read

        held = read(config.records_format, rpath).records
    elif rpath.name.endswith((".otlp.json", ".otlp.jsonl")):  # traces: one record per trace (docs/system.md)
        from kg_rageval.families.system.otlp import import_otlp

        held = import_otlp(rpath)
    else:
        held = read_records(rpath)
    corpus = None
    if config.corpus:
        cpath = config.path(config.corpus)
        _require_file(cpath, "corpus file", f"corpus = {config.corpus!r}", config)
        corpus = read_records(cpath)
    spec = None
    if config.spec:
        spec = _read_spec(config.path(config.spec), config)
    judgments = None
    if config.judgments:
        jpath = config.path(config.judgments)
        if not jpath.exists():
            raise InputError(
                "judgments file does not exist",
                source=config.source,
                location=f"judgments = {config.judgments!r}",
            )
        judgments = read_records(jpath)
    testset = None
    if config.testset_manifest:  # read (and refused, exit 2) before any family runs; checked by the runner
        from kg_rageval.audit.testset_pin import read_testset_manifest

        testset = read_testset_manifest(config.path(config.testset_manifest), config.source)
    paths = {
        "records": rpath,
        "corpus": config.path(config.corpus),
        "spec": config.path(config.spec),
        "judgments": config.path(config.judgments),
        "qrels": config.path(config.qrels),
        "run": config.path(config.run),
        "shapes": config.path(config.shapes),
    }
    return {
        "ontology": ontology,
        "records": held,
        "corpus": corpus,
        "spec": spec,
        "judgments": judgments,
        "testset_manifest": testset,
        "paths": {k: v for k, v in paths.items() if v is not None},
    }


def _read_spec(path: Path, config: AuditConfig) -> Any:
    if not path.exists():
        raise InputError(
            "schema spec file does not exist",
            source=config.source,
            location=f"spec = {config.spec!r} (resolved to {path})",
        )
    from kg_rageval.records import read_structured

    return read_structured(path, what="schema spec")[0]
