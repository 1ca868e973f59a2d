"""``peak_memory``: peak resident memory of a training run and of PG-DRR's Pólya-Gamma Gibbs sampler.

What is measured: each job runs in a fresh Python subprocess (``python -m benchmarks.memory
--child SPEC``) that first imports what every job needs (torch, transformers' BERT, calibrank's
training loop, rankers and GP code) and reads its own peak resident set size
as the *baseline*; then it runs the job and reads the peak again. The peak is the process's
VmHWM (/proc/self/status): ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` is reported too, but
on Linux it carries the launching process's peak across ``fork``/``exec`` (it read the
benchmark's own ~2 GB in every child), so it is used only where there is no /proc. The increment (peak minus baseline) is what the job itself needed, free
of the interpreter and library footprint; a fresh process per job keeps one job's peak from
hiding another's. On CUDA the child also reports ``torch.cuda.max_memory_allocated``.

Jobs:

- ``train``: :func:`calibrank.study.model.training.train_model` on a :class:`calibrank.study.model.cross_encoder.CrossEncoder`
  with the given training settings (the laptop profile's: MiniLM, batch 16, max length 128,
  bf16 autocast where supported) for a fixed number of steps: model, AdamW moments,
  activations and gradients.
- ``gibbs``: :func:`calibrank.study.model.gp.polya_gamma.gibbs_gp` on an ``M x M`` RBF kernel of
  ``M`` random features (the encoder's hidden size), ``chains`` chains for ``steps`` steps, as
  PG-DRR runs it on its inducing set (laptop: M = 256, 30 chains, 10 steps); larger ``M`` shows
  how memory grows (the chains' ``I + W^1/2 K W^1/2`` and their Cholesky factors are
  ``chains x M x M`` float64 each). Sizes whose estimated need exceeds the memory available are
  skipped and marked so.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calibrank.study.settings.schema import PGDRRConfig

from .common import emit, log, positive_int, run_child

__all__ = ["SECTION", "bench_memory", "run_job", "gibbs_estimate_mb", "available_mb"]

SECTION = "peak_memory"


def _maxrss_mb() -> float:
    import resource

    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux (bytes on macOS)
    return kb / (1024.0 * 1024.0) if sys.platform == "darwin" else kb / 1024.0


def _proc_kb_field(path: str, key: str) -> float | None:
    """The ``key:`` line of a /proc file (a value in kB) in MB; None where there is no /proc."""
    try:
        for line in Path(path).read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def _hwm_mb() -> float | None:
    """VmHWM of /proc/self/status in MB: the peak RSS of this process's own address space (None without /proc)."""
    return _proc_kb_field("/proc/self/status", "VmHWM")


def peak_rss_mb() -> tuple[float, str]:
    """(peak resident MB of this process, source).

    On Linux ``ru_maxrss`` keeps the largest peak seen across ``fork`` and ``exec``, so a child
    started by a large process (the benchmark itself) would report its launcher's peak; VmHWM
    belongs to the child's own address space and is used where /proc has it.
    """
    hwm = _hwm_mb()
    return (hwm, "VmHWM") if hwm is not None else (_maxrss_mb(), "ru_maxrss")


def available_mb() -> float | None:
    """MemAvailable of /proc/meminfo in MB (None where there is no /proc)."""
    return _proc_kb_field("/proc/meminfo", "MemAvailable")


def gibbs_estimate_mb(n: int, chains: int) -> float:
    """Rough peak of the Gibbs sampler in MB: four ``chains x n x n`` float64 arrays alive at once plus K."""
    return (4 * chains + 2) * n * n * 8 / 2**20


# --------------------------------------------------------------------------- child side


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    import numpy as np
    import torch
    from transformers import BertModel  # noqa: F401  (part of the common baseline)

    from calibrank import hardware
    from calibrank.study.model import (
        cross_encoder,  # noqa: F401
        training,  # noqa: F401
    )
    from calibrank.study.model.gp import polya_gamma

    baseline, source = peak_rss_mb()
    device = torch.device(spec.get("device") or "cpu")
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    t0 = time.perf_counter()
    info: dict[str, Any] = {}
    job = spec["job"]
    if job == "train":
        from calibrank.study.data.io import read_queries
        from calibrank.study.model.backbone import load_backbone
        from calibrank.study.model.losses import binary_cross_entropy
        from calibrank.study.settings.choices import Precision
        from calibrank.study.settings.schema import TrainingConfig

        from .training import _take_pairs

        raw = dict(spec["settings"])
        raw["precision"] = Precision(raw["precision"])
        steps = int(spec["steps"])
        settings = dataclasses.replace(
            TrainingConfig(**raw), epochs=1, checkpoint_every=steps + 1, eval_every=None, log_every=steps + 1
        )
        queries = read_queries(spec["queries"])
        backbone = load_backbone(settings.backbone, seed=int(spec["seed"]), hidden_dropout=settings.hidden_dropout)
        model = cross_encoder.CrossEncoder(backbone, seed=int(spec["seed"]))
        pairs = training.encode_pairs(
            backbone.tokenizer,
            queries,
            max_length=settings.max_length,
            max_response_length=settings.max_response_length,
            context_style=spec.get("context_style", "plain"),
            require_relevant=True,
        )
        pairs = _take_pairs(pairs, steps * settings.batch_size)
        with tempfile.TemporaryDirectory(prefix="calibrank-bench-mem-") as tmp:
            res = training.train_model(
                model,
                lambda m, b, y: binary_cross_entropy(m(**b), y),
                pairs,
                settings,
                Path(tmp),
                seed=int(spec["seed"]),
                device=device,
            )
        info.update(
            steps_run=res.steps,
            bf16=hardware.use_bf16(settings.precision, device),
            parameters=sum(p.numel() for p in model.parameters()),
        )
    elif job == "gibbs":
        n, dim = int(spec["n"]), int(spec["dim"])
        rng = np.random.default_rng(int(spec["seed"]))
        feats = (
            torch.from_numpy(rng.standard_normal((n, dim)) * float(spec.get("feature_scale", 0.05))).float().to(device)
        )
        K = polya_gamma.rbf_kernel(
            feats,
            feats,
            float(spec.get("length_scale", PGDRRConfig.length_scale)),
            float(spec.get("output_scale", PGDRRConfig.output_scale)),
        )
        y = torch.from_numpy(rng.permutation(np.arange(n) % 2)).to(device)
        res = polya_gamma.gibbs_gp(K, y, 0.0, int(spec["steps"]), int(spec["chains"]), rng=rng)
        info.update(jitter=float(res.jitter), w_shape=list(res.w.shape))
    else:
        raise ValueError(f"job must be 'train' or 'gibbs', got {job!r}")
    out = {
        "baseline_mb": baseline,
        "peak_mb": peak_rss_mb()[0],
        "rss_source": source,
        "ru_maxrss_mb": _maxrss_mb(),
        "seconds": time.perf_counter() - t0,
        **info,
    }
    out["increment_mb"] = max(0.0, out["peak_mb"] - baseline)
    if device.type == "cuda":
        out["cuda_max_allocated_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
    return out


# --------------------------------------------------------------------------- parent side


def run_job(spec: dict[str, Any], *, timeout_s: float = 900.0) -> dict[str, Any]:
    """Run one job in a fresh subprocess; its measurements, or ``{"error": ...}`` when it failed or timed out."""
    return run_child(
        "memory",
        [json.dumps(spec)],
        timeout_s=timeout_s,
        env={"TQDM_DISABLE": "1", "TOKENIZERS_PARALLELISM": "false"},
        hint=" (raise --memory-timeout)",
    )


def _plain_settings(settings) -> dict[str, Any]:
    return {k: (v.value if isinstance(v, enum.Enum) else v) for k, v in dataclasses.asdict(settings).items()}


def bench_memory(
    queries,
    settings,
    *,
    train_steps: int = 10,
    gibbs_sizes: Sequence[int] = (256, 1024, 2048),
    gibbs_chains: int = PGDRRConfig.gibbs_chains,
    gibbs_steps: int = PGDRRConfig.gibbs_steps,
    feature_dim: int = 384,
    laptop_inducing: int = 256,
    seed: int = 0,
    context_style: str = "plain",
    device: str = "cpu",
    timeout_s: float = 900.0,
) -> dict[str, Any]:
    """Peak RSS (and its increment over the imports-only baseline) of a training run and of the Gibbs sampler at each size."""
    from calibrank.study.data.io import write_queries

    train_steps = positive_int(train_steps, "train_steps")
    gibbs_chains = positive_int(gibbs_chains, "gibbs_chains")
    gibbs_steps = positive_int(gibbs_steps, "gibbs_steps")
    feature_dim = positive_int(feature_dim, "feature_dim")
    sizes = [positive_int(n, "gibbs_sizes", minimum=2) for n in gibbs_sizes]
    need = train_steps * settings.batch_size
    k = len(queries[0].candidates) if queries else 0
    if len(queries) * k < need:
        raise ValueError(f"queries: {len(queries) * k} training pairs, need train_steps x batch_size = {need}")
    out: dict[str, Any] = {
        "method": "peak RSS (VmHWM; ru_maxrss where there is no /proc) of a fresh subprocess; "
        "increment = peak - peak after imports only",
        "device": device,
        "available_mb_at_start": available_mb(),
    }
    with tempfile.TemporaryDirectory(prefix="calibrank-bench-mem-") as tmp:
        path = write_queries(Path(tmp) / "train.parquet", list(queries[: -(-need // k)]))
        log(
            f"peak_memory: training {train_steps} steps of batch {settings.batch_size} ({settings.backbone}) in a subprocess"
        )
        res = run_job(
            {
                "job": "train",
                "settings": _plain_settings(settings),
                "queries": str(path),
                "steps": train_steps,
                "seed": seed,
                "context_style": context_style,
                "device": device,
            },
            timeout_s=timeout_s,
        )
    out["training"] = {
        "backbone": settings.backbone,
        "batch_size": settings.batch_size,
        "max_length": settings.max_length,
        "steps": train_steps,
        **res,
    }
    gibbs: dict[str, Any] = {}
    for n in sizes:
        key = f"M={n}"
        est = gibbs_estimate_mb(n, gibbs_chains)
        avail = available_mb()
        entry: dict[str, Any] = {
            "inducing": n,
            "chains": gibbs_chains,
            "steps": gibbs_steps,
            "feature_dim": feature_dim,
            "estimated_mb": est,
            "laptop_size": n == laptop_inducing,
        }
        if avail is not None and est > 0.8 * avail:
            entry["skipped"] = f"estimated {est:,.0f} MB > 80% of the {avail:,.0f} MB available"
            log(f"peak_memory: Gibbs {key} skipped ({entry['skipped']})")
        else:
            log(
                f"peak_memory: Gibbs {key}, {gibbs_chains} chains x {gibbs_steps} steps in a subprocess (~{est:,.0f} MB)"
            )
            entry.update(
                run_job(
                    {
                        "job": "gibbs",
                        "n": n,
                        "dim": feature_dim,
                        "chains": gibbs_chains,
                        "steps": gibbs_steps,
                        "seed": seed,
                        "device": device,
                    },
                    timeout_s=timeout_s,
                )
            )
        gibbs[key] = entry
    out["gibbs"] = gibbs
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory", description="one peak-memory job (child side)")
    parser.add_argument("--child", required=True, help="the job as JSON")
    args = parser.parse_args(argv)
    result = _child(json.loads(args.child))
    emit(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
