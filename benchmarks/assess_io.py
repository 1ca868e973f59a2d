"""``assess_io``: reading a user's TREC run, against ir_measures' reader, and ranx's metrics on it.

On a synthetic run of ``n_queries x depth`` lines (:func:`make_synthetic_run`, seeded; 7,000 x
1,000 = 7 M lines, ~300 MB by default) with graded qrels, it measures, each job in a fresh
subprocess (``python -m benchmarks.assess_io --child JOB``) run one after the other:

- ``calibrank``: :func:`calibrank.assess.read.trec.read_runs` (qrels included) to a ``ScoredRun``;
- ``ir_measures``: ``ir_measures.read_trec_run`` and ``read_trec_qrels`` materialised as lists
  (the reference for what a valid file is, and a per-line Python reader);
- ``ranx``: R@1, MRR and nDCG@10 with ``ranx.evaluate`` on the same run: building ranx's
  ``Qrels`` / ``Run`` from dicts, the first evaluation (numba compiles it) and a second one.

Each job reports its wall time, its CPU time (all threads; on a shared machine the wall time
also holds the time spent waiting for a core), lines/s and peak resident memory above its
imports-only baseline (VmHWM, as in :mod:`benchmarks.memory`). The targets: >= 1 M lines/s and
<= 4 GB peak for ``read_runs``.

``baseline=REV`` adds the job ``calibrank@REV``: the same ``read_runs`` with the assembly of
``lib/calibrank/assess/inputs.py`` as it was at git revision REV (``git show``, loaded as a
temporary module), timed round robin with today's, so that a change to the assembly is measured
old against new in one run::

    python -m benchmarks.assess_io --compare REV [--queries 7000 --depth 1000 --repeats 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from . import common
from .common import emit, log, positive_int, ratio, target
from .memory import peak_rss_mb

__all__ = ["SECTION", "make_synthetic_run", "bench_assess_io", "run_child"]

SECTION = "assess_io"
_JOBS = ("calibrank", "ir_measures", "ranx")
_METRICS = ("recall@1", "mrr", "ndcg@10")


def _write_space_separated(path: Path, columns: dict[str, Any]) -> None:
    """Write columns as space-separated lines with no header (atomically: a temporary name, then a rename)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            pcsv.write_csv(
                pa.table(columns),
                f,
                write_options=pcsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none"),
            )
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def make_synthetic_run(
    out_dir: str | os.PathLike, n_queries: int = 7000, depth: int = 1000, seed: int = 0
) -> tuple[Path, Path]:
    """A TREC run of ``n_queries x depth`` lines and its qrels in ``out_dir``: ``(run_path, qrels_path)``.

    Each query retrieves ``depth`` distinct documents of a 10 M-document collection, ranked by a
    score (a standard normal, +2 for the 0-3 relevant ones, in five decimals); the qrels grade the
    relevant ones 1 or 2, judge up to five retrieved ones 0 and one unretrieved document 1 (so
    recall's denominator counts a document the run missed). Same seed, same files.
    """
    n_queries = positive_int(n_queries, "n_queries")
    depth = positive_int(depth, "depth", minimum=5)
    rng = np.random.default_rng(seed)
    collection = 10_000_000
    step = collection // depth - 1
    docs = (rng.integers(0, collection, size=(n_queries, 1)) + np.arange(depth) * step) % collection
    n_rel = rng.integers(0, 4, size=n_queries)
    relevant = np.arange(depth)[None, :] < n_rel[:, None]  # the first n_rel slots, before shuffling
    scores = rng.standard_normal((n_queries, depth)) + 2.0 * relevant
    shuffle = rng.permuted(np.broadcast_to(np.arange(depth), (n_queries, depth)), axis=1)
    docs, relevant, scores = (np.take_along_axis(a, shuffle, axis=1) for a in (docs, relevant, scores))
    order = np.argsort(-scores, axis=1, kind="stable")
    docs, relevant, scores = (np.take_along_axis(a, order, axis=1) for a in (docs, relevant, scores))
    qids = (100_000 + np.arange(n_queries)).astype(str)
    docids = np.char.add("D", docs.astype(str))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    run_path, qrels_path = (
        out_dir / f"synthetic-{n_queries}x{depth}-seed{seed}.run",
        out_dir / f"synthetic-{n_queries}x{depth}-seed{seed}.qrels",
    )
    n = n_queries * depth
    _write_space_separated(
        run_path,
        {
            "qid": np.repeat(qids, depth),
            "Q0": pa.repeat("Q0", n),
            "docid": docids.ravel(),
            "rank": np.tile(np.arange(1, depth + 1), n_queries),
            "score": np.round(scores, 5).ravel(),
            "tag": pa.repeat("synthetic", n),
        },
    )
    qi, ki = np.nonzero(relevant)
    judged_zero = np.zeros_like(relevant)
    judged_zero[:, depth - 5 :] = True  # the five lowest-scored candidates, judged non-relevant
    zi, zk = np.nonzero(judged_zero & ~relevant)
    q = np.concatenate([qids[qi], qids[zi], qids])
    d = np.concatenate([docids[qi, ki], docids[zi, zk], np.char.add("X", qids)])
    g = np.concatenate([rng.integers(1, 3, size=len(qi)), np.zeros(len(zi), np.int64), np.ones(n_queries, np.int64)])
    order = np.argsort(q, kind="stable")
    _write_space_separated(
        qrels_path, {"qid": q[order], "iter": pa.repeat("0", len(q)), "docid": d[order], "rel": g[order]}
    )
    return run_path, qrels_path


# --------------------------------------------------------------------------- child side


def _use_inputs_at(rev: str) -> None:
    """Make :func:`read_runs` assemble with ``inputs.py`` as it was at git revision ``rev``."""
    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(
        ["git", "show", f"{rev}:lib/calibrank/assess/inputs.py"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="calibrank-inputs-")) / "inputs_at_rev.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("calibrank.assess._inputs_at_rev", path)
    old = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = old
    spec.loader.exec_module(old)
    from calibrank.assess.read import rows as inputs
    from calibrank.assess.read import trec

    def numpy_docids(docid):  # the older assembly took docids as numpy strings, converted by the reader
        return inputs.to_str_array(docid) if isinstance(docid, (pa.Array, pa.ChunkedArray)) else docid

    def assemble(samples, qrels, **kw):
        for rows in samples:
            rows.docid = numpy_docids(rows.docid)
        return old.assemble(samples, qrels, **kw)

    trec.assemble = assemble
    trec.first_duplicate = lambda qcode, docid: old.first_duplicate(qcode, numpy_docids(docid))


def _child(job: str, run: str, qrels: str) -> dict[str, Any]:
    if job.startswith("calibrank@"):
        _use_inputs_at(job.split("@", 1)[1])
        from calibrank.assess.read.trec import read_runs

        job = "calibrank"
    elif job == "calibrank":
        from calibrank.assess.read.trec import read_runs
    elif job == "ir_measures":
        import ir_measures
    elif job == "ranx":
        import ranx

        from calibrank.assess.read.trec import read_runs
    else:
        raise ValueError(f"job must be one of {_JOBS}, got {job!r}")
    baseline, source = peak_rss_mb()
    out: dict[str, Any] = {}
    c0 = time.process_time()
    t0 = time.perf_counter()
    if job == "calibrank":
        scored = read_runs(run, qrels)
        out.update(
            queries=int(scored.mask.shape[0]), candidates=int(scored.mask.sum()), judged_fraction=scored.judged_fraction
        )
    elif job == "ir_measures":
        docs = list(ir_measures.read_trec_run(run))
        judgments = list(ir_measures.read_trec_qrels(qrels))
        out.update(candidates=len(docs), judgments=len(judgments))
    else:
        scored = read_runs(run, qrels)
        out["read_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        run_dict: dict[str, dict[str, float]] = {}
        for q, ids, sc, m in zip(scored.qids.tolist(), scored.docids, scored.scores[0], scored.mask):
            run_dict[q] = dict(zip(ids[m].tolist(), sc[m].tolist()))
        qrels_dict: dict[str, dict[str, int]] = {}
        for q, d, g in _qrels_rows(qrels):
            qrels_dict.setdefault(q, {})[d] = g
        r_qrels, r_run = ranx.Qrels(qrels_dict), ranx.Run(run_dict)
        out["build_s"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        first = ranx.evaluate(r_qrels, r_run, list(_METRICS), make_comparable=True)
        out["first_evaluate_s"] = time.perf_counter() - t2
        t3 = time.perf_counter()
        again = ranx.evaluate(r_qrels, r_run, list(_METRICS), make_comparable=True)
        out["evaluate_s"] = time.perf_counter() - t3
        out["metrics"] = {k: float(v) for k, v in again.items()}
        out["metrics_agree"] = all(abs(float(first[k]) - float(again[k])) < 1e-12 for k in first)
    out["seconds"] = time.perf_counter() - t0
    out["cpu_s"] = time.process_time() - c0  # all threads: on a busy machine, what the job itself took
    peak = peak_rss_mb()[0]
    out.update(baseline_mb=baseline, peak_mb=peak, increment_mb=max(0.0, peak - baseline), rss_source=source)
    return out


def _qrels_rows(path: str):
    with open(path) as f:
        for line in f:
            if line.strip():
                q, _, d, g = line.split()
                yield q, d, int(g)


def run_child(job: str, run: Path, qrels: Path, *, timeout_s: float = 900.0) -> dict[str, Any]:
    """One job in a fresh subprocess; its measurements, or ``{"error": ...}``."""
    return common.run_child(
        "assess_io", [job, str(run), str(qrels)], timeout_s=timeout_s, env={"NUMBA_DISABLE_PERFORMANCE_WARNINGS": "1"}
    )


def bench_assess_io(
    n_queries: int = 7000,
    depth: int = 1000,
    *,
    seed: int = 0,
    repeats: int = 1,
    jobs: Sequence[str] = _JOBS,
    work_dir: str | os.PathLike | None = None,
    timeout_s: float = 900.0,
    baseline: str | None = None,
) -> dict[str, Any]:
    """Write the synthetic run, then time each job ``repeats`` times, round robin (the fastest run of each is kept).

    ``baseline``: a git revision; its assembly is timed too, as job ``calibrank@<baseline>`` (see the module).
    """
    repeats = positive_int(repeats, "repeats")
    unknown = [j for j in jobs if j not in _JOBS]
    if unknown or not jobs:
        raise ValueError(f"jobs must be a non-empty subset of {_JOBS}, got {list(jobs)}")
    jobs = list(jobs) + ([f"calibrank@{baseline}"] if baseline else [])
    with tempfile.TemporaryDirectory(prefix="calibrank-bench-assess-", dir=work_dir) as tmp:
        t0 = time.perf_counter()
        run, qrels = make_synthetic_run(tmp, n_queries, depth, seed)
        write_s = time.perf_counter() - t0
        lines = n_queries * depth
        size_mb = run.stat().st_size / 2**20
        log(
            f"assess_io: synthetic run {n_queries} x {depth} = {lines:,} lines, {size_mb:.0f} MB (written in {write_s:.1f} s)"
        )
        runs: dict[str, list[dict[str, Any]]] = {job: [] for job in jobs}
        for _ in range(repeats):
            for job in jobs:
                res = run_child(job, run, qrels, timeout_s=timeout_s)
                runs[job].append(res)
                log(
                    f"assess_io: {job}: "
                    + (
                        res["error"]
                        if "error" in res
                        else f"{res['seconds']:.2f} s, peak +{res['increment_mb']:.0f} MB"
                    )
                )
    best = {
        job: min((r for r in rs if "error" not in r), key=lambda r: r["seconds"], default=rs[-1])
        for job, rs in runs.items()
    }
    ours, ref, rx = (best.get(job, {"skipped": True}) for job in _JOBS)
    for res in (ours, ref):
        if "seconds" in res:
            res["lines_per_s"] = lines / res["seconds"]
    out: dict[str, Any] = {
        "lines": lines,
        "n_queries": n_queries,
        "depth": depth,
        "seed": seed,
        "file_mb": size_mb,
        "repeats": repeats,
        "write_s": write_s,
        "calibrank": ours,
        "ir_measures": ref,
        "ranx": rx,
        "all_runs": runs,
        "method": "each job in a fresh subprocess; peak = VmHWM, increment over "
        "the imports-only baseline; fastest of the repeats",
    }
    speedup = ratio(ref.get("seconds", float("nan")), ours.get("seconds", float("nan")))
    out["speedup_over_ir_measures"] = speedup
    out["targets"] = [
        target("read_runs lines/s (M)", ours.get("lines_per_s", float("nan")) / 1e6, ">=", 1.0),
        target("read_runs peak memory (GB)", ours.get("peak_mb", float("nan")) / 1024, "<=", 4.0),
        target("read_runs speed / ir_measures.read_trec_run", speedup, ">=", 1.0),
    ]
    if baseline:
        old = best[f"calibrank@{baseline}"]
        if "seconds" in old:
            old["lines_per_s"] = lines / old["seconds"]
        out["baseline"] = {"rev": baseline, **old}
        out["time_over_baseline"] = ratio(ours.get("seconds", float("nan")), old.get("seconds", float("nan")))
        out["cpu_over_baseline"] = ratio(ours.get("cpu_s", float("nan")), old.get("cpu_s", float("nan")))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.assess_io",
        description="one assess_io job (child side), or today's read_runs against a git revision's",
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--child", nargs=3, metavar=("JOB", "RUN", "QRELS"))
    what.add_argument("--compare", metavar="REV", help="time read_runs with REV's inputs.py and today's, round robin")
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.child:
        emit(_child(*args.child))
        return 0
    res = bench_assess_io(args.queries, args.depth, repeats=args.repeats, jobs=("calibrank",), baseline=args.compare)
    for job, runs in res["all_runs"].items():
        log(
            f"{job}: wall "
            + ", ".join(f"{r.get('seconds', float('nan')):.2f}" for r in runs)
            + " s; cpu "
            + ", ".join(f"{r.get('cpu_s', float('nan')):.2f}" for r in runs)
            + " s; peak +"
            + ", ".join(f"{r.get('increment_mb', float('nan')):.0f}" for r in runs)
            + " MB"
        )
    log(
        f"today / {args.compare}: wall x{res['time_over_baseline']:.2f}, cpu x{res['cpu_over_baseline']:.2f}; "
        f"today {res['calibrank'].get('lines_per_s', float('nan')) / 1e6:.2f} M lines/s"
    )
    emit(res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
