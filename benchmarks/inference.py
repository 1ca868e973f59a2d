"""``inference_per_query``: milliseconds per query of every ranker of a profile against ``bert``, side by side.

What is measured: the time of each ranker's ``predict`` on the same seeded test queries of the
in-domain corpus (each query: all ``1 + k`` candidates scored, tokenisation included), by
:func:`calibrank.analysis.efficiency.measure_efficiency`: every ranker loaded first and warmed up, then
``repeats`` rounds that time each ranker in turn (interleaved, so a change of machine load hits
all alike) on the process CPU time where the rankers run on the CPU; the median per query counts and the ratio of
medians to ``bert``
(:func:`calibrank.analysis.efficiency.efficiency_table`) is set beside its target:

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
same seeded test queries with :func:`calibrank.model.training.score_pairs` (length-bucketed batches of
``eval_batch_size``, tokenisation done before and not timed) at fp32 and, where the hardware has
it, bf16 autocast; precisions alternate round robin over ``repeats`` rounds after one untimed
batch each, and the median time counts. FLOPs are counted from the encoder's configuration and
the padded batch shapes recorded as it runs (:mod:`benchmarks.flops`); ``gflop_per_s`` over
the median time, and ``fraction_of_peak`` its share of the matmul peak of the same precision.
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
from calibrank.settings.choices import RankerName
from calibrank.settings.schema import Config

from .common import log, positive_int, ratio, target

__all__ = ["SECTION", "SECTION_FLOPS", "SINGLE_PASS", "SINGLE_PASS_TARGET", "bench_inference", "bench_inference_flops",
           "cached_ranker", "short_trained_ranker"]

SECTION = "inference_per_query"
SECTION_FLOPS = "inference_flops"
SINGLE_PASS = tuple(r.value for r in (RankerName.temperature, RankerName.focal, RankerName.sngp, RankerName.gpf_bert,
                                     RankerName.pg_drr))
SINGLE_PASS_TARGET = 1.10


class _NotCached(Exception):
    """Raised in place of training: the ranker is not in the model cache."""


def cached_ranker(cfg: Config, name: str, train_corpus: str):
    """The ranker fitted from the profile's model cache, or None when fitting it would train a model."""
    from calibrank.model import experiment
    from calibrank.model.rankers import base

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


def short_trained_ranker(cfg: Config, name: str, train_corpus: str, models_dir: str | Path, *, n_train: int = 32,
                         n_valid: int = 8):
    """``name`` with the profile's settings, fitted by one epoch over the first training queries (timing only).

    ``n_train`` is raised to the queries PG-DRR's inducing set needs. Models are cached in
    ``models_dir`` (rankers sharing a model, e.g. ``bert`` and ``mc_dropout``, train it once).
    """
    from calibrank.data.querysets import load_query_set
    from calibrank.model.rankers import ranker_from_config

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


def bench_inference(cfg: Config, *, n_queries: int = 50, repeats: int = 3, warmup_queries: int = 4,
                    rankers: Sequence[str] | None = None, train_corpus: str | None = None, short_train_queries: int = 32,
                    models_dir: str | Path | None = None, use_cache: bool = True) -> dict[str, Any]:
    """Time every ranker's ``predict`` against ``bert`` on the same queries; ratios beside their targets.

    ``use_cache=False`` always builds the rankers by the short training (in ``models_dir``, a
    temporary folder by default).
    """
    from calibrank.analysis import efficiency

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
            log(f"inference_per_query: {name} is not in the model cache; short training on {n_short} queries (timing only)")
            fitted[name] = short_trained_ranker(cfg, name, tc, short_dir, n_train=short_train_queries)
            source[name] = f"short training: 1 epoch on {n_short} {tc} training queries (timing only, not a trained model)"
        log(f"inference_per_query: timing {len(names)} rankers x {repeats} rounds on {n_queries} queries")
        measured = efficiency.measure_efficiency(cfg, {name: fitted[name] for name in names}, n_queries=n_queries,
                                                 repeats=repeats, warmup_queries=warmup_queries, train_corpus=tc)
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
        "note": (f"median of interleaved repeats at one intra-op thread, {first['clock']} clock (calibrank.analysis.efficiency); "
                 "ratio = median ms/query over bert's; tokenisation included"),
    }


def bench_inference_flops(cfg: Config, *, n_queries: int = 50, repeats: int = 3, precisions: Sequence[str] = ("fp32", "bf16"),
                          device=None, peak_gflop_per_s: dict[str, float] | None = None, seed: int = 0) -> dict[str, Any]:
    """GFLOP/s of the ``bert`` cross-encoder's scoring loop per precision, and its fraction of the matmul peak.

    ``peak_gflop_per_s``: precision -> GFLOP/s (:func:`benchmarks.flops.measure_peak`).
    """
    import torch
    from calibrank.analysis.efficiency import efficiency_queries
    from calibrank.model.backbone import load_backbone
    from calibrank.model.rankers.base import CrossEncoder
    from calibrank.model.training import encode_pairs, score_pairs

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
    pairs = encode_pairs(backbone.tokenizer, queries, max_length=s.max_length, max_response_length=s.max_response_length,
                         context_style=cfg.data.context_style)
    warm = _take_pairs(pairs, min(len(pairs), s.eval_batch_size))
    for p in precisions:  # lazy initialisation, thread pools, kernel selection per dtype
        score_pairs(model, warm, batch_size=s.eval_batch_size, precision=p, device=device)
    times: dict[str, list[float]] = {p: [] for p in precisions}
    flops: dict[str, float] = {}
    shapes: dict[str, list] = {}
    log(f"inference_flops: scoring {len(pairs)} pairs x {repeats} rounds at {', '.join(precisions)}")
    for r in range(repeats):
        for p in (precisions if r % 2 == 0 else list(reversed(precisions))):
            with ShapeRecorder(model) as rec:
                t0 = time.perf_counter()
                score_pairs(model, pairs, batch_size=s.eval_batch_size, precision=p, device=device)
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
        "eval_batch_size": s.eval_batch_size,
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
        entry = {"seconds": sec, "seconds_rounds": times[p], "pairs_per_s": ratio(len(pairs), sec), "flops": flops[p],
                 "flops_per_pair": flops[p] / max(1, len(pairs)), "gflop_per_s": util["gflop_per_s"]}
        if p in peak:
            entry["peak_gflop_per_s"] = peak[p]
            entry["fraction_of_peak"] = util["fraction_of_peak"]
        out[p] = entry
    out["note"] = ("calibrank.model.training.score_pairs of the bert cross-encoder, tokenisation outside the timing; FLOPs of the "
                   "padded shapes (forward = N B (2 L P + 4 L^2 d_attn)); median of round-robin repeats")
    return out
