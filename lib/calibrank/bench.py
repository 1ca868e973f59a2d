"""Speed and memory benchmarks, each figure measured side by side in one run.

``python -m calibrank.bench [--out DIR] [--profile laptop] [--skip SECTION] ...``

Sections (each can be left out with ``--skip``):

- ``negatives_bm25``, ``negatives_embedding``: the retrieval behind the negative samplers (below).
- ``training_throughput`` (:mod:`calibrank.bench_training`): training pairs/s of our loop against
  sentence-transformers' ``CrossEncoder.fit`` on the same backbone weights, pairs and settings.
- ``inference_per_query`` (:mod:`calibrank.bench_inference`): ms per query of every ranker of the
  profile against ``bert`` on the same queries, round robin.
- ``peak_memory`` (:mod:`calibrank.bench_memory`): peak resident memory of a training run and of
  PG-DRR's Gibbs sampler, each in a fresh subprocess beside its imports-only baseline.

Every ratio is written beside its target and whether it is met (``targets`` in each section);
bench.md and bench.html list them in one table under the machine the run took place on.

On real chit-chat data (the first N unique responses of the corpus as the pool, the contexts of
*other* examples as queries) it measures:

- ``negatives_bm25``: top-k BM25 with ``bm25s`` (index + batch retrieve) against ``rank_bm25``'s
  ``BM25Okapi`` (index + ``get_scores`` + top-k), same tokens for both; times, per-query times,
  the speed-up and a parity check. bm25s runs with ``method="robertson"``, the formula of
  BM25Okapi: both use idf = log((N - df + .5) / (df + .5)); they differ only for terms in more than
  half of the documents (negative idf: bm25s clips it to 0, BM25Okapi floors it to
  ``0.25 * mean idf``) and by the constant factor (k1 + 1) that BM25Okapi puts on every term
  (no effect on rankings).
- ``negatives_embedding``: exact inner-product top-k with ``faiss.IndexFlatIP`` against numpy
  (matrix product + argpartition + sort of the top k), on the same MiniLM embeddings (the first
  ``--n-embed`` responses; encodings are cached as .npy, so reruns skip encoding).

Results are merged into ``DIR/bench.json`` (other top-level sections are kept; ``machine`` is
the latest run's) and rendered in ``DIR/bench.md`` and ``DIR/bench.html``
(:mod:`calibrank.bench_render`); all files are written atomically.
:func:`bench_bm25` and :func:`bench_embedding` work on any small input, for tests.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from . import runs
from .bench_render import layout, to_html, to_markdown

__all__ = [
    "bench_bm25",
    "bench_embedding",
    "bm25s_topk",
    "rank_bm25_topk",
    "faiss_topk",
    "numpy_topk",
    "chitchat_workload",
    "machine_info",
    "write_results",
    "render_markdown",
    "render_html",
    "main",
]

SECTION_BM25 = "negatives_bm25"
SECTION_EMBEDDING = "negatives_embedding"
_TOKEN_PATTERN = r"(?u)\b\w\w+\b"


def _log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _ms(seconds: float, n: int) -> float:
    return 1000.0 * seconds / max(n, 1)


# --------------------------------------------------------------------------- BM25


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """The tokens both BM25 implementations get: bm25s' tokeniser, lower-cased ``\\w\\w+``, no stopword removal."""
    import bm25s

    return bm25s.tokenize(list(texts), lower=True, token_pattern=_TOKEN_PATTERN, stopwords=None, return_ids=False, show_progress=False)


def bm25s_topk(corpus_tokens, query_tokens, k: int, *, k1: float = 1.5, b: float = 0.75, method: str = "robertson"):
    """(ids, scores, index_s, retrieve_s): bm25s top-k, rows sorted by decreasing score."""
    import bm25s

    k = min(k, len(corpus_tokens))
    t0 = time.perf_counter()
    retriever = bm25s.BM25(k1=k1, b=b, method=method)
    retriever.index(corpus_tokens, show_progress=False)
    t1 = time.perf_counter()
    ids, scores = retriever.retrieve(list(query_tokens), k=k, show_progress=False, n_threads=0)
    t2 = time.perf_counter()
    return np.asarray(ids), np.asarray(scores), t1 - t0, t2 - t1


def rank_bm25_topk(corpus_tokens, query_tokens, k: int, *, k1: float = 1.5, b: float = 0.75):
    """(ids, scores, index_s, search_s, bm25): rank_bm25 BM25Okapi top-k via get_scores + argpartition."""
    from rank_bm25 import BM25Okapi

    k = min(k, len(corpus_tokens))
    t0 = time.perf_counter()
    bm25 = BM25Okapi(corpus_tokens, k1=k1, b=b)
    t1 = time.perf_counter()
    ids = np.empty((len(query_tokens), k), dtype=np.int64)
    scores = np.empty((len(query_tokens), k), dtype=np.float64)
    for i, q in enumerate(query_tokens):
        s = bm25.get_scores(q)
        top = np.argpartition(-s, k - 1)[:k]
        top = top[np.argsort(-s[top], kind="stable")]
        ids[i], scores[i] = top, s[top]
    t2 = time.perf_counter()
    return ids, scores, t1 - t0, t2 - t1, bm25


def bench_bm25(responses: Sequence[str], queries: Sequence[str], k: int = 10, *, k1: float = 1.5, b: float = 0.75) -> dict[str, Any]:
    """Time top-k BM25 retrieval of ``queries`` (texts) over ``responses`` with bm25s and rank_bm25."""
    t0 = time.perf_counter()
    corpus_tokens = tokenize(responses)
    query_tokens = tokenize(queries)
    tokenise_s = time.perf_counter() - t0
    nq = len(query_tokens)

    b_ids, b_scores, b_index, b_search = bm25s_topk(corpus_tokens, query_tokens, k, k1=k1, b=b)
    r_ids, r_scores, r_index, r_search, okapi = rank_bm25_topk(corpus_tokens, query_tokens, k, k1=k1, b=b)

    # Parity. A query can have several documents tied at the top score; "up to ties" counts
    # bm25s' top-1 as agreeing when rank_bm25 gives it the same (maximal) score.
    strict = ties = 0
    overlap, rel_diff = [], []
    for i, q in enumerate(query_tokens):
        strict += int(b_ids[i, 0] == r_ids[i, 0])
        r_at_b = float(okapi.get_batch_scores(q, [int(b_ids[i, 0])])[0]) if q else 0.0
        ties += int(abs(r_at_b - r_scores[i, 0]) <= 1e-5 * max(1.0, abs(r_scores[i, 0])))
        overlap.append(len(set(b_ids[i].tolist()) & set(r_ids[i].tolist())) / b_ids.shape[1])
        if r_at_b > 0:
            rel_diff.append(abs(float(b_scores[i, 0]) * (k1 + 1) - r_at_b) / r_at_b)
    eps = okapi.epsilon * okapi.average_idf  # BM25Okapi sets every negative idf to exactly this
    n_neg_idf = sum(1 for v in okapi.idf.values() if v == eps)
    return {
        "n_responses": len(responses),
        "n_queries": nq,
        "k": int(b_ids.shape[1]) if nq else k,
        "mean_query_tokens": float(np.mean([len(q) for q in query_tokens])) if nq else 0.0,
        "mean_response_tokens": float(np.mean([len(d) for d in corpus_tokens])) if corpus_tokens else 0.0,
        "tokenise_s": tokenise_s,
        "bm25s": {
            "version": _version("bm25s"),
            "method": "robertson",
            "backend": "numpy, n_threads=0",
            "index_s": b_index,
            "retrieve_s": b_search,
            "total_s": b_index + b_search,
            "per_query_ms": _ms(b_search, nq),
        },
        "rank_bm25": {
            "version": _version("rank-bm25"),
            "class": "BM25Okapi",
            "index_s": r_index,
            "search_s": r_search,
            "total_s": r_index + r_search,
            "per_query_ms": _ms(r_search, nq),
        },
        "speedup_total": (r_index + r_search) / max(b_index + b_search, 1e-12),
        "speedup_per_query": r_search / max(b_search, 1e-12),
        "parity": {
            "top1_agree": strict / max(nq, 1),
            "top1_agree_up_to_ties": ties / max(nq, 1),
            "topk_overlap": float(np.mean(overlap)) if overlap else 1.0,
            "top1_max_rel_score_diff": float(max(rel_diff)) if rel_diff else 0.0,
            "n_terms_floored_by_rank_bm25": int(n_neg_idf),
        },
        "note": "same tokens; bm25s method=robertson = BM25Okapi's idf log((N-df+.5)/(df+.5)); they differ only for "
        "terms in >50% of documents (bm25s: idf 0, BM25Okapi: 0.25*mean idf) and by BM25Okapi's constant factor k1+1",
    }


# --------------------------------------------------------------------------- embeddings


def faiss_topk(responses_emb: np.ndarray, queries_emb: np.ndarray, k: int):
    """(ids, scores, index_s, search_s): exact inner-product top-k with faiss.IndexFlatIP."""
    import faiss

    k = min(k, len(responses_emb))
    t0 = time.perf_counter()
    index = faiss.IndexFlatIP(responses_emb.shape[1])
    index.add(np.ascontiguousarray(responses_emb, dtype=np.float32))
    t1 = time.perf_counter()
    scores, ids = index.search(np.ascontiguousarray(queries_emb, dtype=np.float32), k)
    t2 = time.perf_counter()
    return ids.astype(np.int64), scores, t1 - t0, t2 - t1


def numpy_topk(responses_emb: np.ndarray, queries_emb: np.ndarray, k: int, chunk: int = 1024):
    """(ids, scores, search_s): the same search in numpy (matrix product, argpartition, sort of the top k)."""
    k = min(k, len(responses_emb))
    r = np.ascontiguousarray(responses_emb, dtype=np.float32)
    q = np.ascontiguousarray(queries_emb, dtype=np.float32)
    ids = np.empty((len(q), k), dtype=np.int64)
    scores = np.empty((len(q), k), dtype=np.float32)
    t0 = time.perf_counter()
    for start in range(0, len(q), chunk):
        sims = q[start : start + chunk] @ r.T
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        top_s = np.take_along_axis(sims, top, axis=1)
        order = np.argsort(-top_s, axis=1, kind="stable")
        ids[start : start + chunk] = np.take_along_axis(top, order, axis=1)
        scores[start : start + chunk] = np.take_along_axis(top_s, order, axis=1)
    return ids, scores, time.perf_counter() - t0


def bench_embedding(responses_emb: np.ndarray, queries_emb: np.ndarray, k: int = 10, repeats: int = 3) -> dict[str, Any]:
    """Time exact top-k inner-product search with faiss IndexFlatIP and with numpy on the same embeddings.

    Each search runs ``repeats`` times after an untimed warm-up (thread pools, caches); the best time counts.
    """
    import faiss

    faiss_topk(responses_emb, queries_emb[:1], k)
    numpy_topk(responses_emb, queries_emb[:1], k)
    f_runs = [faiss_topk(responses_emb, queries_emb, k) for _ in range(max(repeats, 1))]
    n_runs = [numpy_topk(responses_emb, queries_emb, k) for _ in range(max(repeats, 1))]
    f_ids, f_scores = f_runs[0][:2]
    n_ids, n_scores = n_runs[0][:2]
    f_index, f_search = min(r[2] for r in f_runs), min(r[3] for r in f_runs)
    n_search = min(r[2] for r in n_runs)
    nq = len(queries_emb)
    identical = [bool(np.array_equal(a, b)) for a, b in zip(f_ids, n_ids)]
    # up to ties: the same scores in the same order (equal-scored documents may swap)
    same_scores = [bool(np.allclose(a, b, rtol=0, atol=1e-5)) for a, b in zip(f_scores, n_scores)]
    return {
        "n_responses": int(len(responses_emb)),
        "n_queries": int(nq),
        "dim": int(responses_emb.shape[1]),
        "k": int(f_ids.shape[1]) if nq else k,
        "repeats": max(repeats, 1),
        "faiss": {
            "version": _version("faiss-cpu"),
            "index": "IndexFlatIP",
            "omp_threads": int(faiss.omp_get_max_threads()),
            "index_s": f_index,
            "search_s": f_search,
            "total_s": f_index + f_search,
            "per_query_ms": _ms(f_search, nq),
        },
        "numpy": {
            "version": np.__version__,
            "method": "matmul + argpartition + sort top-k",
            "search_s": n_search,
            "per_query_ms": _ms(n_search, nq),
        },
        "speedup_search": n_search / max(f_search, 1e-12),
        "speedup_total": n_search / max(f_index + f_search, 1e-12),
        "parity": {
            "topk_ids_identical": float(np.mean(identical)) if nq else 1.0,
            "topk_identical_up_to_ties": float(np.mean([i or s for i, s in zip(identical, same_scores)])) if nq else 1.0,
            "max_abs_score_diff": float(np.max(np.abs(f_scores - n_scores))) if nq else 0.0,
        },
    }


# --------------------------------------------------------------------------- workload and output


def chitchat_workload(n_responses: int, n_queries: int, seed: int = 0) -> tuple[list[str], list[tuple[str, ...]], dict[str, Any]]:
    """The first ``n_responses`` unique responses of the chitchat corpus and ``n_queries`` contexts of other examples."""
    from .data.chitchat import read_chitchat
    from .data.schema import normalise_text

    pairs = [(d.utterances[:i], d.utterances[i]) for d in read_chitchat() for i in range(1, len(d.utterances))]
    seen: set[str] = set()
    responses: list[str] = []
    for _, resp in pairs:
        norm = normalise_text(resp)
        if norm not in seen and len(responses) < n_responses:
            seen.add(norm)
            responses.append(resp)
    others = [ctx for ctx, resp in pairs if normalise_text(resp) not in seen]
    overlap = len(others) < n_queries
    source = [ctx for ctx, _ in pairs] if overlap else others
    rng = np.random.default_rng(seed)
    picked = rng.choice(len(source), size=min(n_queries, len(source)), replace=False)
    contexts = [source[int(i)] for i in sorted(picked)]
    info = {"corpus": "chitchat", "n_pairs": len(pairs), "queries_from_pool_examples": overlap, "query_seed": seed}
    return responses, contexts, info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    """Where the figures were taken: CPU, cores, torch threads and version, bf16 support, GPU, library versions."""
    info: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        probe = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
        info["cpu_bf16"] = bool(probe()) if probe is not None else False
        info["cuda"] = torch.cuda.is_available()
        if info["cuda"]:
            info["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:  # pragma: no cover
        info["torch_threads"] = None
    for dist in ("transformers", "sentence-transformers"):
        info[dist] = _version(dist)
    return info


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def render_markdown(results: dict[str, Any]) -> str:
    """bench.md: machine, every ratio beside its target, then each section (see :mod:`calibrank.bench_render`)."""
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
            merged = runs.read_json(path)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}: not valid JSON ({exc}); fix or remove it, it may hold other benchmarks") from exc
        if not isinstance(merged, dict):
            raise SystemExit(f"{path}: expected a JSON object of sections, got {type(merged).__name__}")
    merged.update(sections)
    runs.write_json(path, merged)
    with runs.atomic_path(out / "bench.md") as tmp:
        tmp.write_text(render_markdown(merged), encoding="utf-8")
    with runs.atomic_path(out / "bench.html") as tmp:
        tmp.write_text(render_html(merged), encoding="utf-8")
    return merged


SECTIONS = ("bm25", "embedding", "training", "inference", "memory")


def _int_list(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m calibrank.bench", description=__doc__.split("\n\n")[0])
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
    _log(f"machine: {machine['cpu']}, {machine['cpu_count']} cores, torch {machine.get('torch')} "
         f"with {machine.get('torch_threads')} threads")
    write_results(out, {"machine": machine})

    if "bm25" not in args.skip or "embedding" not in args.skip:
        _negatives(args, out, machine)
    if not {"training", "inference", "memory"} <= set(args.skip):
        _rankers(args, out, machine)
    _log(f"wrote {Path(out) / 'bench.json'}, bench.md and bench.html")
    return 0


def _negatives(args: argparse.Namespace, out: Path, machine: dict[str, Any]) -> None:
    from .negatives import DEFAULT_EMBEDDING_MODEL, cached_embeddings, embeddings_cache_path, query_text

    qu = args.query_utterances or None
    _log(f"loading chitchat: {args.n_responses} responses, {args.n_queries} queries")
    responses, contexts, workload = chitchat_workload(args.n_responses, args.n_queries, args.seed)
    workload["query_utterances"] = qu
    _log(f"pool {len(responses)} unique responses, {len(contexts)} query contexts")

    if "bm25" not in args.skip:
        _log("BM25: bm25s vs rank_bm25 (rank_bm25 scores every document in Python; this is the slow part)")
        res = bench_bm25(responses, [query_text(c, qu) for c in contexts], args.k)
        write_results(out, {SECTION_BM25: {**res, "workload": workload, "machine": machine}})
        _log(
            f"bm25s {res['bm25s']['total_s']:.2f}s vs rank_bm25 {res['rank_bm25']['total_s']:.2f}s "
            f"(x{res['speedup_total']:.1f}); top-1 agree {res['parity']['top1_agree']:.3f}"
        )

    if "embedding" not in args.skip:
        pool = responses[: args.n_embed]
        qtexts = [query_text(c, qu, newest_first=True) for c in contexts]
        cached = embeddings_cache_path(pool).exists() and embeddings_cache_path(qtexts).exists()
        _log(f"embedding {len(pool)} responses + {len(qtexts)} queries with MiniLM ({'cached' if cached else 'encoding'})")
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
        _log(
            f"faiss {res['faiss']['search_s']:.3f}s vs numpy {res['numpy']['search_s']:.3f}s "
            f"(x{res['speedup_search']:.1f}) on {len(pool)} embeddings; identical top-k {res['parity']['topk_ids_identical']:.3f}"
        )


def _rankers(args: argparse.Namespace, out: Path, machine: dict[str, Any]) -> None:
    """The sections on the profile's rankers: training throughput, inference per query, peak memory."""
    import torch

    from .config import load_config
    from .querysets import load_query_set

    cfg = load_config(args.profile)
    device = torch.device(args.device) if args.device else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    corpus = cfg.rankers.train_corpora[0].value
    train = load_query_set(cfg, corpus, "train", cfg.negatives.train)
    common = {"profile": cfg.profile, "corpus": corpus, "machine": machine}

    if "training" not in args.skip:
        from .bench_training import SECTION, bench_training

        res = bench_training(train, cfg.training, warmup=args.train_warmup, steps=args.train_steps, rounds=args.train_rounds,
                             seed=args.seed, context_style=cfg.data.context_style, device=device)
        write_results(out, {SECTION: {**res, **common}})
        _log(f"training: calibrank {res['calibrank']['pairs_per_s']:.2f} pairs/s; ratios {res['ratio_ours_over']}")

    if "inference" not in args.skip:
        from .bench_inference import SECTION, bench_inference

        res = bench_inference(cfg, n_queries=args.inference_queries, repeats=args.inference_repeats, rankers=args.rankers,
                              short_train_queries=args.short_train_queries, use_cache=not args.no_model_cache)
        write_results(out, {SECTION: {**res, "machine": machine}})
        _log("inference: " + ", ".join(f"{n} x{v['ratio_to_bert']:.2f}" for n, v in res["rankers"].items()))

    if "memory" not in args.skip:
        from .bench_memory import SECTION, bench_memory

        pg = cfg.rankers.pg_drr
        res = bench_memory(train, cfg.training, train_steps=args.memory_train_steps, gibbs_sizes=args.gibbs_sizes,
                           gibbs_chains=args.gibbs_chains or pg.gibbs_chains, gibbs_steps=args.gibbs_steps or pg.gibbs_steps,
                           laptop_inducing=pg.inducing, seed=args.seed, context_style=cfg.data.context_style.value,
                           device=device.type, timeout_s=args.memory_timeout)
        write_results(out, {SECTION: {**res, **common}})
        _log(f"memory: training +{res['training'].get('increment_mb', float('nan')):.0f} MB")


if __name__ == "__main__":
    raise SystemExit(main())
