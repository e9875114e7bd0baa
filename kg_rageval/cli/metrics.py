"""``kg-rageval metrics``: every metric of every registered family, with its formula,
parameters, direction and aliases (from the one metric registry, :mod:`kg_rageval.scoring`,
with the families of the ``kg_rageval.families`` entry points — a broken one is a warning on
stderr — and the one alias table, :mod:`kg_rageval.contract.measures`)."""

from __future__ import annotations

from typing import Any

import click

from kg_rageval.cli.common import emit, format_option, table


@click.command()
@click.argument("names", nargs=-1)
@click.option("--family", "families", multiple=True, metavar="NAME", help="Only these families (repeatable).")
@format_option
def metrics(names: tuple[str, ...], families: tuple[str, ...], fmt: str) -> None:
    """List metrics (canonical name, family, direction, formula, aliases) and family parameters.

    With NAMES, resolve each name as a gate would (aliases such as nDCG@10, ndcg_cut_10,
    recip_rank, P(rel=2)@10, Bpref or a bare name are accepted) and print its canonical form; an
    unknown name is exit 2 with a "did you mean"."""
    from kg_rageval.contract.measures import template_aliases
    from kg_rageval.scoring import PLUGIN_ERRORS, REGISTRY, get_scorer, load_entry_points, resolve_metric

    load_entry_points()
    for err in PLUGIN_ERRORS.values():  # a broken plugin is named, the other families listed
        click.echo(f"warning: {err}", err=True)
    fams = [get_scorer(f).name for f in families] or list(REGISTRY)
    if names:
        rows = []
        for n in names:
            mn = resolve_metric(n)
            sc = get_scorer(mn.family) if mn.family else None
            found = sc.find_metric(mn.metric) if sc is not None else None
            spec = found[0] if found else None
            rows.append(
                {
                    "input": n,
                    "canonical": str(mn),
                    "family": mn.family,
                    "direction": spec.direction if spec else None,
                    "formula": spec.formula if spec else None,
                }
            )
        emit(
            {"command": "metrics", "resolved": rows},
            fmt,
            lambda p: table(
                [
                    [r["input"], r["canonical"], r["direction"] or "", r["formula"] or ""]
                    for r in p["resolved"]
                ],
                ["input", "canonical", "direction", "formula"],
            ),
        )
        return
    payload: dict[str, Any] = {"command": "metrics", "families": {}}
    for f in fams:
        sc = REGISTRY[f]
        payload["families"][f] = {
            "description": sc.description,
            "sections": list(sc.sections),
            "inputs": [
                {"name": i.name, "required": i.required, "flag": i.flag, "help": i.help} for i in sc.inputs
            ],
            "parameters": [p.describe() for p in sc.params if p.exposed],
            "metrics": [_with_aliases(m.describe(), template_aliases(f, m.name)) for m in sc.metrics],
        }

    def render(p: dict[str, Any]) -> str:
        out = []
        for f, d in p["families"].items():
            out.append(f"== {f}: {d['description']}")
            if d["parameters"]:
                out.append(
                    table(
                        [[q["name"], q["type"], q["default"], q["help"]] for q in d["parameters"]],
                        ["parameter", "type", "default", "help"],
                    )
                )
            out.append(
                table(
                    [
                        [
                            m["name"],
                            m["direction"],
                            m["formula"]
                            + (
                                " (only with " + ", ".join(f"{k}={v}" for k, v in m["when"].items()) + ")"
                                if m.get("when")
                                else ""
                            )
                            + (" (aliases: " + ", ".join(m["aliases"]) + ")" if m.get("aliases") else ""),
                        ]
                        for m in d["metrics"]
                    ],
                    ["metric", "better", "formula"],
                )
            )
            out.append("")
        return "\n".join(out)

    emit(payload, fmt, render)


def _with_aliases(described: dict[str, Any], aliases: list[str]) -> dict[str, Any]:
    """A metric's description with its ``aliases`` (other spellings that resolve to it), if any."""
    return {**described, "aliases": aliases} if aliases else described
