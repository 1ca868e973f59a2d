"""Files for readers and other tools: every table as CSV under ``reports/<profile>/tables/`` and TREC run files.

A table's sha256 is recorded beside it when it is written (``<name>.csv.sha256``) and checked when
it is read back (:func:`load_exported_tables`): a cut or edited table is an error naming the file,
never a page built from what is left of it.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from calibrank.atomic import DigestMismatch, atomic_path, atomic_recorded, check_recorded, write_json
from calibrank.predictions import Predictions
from calibrank.study.analysis.load import Study
from calibrank.study.paths import report_dir
from calibrank.study.settings.schema import Config
from calibrank.table_checks import raise_problems, rows_expected

REPORT_TABLES = ("table1_bert", "table2_ece_change")
"""Notebook 04's tables that :func:`.papers.paper_comparison` reads back from the CSV files."""


class TableFileError(ValueError):
    """An exported table that cannot be read back as it was written; the message names the file (``path``) and why."""

    def __init__(self, message: str, path: str | Path):
        super().__init__(message)
        self.path = Path(path)


# ------------------------------------------------------------------------------ files
def tables_dir(profile: str) -> Path:
    path = report_dir(profile) / "tables"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _slug(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")
    if not slug:
        raise ValueError(f"table name {name!r} has no usable characters")
    return slug


def export_tables(profile: str | Config, tables: Mapping[str, pd.DataFrame], *, notebook: str = "") -> dict[str, Path]:
    """Write each table to ``reports/<profile>/tables/<name>.csv`` atomically; return the paths.

    A manifest ``tables/<notebook>.json`` (when ``notebook`` is given) lists which notebook wrote
    which tables, for the report's links and for the command that writes a table again. Each table's
    sha256 is recorded beside it, last. Index levels are written as columns.
    """
    prof = profile.profile if isinstance(profile, Config) else str(profile)
    folder = tables_dir(prof)
    out = {}
    for name, df in tables.items():
        if not isinstance(df, pd.DataFrame):
            raise TypeError(f"table {name!r} must be a DataFrame; got {type(df).__name__}")
        frame = df
        if not isinstance(df.index, pd.RangeIndex):
            frame = df.reset_index()
        if isinstance(frame.columns, pd.MultiIndex):
            frame = frame.copy()
            frame.columns = [" | ".join(str(p) for p in c if str(p)) for c in frame.columns]
        dest = folder / f"{_slug(name)}.csv"
        with atomic_recorded(dest) as tmp:
            frame.to_csv(tmp, index=False)
        out[name] = dest
    if notebook:
        write_json(
            folder / f"{_slug(notebook)}.json", {"notebook": notebook, "tables": sorted(p.name for p in out.values())}
        )
    _check_exported(tables, out)
    return out


def _check_exported(tables: Mapping[str, pd.DataFrame], written: Mapping[str, Path]) -> None:
    """Every table is a file, and those :data:`REPORT_TABLES` read back from it have all their rows."""
    problems = [
        f"exported tables: {name!r} -> {path} does not exist, expected a CSV file"
        for name, path in written.items()
        if not Path(path).is_file()
    ]
    for name in REPORT_TABLES:
        if name in written and Path(written[name]).is_file() and len(pd.read_csv(written[name])) != len(tables[name]):
            problems.append(
                f"exported tables: {name}.csv cannot be read back from {written[name]}, expected "
                f"{len(tables[name])} rows"
            )
    raise_problems(problems)


def read_exported_table(path: str | Path) -> pd.DataFrame:
    """The table in ``path`` (written by :func:`export_tables`), read once: checked against the sha256 recorded
    beside it, then parsed; :class:`TableFileError` names the file when it is not the one written or not a table."""
    path = Path(path)
    data = path.read_bytes()
    try:
        check_recorded(path, data)
        return pd.read_csv(io.BytesIO(data))
    except DigestMismatch as exc:
        raise TableFileError(str(exc), path) from None
    except ValueError as exc:  # pandas' ParserError and EmptyDataError, a byte that is not UTF-8
        raise TableFileError(f"{path}: not a CSV table ({' '.join(str(exc).split())})", path) from None


def load_exported_tables(profile: str) -> dict[str, pd.DataFrame]:
    """Every CSV under ``reports/<profile>/tables/``, keyed by file stem (:func:`read_exported_table`)."""
    folder = report_dir(profile) / "tables"
    return {p.stem: read_exported_table(p) for p in sorted(folder.glob("*.csv"))} if folder.is_dir() else {}


def table_writer(path: str | Path) -> str | None:
    """The notebook whose manifest (``tables/<notebook>.json``, :func:`export_tables`) lists the table ``path``;
    None when none does."""
    path = Path(path)
    for manifest in sorted(path.parent.glob("*.json")):
        try:
            entry = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(entry, dict) and path.name in entry.get("tables", []) and isinstance(entry.get("notebook"), str):
            return entry["notebook"]
    return None


def _trec_lines(pred: Predictions, run: str) -> tuple[list[str], list[str]]:
    order = np.lexsort((pred.labels, -pred.probs), axis=1)  # decreasing score, ties against the relevant
    run_lines, qrel_lines = [], []
    for qi, qid in enumerate(pred.qids):
        for rank, j in enumerate(order[qi], start=1):
            run_lines.append(f"{qid} Q0 {qid}.{j} {rank} {pred.probs[qi, j]:.8f} {run}")
        for j in range(pred.labels.shape[1]):
            qrel_lines.append(f"{qid} 0 {qid}.{j} {int(pred.labels[qi, j])}")
    return run_lines, qrel_lines


def write_trec_runs(study: Study, split: str = "test", out_dir: Path | None = None) -> pd.DataFrame:
    """TREC run files (``qid Q0 docid rank score run``) and qrels for every cell of ``split``.

    ``docid`` is ``<qid>.<candidate index>``, ranks follow our tie rule (``trec_eval`` breaks ties by
    docid, so it can differ on tied queries). Writes ``<ranker>-<train corpus>/<condition>.run`` and
    ``qrels/<condition>.qrels`` under ``out_dir``; returns one row per file.
    """
    folder = out_dir or (report_dir(study.cfg.profile) / "trec")
    rows = []
    written_qrels: set[str] = set()
    for ranker, tc, cond in study.cells(split):
        pred = study.get(ranker, tc, cond)
        run = f"{ranker}-{tc}"
        run_lines, qrel_lines = _trec_lines(pred, run)
        dest = folder / run / f"{cond.name}.run"
        with atomic_path(dest) as tmp:
            tmp.write_text("\n".join(run_lines) + "\n", encoding="utf-8")
        rows.append({"kind": "run", "run": run, "condition": cond.name, "lines": len(run_lines), "path": str(dest)})
        if cond.name not in written_qrels:
            qdest = folder / "qrels" / f"{cond.name}.qrels"
            with atomic_path(qdest) as tmp:
                tmp.write_text("\n".join(qrel_lines) + "\n", encoding="utf-8")
            written_qrels.add(cond.name)
            rows.append(
                {"kind": "qrels", "run": "", "condition": cond.name, "lines": len(qrel_lines), "path": str(qdest)}
            )
    out = pd.DataFrame(rows, columns=["kind", "run", "condition", "lines", "path"])
    _check_trec_runs(study, out, split)
    return out


def _check_trec_runs(study: Study, files: pd.DataFrame, split: str) -> None:
    """A run file for every cell of ``split`` (:meth:`calibrank.study.analysis.load.Study.expected_cells`)."""
    raise_problems(
        rows_expected(
            "trec runs",
            files[files["kind"] == "run"],
            ("run", "condition"),
            [(f"{r}-{tc}", study.condition(c, s, split).name) for r, tc, c, s in study.expected_cells(split)],
        )
    )
