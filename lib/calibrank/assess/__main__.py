"""``python -m calibrank.assess``: assess a ranker's scores into ``reports/assess/<name>/``.

Checks every option before anything runs (an error names the option and what was expected),
then executes notebook 09_assess with papermill into ``reports/assess/<name>/09_assess.ipynb``
(written under a temporary name and renamed once every cell ran), converts it to HTML and
writes ``index.html``: the findings, links to the notebook and to every table under ``tables/``.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jinja2
import nbconvert
import nbformat
import pandas as pd
import papermill

from ..runs import atomic_path, owner_tag, project_root
from .scored import ScoreKind

__all__ = ["NOTEBOOK", "check_options", "main", "write_index"]

NOTEBOOK = "09_assess.ipynb"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

_INDEX = jinja2.Template("""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ name }}: assessment</title>
<style>body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em}
td,th{padding:.2em .6em;text-align:left;vertical-align:top}iframe{width:100%;height:80vh;border:1px solid #ccc}</style>
</head><body>
<h1>{{ name }}: how far can its scores be trusted?</h1>
<p>Inputs: {{ inputs }}</p>
{% if notes %}<ul>{% for n in notes %}<li>{{ n }}</li>{% endfor %}</ul>{% endif %}
<h2>Findings</h2>
<table>{% for section, finding in findings %}<tr><th>{{ section }}</th><td>{{ finding }}</td></tr>{% endfor %}</table>
<h2>The notebook</h2>
<p><a href="{{ notebook_html }}">{{ notebook_html }}</a> (executed: <a href="{{ notebook }}">{{ notebook }}</a>)</p>
<iframe src="{{ notebook_html }}" title="the executed notebook"></iframe>
<h2>Tables (CSV)</h2>
<ul>{% for t in tables %}<li><a href="tables/{{ t }}">{{ t }}</a></li>{% endfor %}</ul>
</body></html>
""", autoescape=True)


def _file(parser: argparse.ArgumentParser, option: str, value: str | None) -> str | None:
    if not value:
        return None
    path = Path(value)
    if not path.is_file():
        parser.error(f"{option}: {value}: no such file")
    return str(path.resolve())


def check_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    """The notebook's parameters from the options, every option checked (``parser.error`` names the bad one)."""
    runs = [_file(parser, "--run", r) for r in args.run]
    valid_runs = [_file(parser, "--valid-run", r) for r in args.valid_run]
    params = {"run": runs or None, "qrels": _file(parser, "--qrels", args.qrels), "valid_run": valid_runs or None,
              "valid_qrels": _file(parser, "--valid-qrels", args.valid_qrels),
              "table": _file(parser, "--table", args.table), "valid_table": _file(parser, "--valid-table", args.valid_table),
              "checkpoint": None, "queries": _file(parser, "--queries", args.queries),
              "valid_queries": _file(parser, "--valid-queries", args.valid_queries), "passes": args.passes,
              "score": args.score, "relevant_at": args.relevant_at, "seed": args.seed, "n_resamples": args.n_resamples}
    if args.checkpoint:
        if not Path(args.checkpoint).is_dir():
            parser.error(f"--checkpoint: {args.checkpoint}: no such folder")
        params["checkpoint"] = str(Path(args.checkpoint).resolve())
    given = [name for name, on in (("--run", runs), ("--table", params["table"]), ("--checkpoint", params["checkpoint"]))
             if on]
    if len(given) != 1:
        parser.error(f"give exactly one input: --run (with --qrels), --table or --checkpoint (with --queries); got "
                     f"{', '.join(given) or 'none'}")
    if runs and not params["qrels"]:
        parser.error("--qrels: required with --run (the relevance judgements of the run's queries)")
    if params["checkpoint"] and not params["queries"]:
        parser.error("--queries: required with --checkpoint (the queries and candidates to score)")
    if valid_runs and not params["valid_qrels"]:
        parser.error("--valid-qrels: required with --valid-run")
    if params["valid_qrels"] and not valid_runs and not params["checkpoint"]:
        parser.error("--valid-run: required with --valid-qrels")
    if args.relevant_at < 1:
        parser.error(f"--relevant-at: expected an integer >= 1, got {args.relevant_at}")
    if args.seed < 0:
        parser.error(f"--seed: expected a non-negative integer, got {args.seed}")
    if args.passes < 0:
        parser.error(f"--passes: expected an integer >= 0, got {args.passes}")
    if args.n_resamples < 2:
        parser.error(f"--n-resamples: expected an integer >= 2, got {args.n_resamples}")
    name = args.name or Path((runs or [params["table"] or params["checkpoint"].rstrip("/")])[0]).stem
    if not _NAME.match(name):
        parser.error(f"--name: expected letters, digits, '.', '_' or '-' (a folder name), got {name!r}")
    params["name"] = name
    return params


def write_index(out: Path, name: str, notebook: str = NOTEBOOK) -> Path:
    """``out/index.html``: the findings (``tables/findings.csv``), the notebook and every table."""
    tables = out / "tables"
    findings = pd.read_csv(tables / "findings.csv")
    summary = pd.read_csv(tables / "summary.csv", dtype={"notes": str}, keep_default_na=False)
    inputs = "; ".join(f"{r['split']}: {r['source']} ({r['kind']}, {r['queries']} queries, {r['candidates']} "
                       "candidates)" for _, r in summary.iterrows())
    notes = [n for n in str(summary["notes"].iloc[0]).split("\n") if n] if len(summary) else []
    page = _INDEX.render(name=name, inputs=inputs, notes=notes, findings=list(zip(findings["section"], findings["finding"])),
                         notebook=notebook, notebook_html=Path(notebook).with_suffix(".html").name,
                         tables=sorted(p.name for p in tables.glob("*.csv")))
    path = out / "index.html"
    with atomic_path(path) as tmp:
        tmp.write_text(page, encoding="utf-8")
    return path


def _execute(params: dict[str, Any], out: Path) -> Path:
    source = project_root() / "notebooks" / NOTEBOOK
    dest = out / NOTEBOOK
    tmp = out / f".tmp-{Path(NOTEBOOK).stem}.{owner_tag()}.ipynb"  # papermill wants the .ipynb suffix
    try:
        papermill.execute_notebook(str(source), str(tmp), parameters=params, cwd=str(out), progress_bar=False,
                                   log_output=False, kernel_name="python3", language="python")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nbformat.read(dest, as_version=4))
    with atomic_path(dest.with_suffix(".html")) as tmp:
        tmp.write_text(body, encoding="utf-8")
    return dest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calibrank.assess", description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="append", default=[], help="a TREC run file (repeat for samples of one ranker)")
    parser.add_argument("--qrels", help="TREC qrels of the run's queries")
    parser.add_argument("--valid-run", action="append", default=[], help="a validation run (repeat as --run)")
    parser.add_argument("--valid-qrels", help="qrels of the validation run")
    parser.add_argument("--table", help="a table of scores (query, candidate, score, relevance)")
    parser.add_argument("--valid-table", help="a validation table of scores")
    parser.add_argument("--checkpoint", help="a local cross-encoder checkpoint folder")
    parser.add_argument("--queries", help="queries with candidates (JSONL) for --checkpoint")
    parser.add_argument("--valid-queries", help="validation queries (JSONL) for --checkpoint")
    parser.add_argument("--passes", type=int, default=0, help="MC Dropout passes of the checkpoint (0: deterministic)")
    parser.add_argument("--score", choices=[k.value for k in ScoreKind], default=ScoreKind.score.value,
                        help="what a score is (default: score, no probability scale)")
    parser.add_argument("--relevant-at", type=int, default=1, help="the lowest qrels grade that counts as relevant")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and of every resampling")
    parser.add_argument("--n-resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--name", help="report folder name under reports/assess/ (default: the input file's stem)")
    args = parser.parse_args(argv)
    params = check_options(parser, args)
    out = project_root() / "reports" / "assess" / params["name"]
    params["out_dir"] = str(out / "tables")
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    _execute(params, out)
    index = write_index(out, params["name"])
    print(f"assess: {index}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
