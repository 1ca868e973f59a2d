"""Speed and memory benchmarks, each figure measured side by side in one run.

``python -m benchmarks [SECTION ...] [--out DIR] [--profile laptop] [--skip SECTION] [--quick] ...``

Sections named on the command line run alone (``python -m benchmarks guarantee --guarantee-draws 300``);
with none named, every section runs but those left out with ``--skip``.

``--quick`` shrinks every size and repeat count left at its default (a few minutes on
2 cores instead of the better part of an hour); its figures are noisier and say so in
``bench.json`` (``machine.quick``).

Sections (each can be left out with ``--skip``):

- ``matmul_peak`` (``--skip peak``; :mod:`benchmarks.flops`): the machine's ``torch.mm``
  GFLOP/s per precision (fp32; bf16 where the hardware has it), the denominator of every
  ``fraction_of_peak`` below; measured before the loops and again after them, the higher kept
  (a shared machine can be busy during one of them). When skipped, the peak already in
  ``DIR/bench.json`` is used if it was taken on the same CPU with the same thread count.

- ``negatives_bm25``, ``negatives_embedding`` (:mod:`benchmarks.retrieval`): the retrieval
  behind the negative samplers, on real chit-chat data; MiniLM encodings are cached as .npy, so
  reruns skip encoding.
- ``training_throughput`` (:mod:`benchmarks.training`): training pairs/s of our loop against
  sentence-transformers' ``CrossEncoder.fit`` on the same backbone weights, pairs and settings,
  at fp32 and bf16 side by side, with each loop's achieved GFLOP/s and fraction of the peak; and the
  profile's own model trained on pair rows against each side encoded once (``--train-variants``).
- ``inference_per_query`` (:mod:`benchmarks.inference`): ms per query of every ranker of the
  profile against ``bert`` on the same queries, round robin.
- ``inference_flops`` (:func:`benchmarks.inference.bench_inference_flops`): the scoring
  loop's GFLOP/s per precision on the same queries, and its fraction of the peak.
- ``scoring_paths`` (``--skip scoring``; :func:`benchmarks.inference.bench_scoring_paths`): with no joint
  layer, the pair path against encode-once for ``bert``, ``mc_dropout`` and ``ensemble`` on the tiny
  random BERT and MiniLM, side by side on the same in-domain test queries of every evaluation sampler.
- ``peak_memory`` (:mod:`benchmarks.memory`): peak resident memory of a training run and of
  PG-DRR's Gibbs sampler, each in a fresh subprocess beside its imports-only baseline.
- ``assess_engine`` (``--skip assess``; :mod:`benchmarks.assess_engine`): wall time, CPU time and
  peak memory of a full assessment of a synthetic run of ``--assess-queries`` x
  ``--assess-depth`` pairs with 1,000 bootstrap resamples, in a fresh subprocess.
- ``clock_under_load`` (``--skip clock``; :mod:`benchmarks.clock`): a 3:1 pair of workloads timed on
  process CPU time and on wall time, alone and with processes spinning beside them (the clock
  that decides notebook 07's cost claims, checked under load).
- ``core_install`` (``--skip core``; :mod:`benchmarks.core`): the core install in a fresh venv: its
  packages and size, no package of the study's stack, and ``import calibrank`` / ``import calibrank.cli`` time.
- ``assess_io`` (:mod:`benchmarks.assess_io`): reading a synthetic 7 M-line TREC run with
  qrels against ir_measures' reader (lines/s, peak memory), and ranx's R@1 / MRR / nDCG@10 on it.
- ``guarantee`` (:mod:`benchmarks.guarantee`): the certified cutoff on known-truth data, a grid of
  per-query score offsets, validation sizes, targets and confidences, ``--guarantee-draws`` validation
  sets each: per setting the violation rate with its Clopper-Pearson interval, the certified rate and
  the kept share, for calibrank's certification, the t-test procedure before it and MAPIE's
  ``BinaryClassificationController`` side by side (MAPIE: ``pip install mapie``, a dev dependency).

Not a section, run after a report: :mod:`benchmarks.fidelity` (``python -m benchmarks.fidelity laptop``), the gate
on training each context once, R10@1 of ``bert``, MC Dropout and the ensemble against the cells before.

Every ratio is written beside its target and whether it is met (``targets`` in each section).
Results are merged into ``DIR/bench.json`` (other top-level sections are kept; ``machine``, from
:func:`calibrank.study.analysis.efficiency.machine_info`, is the latest run's) and rendered in ``DIR/bench.md``
and ``DIR/bench.html`` (:mod:`benchmarks.render`), which list every ratio in one table under
the machine the run took place on; all files are written atomically.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calibrank import atomic
from calibrank.study import paths
from calibrank.study.analysis.efficiency import machine_info

from .common import log
from .render import write_results
from .retrieval import SECTION_BM25, SECTION_EMBEDDING, bench_bm25, bench_embedding, chitchat_workload

__all__ = ["SECTIONS", "main"]

SECTIONS = (
    "bm25",
    "embedding",
    "peak",
    "training",
    "inference",
    "inference_flops",
    "scoring",
    "memory",
    "clock",
    "assess_io",
    "assess",
    "core",
    "guarantee",
)

# --quick: the value of every option still at its default (sized for a few minutes on 2 cores)
QUICK = {
    "n_responses": 5_000,
    "n_queries": 20,
    "n_embed": 1_000,
    "train_steps": 6,
    "train_warmup": 2,
    "inference_queries": 8,
    "inference_repeats": 2,
    "short_train_queries": 8,
    "scoring_queries": 4,
    "memory_train_steps": 3,
    "gibbs_sizes": [256],
    "gibbs_steps": 5,
    "assess_queries": 700,
    "assess_depth": 100,
    "guarantee_draws": 40,
}


def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0].strip())
    parser.add_argument(
        "only",
        nargs="*",
        metavar="SECTION",
        help=f"run only these sections ({', '.join(SECTIONS)}; default: every one not skipped)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="output folder (default: reports/bench under the project root)"
    )
    parser.add_argument(
        "--skip", choices=SECTIONS, action="append", default=[], help="leave a section out (repeatable)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes and repeats for every option left at its default (a few minutes; noisier figures)",
    )
    g = parser.add_argument_group("matmul peak")
    g.add_argument("--peak-n", type=int, default=2048, help="side of the square matrices of the torch.mm peak")
    g.add_argument("--peak-repeats", type=int, default=10, help="timed torch.mm calls per precision (best of)")
    g.add_argument(
        "--precisions",
        type=lambda t: [x.strip() for x in t.split(",") if x.strip()],
        default=["fp32", "bf16"],
        help="precisions of the peak, training and inference_flops sections (bf16 only where supported)",
    )
    g = parser.add_argument_group("negatives (bm25, embedding)")
    g.add_argument("--n-responses", type=int, default=100_000, help="pool size: first N unique chitchat responses")
    g.add_argument("--n-queries", type=int, default=200, help="contexts of other examples used as queries")
    g.add_argument(
        "--n-embed", type=int, default=20_000, help="how many pool responses to encode for the embedding bench"
    )
    g.add_argument("--k", type=int, default=10, help="top-k retrieved per query")
    g.add_argument(
        "--query-utterances",
        type=int,
        default=3,
        help="most recent context utterances forming a query (0: whole context)",
    )
    g = parser.add_argument_group("rankers (training, inference, memory)")
    g.add_argument(
        "--profile", default="laptop", help="profile whose backbone, training settings, rankers and queries are used"
    )
    g.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    g.add_argument("--train-steps", type=int, default=60, help="timed training steps per variant")
    g.add_argument("--train-warmup", type=int, default=5, help="untimed warm-up steps before them")
    g.add_argument("--train-rounds", type=int, default=1, help="rounds over the variants (median pairs/s)")
    g.add_argument(
        "--train-variants",
        type=lambda t: [x.strip() for x in t.split(",") if x.strip()],
        default=["calibrank", "st", "pairs", "once"],
        help="comma-separated training variants: calibrank (the papers' cross-encoder), st (sentence-transformers), "
        "pairs and once (the profile's model on pair rows and with each side encoded once); calibrank is always run",
    )
    g.add_argument(
        "--rankers",
        type=lambda t: [x.strip() for x in t.split(",") if x.strip()],
        default=None,
        help="comma-separated rankers of the inference section (default: the profile's; bert is always added)",
    )
    g.add_argument("--inference-queries", type=int, default=50, help="test queries timed per ranker")
    g.add_argument("--inference-repeats", type=int, default=3, help="round-robin repeats (median)")
    g.add_argument(
        "--scoring-queries",
        type=int,
        default=40,
        help="test queries per evaluation sampler of the scoring_paths section (pair path against encode-once); "
        "0: all of them, the test sets the study scores",
    )
    g.add_argument(
        "--scoring-rankers",
        type=lambda t: [x.strip() for x in t.split(",") if x.strip()],
        default=["bert", "mc_dropout", "ensemble"],
        help="comma-separated rankers of the scoring_paths section",
    )
    g.add_argument(
        "--scoring-backbones",
        type=lambda t: [x.strip() for x in t.split(",") if x.strip()],
        default=["tiny-random", "all-MiniLM-L6-v2"],
        help="comma-separated backbones of the scoring_paths section",
    )
    g.add_argument(
        "--scoring-passes",
        type=int,
        default=None,
        help="MC Dropout passes of the scoring_paths section (default: the profile's T; the ratio is per pass)",
    )
    g.add_argument(
        "--scoring-members",
        type=int,
        default=None,
        help="ensemble members of the scoring_paths section (default: the profile's M; the ratio is per member)",
    )
    g.add_argument(
        "--short-train-queries",
        type=int,
        default=32,
        help="training queries of the short training of rankers not in the model cache",
    )
    g.add_argument("--no-model-cache", action="store_true", help="always build rankers by the short training")
    g.add_argument(
        "--memory-train-steps", type=int, default=10, help="steps of the training run whose peak memory is measured"
    )
    g.add_argument(
        "--gibbs-sizes",
        type=_int_list,
        default=[256, 1024, 2048],
        help="inducing-set sizes M of the Gibbs runs (4096 x 30 chains needs ~13 GB and ~50 min on 2 cores)",
    )
    g.add_argument(
        "--gibbs-chains", type=int, default=None, help="Gibbs chains (default: the profile's pg_drr.gibbs_chains)"
    )
    g.add_argument(
        "--gibbs-steps", type=int, default=None, help="Gibbs steps (default: the profile's pg_drr.gibbs_steps)"
    )
    g.add_argument("--memory-timeout", type=float, default=900.0, help="seconds allowed to each memory subprocess")
    g = parser.add_argument_group("a user's run: reading it (assess_io) and assessing it (assess)")
    g.add_argument("--assess-queries", type=int, default=7000, help="queries of the synthetic run")
    g.add_argument("--assess-depth", type=int, default=1000, help="candidates per query of the synthetic run")
    g.add_argument(
        "--assess-repeats", type=int, default=1, help="round-robin repeats of the three reading jobs (fastest kept)"
    )
    g = parser.add_argument_group("the certified cutoff's guarantee on known-truth data (guarantee)")
    g.add_argument("--guarantee-draws", type=int, default=1000, help="validation sets drawn per setting of the grid")
    g.add_argument("--guarantee-jobs", type=int, default=1, help="processes the settings are spread over")
    args = parser.parse_args(argv)
    unknown = [s for s in args.only if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section {unknown[0]!r}; expected some of {', '.join(SECTIONS)}")
    if args.only:
        args.skip = [s for s in SECTIONS if s not in args.only]
    if args.quick:
        for name, value in QUICK.items():
            if getattr(args, name) == parser.get_default(name):
                setattr(args, name, value)
    if args.scoring_queries < 0:
        parser.error(f"--scoring-queries must be 0 (all) or a positive integer, got {args.scoring_queries}")
    for name in ("scoring_passes", "scoring_members"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(args, name)}")
    bad = [p for p in args.precisions if p not in ("fp32", "bf16")]
    if bad or not args.precisions:
        parser.error(f"--precisions must be a comma-separated subset of fp32,bf16, got {args.precisions}")
    bad = [v for v in args.train_variants if v not in ("calibrank", "st", "pairs", "once")]
    if bad:
        parser.error(f"--train-variants must be a comma-separated subset of calibrank,st,pairs,once, got {bad[0]!r}")
    for name in (
        "n_responses",
        "n_queries",
        "n_embed",
        "k",
        "train_steps",
        "train_warmup",
        "train_rounds",
        "inference_queries",
        "inference_repeats",
        "short_train_queries",
        "memory_train_steps",
        "peak_n",
        "peak_repeats",
        "assess_queries",
        "assess_depth",
        "assess_repeats",
        "guarantee_draws",
        "guarantee_jobs",
    ):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(args, name)}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    out = args.out if args.out is not None else paths.project_root() / "reports" / "bench"
    machine = machine_info()
    if args.quick:
        machine["quick"] = True
    log(
        f"machine: {machine['cpu']}, {machine['cpu_count']} cores, torch {machine.get('torch')} "
        f"with {machine.get('torch_threads')} threads"
    )
    write_results(out, {"machine": machine})

    peak = _peak(args, out, machine)
    if "bm25" not in args.skip or "embedding" not in args.skip:
        _negatives(args, out, machine)
    if not {"training", "inference", "inference_flops", "memory"} <= set(args.skip):
        _rankers(args, out, machine, peak)
        if "peak" not in args.skip and not {"training", "inference_flops"} <= set(args.skip):
            _peak_again(args, out)
    if "scoring" not in args.skip:
        _scoring(args, out, machine)
    if "clock" not in args.skip:
        _clock(args, out, machine)
    if "assess_io" not in args.skip:
        _assess_io(args, out, machine)
    if "assess" not in args.skip:
        _assess(args, out, machine)
    if "core" not in args.skip:
        _core(out, machine)
    if "guarantee" not in args.skip:
        _guarantee(args, out, machine)
    log(f"wrote {Path(out) / 'bench.json'}, bench.md and bench.html")
    return 0


def _scoring(args: argparse.Namespace, out: Path, machine: dict[str, Any]) -> None:
    """Pair path against encode-once (no joint layer) for bert, MC Dropout and the ensemble, at each of ``--precisions``."""
    from calibrank.hardware import use_bf16
    from calibrank.study.settings.config import load_config

    from .inference import SECTION_PATHS, bench_scoring_paths

    device = _device(args)
    for i, precision in enumerate(args.precisions):  # the first precision's section keeps the plain name
        if precision == "bf16" and not use_bf16("auto", device):
            log(f"scoring_paths: no bf16 on {device}, skipped")
            continue
        res = bench_scoring_paths(
            load_config(args.profile),
            n_queries=args.scoring_queries or None,
            repeats=args.inference_repeats,
            precision=precision,
            device=device,
            seed=args.seed,
            rankers=args.scoring_rankers,
            backbones=args.scoring_backbones,
            passes=args.scoring_passes,
            members=args.scoring_members,
        )
        write_results(out, {SECTION_PATHS + ("" if i == 0 else f"_{precision}"): {**res, "machine": machine}})


def _clock(args: argparse.Namespace, out: Path, machine: dict[str, Any]) -> None:
    from .clock import SECTION, bench_clock

    log("clock under load: a 3:1 workload pair on CPU and wall time, alone and beside spinning processes")
    res = bench_clock(repeats=3 if args.quick else 9, seed=args.seed)
    write_results(out, {SECTION: {**res, "machine": machine}})
    log(
        "clock: "
        + ", ".join(
            f"{r['spinners']} spinning: CPU x{r['cpu_ratio']:.2f}, wall x{r['wall_ratio']:.2f}" for r in res["loads"]
        )
    )


def _assess(args: argparse.Namespace, out: Path, machine: dict[str, Any]) -> None:
    from .assess_engine import SECTION, bench_assess

    log(f"assess engine: {args.assess_queries} x {args.assess_depth} pairs, 1000 resamples, in a subprocess")
    res = bench_assess(args.assess_queries, args.assess_depth, seed=args.seed)
    write_results(out, {SECTION: {**res, "machine": machine}})
    log(
        f"assessed {res['pairs']} pairs in {res['seconds']:.1f} s ({res['cpu_seconds']:.1f} s CPU), "
        f"peak {res['peak_gb']:.2f} GB"
    )


def _core(out: Path, machine: dict[str, Any]) -> None:
    from .core import SECTION, bench_core

    log("core install: pip install of the checkout alone into a fresh venv")
    res = bench_core(paths.project_root())
    write_results(out, {SECTION: {**res, "machine": machine}})
    log(
        f"core: {res['packages']} packages, {res['site_packages_mb']:.0f} MB; process CPU: empty interpreter "
        f"{res['empty_interpreter_cpu_s']:.3f} s, import calibrank {res['import_calibrank_cpu_s']:.3f} s, "
        f"calibrank --help {res['help_cpu_s']:.3f} s, calibrank assess --help {res['assess_help_cpu_s']:.3f} s"
    )


def _guarantee(args: argparse.Namespace, out: Path, machine: dict[str, Any]) -> None:
    from .guarantee import SECTION, bench_guarantee

    log(f"guarantee: {args.guarantee_draws} validation sets per setting, calibrank, the t-test before it and MAPIE")
    res = bench_guarantee(args.guarantee_draws, seed=args.seed, jobs=args.guarantee_jobs)
    write_results(out, {SECTION: {**res, "machine": machine}})
    met = [t["met"] for t in res["targets"]]
    log(
        f"guarantee: calibrank's violations under the promise in {sum(bool(m) for m in met)} of {len(met)} settings "
        f"(upper end of the 95% interval); CPU s " + ", ".join(f"{p} {s:.0f}" for p, s in res["cpu_seconds"].items())
    )


def _device(args: argparse.Namespace):
    import torch

    return torch.device(args.device) if args.device else torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _peak(args: argparse.Namespace, out: Path, machine: dict[str, Any]) -> dict[str, float] | None:
    """The matmul peak per precision: measured now, or (``--skip peak``) the one in bench.json from the same CPU and threads."""
    from .flops import SECTION, measure_peak

    if "peak" in args.skip:
        try:
            old = atomic.read_json(Path(out) / "bench.json").get(SECTION) or {}
        except (OSError, ValueError, AttributeError):
            old = {}
        same = old.get("machine", {}) if isinstance(old, dict) else {}
        if same.get("cpu") == machine.get("cpu") and old.get("torch_threads") == machine.get("torch_threads"):
            log(f"matmul peak: reusing the one in bench.json ({old.get('peak_gflop_per_s')})")
            return old.get("peak_gflop_per_s")
        return None
    log(f"matmul peak: torch.mm {args.peak_n}x{args.peak_n}, best of {args.peak_repeats}, {', '.join(args.precisions)}")
    res = measure_peak(args.peak_n, args.peak_repeats, device=_device(args), precisions=tuple(args.precisions))
    write_results(out, {SECTION: {**res, "machine": machine}})
    log(
        "matmul peak: "
        + ", ".join(f"{p} {v:.1f} GFLOP/s" for p, v in res["peak_gflop_per_s"].items())
        + f" with {res['torch_threads']} threads"
        + (f"; {res['skipped']}" if res.get("skipped") else "")
    )
    return res["peak_gflop_per_s"]


def _peak_again(args: argparse.Namespace, out: Path) -> None:
    """Measure the peak once more after the loops, keep the higher figure, and reset the fractions written in this run."""
    from .flops import SECTION, attach_peak, measure_peak, merge_peaks
    from .inference import SECTION_FLOPS
    from .training import SECTION as TRAINING

    results = atomic.read_json(Path(out) / "bench.json")
    again = measure_peak(args.peak_n, args.peak_repeats, device=_device(args), precisions=tuple(args.precisions))
    merged = merge_peaks(results[SECTION], again)
    peak = merged["peak_gflop_per_s"]
    log(
        "matmul peak again: "
        + ", ".join(f"{p} {v:.1f}" for p, v in again["peak_gflop_per_s"].items())
        + " GFLOP/s; kept "
        + ", ".join(f"{p} {v:.1f}" for p, v in peak.items())
    )
    update = {SECTION: merged}
    for name, flag in ((TRAINING, "training"), (SECTION_FLOPS, "inference_flops")):
        if flag not in args.skip and isinstance(results.get(name), dict):
            update[name] = attach_peak(results[name], peak)
    write_results(out, update)


def _negatives(args: argparse.Namespace, out: Path, machine: dict[str, Any]) -> None:
    from calibrank.study.data.negatives import (
        DEFAULT_EMBEDDING_MODEL,
        cached_embeddings,
        embeddings_cache_path,
        query_text,
    )

    qu = args.query_utterances or None
    log(f"loading chitchat: {args.n_responses} responses, {args.n_queries} queries")
    responses, contexts, workload = chitchat_workload(args.n_responses, args.n_queries, args.seed)
    workload["query_utterances"] = qu
    log(f"pool {len(responses)} unique responses, {len(contexts)} query contexts")

    if "bm25" not in args.skip:
        log("BM25: bm25s vs rank_bm25 (rank_bm25 scores every document in Python; this is the slow part)")
        res = bench_bm25(responses, [query_text(c, qu) for c in contexts], args.k)
        write_results(out, {SECTION_BM25: {**res, "workload": workload, "machine": machine}})
        log(
            f"bm25s {res['bm25s']['total_s']:.2f}s vs rank_bm25 {res['rank_bm25']['total_s']:.2f}s "
            f"(x{res['speedup_total']:.1f}); top-1 agree {res['parity']['top1_agree']:.3f}"
        )

    if "embedding" not in args.skip:
        pool = responses[: args.n_embed]
        qtexts = [query_text(c, qu, newest_first=True) for c in contexts]
        cached = embeddings_cache_path(pool).exists() and embeddings_cache_path(qtexts).exists()
        log(
            f"embedding {len(pool)} responses + {len(qtexts)} queries with MiniLM ({'cached' if cached else 'encoding'})"
        )
        t0 = time.perf_counter()
        pool_emb = cached_embeddings(pool)
        query_emb = cached_embeddings(qtexts)
        encode_s = time.perf_counter() - t0
        res = bench_embedding(pool_emb, query_emb, args.k)
        write_results(
            out,
            {
                SECTION_EMBEDDING: {
                    **res,
                    "model": DEFAULT_EMBEDDING_MODEL,
                    "n_embed": len(pool),
                    "encode_s": encode_s,
                    "encode_from_cache": cached,
                    "workload": workload,
                    "machine": machine,
                }
            },
        )
        log(
            f"faiss {res['faiss']['search_s']:.3f}s vs numpy {res['numpy']['search_s']:.3f}s "
            f"(x{res['speedup_search']:.1f}) on {len(pool)} embeddings; identical top-k {res['parity']['topk_ids_identical']:.3f}"
        )


def _rankers(
    args: argparse.Namespace, out: Path, machine: dict[str, Any], peak: dict[str, float] | None = None
) -> None:
    """The sections on the profile's rankers: training throughput, inference per query and its FLOP/s, peak memory."""
    from calibrank.study.data.querysets import load_query_set
    from calibrank.study.settings.config import load_config

    cfg = load_config(args.profile)
    device = _device(args)
    corpus = cfg.rankers.train_corpora[0].value
    train = load_query_set(cfg, corpus, "train", cfg.negatives.train)
    common = {"profile": cfg.profile, "corpus": corpus, "machine": machine}

    if "training" not in args.skip:
        from .training import SECTION, bench_training

        res = bench_training(
            train,
            cfg.training,
            warmup=args.train_warmup,
            steps=args.train_steps,
            rounds=args.train_rounds,
            seed=args.seed,
            context_style=cfg.data.context_style,
            variants=list(dict.fromkeys(["calibrank", *args.train_variants])),
            device=device,
            precisions=args.precisions,
            peak_gflop_per_s=peak,
        )
        write_results(out, {SECTION: {**res, **common}})
        log(
            "training: "
            + ", ".join(f"calibrank_{p} {res[f'calibrank_{p}']['pairs_per_s']:.2f} pairs/s" for p in res["precisions"])
            + f"; ratios {res['ratio_ours_over']}"
            + (f"; once / pairs {res['ratio_once_over_pairs']}" if "ratio_once_over_pairs" in res else "")
        )

    if "inference" not in args.skip:
        from .inference import SECTION, bench_inference

        res = bench_inference(
            cfg,
            n_queries=args.inference_queries,
            repeats=args.inference_repeats,
            rankers=args.rankers,
            short_train_queries=args.short_train_queries,
            use_cache=not args.no_model_cache,
        )
        write_results(out, {SECTION: {**res, "machine": machine}})
        log("inference: " + ", ".join(f"{n} x{v['ratio_to_bert']:.2f}" for n, v in res["rankers"].items()))

    if "inference_flops" not in args.skip:
        from .inference import SECTION_FLOPS, bench_inference_flops

        res = bench_inference_flops(
            cfg,
            n_queries=args.inference_queries,
            repeats=args.inference_repeats,
            precisions=args.precisions,
            device=device,
            peak_gflop_per_s=peak,
            seed=args.seed,
        )
        write_results(out, {SECTION_FLOPS: {**res, "machine": machine}})
        log("inference_flops: " + ", ".join(f"{p} {res[p]['gflop_per_s']:.1f} GFLOP/s" for p in res["precisions"]))

    if "memory" not in args.skip:
        from .memory import SECTION, bench_memory

        pg = cfg.rankers.pg_drr
        res = bench_memory(
            train,
            cfg.training,
            train_steps=args.memory_train_steps,
            gibbs_sizes=args.gibbs_sizes,
            gibbs_chains=args.gibbs_chains or pg.gibbs_chains,
            gibbs_steps=args.gibbs_steps or pg.gibbs_steps,
            laptop_inducing=pg.inducing,
            seed=args.seed,
            context_style=cfg.data.context_style.value,
            device=device.type,
            timeout_s=args.memory_timeout,
        )
        write_results(out, {SECTION: {**res, **common}})
        log(f"memory: training +{res['training'].get('increment_mb', float('nan')):.0f} MB")


def _assess_io(args: argparse.Namespace, out: Path, machine: dict[str, Any]) -> None:
    from .assess_io import SECTION, bench_assess_io

    res = bench_assess_io(args.assess_queries, args.assess_depth, seed=args.seed, repeats=args.assess_repeats)
    write_results(out, {SECTION: {**res, "machine": machine}})
    ours, ref = res["calibrank"], res["ir_measures"]
    log(
        f"assess_io: read_runs {ours.get('lines_per_s', float('nan')) / 1e6:.2f} M lines/s, peak {ours.get('peak_mb', float('nan')):.0f} MB; "
        f"ir_measures {ref.get('lines_per_s', float('nan')) / 1e6:.2f} M lines/s (x{res['speedup_over_ir_measures']:.1f})"
    )


if __name__ == "__main__":
    raise SystemExit(main())
