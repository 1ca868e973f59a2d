"""bench.json rendered as markdown (bench.md) and as a small standalone HTML page (bench.html), from one layout.

Layout: the machine the figures were taken on; one table of every ratio beside its target and
whether it is met; "How close to the limit": the matmul peak per precision beside the GFLOP/s
that the training loops (ours and ``CrossEncoder.fit``) and the scoring loop achieve, their
fraction of the peak and the ratio calibrank / ``CrossEncoder.fit`` at each precision; then a
section per benchmark — a table of its own for the sections with a
known shape (training throughput, inference per query, peak memory) and, for every section,
the full key/value listing of what bench.json holds.

:func:`write_results` merges sections into ``bench.json`` and rewrites both renderings; every
file is written atomically.
"""

from __future__ import annotations

import html
import json
import math
import os
from pathlib import Path
from typing import Any

from calibrank import atomic

__all__ = ["layout", "to_markdown", "to_html", "fmt", "render_markdown", "render_html", "write_results"]

Block = tuple  # ("h1"|"h2"|"h3"|"p", text) | ("table", header, rows) | ("details", summary, [blocks])

MACHINE = "machine"
_ORDER = ("matmul_peak", "training_throughput", "inference_per_query", "inference_flops", "peak_memory")
PEAK, TRAINING, INFERENCE_FLOPS = "matmul_peak", "training_throughput", "inference_flops"


def fmt(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    if isinstance(value, (list, tuple)):
        value = json.dumps(value, default=str)
    text = str(value).replace("\n", " ")
    return text if len(text) <= 160 else text[:157] + "..."


def _met(flag: Any) -> str:
    return "yes" if flag is True else "NO" if flag is False else "n/a"


def _flatten(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(obj, dict):
        out = []
        for key in obj:
            out += _flatten(obj[key], f"{prefix}.{key}" if prefix else str(key))
        return out
    return [(prefix, obj)]


def _variants(sec: dict[str, Any]) -> list[str]:
    """The measured variants of a training section (entries holding ``pairs_per_s``), in their stored order."""
    names = [k for k, v in sec.items() if isinstance(v, dict) and "pairs_per_s" in v]
    order = {"fp32": 0, "bf16": 1}
    return sorted(names, key=lambda k: (order.get(sec[k].get("precision_asked"), 0), not k.startswith("calibrank")))


def _same_precision_ratio(sec: dict[str, Any], name: str) -> Any:
    """calibrank / ``name`` at ``name``'s precision (1 for calibrank itself); None where not measured."""
    if name.startswith("calibrank"):
        return 1.0
    return (sec.get("ratio_ours_over") or {}).get(name)


def _training_table(sec: dict[str, Any]) -> list[Block]:
    rows = []
    for name in _variants(sec):
        v = sec[name]
        rows.append(
            [
                name,
                v.get("method", ""),
                v.get("precision", ""),
                fmt(v.get("pairs_per_s")),
                fmt(v.get("seconds")),
                fmt(v.get("gflop_per_s")),
                fmt(v.get("fraction_of_peak")),
                fmt(_same_precision_ratio(sec, name)),
            ]
        )
    text = (
        f"{sec.get('timed_steps')} timed steps after {sec.get('warmup_steps')} warm-up steps, batch {sec.get('batch_size')}, "
        f"max length {sec.get('max_length')}, {sec.get('backbone')}, {sec.get('device')}, {sec.get('rounds')} round(s)."
    )
    blocks: list[Block] = [("p", text)]
    if sec.get("st_method_note"):
        blocks.append(("p", sec["st_method_note"]))
    if sec.get("precisions_skipped"):
        blocks.append(
            ("p", "Not measured: " + "; ".join(f"{p}: {why}" for p, why in sec["precisions_skipped"].items()))
        )
    blocks.append(
        (
            "table",
            [
                "variant",
                "method",
                "precision",
                "pairs/s",
                "seconds",
                "GFLOP/s",
                "fraction of peak",
                "calibrank / variant (same precision)",
            ],
            rows,
        )
    )
    if isinstance(sec.get("ratio_defaults"), dict):
        d = sec["ratio_defaults"]
        blocks.append(("p", f"Each side at its default precision: {d.get('figure')} = {fmt(d.get('value'))}."))
    return blocks


def _limit_blocks(results: dict[str, Any]) -> list[Block]:
    """How close to the limit: peak, achieved GFLOP/s and fraction of peak per loop and precision, calibrank / fit."""
    peak = results.get(PEAK) if isinstance(results.get(PEAK), dict) else {}
    train = results.get(TRAINING) if isinstance(results.get(TRAINING), dict) else {}
    infer = results.get(INFERENCE_FLOPS) if isinstance(results.get(INFERENCE_FLOPS), dict) else {}
    peaks = peak.get("peak_gflop_per_s") or {}
    variants = [v for v in _variants(train) if "gflop_per_s" in train[v] or "fraction_of_peak" in train[v]]
    if not peaks and not variants and not infer:
        return []
    rows = []
    for p in ("fp32", "bf16"):
        if p in peaks:
            rows.append(["matmul peak (torch.mm)", p, fmt(peaks[p]), fmt(peaks[p]), fmt(1.0), ""])
    for p in ("fp32", "bf16"):
        for name in variants:
            v = train[name]
            if v.get("precision_asked") != p:
                continue
            label = f"training {name.rsplit('_', 1)[0]}" + (" (CrossEncoder.fit)" if name.startswith("st") else "")
            rows.append(
                [
                    label,
                    p,
                    fmt(v.get("gflop_per_s")),
                    fmt(v.get("peak_gflop_per_s", peaks.get(p))),
                    fmt(v.get("fraction_of_peak")),
                    fmt(_same_precision_ratio(train, name)),
                ]
            )
        if isinstance(infer.get(p), dict):
            v = infer[p]
            rows.append(
                [
                    "inference bert scoring",
                    p,
                    fmt(v.get("gflop_per_s")),
                    fmt(v.get("peak_gflop_per_s", peaks.get(p))),
                    fmt(v.get("fraction_of_peak")),
                    "",
                ]
            )
    notes = []
    if peak:
        notes.append(
            f"Peak: {peak.get('method', 'torch.mm')}, {peak.get('torch_threads')} threads on {peak.get('device')}"
            + (
                f"; bf16 via {peak['bf16_support'].get('via')}"
                if (peak.get("bf16_support") or {}).get("supported")
                else ""
            )
            + "."
        )
        for p, why in (peak.get("skipped") or {}).items():
            notes.append(f"{p}: {why}.")
    else:
        notes.append("No matmul peak in bench.json (run without --skip peak): fractions of peak are n/a.")
    notes.append(
        "Achieved GFLOP/s: FLOPs counted from the encoder's configuration and the padded batch shapes "
        "(forward N B (2 L P + 4 L^2 d_attn), training 3x forward; benchmarks.flops) over the timed seconds. "
        "calibrank / st: training pairs/s of our loop over CrossEncoder.fit's at the same precision."
    )
    return [
        ("h2", "How close to the limit"),
        *[("p", n) for n in notes],
        ("table", ["loop", "precision", "GFLOP/s", "peak GFLOP/s", "fraction of peak", "calibrank / st"], rows),
    ]


def _inference_table(sec: dict[str, Any]) -> list[Block]:
    rows = []
    for name, v in sec.get("rankers", {}).items():
        bound, r = v.get("target_max_ratio"), v.get("ratio_to_bert")
        met = None if bound is None or r is None or math.isnan(r) else r <= bound
        rows.append(
            [
                name,
                fmt(v.get("ms_per_query")),
                fmt(v.get("ms_per_query_fastest")),
                fmt(r),
                f"<= {bound:g}" if bound is not None else "",
                _met(met) if bound is not None else "",
                fmt(v.get("samples")),
                fmt(v.get("parameters", 0) / 1e6),
                "cache" if v.get("models") == "profile model cache" else "short training",
            ]
        )
    text = (
        f"{sec.get('queries')} queries x {sec.get('candidates')} candidates ({sec.get('corpus')}, {sec.get('sampler')}), "
        f"median of {sec.get('repeats')} round-robin repeats, {sec.get('backbone')}, {sec.get('device')}."
    )
    blocks: list[Block] = [("p", text)]
    short = sec.get("models_from_short_training") or []
    if short:
        blocks.append(("p", f"Not in the model cache, built by a short training for timing only: {', '.join(short)}."))
    blocks.append(
        (
            "table",
            ["ranker", "ms/query", "fastest", "ratio to bert", "target", "met", "samples", "params (M)", "models"],
            rows,
        )
    )
    return blocks


def _memory_table(sec: dict[str, Any]) -> list[Block]:
    rows = []
    jobs = []
    if isinstance(sec.get("training"), dict):
        t = sec["training"]
        jobs.append((f"training {t.get('steps')} steps, batch {t.get('batch_size')}, {t.get('backbone')}", t))
    gibbs = sec.get("gibbs") or {}
    for key, g in sorted(gibbs.items(), key=lambda kv: kv[1].get("inducing", 0) if isinstance(kv[1], dict) else 0):
        jobs.append(
            (
                f"PG Gibbs {key}, {g.get('chains')} chains x {g.get('steps')} steps"
                + (" (laptop)" if g.get("laptop_size") else ""),
                g,
            )
        )
    for label, j in jobs:
        note = j.get("skipped") or j.get("error") or ""
        rows.append(
            [
                label,
                fmt(j.get("baseline_mb")),
                fmt(j.get("peak_mb")),
                fmt(j.get("increment_mb")),
                fmt(j.get("seconds")),
                fmt(j["cuda_max_allocated_mb"]) if "cuda_max_allocated_mb" in j else "",
                note,
            ]
        )
    return [
        ("p", sec.get("method", "")),
        ("table", ["job", "baseline MB", "peak MB", "increment MB", "seconds", "CUDA max MB", "note"], rows),
    ]


_TABLES = {
    "training_throughput": _training_table,
    "inference_per_query": _inference_table,
    "peak_memory": _memory_table,
}


def layout(results: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = [
        ("h1", "Benchmarks"),
        ("p", "Generated by `python -m benchmarks` (and other benchmarks writing into bench.json)."),
    ]
    machine = results.get(MACHINE)
    if isinstance(machine, dict):
        blocks += [("h2", "Machine"), ("table", ["key", "value"], [[k, fmt(v)] for k, v in _flatten(machine)])]
    target_rows = []
    for name in sorted(results):
        sec = results[name]
        for t in (sec.get("targets") or []) if isinstance(sec, dict) else []:
            target_rows.append(
                [name, t.get("figure", ""), fmt(t.get("value")), t.get("target", ""), _met(t.get("met"))]
            )
    if target_rows:
        blocks += [("h2", "Targets"), ("table", ["section", "figure", "measured", "target", "met"], target_rows)]
    blocks += _limit_blocks(results)
    names = [n for n in _ORDER if n in results] + sorted(n for n in results if n not in _ORDER and n != MACHINE)
    for name in names:
        sec = results[name]
        blocks.append(("h2", name))
        if name in _TABLES and isinstance(sec, dict) or isinstance(sec, dict) and isinstance(sec.get("table"), dict):
            t = sec.get("table")
            blocks += _TABLES[name](sec) if name in _TABLES else [("table", t["header"], t["rows"])]
            rest = {k: v for k, v in sec.items() if k not in ("targets", MACHINE, "table")}  # shown above
            blocks.append(
                ("details", "all figures", [("table", ["key", "value"], [[k, fmt(v)] for k, v in _flatten(rest)])])
            )
        else:
            blocks.append(("table", ["key", "value"], [[k, fmt(v)] for k, v in _flatten(sec)]))
    return blocks


def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|")


def to_markdown(blocks: list[Block]) -> str:
    lines: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            lines += ["#" * int(kind[1]) + " " + block[1], ""]
        elif kind == "p":
            lines += [block[1], ""]
        elif kind == "table":
            header, rows = block[1], block[2]
            lines.append("| " + " | ".join(_md_cell(h) for h in header) + " |")
            lines.append("|" + "---|" * len(header))
            lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
            lines.append("")
        elif kind == "details":
            lines += ["<details><summary>" + html.escape(block[1]) + "</summary>", ""]
            lines += to_markdown(block[2]).splitlines()
            lines += ["</details>", ""]
        else:  # pragma: no cover - layout() only makes the kinds above
            raise ValueError(f"unknown block kind {kind!r}")
    return "\n".join(lines)


_CSS = (
    "body{font-family:system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:.9em}th{background:#f3f3f3}"
    "td.met-yes{background:#e3f6e3}td.met-NO{background:#fbe3e3}"
)


def _html_blocks(blocks: list[Block]) -> list[str]:
    out: list[str] = []
    for block in blocks:
        kind = block[0]
        if kind in ("h1", "h2", "h3"):
            out.append(f"<{kind}>{html.escape(block[1])}</{kind}>")
        elif kind == "p":
            out.append(f"<p>{html.escape(block[1])}</p>")
        elif kind == "table":
            header, rows = block[1], block[2]
            met_col = header.index("met") if "met" in header else -1
            out.append("<table><tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in header) + "</tr>")
            for row in rows:
                cells = []
                for i, c in enumerate(row):
                    cls = f' class="met-{html.escape(str(c))}"' if i == met_col and c in ("yes", "NO") else ""
                    cells.append(f"<td{cls}>{html.escape(str(c))}</td>")
                out.append("<tr>" + "".join(cells) + "</tr>")
            out.append("</table>")
        elif kind == "details":
            out.append(f"<details><summary>{html.escape(block[1])}</summary>")
            out += _html_blocks(block[2])
            out.append("</details>")
    return out


def to_html(blocks: list[Block]) -> str:
    body = "\n".join(_html_blocks(blocks))
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Benchmarks</title>'
        f"<style>{_CSS}</style></head><body>\n{body}\n</body></html>\n"
    )


def render_markdown(results: dict[str, Any]) -> str:
    """bench.md: machine, every ratio beside its target, then each section (:func:`layout`)."""
    return to_markdown(layout(results))


def render_html(results: dict[str, Any]) -> str:
    """bench.html: the same tables as bench.md in one standalone page."""
    return to_html(layout(results))


def write_results(out_dir: str | os.PathLike, sections: dict[str, Any]) -> dict[str, Any]:
    """Merge ``sections`` into ``out_dir/bench.json`` (other top-level keys kept); rewrite bench.md and bench.html. All atomic."""
    out = Path(out_dir)
    path = out / "bench.json"
    merged: dict[str, Any] = {}
    if path.exists():
        try:
            merged = atomic.read_json(path)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}: not valid JSON ({exc}); fix or remove it, it may hold other benchmarks") from exc
        if not isinstance(merged, dict):
            raise SystemExit(f"{path}: expected a JSON object of sections, got {type(merged).__name__}")
    merged.update(sections)
    atomic.write_json(path, merged)
    with atomic.atomic_path(out / "bench.md") as tmp:
        tmp.write_text(render_markdown(merged), encoding="utf-8")
    with atomic.atomic_path(out / "bench.html") as tmp:
        tmp.write_text(render_html(merged), encoding="utf-8")
    return merged
