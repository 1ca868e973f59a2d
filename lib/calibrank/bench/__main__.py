"""Speed and memory benchmarks, each figure measured side by side in one run.

``python -m calibrank.bench [--out DIR] [--profile laptop] [--skip SECTION] ...``

Sections (each can be left out with ``--skip``):

- ``negatives_bm25``, ``negatives_embedding`` (:mod:`calibrank.bench.retrieval`): the retrieval
  behind the negative samplers, on real chit-chat data; MiniLM encodings are cached as .npy, so
  reruns skip encoding.
- ``training_throughput`` (:mod:`calibrank.bench.training`): training pairs/s of our loop against
  sentence-transformers' ``CrossEncoder.fit`` on the same backbone weights, pairs and settings.
- ``inference_per_query`` (:mod:`calibrank.bench.inference`): ms per query of every ranker of the
  profile against ``bert`` on the same queries, round robin.
- ``peak_memory`` (:mod:`calibrank.bench.memory`): peak resident memory of a training run and of
  PG-DRR's Gibbs sampler, each in a fresh subprocess beside its imports-only baseline.

Every ratio is written beside its target and whether it is met (``targets`` in each section).
Results are merged into ``DIR/bench.json`` (other top-level sections are kept; ``machine``, from
:func:`calibrank.efficiency.machine_info`, is the latest run's) and rendered in ``DIR/bench.md``
and ``DIR/bench.html`` (:mod:`calibrank.bench.render`), which list every ratio in one table under
the machine the run took place on; all files are written atomically.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import runs
from ..efficiency import machine_info
from .common import log
from .retrieval import SECTION_BM25, SECTION_EMBEDDING, bench_bm25, bench_embedding, chitchat_workload
from .render import write_results

__all__ = ["SECTIONS", "main"]

SECTIONS = ("bm25", "embedding", "training", "inference", "memory")


def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calibrank.bench", description=__doc__.split("\n\n")[0].strip())
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: reports/bench under the project root)")
    parser.add_argument("--skip", choices=SECTIONS, action="append", default=[], help="leave a section out (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    g = parser.add_argument_group("negatives (bm25, embedding)")
    g.add_argument("--n-responses", type=int, default=100_000, help="pool size: first N unique chitchat responses")
    g.add_argument("--n-queries", type=int, default=200, help="contexts of other examples used as queries")
    g.add_argument("--n-embed", type=int, default=20_000, help="how many pool responses to encode for the embedding bench")
    g.add_argument("--k", type=int, default=10, help="top-k retrieved per query")
    g.add_argument("--query-utterances", type=int, default=3, help="most recent context utterances forming a query (0: whole context)")
    g = parser.add_argument_group("rankers (training, inference, memory)")
    g.add_argument("--profile", default="laptop", help="profile whose backbone, training settings, rankers and queries are used")
    g.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    g.add_argument("--train-steps", type=int, default=60, help="timed training steps per variant")
    g.add_argument("--train-warmup", type=int, default=5, help="untimed warm-up steps before them")
    g.add_argument("--train-rounds", type=int, default=1, help="rounds over the variants (median pairs/s)")
    g.add_argument("--rankers", type=lambda t: [x.strip() for x in t.split(",") if x.strip()], default=None,
                   help="comma-separated rankers of the inference section (default: the profile's; bert is always added)")
    g.add_argument("--inference-queries", type=int, default=50, help="test queries timed per ranker")
    g.add_argument("--inference-repeats", type=int, default=3, help="round-robin repeats (median)")
    g.add_argument("--short-train-queries", type=int, default=32,
                   help="training queries of the short training of rankers not in the model cache")
    g.add_argument("--no-model-cache", action="store_true", help="always build rankers by the short training")
    g.add_argument("--memory-train-steps", type=int, default=10, help="steps of the training run whose peak memory is measured")
    g.add_argument("--gibbs-sizes", type=_int_list, default=[256, 1024, 2048],
                   help="inducing-set sizes M of the Gibbs runs (4096 x 30 chains needs ~13 GB and ~50 min on 2 cores)")
    g.add_argument("--gibbs-chains", type=int, default=None, help="Gibbs chains (default: the profile's pg_drr.gibbs_chains)")
    g.add_argument("--gibbs-steps", type=int, default=None, help="Gibbs steps (default: the profile's pg_drr.gibbs_steps)")
    g.add_argument("--memory-timeout", type=float, default=900.0, help="seconds allowed to each memory subprocess")
    args = parser.parse_args(argv)
    for name in ("n_responses", "n_queries", "n_embed", "k", "train_steps", "train_warmup", "train_rounds", "inference_queries",
                 "inference_repeats", "short_train_queries", "memory_train_steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be a positive integer, got {getattr(args, name)}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    out = args.out if args.out is not None else runs.project_root() / "reports" / "bench"
    machine = machine_info()
    log(f"machine: {machine['cpu']}, {machine['cpu_count']} cores, torch {machine.get('torch')} "
         f"with {machine.get('torch_threads')} threads")
    write_results(out, {"machine": machine})

    if "bm25" not in args.skip or "embedding" not in args.skip:
        _negatives(args, out, machine)
    if not {"training", "inference", "memory"} <= set(args.skip):
        _rankers(args, out, machine)
    log(f"wrote {Path(out) / 'bench.json'}, bench.md and bench.html")
    return 0


def _negatives(args: argparse.Namespace, out: Path, machine: dict[str, Any]) -> None:
    from ..negatives import DEFAULT_EMBEDDING_MODEL, cached_embeddings, embeddings_cache_path, query_text

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
        log(f"embedding {len(pool)} responses + {len(qtexts)} queries with MiniLM ({'cached' if cached else 'encoding'})")
        t0 = time.perf_counter()
        pool_emb = cached_embeddings(pool)
        query_emb = cached_embeddings(qtexts)
        encode_s = time.perf_counter() - t0
        res = bench_embedding(pool_emb, query_emb, args.k)
        write_results(out, {SECTION_EMBEDDING: {
            **res,
            "model": DEFAULT_EMBEDDING_MODEL,
            "n_embed": len(pool),
            "encode_s": encode_s,
            "encode_from_cache": cached,
            "workload": workload,
            "machine": machine,
        }})
        log(
            f"faiss {res['faiss']['search_s']:.3f}s vs numpy {res['numpy']['search_s']:.3f}s "
            f"(x{res['speedup_search']:.1f}) on {len(pool)} embeddings; identical top-k {res['parity']['topk_ids_identical']:.3f}"
        )


def _rankers(args: argparse.Namespace, out: Path, machine: dict[str, Any]) -> None:
    """The sections on the profile's rankers: training throughput, inference per query, peak memory."""
    import torch

    from ..config import load_config
    from ..querysets import load_query_set

    cfg = load_config(args.profile)
    device = torch.device(args.device) if args.device else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    corpus = cfg.rankers.train_corpora[0].value
    train = load_query_set(cfg, corpus, "train", cfg.negatives.train)
    common = {"profile": cfg.profile, "corpus": corpus, "machine": machine}

    if "training" not in args.skip:
        from .training import SECTION, bench_training

        res = bench_training(train, cfg.training, warmup=args.train_warmup, steps=args.train_steps, rounds=args.train_rounds,
                             seed=args.seed, context_style=cfg.data.context_style, device=device)
        write_results(out, {SECTION: {**res, **common}})
        log(f"training: calibrank {res['calibrank']['pairs_per_s']:.2f} pairs/s; ratios {res['ratio_ours_over']}")

    if "inference" not in args.skip:
        from .inference import SECTION, bench_inference

        res = bench_inference(cfg, n_queries=args.inference_queries, repeats=args.inference_repeats, rankers=args.rankers,
                              short_train_queries=args.short_train_queries, use_cache=not args.no_model_cache)
        write_results(out, {SECTION: {**res, "machine": machine}})
        log("inference: " + ", ".join(f"{n} x{v['ratio_to_bert']:.2f}" for n, v in res["rankers"].items()))

    if "memory" not in args.skip:
        from .memory import SECTION, bench_memory

        pg = cfg.rankers.pg_drr
        res = bench_memory(train, cfg.training, train_steps=args.memory_train_steps, gibbs_sizes=args.gibbs_sizes,
                           gibbs_chains=args.gibbs_chains or pg.gibbs_chains, gibbs_steps=args.gibbs_steps or pg.gibbs_steps,
                           laptop_inducing=pg.inducing, seed=args.seed, context_style=cfg.data.context_style.value,
                           device=device.type, timeout_s=args.memory_timeout)
        write_results(out, {SECTION: {**res, **common}})
        log(f"memory: training +{res['training'].get('increment_mb', float('nan')):.0f} MB")


if __name__ == "__main__":
    raise SystemExit(main())
