"""The report: ``reports/<profile>/index.html``, one page a researcher reads top to bottom.

Built from what the run left on disk, never by running a model: the setup, whether the rankers
rank at all, the verdict on each tested claim, the papers' numbers beside ours, notebook 08's
findings, and every table and figure of the executed notebooks with links to their HTML and CSV. A
table that is not the one its notebook wrote (its sha256 differs from the record) stops the page
with one line naming the file and the command that writes it again.
This module collects and formats; ``templates/report.html.j2`` lays the page out and escapes
every text it is given. Run as ``python -m calibrank.study.pipeline.report PROFILE``.

A page that cannot be rebuilt never takes the last good one with it: the page is written whole (a temporary name,
then renamed) and recorded in ``index.json`` (its sha256; the index step's output in the workflow,
:func:`calibrank.study.pipeline.grid.index_files`); a rebuild that fails leaves the previous page in place with a
banner at its top, the one line that says why and what makes it again (:func:`mark_stale`), and removes the record,
so that the next run builds the page again.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import html
import json
import re
import shlex
import sys
import time
import traceback
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pandas as pd
from markdown_it import MarkdownIt
from markupsafe import Markup

from calibrank.atomic import atomic_path, sha256_file, write_json
from calibrank.metrics.resample import ONE_SEED_NOTE
from calibrank.study.analysis.efficiency import machine
from calibrank.study.analysis.exports import TableFileError, load_exported_tables, table_writer
from calibrank.study.analysis.papers import paper_comparison
from calibrank.study.analysis.verdicts import Verdict, summary
from calibrank.study.data.baselines import SHORTCUT_MARGIN, ranking_check, ranking_warnings
from calibrank.study.paths import project_root, report_dir
from calibrank.study.pipeline.grid import index_files
from calibrank.study.pipeline.schedule import eta_path, read_eta
from calibrank.study.settings.checks import ConfigError
from calibrank.study.settings.config import load_config
from calibrank.study.settings.schema import Config

__all__ = ["SECTION_TITLES", "build_index", "mark_stale", "notebook_sections"]

SECTION_TITLES = (
    "Setup",
    "Do the rankers rank?",
    "What replicates and what does not",
    "The papers' numbers beside ours",
    "Beyond the papers",
    "The notebooks, table by table and figure by figure",
    "Notes on the method",
)
"""Top-level sections of the page, in order."""

_PACKAGES = (
    "torch",
    "transformers",
    "sentence-transformers",
    "bm25s",
    "faiss-cpu",
    "numpy",
    "pandas",
    "scikit-learn",
    "scipy",
    "papermill",
)
_SKIP_SECTIONS = {"files"}  # notebook sections that only write files: linked instead of shown
_COMPARISONS = ("table1", "table2", "table3", "nota", "in_domain_2023")  # paper_comparison's tables, in page order
_EFFICIENCY_COLUMNS = (
    "ranker",
    "params (M)",
    "clock",
    "ms/query",
    "ratio_to_bert",
    "wall ms/query",
    "wall ratio",
    "PG-DRR ms",
    "PG-DRR ratio",
    "GPF-BERT ratio",
)
_CLAIM_COLUMNS = [
    "paper",
    "claim",
    "method",
    "paper effect",
    "ours",
    "lo",
    "hi",
    "p (Holm)",
    "p opposite (Holm)",
    "verdict",
    "detectable",
    "power",
    "test",
    "protocol",
]
_VERDICT_CLASS = {Verdict.replicates: "yes", Verdict.contradicted: "no"}  # the badge's colour; other verdicts are grey
_MARKDOWN = MarkdownIt("commonmark", {"html": False})  # raw HTML in a notebook's text is shown, escaped


# ----------------------------------------------------------------------------- formatting
def _seconds(secs: float | None) -> str:
    if secs is None:
        return ""
    return f"{secs:.1f} s" if secs < 120 else f"{secs / 60:.1f} min"


def _inline_markdown(text: str) -> Markup:
    """A notebook's text as inline HTML (`code`, **bold**, *em*, links); everything else escaped."""
    return Markup(_MARKDOWN.renderInline(str(text)))


def _value(column: str, v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return "–"
        return f"{v:+.1%}" if "change" in column else f"{v:.3f}"
    return str(v)


def _frame(df: pd.DataFrame) -> dict:
    """A table of numbers as the page shows it: column names and rows of formatted cells."""
    columns = [str(c) for c in df.columns]
    return {
        "columns": columns,
        "rows": [[_value(c, v) for c, v in zip(columns, row)] for row in df.itertuples(index=False)],
    }


def _effect(value: float, lo: float, hi: float, unit: str) -> str:
    if not np.isfinite(value):
        return "n/a"
    fmt = "+.1%" if unit == "relative change" else "+.3f"
    band = f" [{lo:{fmt}}, {hi:{fmt}}]" if np.isfinite(lo) and np.isfinite(hi) else ""
    return f"{value:{fmt}}{band}"


# every value the template shows is escaped; a name it uses that the page's context lacks is an error
_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("calibrank.study.pipeline", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_TEMPLATES.filters.update(markdown=_inline_markdown, duration=_seconds, g=lambda x: f"{x:g}")


# ----------------------------------------------------------------------------- notebooks
def _text(value: str | list[str]) -> str:
    """A notebook field, stored as one string or as a list of lines."""
    return "".join(value) if isinstance(value, list) else str(value)


def _lines(cell: dict) -> list[str]:
    return [ln.strip() for ln in _text(cell.get("source", "")).splitlines()]


def _header(nb: dict, fallback: str) -> tuple[str, str]:
    """(title, first paragraph) of the notebook's leading ``# `` markdown cell."""
    for lines in (_lines(cell) for cell in nb.get("cells", []) if cell.get("cell_type") == "markdown"):
        if lines and lines[0].startswith("# "):
            return lines[0][2:].strip(), " ".join(ln for ln in lines[1:] if ln and not ln.startswith("#"))
    return fallback, ""


def _outputs(cell: dict) -> list[tuple[str, str]]:
    """A code cell's displayed outputs: ``("png", base64)`` or ``("table", html)``, the HTML as pandas escaped it."""
    found = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if "image/png" in data:
            found.append(("png", _text(data["image/png"])))
        elif "text/html" in data and "<table" in (text := _text(data["text/html"])):
            text = re.sub(r"<style[^>]*>.*?</style>", "", text, flags=re.S)
            found.append(("table", Markup(re.sub(r'(<table[^>]*?)\s+border="1"', r"\1", text))))
    return found


def notebook_sections(nb: dict) -> list[dict]:
    """The ``## `` sections of an executed notebook: ``{"title", "text", "outputs": [(kind, payload), ...]}`` in order.

    A heading-less markdown cell after a section starts a sub-item with its own paragraph and the
    section's title as ``parent``.
    """
    sections: list[dict] = []
    current: dict | None = None
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            lines = _lines(cell)
            if lines and lines[0].startswith("## "):
                current = {"title": lines[0][3:].strip(), "text": " ".join(ln for ln in lines[1:] if ln), "outputs": []}
                sections.append(current)
            elif lines and not lines[0].startswith("#") and current is not None:
                current = {
                    "title": "",
                    "text": " ".join(ln for ln in lines if ln),
                    "outputs": [],
                    "parent": current["title"],
                }
                sections.append(current)
        elif cell.get("cell_type") == "code" and current is not None:
            current["outputs"].extend(_outputs(cell))
    return sections


def _shown(sections: list[dict], big_table: int = 25) -> list[dict]:
    """The sections the page shows (with outputs, not a files-only one); a table of more than ``big_table``
    rows, or one after a paragraph without a heading (the full version of the one above), is folded."""
    shown = []
    for sec in sections:
        if not sec["outputs"] or {sec["title"].strip().lower(), sec.get("parent", "").strip().lower()} & _SKIP_SECTIONS:
            continue
        outputs = [
            {
                "kind": kind,
                "payload": payload,
                "rows": payload.count("<tr") - 1 if kind == "table" else 0,
                "fold": kind == "table" and (not sec["title"] or payload.count("<tr") > big_table),
            }
            for kind, payload in sec["outputs"]
        ]
        shown.append(
            {
                "title": sec["title"],
                "text": sec["text"],
                "alt": sec["title"] or sec.get("parent", ""),
                "outputs": outputs,
            }
        )
    return shown


def _step(path: Path, rdir: Path) -> dict:
    nb = json.loads(path.read_text(encoding="utf-8"))
    title, blurb = _header(nb, path.stem)
    pm = nb.get("metadata", {}).get("papermill", {})
    manifest = rdir / "tables" / f"{path.stem}.json"
    csvs = json.loads(manifest.read_text(encoding="utf-8")).get("tables", []) if manifest.exists() else []
    return {
        "stem": path.stem,
        "title": title,
        "blurb": blurb,
        "seconds": pm.get("duration"),
        "start": pm.get("start_time"),
        "end": pm.get("end_time"),
        "params": pm.get("parameters", {}),
        "sections": _shown(notebook_sections(nb)),
        "csvs": csvs,
    }


def _elapsed(steps: list[dict]) -> float | None:
    """Seconds from the first notebook's start to the last one's end (notebooks may run side by side)."""
    try:
        starts = [dt.datetime.fromisoformat(s["start"]) for s in steps if s.get("start")]
        ends = [dt.datetime.fromisoformat(s["end"]) for s in steps if s.get("end")]
    except (TypeError, ValueError):
        return None
    return (max(ends) - min(starts)).total_seconds() if starts and ends else None


def _notebooks(steps: list[dict]) -> list[dict]:
    """One entry per notebook in the order they ran; the runs of notebook 03 (one per ranker and corpus) as one."""
    runs = [
        {**s, "ranker": s["params"].get("ranker", s["stem"]), "corpus": s["params"].get("train_corpus", "")}
        for s in steps
        if s["stem"].startswith("03_")
    ]
    return [
        {**s, "anchor": "nb-03_train", "runs": runs}
        if s["stem"].startswith("03_")
        else {**s, "anchor": f"nb-{s['stem']}", "runs": None}
        for s in steps
        if not s["stem"].startswith("03_") or s["stem"] == runs[0]["stem"]
    ]


# ----------------------------------------------------------------------------- setup
def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _seeds_found(profile: str) -> list[int]:
    seeds = set()
    for side in (project_root() / "runs" / profile / "predictions").glob("*/*/*.json"):
        with contextlib.suppress(OSError, ValueError, TypeError):  # an unreadable sidecar names no seed
            seeds.add(json.loads(side.read_text(encoding="utf-8")).get("seed"))
    return sorted(s for s in seeds if isinstance(s, int))


def _data_sizes(profile: str) -> str:
    path = project_root() / "runs" / profile / "data" / "summary.json"
    if not path.exists():
        return "not prepared yet (notebook 01)"
    parts = []
    for corpus, entry in json.loads(path.read_text(encoding="utf-8")).get("corpora", {}).items():
        ex, dia = entry.get("examples", {}), entry.get("dialogues", {})
        n_dia = sum(dia.values()) if isinstance(dia, dict) else dia
        parts.append(
            f"{corpus}: {n_dia} dialogues; examples train {ex.get('train', '?')} / valid {ex.get('valid', '?')} "
            f"/ test {ex.get('test', '?')}"
        )
    return "; ".join(parts)


def _eta(profile: str, stems: list[str]) -> dict | None:
    """The estimate ``make report`` printed before it ran (``reports/<profile>/eta.json``), or None without one;
    ``sum``: the estimated seconds of the notebooks ``stems``."""
    path = eta_path(profile)
    if not path.exists():
        return None
    try:
        est, data = read_eta(path)
    except (OSError, ValueError):
        return None
    rates = data.get("rates", {})
    where = (
        f"{data.get('cores', '?')} cores, {rates.get('device', '?')}, bf16: {'yes' if rates.get('bf16') else 'no'}; "
        f"{rates.get('source', 'measured')} {rates.get('train', 0):.1f} training and {rates.get('infer', 0):.0f} inference pairs/s with "
        f"{rates.get('threads', '?')} thread(s) per job"
    )
    steps = {s.name: s.seconds for s in est.steps}
    return {
        "steps": steps,
        "sum": sum(steps.get(s, 0.0) for s in stems),
        "seconds": est.seconds,
        "where": where,
        "pending": len(est.pending),
        "jobs": est.jobs,
        "created": str(data.get("created", ""))[:19].replace("T", " "),
    }


# ----------------------------------------------------------------------------- the analyses
def _ranking(cfg: Config, tables: Mapping[str, pd.DataFrame]) -> dict:
    """Whether each trained ranker beats the rules that learn nothing (:func:`calibrank.study.data.baselines.ranking_check`)."""
    out = {"margin": SHORTCUT_MARGIN, "table": None, "uncheckable": 0, "warnings": []}
    metrics, rules = tables.get("metrics_all"), tables.get("baselines_all")
    if metrics is None or rules is None or metrics.empty or rules.empty:
        return out
    check = ranking_check(metrics, rules, cfg.negatives.eval_k)
    n_trained = metrics[["ranker", "train_corpus"]].drop_duplicates().shape[0]
    warnings = ranking_warnings(check) if len(check) == n_trained else []
    return {**out, "table": _frame(check), "uncheckable": n_trained - len(check), "warnings": warnings}


def _replication(tables: Mapping[str, pd.DataFrame]) -> dict | None:
    """Each tested claim with its verdict, the paper's effect and ours (its note without what the page says once
    for all: one seed); None before notebooks 04-06 ran."""
    claims = summary({k: v for k, v in sorted(tables.items()) if k.startswith("claims_")})
    if claims.empty:
        return None
    items = []
    for r in claims.to_dict("records"):
        verdict = Verdict(r["verdict"])  # a table column holds the text
        theirs = float(r["paper effect"])
        notes = r["note"].split("; ") if isinstance(r["note"], str) else []
        items.append(
            {
                **r,
                "verdict": verdict,
                "badge": _VERDICT_CLASS.get(verdict, "na"),
                "conditions": int(r["conditions"]),
                "tested": verdict is not Verdict.not_tested,
                "theirs": _effect(theirs, np.nan, np.nan, r["unit"]) if np.isfinite(theirs) else "no number",
                "ours": _effect(r["ours"], r["lo"], r["hi"], r["unit"]),
                "power": r["power"] if isinstance(r.get("power"), str) else "",
                "note": "; ".join(n for n in notes if n and n != ONE_SEED_NOTE),
            }
        )
    counts = claims["verdict"].value_counts()
    return {
        "tally": ", ".join(f"{int(counts[v])} {v}" for v in Verdict if v in counts),
        "claims": items,
        "table": _frame(claims[_CLAIM_COLUMNS]),
    }


def _comparison(tables: Mapping[str, pd.DataFrame]) -> dict[str, dict]:
    """The papers' numbers beside ours (:func:`calibrank.study.analysis.papers.paper_comparison`) and the efficiency table."""
    comp = paper_comparison(tables)
    out = {key: _frame(comp[key]) for key in _COMPARISONS if key in comp and not comp[key].empty}
    eff = tables.get("efficiency")
    if eff is not None and not eff.empty:
        out["efficiency"] = _frame(eff[[c for c in _EFFICIENCY_COLUMNS if c in eff.columns]])
    return out


def _findings(tables: Mapping[str, pd.DataFrame]) -> list[tuple[str, list[str]]]:
    """Notebook 08's findings, grouped by section (its leading number dropped, capitalised)."""
    findings = tables.get("findings_08")
    if findings is None or findings.empty:
        return []
    out = []
    for section, grp in findings.groupby("section", sort=False):
        title = re.sub(r"^\d+\s+", "", str(section))
        out.append((title[:1].upper() + title[1:], [str(f) for f in grp["finding"]]))
    return out


# ----------------------------------------------------------------------------- the page
def _tables(profile: str) -> dict[str, pd.DataFrame]:
    """The exported tables, each checked against the sha256 recorded when its notebook wrote it; a damaged one is a
    :class:`~calibrank.study.analysis.exports.TableFileError` that names it and a command that writes it again.

    ``make nb-STEP`` alone would find the step's notebook and page newer than their inputs and do nothing (its
    tables are no outputs snakemake tracks): the command removes the table and the step's notebook and page."""
    try:
        return load_exported_tables(profile)
    except TableFileError as exc:
        path = exc.path
        step = table_writer(path)
        if step is None:
            raise TableFileError(
                f"{exc}; no manifest under {path.parent} names the notebook that writes it: rerun "
                f"that notebook (make nb-STEP PROFILE={profile})",
                path,
            ) from None
        rdir = report_dir(profile)
        files = " ".join(shlex.quote(str(p)) for p in (path, rdir / f"{step}.ipynb", rdir / f"{step}.html"))
        raise TableFileError(
            f"{exc}; make it again with `rm -f {files} && make nb-{step} PROFILE={profile}`", path
        ) from None


def build_index(profile: str) -> Path:
    """Write ``reports/<profile>/index.html`` from the executed notebooks and tables there; return its path.

    A table that is not the one its notebook wrote raises :class:`~calibrank.study.analysis.exports.TableFileError`."""
    cfg = load_config(profile)
    rdir = report_dir(cfg.profile)
    paths = sorted(rdir.glob("[0-9][0-9]_*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"{rdir}: no executed notebooks; run `make report PROFILE={cfg.profile}`")
    steps = [_step(p, rdir) for p in paths]
    tables = _tables(cfg.profile)
    seeds = _seeds_found(cfg.profile)
    page = _TEMPLATES.get_template("report.html.j2").render(
        cfg=cfg,
        seeds=seeds,
        n_seeds=len(seeds) or len(cfg.rankers.seeds),
        sizes=_data_sizes(cfg.profile),
        hardware=machine(),
        versions={"python": sys.version.split()[0], **{p: _version(p) for p in _PACKAGES}},
        sections=[{"id": re.sub(r"[^a-z0-9]+", "-", t.lower()).strip("-"), "title": t} for t in SECTION_TITLES],
        steps=steps,
        total=sum(s["seconds"] or 0.0 for s in steps),
        elapsed=_elapsed(steps),
        eta=_eta(cfg.profile, [s["stem"] for s in steps]),
        ranking=_ranking(cfg, tables),
        replication=_replication(tables),
        comparison=_comparison(tables),
        findings=_findings(tables),
        notebooks=_notebooks(steps),
        csvs=sorted((rdir / "tables").glob("*.csv")),
    )
    dest, record = (project_root() / p for p in index_files(cfg.profile))
    with atomic_path(dest) as tmp:
        tmp.write_text(page, encoding="utf-8")
        digest = sha256_file(tmp)
    write_json(record, {"page": dest.name, "sha256": digest, "built": time.strftime("%Y-%m-%dT%H:%M:%S")})
    return dest


_STALE = ("<!-- calibrank: stale -->", "<!-- /calibrank: stale -->")
_STALE_STYLE = (
    "margin:0 0 1em;padding:.8em 1em;border:2px solid #b3261e;background:#fdecea;color:#410e0b;"
    "font:1rem/1.4 system-ui,sans-serif"
)


def mark_stale(page: str | Path, reason: str) -> bool:
    """Put a banner at the top of ``page`` (replacing an earlier one): the page is stale, the line ``reason`` says
    why and what makes it again. The page is rewritten whole; False when there is none."""
    page = Path(page)
    try:
        text = page.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    text = re.sub(re.escape(_STALE[0]) + ".*?" + re.escape(_STALE[1]), "", text, flags=re.S)
    banner = (
        f'{_STALE[0]}<div class="stale" role="alert" style="{_STALE_STYLE}"><strong>This page is stale.</strong> '
        f"Rebuilding it failed ({time.strftime('%Y-%m-%d %H:%M')}): {html.escape(reason)}</div>{_STALE[1]}"
    )
    body = re.search(r"<body[^>]*>", text)
    at = body.end() if body else 0
    with atomic_path(page) as tmp:
        tmp.write_text(text[:at] + banner + text[at:], encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m calibrank.study.pipeline.report PROFILE``: build the page; when it cannot be built, one line says
    why (a damaged table: the file and the command that writes it again) and the last page stays, marked stale."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m calibrank.study.pipeline.report PROFILE", file=sys.stderr)
        return 2
    try:
        print(build_index(args[0]))
    except Exception as exc:
        said = isinstance(exc, (TableFileError, ConfigError)) or (
            isinstance(exc, FileNotFoundError) and "no executed notebooks" in str(exc)
        )
        reason = " ".join(str(exc).split())
        reason = reason if said else f"{type(exc).__name__}: {reason}"
        kept, page = False, None
        if re.fullmatch(r"[A-Za-z0-9_-]+", args[0]):  # a profile's name, not a path
            page, record = (project_root() / p for p in index_files(args[0]))
            record.unlink(missing_ok=True)  # the page is not the one built from what is there now
            kept = mark_stale(page, reason)
        if not said:  # a fault of this code: its traceback too
            traceback.print_exc()
        print(
            f"report: {reason}"
            + (f" ({page.relative_to(project_root())}: the last page, marked stale)" if kept else ""),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
