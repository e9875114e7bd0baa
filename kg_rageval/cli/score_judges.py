"""``kg-rageval score judges``: judge calibration against human labels, PPI estimates,
position bias and agreement between judges over the records' ``judges`` sections; optionally
judging the records first with a live OpenAI-compatible endpoint (see ``docs/judges.md``)."""

from __future__ import annotations

import click

from .common import data_option, emit, families_text, format_option


@click.command()
@data_option
@click.option("--ontology", "-O", "ontology_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Ontology, for the per-branch roll-up of every evaluation (optional).")
@click.option("--ontology-format", default=None, help="Loader name when the extension does not tell.")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95, show_default=True,
              help="Confidence level of the Wilson and PPI intervals.")
@click.option("--ppi-lambda", default="1", show_default=True,
              help="PPI power tuning: 1 = plain PPI, 0 = human labels only, 'auto' = PPI++.")
@click.option("--endpoint", default=None, help="Judge live first: OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.")
@click.option("--model", default=None, help="Judge model name (with --endpoint).")
@click.option("--rubric", "rubrics", multiple=True,
              type=click.Choice(["answer_correctness", "refusal", "citation_support", "pairwise"]),
              help="Rubric(s) to judge live (repeatable).")
@click.option("--judge-name", default=None, help="Name of the live judge in the records (default: the model).")
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="Environment variable holding the API key (the key is never printed or stored).")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None, help="On-disk cache of judge calls.")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True)
@click.option("--max-retries", type=click.IntRange(min=0), default=4, show_default=True)
@click.option("--price-prompt", type=click.FloatRange(min=0), default=0.0, help="USD per million prompt tokens.")
@click.option("--price-completion", type=click.FloatRange(min=0), default=0.0, help="USD per million completion tokens.")
@click.option("--write-records", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the records with the live judge's entries here (JSONL).")
@click.option("--rows/--no-rows", default=True, show_default=True, help="Include per-row results in JSON output.")
@format_option
def command(data_path, ontology_path, ontology_format, level, ppi_lambda, endpoint, model, rubrics, judge_name,
            api_key_env, cache_dir, concurrency, timeout, max_retries, price_prompt, price_completion,
            write_records, rows, fmt) -> None:
    """Judge calibration: accuracy, Cohen's kappa, false approvals/rejections, PPI, position bias."""
    from ..errors import ConfigError
    from ..judges import score_judges
    from ..records import read_records
    from .common import load_ontology_cli, ontology_ref

    lam: float | str = ppi_lambda
    if ppi_lambda != "auto":
        try:
            lam = float(ppi_lambda)
        except ValueError:
            raise ConfigError(f"--ppi-lambda must be a number or 'auto', not {ppi_lambda!r}") from None
    records = read_records(data_path)
    onto = load_ontology_cli(ontology_path, ontology_format) if ontology_path else None
    client_options = {"api_key_env": api_key_env, "cache_dir": cache_dir, "concurrency": concurrency,
                      "timeout": timeout, "max_retries": max_retries,
                      "prices": {"prompt": price_prompt, "completion": price_completion}}
    usage = None
    if endpoint or model:
        from ..judges.run import live_judge

        records, usage = live_judge(records, endpoint=endpoint, model=model, rubrics=rubrics,
                                    judge_name=judge_name, client_options=client_options)
        if write_records:
            from ..records import write_records as write

            write(write_records, records)
    evals = score_judges(records, level=level, ppi_lambda=lam)
    if usage is not None:
        for ev in evals.values():
            ev.meta["judge_usage"] = usage
    payload = {"command": "score judges", "data": data_path, "n_records": len(records),
               "ontology": ontology_ref(onto) if onto is not None else None, "families": {}}
    for name, ev in evals.items():
        keys = [k for k in ev.keys if k.startswith("slice:") or k == "length_bin"]
        d = ev.to_dict(rows=rows, breakdowns=keys)
        if onto is not None and "gold_node" in ev.keys:
            from ..audit.gates import metric_dict
            from ..audit.pernode import safe_rollup

            d["rollup"] = {n: {"n": e["n"], "metrics": {k: metric_dict(m) for k, m in e["metrics"].items()}}
                           for n, e in safe_rollup(ev, onto).items()}
        payload["families"][name] = d
    emit(payload, fmt, lambda p: _render(p, evals))


def _render(payload: dict, evals: dict) -> str:
    parts = [f"{payload['n_records']} records, {len(evals)} judge evaluations"]
    if not evals:
        parts.append("no record has a judges section (see docs/judges.md)")
    parts.extend(families_text(evals, "judge outputs"))
    usage = next((ev.meta["judge_usage"] for ev in evals.values() if "judge_usage" in ev.meta), None)
    if usage:
        u = usage["usage"]
        parts.append(f"\nlive judge {u['model']}: {u['requests']} requests, {u['cache_hits']} cache hits, "
                     f"{u['retries']} retries, {u['failures']} failures, {u['total_tokens']} tokens, "
                     f"${u['cost_usd']:.6f}")
    return "\n".join(parts)
