"""The report: ``reports/<profile>/index.html``, one page a researcher reads top to bottom.

Built from what the run left on disk, never by running a model:

- the **setup**: profile, data and sizes (``runs/<profile>/data/summary.json``), backbone and
  training settings, rankers, seeds (the profile's and those found in the Predictions
  sidecars), the machine, software versions, and the wall time of each step from papermill's
  metadata in the executed notebooks;
- **what replicates and what does not**: :func:`calibrank.analysis.verdicts.summary` on the
  claims notebooks 04-06 tested and exported (one row per claim and method, each with the
  paper's effect, ours with its interval, and one of four verdicts);
- **the papers' numbers beside ours** where the setting matches
  (:func:`calibrank.study.paper_comparison`), with the plain caveat that the papers used
  MSDialog / MANtIS / UDC_DSTC8 at bert-base scale and we use the profile's data;
- **every table and figure of notebooks 01-07**, taken from the executed notebooks: each
  ``## `` section of a notebook becomes a subsection with its first paragraph (the sentence
  saying what it shows), its figures (PNG, embedded) and its tables (as the notebook showed
  them). Runs of notebook 03 (one per ranker and training corpus) are folded. Each notebook
  links to its HTML page and to its tables as CSV (``tables/<notebook>.json`` lists them).

Run as ``python -m calibrank.report PROFILE`` (``make report`` does).
"""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .config import Config, load_config
from .runs import atomic_path, project_root, report_dir

__all__ = ["SECTION_TITLES", "build_index", "notebook_sections"]

_PACKAGES = ("torch", "transformers", "sentence-transformers", "bm25s", "faiss-cpu", "numpy", "pandas", "scikit-learn",
             "scipy", "papermill")

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

_SKIP_SECTIONS = {"files"}  # notebook sections that only write files: linked instead of shown
_BIG_TABLE_ROWS = 25  # larger tables are folded (the CSV has them in full)

_CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 64rem; margin: 2rem auto;
       padding: 0 1.2rem; color: #1d1d1f; line-height: 1.5; }
h1 { font-size: 1.75rem; margin-bottom: .2rem; }
h2 { font-size: 1.35rem; margin-top: 2.4rem; border-bottom: 2px solid #ddd; padding-bottom: .2rem; }
h3 { font-size: 1.12rem; margin-top: 1.8rem; } h4 { font-size: 1rem; margin: 1.3rem 0 .3rem; }
p.lead { font-size: 1.02rem; } .muted { color: #666; } .small { font-size: .85rem; }
a { color: #0b5cad; text-decoration: none; } a:hover { text-decoration: underline; }
table { border-collapse: collapse; margin: .4rem 0 .8rem; font-size: .84rem; }
td, th { padding: .2rem .6rem; border-bottom: 1px solid #eee; text-align: right; vertical-align: top; }
th { background: #f6f6f6; text-align: left; } td:first-child, th:first-child { text-align: left; }
table.kv td, table.kv th { text-align: left; }
.scroll { overflow-x: auto; max-width: 100%; }
table.dataframe thead th { vertical-align: bottom; } table.dataframe tbody th { background: #fafafa; }
figure { margin: .6rem 0 1rem; } figure img { max-width: 100%; border: 1px solid #eee; }
.caution { background: #fff6e0; border-left: 4px solid #f0b429; padding: .5rem .9rem; margin: 1rem 0; }
.note { background: #f3f7fc; border-left: 4px solid #0b5cad; padding: .5rem .9rem; margin: 1rem 0; }
ul.verdicts { list-style: none; padding-left: 0; } ul.verdicts li { margin: 0 0 .8rem; padding-left: .2rem; }
.badge { display: inline-block; min-width: 8.5rem; text-align: center; border-radius: 3px; padding: 0 .4rem;
         font-size: .78rem; font-weight: 600; margin-right: .5rem; }
.yes { background: #ddf4e4; color: #116329; } .no { background: #fde2e1; color: #a40e26; } .na { background: #eee; color: #555; }
details { margin: .5rem 0; } summary { cursor: pointer; }
nav ol { columns: 2; font-size: .92rem; }
"""


# ----------------------------------------------------------------------------- small helpers
def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _inline_md(text: str) -> str:
    """Escape, then render the little markdown notebooks use inline: `code`, **bold**, *em*, [text](url)."""
    out = _esc(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"(?<![\w*])\*([^*]+)\*(?![\w*])", r"<i>\1</i>", out)
    out = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r"<a href='\2'>\1</a>", out)
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def _cell_source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _seconds(secs: float | None) -> str:
    if secs is None:
        return ""
    return f"{secs:.1f} s" if secs < 120 else f"{secs / 60:.1f} min"


# ----------------------------------------------------------------------------- notebooks
def _read_notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _header(nb: dict, fallback: str) -> tuple[str, str]:
    """(title, first paragraph) of the notebook's leading ``# `` markdown cell."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        lines = [ln.strip() for ln in _cell_source(cell).splitlines()]
        if lines and lines[0].startswith("# "):
            body = " ".join(ln for ln in lines[1:] if ln and not ln.startswith("#"))
            return lines[0][2:].strip(), body
    return fallback, ""


def _outputs(cell: dict) -> list[tuple[str, str]]:
    """(kind, payload) of a code cell's displayed outputs: ``("png", base64)`` or ``("table", html)``."""
    found = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if "image/png" in data:
            png = data["image/png"]
            found.append(("png", "".join(png) if isinstance(png, list) else png))
        elif "text/html" in data:
            text = data["text/html"]
            text = "".join(text) if isinstance(text, list) else text
            if "<table" in text:
                text = re.sub(r"<style[^>]*>.*?</style>", "", text, flags=re.S)
                text = re.sub(r'(<table[^>]*?)\s+border="1"', r"\1", text)
                found.append(("table", text))
    return found


def notebook_sections(nb: dict) -> list[dict]:
    """The ``## `` sections of an executed notebook: title, first paragraph, figures and tables in order.

    Each item: ``{"title", "text", "outputs": [(kind, payload), ...]}``. Markdown cells without a
    heading that follow a section (e.g. "The same comparison in full") start a sub-item with
    their own paragraph and no title.
    """
    sections: list[dict] = []
    current: dict | None = None
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            lines = [ln.strip() for ln in _cell_source(cell).splitlines()]
            if lines and lines[0].startswith("## "):
                current = {"title": lines[0][3:].strip(), "text": " ".join(ln for ln in lines[1:] if ln), "outputs": []}
                sections.append(current)
            elif lines and not lines[0].startswith("#") and current is not None:
                current = {"title": "", "text": " ".join(ln for ln in lines if ln), "outputs": [],
                           "parent": current["title"]}
                sections.append(current)
        elif cell.get("cell_type") == "code" and current is not None:
            current["outputs"].extend(_outputs(cell))
    return sections


def _render_outputs(outputs: list[tuple[str, str]], alt: str, fold: bool = False) -> str:
    parts = []
    for kind, payload in outputs:
        if kind == "png":
            parts.append(f"<figure><img alt='{_esc(alt)}' src='data:image/png;base64,{payload}'></figure>")
        else:
            rows = payload.count("<tr")
            table = f"<div class='scroll'>{payload}</div>"
            if fold or rows > _BIG_TABLE_ROWS:
                table = f"<details><summary>show the table ({rows - 1} rows)</summary>{table}</details>"
            parts.append(table)
    return "".join(parts)


def _render_sections(sections: list[dict], level: int = 4) -> str:
    parts = []
    for sec in sections:
        if sec["title"].strip().lower() in _SKIP_SECTIONS or sec.get("parent", "").strip().lower() in _SKIP_SECTIONS:
            continue
        if not sec["outputs"]:
            continue
        head = f"<h{level}>{_inline_md(sec['title'])}</h{level}>" if sec["title"] else ""
        text = f"<p>{_inline_md(sec['text'])}</p>" if sec["text"] else ""
        # a paragraph without a heading introduces the full version of the table above it: fold it
        parts.append(head + text + _render_outputs(sec["outputs"], sec["title"] or sec.get("parent", ""), fold=not sec["title"]))
    return "".join(parts)


def _csv_links(rdir: Path, notebook: str) -> str:
    manifest = rdir / "tables" / f"{notebook}.json"
    if not manifest.exists():
        return ""
    names = json.loads(manifest.read_text(encoding="utf-8")).get("tables", [])
    if not names:
        return ""
    links = " · ".join(f"<a href='tables/{_esc(n)}'>{_esc(n)}</a>" for n in names)
    return f"<p class='small'>Tables of this notebook as CSV: {links}</p>"


def _step_info(path: Path) -> dict:
    nb = _read_notebook(path)
    title, blurb = _header(nb, path.stem)
    pm = nb.get("metadata", {}).get("papermill", {})
    return {"path": path, "stem": path.stem, "nb": nb, "title": title, "blurb": blurb,
            "seconds": pm.get("duration"), "start": pm.get("start_time"), "end": pm.get("end_time"),
            "params": pm.get("parameters", {})}


def _elapsed(steps: list[dict]) -> float | None:
    """Seconds from the first notebook's start to the last one's end (notebooks may run side by side)."""
    import datetime as dt

    try:
        starts = [dt.datetime.fromisoformat(s["start"]) for s in steps if s.get("start")]
        ends = [dt.datetime.fromisoformat(s["end"]) for s in steps if s.get("end")]
    except (TypeError, ValueError):
        return None
    return (max(ends) - min(starts)).total_seconds() if starts and ends else None


# ----------------------------------------------------------------------------- setup
def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for pkg in _PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _hardware() -> str:
    from .efficiency import machine  # the one machine description (it imports torch: only when the page is built)

    return machine()


def _seeds_found(profile: str) -> list[int]:
    folder = project_root() / "runs" / profile / "predictions"
    seeds = set()
    for side in folder.glob("*/*/*.json") if folder.is_dir() else []:
        try:
            seed = json.loads(side.read_text(encoding="utf-8")).get("seed")
        except (OSError, ValueError):
            continue
        if isinstance(seed, int):
            seeds.add(seed)
    return sorted(seeds)


def _data_sizes(profile: str) -> str:
    path = project_root() / "runs" / profile / "data" / "summary.json"
    if not path.exists():
        return "not prepared yet (notebook 01)"
    summary = json.loads(path.read_text(encoding="utf-8"))
    parts = []
    for corpus, entry in summary.get("corpora", {}).items():
        ex = entry.get("examples", {})
        dia = entry.get("dialogues", {})
        n_dia = sum(dia.values()) if isinstance(dia, dict) else dia
        parts.append(f"{corpus}: {n_dia} dialogues; examples train {ex.get('train', '?')} / valid {ex.get('valid', '?')} "
                     f"/ test {ex.get('test', '?')}")
    return "; ".join(parts)


def _eta(profile: str) -> dict | None:
    """The estimate ``make report`` printed before it ran (``reports/<profile>/eta.json``), or None without one."""
    from .eta import eta_path, read_eta

    path = eta_path(profile)
    if not path.exists():
        return None
    try:
        est, data = read_eta(path)
    except (OSError, ValueError):
        return None
    rates = data.get("rates", {})
    where = (f"{data.get('cores', '?')} cores, {rates.get('device', '?')}, bf16: {'yes' if rates.get('bf16') else 'no'}; "
             f"measured {rates.get('train', 0):.1f} training and {rates.get('infer', 0):.0f} inference pairs/s with "
             f"{rates.get('threads', '?')} thread(s) per job")
    return {"steps": {s.name: s.seconds for s in est.steps}, "seconds": est.seconds, "pending": len(est.pending),
            "jobs": est.jobs, "created": str(data.get("created", ""))[:19].replace("T", " "), "where": where}


def _setup_rows(cfg: Config) -> list[tuple[str, str]]:
    t = cfg.training
    r = cfg.rankers
    caps = cfg.data.max_examples
    seeds = _seeds_found(cfg.profile)
    stochastic = f"MC Dropout T = {r.mc_dropout.passes} passes, ensemble M = {r.ensemble.members} members"
    return [
        ("profile", f"{cfg.profile} — {cfg.description}"),
        ("data", f"{', '.join(c.value for c in cfg.data.corpora)}; split by dialogue "
                 f"{cfg.data.split.train:g}/{cfg.data.split.valid:g}/{cfg.data.split.test:g}; "
                 f"example caps train {caps.train} / valid {caps.valid} / test {caps.test}"),
        ("sizes", _data_sizes(cfg.profile)),
        ("negatives", f"training: {cfg.negatives.train.value} (k = {cfg.negatives.train_k}); evaluation: "
                      f"{', '.join(s.value for s in cfg.negatives.eval)} (1 relevant + {cfg.negatives.eval_k})"),
        ("backbone", f"{t.backbone}; max length {t.max_length} tokens; {t.epochs} epoch(s), lr {t.lr:g}, batch {t.batch_size}, "
                     f"precision {t.precision.value}"),
        ("rankers", f"{', '.join(n.value for n in r.names)} trained on {', '.join(c.value for c in r.train_corpora)}; "
                    f"{stochastic}"),
        ("seeds", f"profile seed {cfg.seed}; seeds in the Predictions: {', '.join(map(str, seeds)) or 'none yet'}"
                  + (" (one seed: no significance test over seeds is possible)" if len(seeds) == 1 else "")),
        ("hardware", _hardware()),
    ]


# ----------------------------------------------------------------------------- tables of numbers
def _fmt_value(col: str, v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return "–"
        if "change" in col:
            return f"{v:+.1%}"
        return f"{v:.3f}"
    return _esc(v)


def _frame_html(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{_esc(c)}</th>" for c in df.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{_fmt_value(str(c), v)}</td>" for c, v in zip(df.columns, row)) + "</tr>"
        for row in df.itertuples(index=False)
    )
    return f"<div class='scroll'><table><tr>{head}</tr>{body}</table></div>"


_COMPARISON_TEXT = {
    "table1": ("Table 1 · bert in and out of distribution",
               "It shows bert's R10@1 and balanced (1:1) ECE averaged over the conditions of each kind, ours beside "
               "Penha & Hauff's Table 1 averaged the same way."),
    "table2": ("Table 2 · ECE change over bert",
               "It shows, per ranker, on how many conditions its balanced ECE is below bert's and the mean relative "
               "change, beside the paper's mean over its 15 conditions (ensemble and MC Dropout only)."),
    "table3": ("Table 3 · risk-aware ranking",
               "It shows the mean relative R10@1 change of the risk-aware ranker over the mean ranker (b chosen on "
               "validation), beside the paper's mean over its 15 conditions."),
    "nota": ("Tables 4–5 · NOTA prediction",
             "It shows the mean relative macro-F1 change of each +var input over E[R], beside the paper's mean "
             "(its +var[R^D] is our +var[mc_dropout], its +var[R^E] our +var[ensemble])."),
    "in_domain_2023": ("2023 papers · in-domain",
                       "It shows each ranker's in-domain R10@1, MAP and ECE (all candidates) averaged over our training "
                       "corpora, beside GPF-BERT's Table 1 averaged over MSDialog, MANtIS and UDC (PG-DRR's Table 1, "
                       "MSDialog and MANtIS, without ECE, for rankers GPF-BERT did not run)."),
}


def _comparison_html(tables: Mapping[str, pd.DataFrame]) -> str:
    from .study import paper_comparison

    comp = paper_comparison(tables)
    parts = []
    for key, (title, text) in _COMPARISON_TEXT.items():
        if key in comp and not comp[key].empty:
            parts.append(f"<h4>{_esc(title)}</h4><p>{_esc(text)}</p>{_frame_html(comp[key])}")
    eff = tables.get("efficiency")
    if eff is not None and not eff.empty:
        cols = [c for c in ("ranker", "params (M)", "clock", "ms/query", "ratio_to_bert", "wall ms/query", "wall ratio",
                            "PG-DRR ms", "PG-DRR ratio", "GPF-BERT ratio") if c in eff.columns]
        parts.append("<h4>Efficiency</h4><p>It shows our inference time per query and its ratio to bert (one run, same "
                     "queries) on the clock that decides the cost claims (<code>clock</code>: process CPU time on a CPU) "
                     "and on the wall clock, beside PG-DRR's Table 2 (ms, and the same ratio) and GPF-BERT's Table 3 "
                     "ratios.</p>"
                     + _frame_html(eff[cols]))
    if not parts:
        return "<p class='muted'>No analysis tables yet: run notebooks 04–07.</p>"
    parts.append("<p class='small muted'>The papers' averages are computed from the values in their tables; they can "
                 "differ slightly from averages quoted in their text.</p>")
    return "".join(parts)


_VERDICT_CLASS = {"replicates": "yes", "contradicted": "no", "same direction, not significant": "na",
                  "opposite direction, not significant": "na"}


def _effect_text(value: float, lo: float, hi: float, unit: str) -> str:
    if not np.isfinite(value):
        return "n/a"
    if unit == "relative change":
        return f"{value:+.1%}" + (f" [{lo:+.1%}, {hi:+.1%}]" if np.isfinite(lo) and np.isfinite(hi) else "")
    return f"{value:+.3f}" + (f" [{lo:+.3f}, {hi:+.3f}]" if np.isfinite(lo) and np.isfinite(hi) else "")


def _claim_note(note: Any) -> str:
    """A claim's note without what the page says once for all (one seed)."""
    from .analysis.uncertainty import ONE_SEED_NOTE

    parts = [p for p in str(note if isinstance(note, str) else "").split("; ") if p and p != ONE_SEED_NOTE]
    return "; ".join(parts)


def _claims(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    from .analysis.verdicts import summary

    return summary({k: v for k, v in sorted(tables.items()) if k.startswith("claims_")})


def _replication_html(tables: Mapping[str, pd.DataFrame]) -> str:
    from .analysis.verdicts import VERDICTS

    claims = _claims(tables)
    if claims.empty:
        return "<p class='muted'>No claims tested yet: notebooks 04–06 test them.</p>"
    items = []
    for r in claims.to_dict("records"):
        ours = _effect_text(r["ours"], r["lo"], r["hi"], r["unit"])
        paper_eff = float(r["paper effect"])
        theirs = _effect_text(paper_eff, float("nan"), float("nan"), r["unit"]) if np.isfinite(paper_eff) else "no number"
        items.append(
            f"<li><span class='badge {_VERDICT_CLASS.get(r['verdict'], 'na')}'>{_esc(r['verdict'])}</span>"
            f"<b>{_esc(r['claim'])}</b> <span class='muted'>({_esc(r['method'])})</span><br>"
            f"<span class='small'><span class='muted'>paper ({_esc(r['paper'])}):</span> {_esc(theirs)} · "
            f"<span class='muted'>ours over {int(r['conditions'])} condition(s):</span> {_esc(ours)}"
            + (f" · <b>{_esc(r['power'])}</b>" if isinstance(r.get("power"), str) and r["power"] else "")
            + (f" <span class='muted'>({_esc(_claim_note(r['note']))})</span>" if _claim_note(r["note"]) else "")
            + "</span></li>"
        )
    counts = claims["verdict"].value_counts()
    tally = ", ".join(f"{int(counts[v])} {v}" for v in VERDICTS if v in counts)
    cols = ["paper", "claim", "method", "paper effect", "ours", "lo", "hi", "p (Holm)", "p opposite (Holm)", "verdict",
            "detectable", "power", "test", "protocol"]
    return (f"<p>{_esc(tally)}.</p><ul class='verdicts'>{''.join(items)}</ul>"
            f"<details><summary>The tests behind each verdict, and the protocol each side used</summary>"
            f"{_frame_html(claims[cols])}</details>")


def _findings_html(tables: Mapping[str, pd.DataFrame]) -> str:
    findings = tables.get("findings_08")
    if findings is None or findings.empty:
        return "<p class='muted'>No findings yet: notebook 08 writes them.</p>"
    parts = []
    for section, grp in findings.groupby("section", sort=False):
        title = re.sub(r"^\d+\s+", "", str(section))
        items = "".join(f"<li>{_esc(f)}</li>" for f in grp["finding"])
        parts.append(f"<h4>{_esc(title[:1].upper() + title[1:])}</h4><ul class='small'>{items}</ul>")
    return "".join(parts)


def _protocol_html(cfg: Config) -> str:
    neg = cfg.negatives
    train = f"<b>{_esc(neg.train.value)}</b> sampler"
    if neg.train.value == "mixed":
        train += (f" (each negative a BM25 one with probability {neg.mixed.bm25_share:g}, "
                  f"else a random one)")
    echo = ("near-copies of a context turn (word-set Jaccard &ge; "
            f"{neg.max_context_jaccard:g})" if neg.max_context_jaccard is not None else "exact copies of a context turn")
    own = " and turns of the example's own dialogue" if neg.exclude_own_dialogue else ""
    return (f"<p>Training: {neg.train_k} negative(s) per context from the {train}; evaluation: "
            f"{neg.eval_k} negatives per query from each of {_esc(', '.join(s.value for s in neg.eval))}. No sampler "
            f"returns {echo}{own}. Features: <code>{_esc(cfg.training.pooling.value)}</code> pooling.</p>")


def _ranking_html(cfg: Config, tables: Mapping[str, pd.DataFrame]) -> str:
    from .baselines import SHORTCUT_MARGIN, ranking_check, ranking_warnings

    metrics, rules = tables.get("metrics_all"), tables.get("baselines_all")
    intro = (f"<p>Before any claim about calibration: does each trained ranker rank by relevance? It shows, per ranker, "
             f"its R@1 in distribution beside the best of four rules that learn nothing (random; most and least word "
             f"overlap with the context; the zero-shot MiniLM bi-encoder), and its lowest R@1 over every test condition "
             f"beside chance (1/{cfg.negatives.eval_k + 1}). A ranker within {SHORTCUT_MARGIN} of a rule, or at chance "
             f"under shift, would make every verdict below a statement about a shortcut.</p>" + _protocol_html(cfg))
    if metrics is None or rules is None or metrics.empty or rules.empty:
        return intro + "<p class='muted'>No metrics yet (notebook 04 writes them).</p>"
    check = ranking_check(metrics, rules, cfg.negatives.eval_k)
    warnings = ranking_warnings(check)
    n_trained = metrics[["ranker", "train_corpus"]].drop_duplicates().shape[0]
    if len(check) < n_trained:
        return intro + (f"<div class='caution'><b>Not checkable:</b> {n_trained - len(check)} ranker x training corpus "
                        f"run(s) have no in-distribution test condition (the training sampler is not among "
                        f"negatives.eval), so they cannot be set beside the rules.</div>") + _frame_html(check)
    if warnings:
        notes = "".join(f"<li>{_esc(w)}</li>" for w in warnings)
        verdict = f"<div class='caution'><b>Warning: {len(warnings)} ranker check(s) failed.</b><ul>{notes}</ul></div>"
    else:
        verdict = (f"<p><b>Every trained ranker clears the best rule in distribution by at least {SHORTCUT_MARGIN} "
                   f"and stays above chance on every test condition.</b></p>")
    return intro + verdict + _frame_html(check)


# ----------------------------------------------------------------------------- the page
def _load_tables(profile: str) -> dict[str, pd.DataFrame]:
    from .study import load_exported_tables

    return load_exported_tables(profile)


def _caution(cfg: Config) -> str:
    if cfg.training.backbone.startswith("tiny"):
        return ("<div class='caution'><b>This profile trains tiny, randomly initialised models.</b> It checks that every "
                "step runs; its numbers say nothing about the methods. Read the verdicts below as a wiring check.</div>")
    return ""


def build_index(profile: str) -> Path:
    """Write ``reports/<profile>/index.html`` from the executed notebooks and tables there; return its path."""
    cfg = load_config(profile)
    rdir = report_dir(cfg.profile)
    notebooks = sorted(p for p in rdir.glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"{rdir}: no executed notebooks; run `make report PROFILE={cfg.profile}`")
    steps = [_step_info(p) for p in notebooks]
    tables = _load_tables(cfg.profile)
    n_seeds = len(_seeds_found(cfg.profile)) or len(cfg.rankers.seeds)
    seeds_words = " and training seeds" if n_seeds > 1 else ""
    seeds_banner = (f"<div class='caution'><b>These verdicts come from one training seed.</b> Every interval covers the "
                    f"sampling of test queries only, not the variation between training runs; a claim that holds here may "
                    f"not hold for another seed. List more seeds under <code>rankers.seeds</code> in "
                    f"<code>params/{_esc(cfg.profile)}.yaml</code> (e.g. <code>[13, 14, 15]</code>) for intervals and "
                    f"verdicts that cover training runs too.</div>" if n_seeds < 2 else
                    f"<p class='small'>{n_seeds} training seeds: every interval and verdict covers test queries and seeds.</p>")
    total = sum(s["seconds"] or 0.0 for s in steps)
    elapsed = _elapsed(steps)

    # setup
    setup = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in _setup_rows(cfg))
    eta = _eta(cfg.profile)
    guess = (lambda stem: f"<td>{_seconds(eta['steps'][stem]) if stem in eta['steps'] else '–'}</td>") if eta else (lambda stem: "")
    times = "".join(
        f"<tr><td><a href='{_esc(s['stem'])}.html'>{_esc(s['stem'])}</a></td><td>{_seconds(s['seconds'])}</td>"
        f"{guess(s['stem'])}<td class='muted'>{_esc((s['end'] or '')[:19].replace('T', ' '))}</td></tr>"
        for s in steps
    )
    eta_head = "<th>estimate</th>" if eta else ""
    eta_sum = f"<th>{_seconds(sum(eta['steps'].get(s['stem'], 0.0) for s in steps))}</th>" if eta else ""
    eta_elapsed = f"<th>{_seconds(eta['seconds'])}</th>" if eta else ""
    eta_note = (f"<p class='small'>The estimate is the one <code>make report</code> printed before it ran "
                f"({_esc(eta['created'])} UTC; {_esc(eta['where'])}): each step's time from the measured throughput "
                f"and the profile's sizes (<code>python -m calibrank.eta</code>); its elapsed time is for the "
                f"{eta['pending']} steps that run needed, {eta['jobs']} side by side.</p>") if eta else ""
    versions = ", ".join(f"{_esc(k)} {_esc(v)}" for k, v in _versions().items())

    # notebooks
    nb_parts, toc = [], []
    train_runs = [s for s in steps if s["stem"].startswith("03_")]
    for s in steps:
        if s["stem"].startswith("03_") and s is not train_runs[0]:
            continue
        if s["stem"].startswith("03_"):
            anchor = "nb-03_train"
            title = train_runs[0]["title"]
            rows = "".join(
                f"<tr><td><a href='{_esc(t['stem'])}.html'>{_esc(t['params'].get('ranker', t['stem']))}</a></td>"
                f"<td>{_esc(t['params'].get('train_corpus', ''))}</td><td>{_seconds(t['seconds'])}</td></tr>"
                for t in train_runs
            )
            runs = "".join(
                f"<details><summary>{_esc(t['params'].get('ranker', t['stem']))} trained on "
                f"{_esc(t['params'].get('train_corpus', ''))}</summary>{_render_sections(notebook_sections(t['nb']), 5)}</details>"
                for t in train_runs
            )
            body = (f"<p>{_inline_md(train_runs[0]['blurb'])}</p><p>One run per ranker and training corpus; each run's "
                    f"training curve and per-condition summary are folded below (open one to read it).</p>"
                    f"<table><tr><th>ranker</th><th>training corpus</th><th>wall time</th></tr>{rows}</table>{runs}")
        else:
            anchor = f"nb-{s['stem']}"
            title = s["title"]
            body = (f"<p>{_inline_md(s['blurb'])} <a href='{_esc(s['stem'])}.html'>Open the notebook</a> "
                    f"({_seconds(s['seconds'])}).</p>" + _render_sections(notebook_sections(s["nb"])) + _csv_links(rdir, s["stem"]))
        toc.append(f"<li><a href='#{anchor}'>{_esc(title)}</a></li>")
        nb_parts.append(f"<h3 id='{anchor}'>{_esc(title)}</h3>{body}")

    csvs = sorted((rdir / "tables").glob("*.csv")) if (rdir / "tables").is_dir() else []
    all_csv = " · ".join(f"<a href='tables/{_esc(p.name)}'>{_esc(p.stem)}</a>" for p in csvs) or "none yet"
    ids = [_slug(t) for t in SECTION_TITLES]
    nav = "".join(f"<li><a href='#{i}'>{_esc(t)}</a></li>" for i, t in zip(ids, SECTION_TITLES))
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>calibrank — {_esc(cfg.profile)}</title><style>{_CSS}</style></head>
<body>
<h1>Calibration and uncertainty of BERT rankers for conversation response ranking</h1>
<p class="muted">calibrank report · profile <code>{_esc(cfg.profile)}</code> · {len(steps)} notebooks, {_seconds(total)} of notebook time{
    f", {_seconds(elapsed)} from the first notebook's start to the last one's end" if elapsed is not None else ""}</p>
<p class="lead">This page reruns the studies of Penha &amp; Hauff (EACL 2021: calibration of BERT rankers, stochastic
rankers, risk-aware ranking and none-of-the-above prediction) and of the two 2023 Gaussian-process papers (PG-DRR, AAAI;
GPF-BERT, ICASSP) on this profile's data, and sets the papers' numbers beside ours. <b>The papers' numbers are on MSDialog,
MANtIS and UDC_DSTC8 with bert-base; ours are on {_esc(', '.join(c.value for c in cfg.data.corpora))} with
{_esc(cfg.training.backbone)}</b>, so compare directions and ratios, not values. Every number of ours on this page was computed
by this run.</p>
{_caution(cfg)}
{seeds_banner}
<nav><ol>{nav}</ol></nav>

<h2 id="{ids[0]}">{_esc(SECTION_TITLES[0])}</h2>
<table class="kv">{setup}</table>
<h4>Wall time of each step</h4>
<p>It shows how long each executed notebook ran (papermill's record), with a link to it. <code>make report</code> runs
independent notebooks side by side, so the elapsed time is less than the sum; setting up the environment comes before
the first notebook and is not counted here (<code>make report</code> prints its whole wall time).</p>
<table><tr><th>notebook</th><th>wall time</th>{eta_head}<th>finished</th></tr>{times}
<tr><th>sum</th><th>{_seconds(total)}</th>{eta_sum}<th></th></tr>
<tr><th>elapsed</th><th>{_seconds(elapsed) if elapsed is not None else "–"}</th>{eta_elapsed}<th></th></tr></table>
{eta_note}
<p class="small muted">Software: {versions}.</p>

<h2 id="{ids[1]}">{_esc(SECTION_TITLES[1])}</h2>
{_ranking_html(cfg, tables)}

<h2 id="{ids[2]}">{_esc(SECTION_TITLES[2])}</h2>
<p>Each claim of the papers, for each method the paper made it for, tested on this run's Predictions: our effect is the
mean over the conditions the claim covers, with its 95% bootstrap interval over test queries{seeds_words}; the
p-values are one-sided in the paper's direction and in the opposite one (paired permutation tests over test queries),
Holm-corrected across the claims below. <i>replicates</i> = the paper's direction, significant; <i>contradicted</i> =
the opposite direction, significant; the two other verdicts say the direction and that it is not significant.</p>
{seeds_banner}
{_replication_html(tables)}

<h2 id="{ids[3]}">{_esc(SECTION_TITLES[3])}</h2>
<p>Where a setting of ours matches one of the papers (same ranker, same kind of shift), the papers' numbers sit beside ours.
Theirs: MSDialog, MANtIS and UDC_DSTC8 at bert-base scale (5 seeds in the 2023 papers); ours: this profile's data and
backbone.</p>
{_comparison_html(tables)}

<h2 id="{ids[4]}">{_esc(SECTION_TITLES[4])}</h2>
<p>What a practitioner does with a ranker's probabilities (notebook 08, from the same Predictions, no new training):
correct the 1:1 training prior, recalibrate, answer or abstain, return a shortlist with a coverage guarantee, flag
shift, predict a query's difficulty. Each sentence is computed from this run's numbers.</p>
{_findings_html(tables)}

<h2 id="{ids[5]}">{_esc(SECTION_TITLES[5])}</h2>
<p>Each notebook below in the order it ran, with each of its tables and figures and the sentence that says what it
shows. Every table is also a CSV file: {all_csv}.</p>
<ol class="small">{''.join(toc)}</ol>
{''.join(nb_parts)}

<h2 id="{ids[6]}">{_esc(SECTION_TITLES[6])}</h2>
<ul>
<li><b>Ties count against the relevant candidate.</b> A relevant response tied with non-relevant ones is ranked below
all of them in R10@1, MAP and MRR (the first paper's code let ties favour it, which inflates the scores of a ranker
with near-constant outputs). The TREC run files under <code>trec/</code> follow the same order.</li>
<li>ECE is eq. 1 of Penha &amp; Hauff with 10 equal-width buckets over (query, candidate) pairs, weighted by bucket
size and not divided by the number of buckets (the first paper's code used 50 buckets and divided). "ECE 1:1" is on a
balanced set built from the 1 + 9 candidates by keeping the relevant one and one seeded-random negative per query.</li>
<li>Uncertainty: every table cell carries a 95% percentile-bootstrap interval over test queries (and over training
seeds when there are several). Tables 2 and 3 test each cell with a one-sided paired permutation test over test
queries in the paper's direction, Tables 4–5 with a one-sided paired t-test over the 5 folds; Holm across the cells of
each table. † marks a significant improvement, "worse" a significant change the other way.</li>
<li>Risk-aware ranking uses the moments of the logits over the samples and the covariance with all other candidates of
the query, as the paper's code; NOTA features come from the remaining candidates only (no leak of the removed one).</li>
<li>Inference times were measured in one run on the same queries (notebook 07), not taken from the training runs.</li>
</ul>
</body></html>
"""
    dest = rdir / "index.html"
    with atomic_path(dest) as tmp:
        tmp.write_text(page, encoding="utf-8")
    return dest


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m calibrank.report PROFILE", file=sys.stderr)
        return 2
    print(build_index(args[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
