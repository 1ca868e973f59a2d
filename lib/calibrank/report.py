"""The report's front page: ``reports/<profile>/index.html`` linking every executed notebook.

It states the setup (profile, seed, corpora, machine, library versions) and the wall time
of each step, read from papermill's metadata in the executed notebooks, then lists the
notebooks in order with the title and first paragraph of each.

Run as ``python -m calibrank.report PROFILE`` (``make report`` does).
"""

from __future__ import annotations

import html
import json
import os
import platform
import sys
from importlib import metadata
from pathlib import Path

from .config import load_config
from .runs import atomic_path, report_dir

__all__ = ["build_index"]

_PACKAGES = ("torch", "transformers", "sentence-transformers", "bm25s", "faiss-cpu", "numpy", "scikit-learn", "papermill")

_CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 56rem; margin: 2rem auto;
       padding: 0 1rem; color: #1d1d1f; line-height: 1.5; }
h1 { font-size: 1.7rem; margin-bottom: .2rem; } h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5rem 0; } td, th { padding: .25rem .8rem; border-bottom: 1px solid #eee; text-align: left; }
th { background: #f6f6f6; } .muted { color: #666; } a { color: #0b5cad; text-decoration: none; } a:hover { text-decoration: underline; }
li { margin-bottom: .6rem; }
"""


def _notebook_summary(path: Path) -> dict:
    nb = json.loads(path.read_text(encoding="utf-8"))
    title, blurb = path.stem, ""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            lines = [ln.strip() for ln in "".join(cell.get("source", "")).splitlines() if ln.strip()]
            if lines and lines[0].startswith("#"):
                title = lines[0].lstrip("# ").strip()
                blurb = " ".join(ln for ln in lines[1:] if not ln.startswith("#"))
                break
    pm = nb.get("metadata", {}).get("papermill", {})
    return {"title": title, "blurb": blurb, "seconds": pm.get("duration"), "end": pm.get("end_time")}


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0]}
    for pkg in _PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def build_index(profile: str) -> Path:
    """Write ``reports/<profile>/index.html`` from the executed notebooks there; return its path."""
    cfg = load_config(profile)
    rdir = report_dir(cfg.profile)
    notebooks = sorted(p for p in rdir.glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"{rdir}: no executed notebooks; run `make report PROFILE={cfg.profile}`")
    esc = html.escape
    rows, items, total = [], [], 0.0
    for nb in notebooks:
        info = _notebook_summary(nb)
        secs = info["seconds"]
        total += secs or 0.0
        link = nb.with_suffix(".html").name
        rows.append(f"<tr><td><a href='{esc(link)}'>{esc(nb.stem)}</a></td><td>{'' if secs is None else f'{secs:.1f} s'}</td></tr>")
        items.append(f"<li><a href='{esc(link)}'><b>{esc(info['title'])}</b></a><br><span class='muted'>{esc(info['blurb'])}</span></li>")
    versions = "".join(f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in _versions().items())
    setup = [
        ("profile", f"{cfg.profile} — {cfg.description}"),
        ("seed", str(cfg.seed)),
        ("corpora", ", ".join(c.value for c in cfg.data.corpora)),
        ("negatives", f"train: {cfg.negatives.train.value} (k={cfg.negatives.train_k}); "
                      f"evaluation: {', '.join(s.value for s in cfg.negatives.eval)} (k={cfg.negatives.eval_k})"),
        ("machine", f"{platform.platform()}, {os.cpu_count()} CPUs"),
    ]
    setup_rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in setup)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>calibrank — {esc(cfg.profile)}</title><style>{_CSS}</style></head>
<body>
<h1>calibrank report: profile <code>{esc(cfg.profile)}</code></h1>
<p class="muted">Calibration and uncertainty of neural cross-encoder rankers for conversation response ranking.
Every number on the linked pages was computed by this run.</p>
<h2>Setup</h2><table>{setup_rows}</table>
<h2>Steps</h2>
<ol>{''.join(items)}</ol>
<h2>Wall time per step</h2><table><tr><th>notebook</th><th>wall time</th></tr>{''.join(rows)}
<tr><th>total</th><th>{total:.1f} s</th></tr></table>
<h2>Software</h2><table>{versions}</table>
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
