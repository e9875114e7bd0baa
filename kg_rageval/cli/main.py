"""``kg-rageval`` command line: a thin layer over the library.

Subcommands live in their own modules and are imported only when invoked, so
``kg-rageval --help`` stays fast. Exit codes: 0 success (all gates pass), 1 a gate failed or
an ontology does not conform, 2 invalid input or configuration, 3 an internal error, 4
``audit --verify``: the evidence does not verify (tampered or changed).
"""

from __future__ import annotations

import importlib.util
import os
import sys

import click

from kg_rageval import __version__
from kg_rageval.base.imports import import_target

# "group path" -> "module:attribute"; a module that is not present is simply not listed.
COMMANDS: dict[str, dict[str, str]] = {
    "": {
        "ontology": "kg_rageval.cli.ontology:ontology",
        "score": "kg_rageval.cli.main:score",
        "link": "kg_rageval.cli.link:link",
        "audit": "kg_rageval.cli.audit:audit",
        "records": "kg_rageval.cli.drift:records",
        "compare": "kg_rageval.cli.compare:command",
        "fuse": "kg_rageval.cli.fuse:command",
        "metrics": "kg_rageval.cli.metrics:metrics",
        "testset": "kg_rageval.cli.testset:testset",
        "monitor": "kg_rageval.cli.monitor:monitor",
        "import": "kg_rageval.cli.importing:command",
        "chunking": "kg_rageval.cli.chunking:chunking",
        "index": "kg_rageval.cli.index:index",
    },
    "score": {
        "hierarchy": "kg_rageval.cli.score_hierarchy:command",
        "linking": "kg_rageval.cli.score_linking:command",
        "retrieval": "kg_rageval.cli.score_retrieval:command",
        "conformance": "kg_rageval.cli.score_conformance:command",
        "generation": "kg_rageval.cli.score_generation:command",
        "provenance": "kg_rageval.cli.score_provenance:command",
        "judges": "kg_rageval.cli.score_judges:command",
        "system": "kg_rageval.cli.score_system:command",
        "preference": "kg_rageval.cli.score_preference:command",
        "relations": "kg_rageval.cli.score_relations:command",
        "parsing": "kg_rageval.cli.score_parsing:command",
        "consistency": "kg_rageval.cli.score_consistency:command",
        "routing": "kg_rageval.cli.score_routing:command",
        "nuggets": "kg_rageval.cli.score_nuggets:command",
        "chunking": "kg_rageval.cli.score_chunking:command",
        "index": "kg_rageval.cli.score_index:command",
        "extraction": "kg_rageval.cli.score_extraction:command",
        "cleaning": "kg_rageval.cli.score_cleaning:command",
    },
}

HELP = {
    "ontology": "Inspect, validate, compile and diff ontologies.",
    "score": "Score one metric family over a records file.",
    "link": "Run a baseline entity linker and write predictions as records.",
    "audit": "Run the release gate: all families, thresholds, reports, exit codes.",
    "records": "Re-base records onto a new ontology release.",
    "compare": "Compare N retrieval systems: paired tests, corrections, CIs, per ontology branch.",
    "fuse": "Fuse N runs into one TREC run: RRF, convex (α sweep), CombSUM/MNZ/MAX/ANZ.",
    "metrics": "List every metric: family, formula, parameters, direction.",
    "testset": "Build, plan, split and check ontology-driven test sets.",
    "monitor": "Production monitoring: window store, drift per ontology branch, calibration, the monitoring page.",
    "import": "Turn RAGAS, DeepEval, BEIR, TREC RAG, Phoenix or OTLP data into records (missing counted).",
    "hierarchy": "Hierarchical P/R/F1, Wu-Palmer and the confusion taxonomy (labels section).",
    "linking": "Entity linking and NIL evaluation (mentions section).",
    "retrieval": "Retrieval metrics from records or TREC/BEIR/JSON qrels and runs (--trec-eval: exact trec_eval).",
    "conformance": "Schema validity, vocabulary, status and domain/range conformance.",
    "generation": "Faithfulness, answer correctness, refusal and calibration.",
    "provenance": "Citation completeness, provenance depth and reproducibility.",
    "judges": "Judge calibration vs human labels, PPI, position bias, judge agreement.",
    "system": "Latency quantiles, cost, tokens, cache hits, context coverage (records or OTLP traces).",
    "preference": "Hard filter or soft boost for a relevance preference (per query or global).",
    "relations": "Relation triples, answer sets and KG-grounded faithfulness (relations section).",
    "parsing": "OCR / extraction CER and WER, length ratio, TEDS of HTML tables (parsing section).",
    "extraction": "NER and relation extraction P/R/F1 per type, hierarchy credit, domain/range (extraction section).",
    "consistency": "Self-consistency of sampled answers as concept-set agreement (consistency section).",
    "routing": "Intent, route (ontology node) and adaptive-mode decisions of a router (routing section).",
    "nuggets": "TREC RAG nugget scores: All, Vital, Weighted, strict or not; judge agreement (nuggets section).",
    # one help line for both 'kg-rageval chunking' (the sweep) and 'kg-rageval score chunking'
    "chunking": "Chunk traceability, metadata, structure cuts (score chunking); Recall@k vs chunk size (chunking sweep).",
    # one help line for both 'kg-rageval index' (recall from vectors) and 'kg-rageval score index'
    "index": "ANN Recall@k vs exact search (index recall); recall, freshness lag, stale index (score index).",
    "cleaning": "Boilerplate, PII span P/R/F1, language ID, near duplicates, Unicode health (cleaning section).",
}


def _available(target: str) -> bool:
    module = target.partition(":")[0]
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def _family_description(name: str) -> str:
    from kg_rageval.scoring import REGISTRY

    return REGISTRY[name].description if name in REGISTRY else ""


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def __init__(self, *args, table: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self._table = table

    def list_commands(self, ctx: click.Context) -> list[str]:
        lazy = [n for n, t in COMMANDS[self._table].items() if _available(t)]
        return sorted(set(lazy) | set(super().list_commands(ctx)) | set(self._plugin_families()))

    def get_command(self, ctx: click.Context, name: str):
        target = COMMANDS[self._table].get(name)
        if target is None or not _available(target):
            if name in self._plugin_families():
                from kg_rageval.cli.score_plugin import make_command

                return make_command(name)
            return super().get_command(ctx, name)
        return import_target(target)

    def _plugin_families(self) -> list[str]:
        """``score``: the registered families without a command of their own (plugin families of
        the ``kg_rageval.families`` entry points, loaded here; a broken one is left out)."""
        if self._table != "score":
            return []
        from kg_rageval.scoring import REGISTRY, load_entry_points
        from kg_rageval.scoring.properties import command_of, has_property

        load_entry_points()
        return [
            n
            for n, sc in REGISTRY.items()
            if command_of(n) not in COMMANDS["score"] and has_property(sc, "score_command") is not False
        ]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # short help without importing every subcommand module
        plugin = set(self._plugin_families())
        rows = [
            (n, HELP.get(n, "") or (_family_description(n) if n in plugin else ""))
            for n in self.list_commands(ctx)
        ]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, table="", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kg-rageval")
@click.option(
    "--limit",
    "limit_opts",
    multiple=True,
    metavar="NAME=N",
    help="Raise or lower an input-cost limit (repeatable), e.g. --limit max_gz_bytes=8GiB; "
    "names: max_gz_bytes, max_gz_memory_bytes, max_json_depth, max_line_bytes, max_closure_entries, "
    "max_config_nodes, max_xml_expansion, max_doc_bytes (docs/ontology.md).",
)
def cli(limit_opts: tuple[str, ...] = ()) -> None:
    """kg-rageval: ontology-centric evaluation of knowledge-graph RAG systems.

    Every metric resolves through one compiled ontology. Use --format json on any command
    for machine-readable output.
    """
    if limit_opts:
        from kg_rageval.base.limits import set_limits

        values = {}
        for opt in limit_opts:
            name, eq, value = opt.partition("=")
            if not eq:
                raise click.BadParameter(f"expected NAME=N, got {opt!r}", param_hint="--limit")
            values[name.strip()] = value.strip()
        set_limits(values)


@cli.command(cls=LazyGroup, table="score")
def score() -> None:
    """Score one metric family over a records file."""


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the CLI, map errors to exit codes (2 bad input, 3 internal error)."""
    if argv is None:  # the console script (or ``python -m``): NumPy is not imported yet
        _short_blas_spin()
    from kg_rageval.base.errors import KgRagevalError
    from kg_rageval.base.limits import limits
    from kg_rageval.cli.common import error_line

    try:
        with limits({}):  # --limit overrides last for this command only
            cli.main(args=argv, prog_name="kg-rageval", standalone_mode=False)
        if argv is None:  # the console script: the process exits next
            _skip_shutdown_collection()
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except getattr(click.exceptions, "NoArgsIsHelpError", ()) as exc:  # a bare group: its help
        exc.show()
        return 2
    except click.ClickException as exc:  # bad options, a missing input file: one line, exit 2
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if isinstance(exc, click.UsageError) and ctx else ""
        click.echo(error_line(exc.format_message() + hint), err=True)
        return 2
    except click.Abort:
        click.echo("Aborted.", err=True)
        return 2
    except (KgRagevalError, OSError) as exc:  # OSError: an output path in a missing folder, ...
        click.echo(error_line(exc), err=True)
        return 2
    except SystemExit as exc:  # commands exit with their gate/validation code
        return int(exc.code or 0)
    except MemoryError:  # an input beyond this machine's memory: one line, exit 2, no traceback
        click.echo(
            error_line(
                "out of memory: the inputs need more memory than this process can get; lower the "
                "input-cost limits so that such an input is refused before it is read "
                "(kg-rageval --limit NAME=N, docs/ontology.md: max_gz_memory_bytes, "
                "max_closure_entries, ...) or give the process more memory"
            ),
            err=True,
        )
        return 2
    except Exception as exc:  # a bug: exit 3, never 1 (which means "a gate failed")
        import traceback

        from kg_rageval.base.redact import redact

        click.echo(redact(traceback.format_exc()).rstrip(), err=True)
        click.echo(error_line(f"internal error (please report): {type(exc).__name__}: {exc}"), err=True)
        return 3
    return 0


# OpenBLAS's idle worker threads busy-wait 2**N cycles before they sleep (default N = 28, about
# 0.1 s): started by ``import numpy``, they burn that on another core during every command's
# start-up (0.06 s CPU of a 0.14 s ``import numpy`` on the 2-core development machine, and
# wall time too when the cores are shared; docs/performance.md). N = 16 (~20 µs) keeps every
# thread for the BLAS products (bootstrap), which wake them as they need them.
BLAS_SPIN_ENV = {"OPENBLAS_THREAD_TIMEOUT": "16"}


def _short_blas_spin() -> None:
    """Set :data:`BLAS_SPIN_ENV` for this process and its children, only where the user has
    not set the variable and before NumPy (hence OpenBLAS) is loaded; results are unchanged."""
    if "numpy" in sys.modules:
        return
    for name, value in BLAS_SPIN_ENV.items():
        os.environ.setdefault(name, value)


def _skip_shutdown_collection() -> None:
    """Move every live object to the collector's permanent generation (``gc.freeze``): the
    interpreter's shutdown collections then skip them. After scoring a million records they
    would walk millions of objects once more (about 4 s CPU) just before the process ends.
    Only for the console script (``main()`` without ``argv``), never for in-process calls."""
    import gc

    gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
