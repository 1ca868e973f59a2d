"""``training_throughput``: pairs/s of calibrank's training loop against sentence-transformers' ``CrossEncoder.fit``, per precision.

What is measured: training pairs per second over a fixed number of optimizer steps (after a few
untimed warm-up steps, which pay for lazy initialisation and the trainer's setup), for each
precision of ``precisions`` the hardware runs natively (fp32 always; bf16 on a CPU with
AVX512-BF16 or AMX, or a GPU with bf16; :func:`benchmarks.flops.available_precisions`), of

- ``calibrank_<precision>``: :func:`calibrank.study.model.training.train_model` on a
  :class:`calibrank.study.model.cross_encoder.CrossEncoder` (fused AdamW, length-bucketed batches with dynamic
  padding) with ``training.precision`` set to that precision (bf16: autocast, head in fp32).
  Its tokenisation happens once before the loop (:func:`calibrank.study.model.training.encode_pairs`); the
  share of it that belongs to the timed pairs is added to the timed seconds, because
  sentence-transformers tokenises inside its loop;
- ``st_<precision>``: sentence-transformers' ``CrossEncoder.fit``; fp32 is its default, bf16 is
  transformers' Trainer with ``TrainingArguments(bf16=True)`` (bf16 autocast through accelerate;
  ``fit`` itself only offers ``use_amp``, i.e. fp16, so the arguments it builds are given
  ``bf16=True, fp16=False`` instead). Since sentence-transformers v4, ``fit`` is a
  compatibility wrapper that builds a ``CrossEncoderTrainer`` (transformers' Trainer; it needs the
  ``datasets`` and ``accelerate`` packages). Where those are missing, the pre-v4 loop ``old_fit``
  (plain PyTorch, no extra packages; bf16 = ``use_amp=True``, autocast at the device's autocast
  dtype) is measured instead, and the section says so.

and, on the profile's own model (its ``training.joint_layers`` and ``pooling``: on ``laptop`` no joint layer and
the ``segments`` head), the loop on pair rows (``pairs_<precision>``, ``training.encode_once: false``) against
each distinct side encoded once per step (``once_<precision>``, batches of whole queries), the same pairs in the
same number of steps; ``ratio_once_over_pairs`` per precision.

The ratio calibrank / sentence-transformers is taken at the same precision (``ratio_ours_over``,
keyed by the sentence-transformers variant), each beside its target; ``ratio_defaults`` is our
default (``training.precision: auto``) over ``fit``'s default (fp32).

How close to the limit: every pass through the encoder is recorded
(:class:`benchmarks.flops.ShapeRecorder`) and the timed steps' FLOPs are counted from the
model's configuration and the padded batch shapes (3 x forward,
:func:`benchmarks.flops.encoder_forward_flops`); ``gflop_per_s`` is that count over the
timed loop seconds (ours: without the tokenisation share; sentence-transformers: with the
tokenisation it does inside its loop), and ``fraction_of_peak`` its share of the matmul peak of
the same precision (section ``matmul_peak``) when one was measured.

Why side by side: both start from the same backbone weights (the local MiniLM folder, or the
same seeded tiny model saved to a folder), with the same classifier initialisation, get the same
training pairs in the same count of steps, the same batch size, maximum length, learning rate,
weight decay, warm-up share and gradient clipping, and run in the same process one after the
other (rounds alternate the order), so machine and thread settings are shared. Loading the
models is excluded. Remaining differences are the point of the comparison and are recorded:
batching (ours: length-bucketed; sentence-transformers: random batches padded to the longest),
truncation (ours: the most recent context is kept, responses cut at ``max_response_length``;
sentence-transformers: ``longest_first`` to ``max_length``) and precision.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from calibrank.study.data.schema import RankingQuery
from calibrank.study.data.splits import format_context
from calibrank.study.settings.choices import ContextStyle
from calibrank.study.settings.schema import TrainingConfig

from .common import log, positive_int, ratio, target
from .flops import ShapeRecorder, available_precisions, utilisation

__all__ = [
    "SECTION",
    "TARGET_SPEEDUP",
    "bench_training",
    "run_calibrank",
    "run_sentence_transformers",
    "st_fit_available",
]

SECTION = "training_throughput"
TARGET_SPEEDUP = 1.5
IMPLEMENTATIONS = ("calibrank", "st", "pairs", "once")
#: The profile's own model (its ``joint_layers`` and ``pooling``) on pair rows and with each side encoded once.
PROFILE_MODELS = ("pairs", "once")
PRECISIONS = ("fp32", "bf16")


def st_fit_available() -> tuple[bool, str]:
    """Whether sentence-transformers' ``fit`` (the Trainer path) can run here, and why not when it cannot."""
    import importlib.util

    missing = [m for m in ("datasets", "accelerate") if importlib.util.find_spec(m) is None]
    if missing:
        return (
            False,
            f"CrossEncoder.fit needs the packages {' and '.join(missing)} (not installed): measured old_fit instead",
        )
    return True, ""


def _take_pairs(pairs, n: int):
    """The first ``n`` tokenised pairs (query order) as a :class:`calibrank.study.model.training.Pairs`."""
    from calibrank.pairs import Pairs

    return Pairs(
        input_ids=pairs.input_ids[:n],
        token_type_ids=pairs.token_type_ids[:n],
        labels=pairs.labels[:n],
        query_index=pairs.query_index[:n],
        qids=pairs.qids[: -(-n // pairs.n_candidates)],
        n_candidates=pairs.n_candidates,
        truncated_responses=pairs.truncated_responses,
    )


def _examples(queries: Sequence[RankingQuery], n: int, context_style: ContextStyle | str) -> list[tuple[str, str, int]]:
    """The first ``n`` (context text, candidate, label) triples, in the order :func:`encode_pairs` flattens them."""
    out = []
    for q in queries:
        ctx = format_context(q.context, context_style)
        out.extend((ctx, cand, int(lab)) for cand, lab in zip(q.candidates, q.labels))
        if len(out) >= n:
            break
    return out[:n]


def _seeded_head(hidden: int, seed: int) -> torch.nn.Linear:
    """The classifier our CrossEncoder starts from (same seeding), to give sentence-transformers the same one."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.nn.Linear(hidden, 1)


def _window(ends: list[float], warmup: int, steps: int) -> float:
    """Seconds of steps ``warmup + 1 .. warmup + steps``; ``ends[i]`` is when step ``i`` ended (``ends[0]``: start)."""
    if len(ends) < warmup + steps + 1:
        raise RuntimeError(f"the loop ran {len(ends) - 1} steps, expected {warmup + steps}")
    return ends[warmup + steps] - ends[warmup]


def _flop_figures(rec: ShapeRecorder, warmup: int, steps: int, seconds: float) -> dict[str, Any]:
    """FLOPs of the timed steps (passes ``warmup .. warmup + steps - 1``, one per step) and FLOP/s over ``seconds``."""
    if len(rec.shapes) != warmup + steps:
        return {
            "flops_note": f"{len(rec.shapes)} encoder passes recorded for {warmup + steps} steps: FLOPs not counted"
        }
    timed = rec.shapes[warmup : warmup + steps]
    flops = rec.flops(warmup, warmup + steps, training=True)
    return {
        "flops": flops,
        "flops_per_pair": flops / max(1, sum(b for b, _ in timed)),
        "mean_padded_length": float(np.mean([n for _, n in timed])),
        "encoder": rec.shape.to_dict(),
        "gflop_per_s": utilisation(flops, seconds, None)["gflop_per_s"],
    }


def run_calibrank(
    queries: Sequence[RankingQuery],
    settings: TrainingConfig,
    *,
    warmup: int,
    steps: int,
    seed: int = 0,
    context_style: ContextStyle | str = ContextStyle.plain,
    device: torch.device | None = None,
    precision: str | None = None,
    model: str = "calibrank",
) -> dict[str, Any]:
    """Train our CrossEncoder for ``warmup + steps`` steps with :func:`train_model`; time the last ``steps``.

    ``precision`` (``fp32``, ``bf16``) overrides ``settings.precision``. ``model``: ``calibrank``, the papers'
    cross-encoder (every layer joint, BERT's pooler); ``pairs`` / ``once``, the profile's model trained on pair rows /
    with each side encoded once.
    """
    from calibrank.hardware import use_bf16
    from calibrank.study.model.backbone import load_backbone
    from calibrank.study.model.cross_encoder import CrossEncoder
    from calibrank.study.model.losses import binary_cross_entropy
    from calibrank.study.model.training import encode_pairs, train_model

    device = device or torch.device("cpu")
    if precision is not None:
        settings = dataclasses.replace(settings, precision=precision)
    n = (warmup + steps) * settings.batch_size
    profile = model in PROFILE_MODELS
    settings = dataclasses.replace(settings, encode_once=model == "once")
    backbone = load_backbone(
        settings.backbone,
        seed=seed,
        hidden_dropout=settings.hidden_dropout,
        joint_layers=settings.joint_layers if profile else None,
    )
    net = CrossEncoder(backbone, seed=seed, **({"pooling": settings.pooling} if profile else {}))
    t0 = time.perf_counter()
    pairs = encode_pairs(
        backbone.tokenizer,
        queries,
        max_length=settings.max_length,
        max_response_length=settings.max_response_length,
        context_style=context_style,
        require_relevant=True,
    )
    pairs = _take_pairs(pairs, n)
    tokenise_s = time.perf_counter() - t0
    if len(pairs) < n:
        raise ValueError(f"queries: {len(pairs)} training pairs, need (warmup + steps) x batch_size = {n}")
    big = warmup + steps + 1
    run = dataclasses.replace(settings, epochs=1, checkpoint_every=big, eval_every=None, log_every=big)
    ends: list[float] = []

    def loss_fn(m, batch, labels):
        return binary_cross_entropy(m(**batch), labels)

    with tempfile.TemporaryDirectory(prefix="calibrank-bench-") as tmp, ShapeRecorder(net) as rec:
        ends.append(time.perf_counter())
        result = train_model(
            net,
            loss_fn,
            pairs,
            run,
            Path(tmp),
            seed=seed,
            on_step=lambda _step: ends.append(time.perf_counter()),
            device=device,
        )
    loop_s = _window(ends, warmup, steps)
    tok_share = tokenise_s * steps / (warmup + steps)
    seconds = loop_s + tok_share
    bf16 = use_bf16(settings.precision, device)
    return {
        "pairs_per_s": steps * settings.batch_size / seconds,
        "seconds": seconds,
        "loop_seconds": loop_s,
        "tokenise_seconds": tok_share,
        "precision": "bf16 autocast (fp32 head)" if bf16 else "fp32",
        "method": "calibrank.study.model.training.train_model (fused AdamW, length-bucketed dynamic padding)"
        + (
            f"; joint_layers {settings.joint_layers}, {getattr(settings.pooling, 'value', settings.pooling)} pooling"
            if profile
            else ""
        )
        + ("; each side encoded once, batches of whole queries" if result.encode_once else ""),
        "steps_run": result.steps,
        "mean_pair_tokens": float(np.mean(pairs.lengths)),
        **_flop_figures(rec, warmup, steps, loop_s),
    }


class _StampedLoader(torch.utils.data.DataLoader):
    """A DataLoader that notes the time each batch is handed out (the end of the previous step)."""

    def __init__(self, *args, stamps: list[float], **kw) -> None:
        super().__init__(*args, **kw)
        self._stamps = stamps

    def __iter__(self) -> Iterator:
        for batch in super().__iter__():
            self._stamps.append(time.perf_counter())
            yield batch


@contextlib.contextmanager
def _timed_trainer(ends: list[float], info: dict[str, Any], *, bf16: bool = False, cpu: bool = True):
    """While active, ``CrossEncoder.fit`` builds a trainer that notes when each step ends (a TrainerCallback).

    ``bf16``: the training arguments ``fit`` builds get ``bf16=True, fp16=False`` (and ``use_cpu``
    on a CPU, which transformers asks for bf16 there).
    """
    import sentence_transformers.cross_encoder.fit_mixin as st_fit
    import sentence_transformers.cross_encoder.trainer as st_trainer
    from transformers import TrainerCallback

    class _StepClock(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            ends.append(time.perf_counter())

        def on_step_end(self, args, state, control, **kw):
            ends.append(time.perf_counter())

    original = st_trainer.CrossEncoderTrainer

    class _Clocked(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args, callbacks=None, **kw):
            super().__init__(*args, callbacks=[*(callbacks or []), _StepClock()], **kw)
            info["fp16"], info["bf16"] = bool(self.args.fp16), bool(self.args.bf16)

    original_args = st_fit.CrossEncoderTrainingArguments

    def _bf16_args(*args, **kw):
        return original_args(*args, **{**kw, "fp16": False, "bf16": True, **({"use_cpu": True} if cpu else {})})

    st_trainer.CrossEncoderTrainer = _Clocked
    if bf16:
        st_fit.CrossEncoderTrainingArguments = _bf16_args
    try:
        yield
    finally:
        st_trainer.CrossEncoderTrainer = original
        st_fit.CrossEncoderTrainingArguments = original_args


def _st_checkpoint(settings: TrainingConfig, seed: int, workdir: Path) -> str:
    """A folder sentence-transformers can load with the backbone's weights (MiniLM's own; tiny-random saved)."""
    from calibrank.study.model.backbone import TINY, load_backbone, resolve_checkpoint

    if settings.backbone != TINY:  # MiniLM's local folder, another local folder, or a name in the local HF cache
        return str(resolve_checkpoint(settings.backbone))
    backbone = load_backbone(settings.backbone, seed=seed, hidden_dropout=settings.hidden_dropout)
    folder = workdir / "st-backbone"
    backbone.encoder.save_pretrained(folder)
    backbone.tokenizer.save_pretrained(folder)
    return str(folder)


def run_sentence_transformers(
    examples: Sequence[tuple[str, str, int]],
    settings: TrainingConfig,
    *,
    warmup: int,
    steps: int,
    seed: int = 0,
    precision: str = "fp32",
    method: str = "fit",
    device: torch.device | None = None,
) -> dict[str, Any]:
    """Train sentence-transformers' CrossEncoder with ``fit`` (or ``old_fit``) for ``warmup + steps`` steps; time the last ``steps``.

    ``precision``: ``fp32`` (``fit``'s default) or ``bf16`` (``fit``: ``TrainingArguments(bf16=True)``;
    ``old_fit``: ``use_amp=True``).
    """
    if method not in ("fit", "old_fit"):
        raise ValueError(f"method must be 'fit' or 'old_fit', got {method!r}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}, got {precision!r}")
    amp = precision == "bf16"
    from sentence_transformers import CrossEncoder as STCrossEncoder
    from sentence_transformers import InputExample

    device = device or torch.device("cpu")
    n = (warmup + steps) * settings.batch_size
    if len(examples) < n:
        raise ValueError(f"examples: {len(examples)} training pairs, need (warmup + steps) x batch_size = {n}")
    data = [InputExample(texts=[c, r], label=float(y)) for c, r, y in examples[:n]]
    info: dict[str, Any] = {}
    ends: list[float] = []
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="calibrank-bench-st-") as tmp:
        config_kwargs = {} if settings.hidden_dropout is None else {"hidden_dropout_prob": settings.hidden_dropout}
        model = STCrossEncoder(
            _st_checkpoint(settings, seed, Path(tmp)),
            num_labels=1,
            max_length=settings.max_length,
            device=str(device),
            config_kwargs=config_kwargs,
        )
        with contextlib.suppress(AttributeError, RuntimeError):  # same classifier start as ours where the layout allows
            classifier = model[0].model.classifier
            classifier.load_state_dict(_seeded_head(classifier.in_features, seed).state_dict())
        kwargs = dict(
            epochs=1,
            warmup_steps=int(settings.warmup_ratio * (warmup + steps)),
            optimizer_params={"lr": settings.lr},
            weight_decay=settings.weight_decay,
            max_grad_norm=settings.grad_clip,
            use_amp=amp and method == "old_fit",
            show_progress_bar=False,
        )
        os.chdir(tmp)  # the Trainer may create ./checkpoints
        try:
            torch.manual_seed(seed)
            with ShapeRecorder(model) as rec:
                if method == "fit":
                    loader = torch.utils.data.DataLoader(data, batch_size=settings.batch_size, shuffle=True)
                    with _timed_trainer(ends, info, bf16=amp, cpu=device.type == "cpu"):
                        model.fit(loader, **kwargs)
                else:
                    loader = _StampedLoader(data, batch_size=settings.batch_size, shuffle=True, stamps=ends)
                    model.old_fit(loader, **kwargs)
                    ends.append(time.perf_counter())
        finally:
            os.chdir(cwd)
    # fit: ends[0] the training began, ends[i] step i ended; old_fit: ends[i] batch i handed out = step i
    # (1-based) ended, the last entry: the loop returned
    seconds = _window(ends, warmup, steps)
    if method == "fit":
        label = (
            "bf16 autocast (TrainingArguments(bf16=True))"
            if info.get("bf16")
            else "fp16 autocast (TrainingArguments(fp16=True))"
            if info.get("fp16")
            else "fp32"
        )
    else:
        dtype = str(torch.get_autocast_dtype(device.type)).replace("torch.", "")
        label = f"{dtype} autocast + GradScaler (use_amp=True)" if amp else "fp32"
    return {
        "pairs_per_s": steps * settings.batch_size / seconds,
        "seconds": seconds,
        "precision": label,
        "method": f"sentence_transformers.CrossEncoder.{method}"
        + (" (CrossEncoderTrainer)" if method == "fit" else ""),
        **_flop_figures(rec, warmup, steps, seconds),
    }


def bench_training(
    queries: Sequence[RankingQuery],
    settings: TrainingConfig,
    *,
    warmup: int = 5,
    steps: int = 60,
    rounds: int = 1,
    seed: int = 0,
    context_style: ContextStyle | str = ContextStyle.plain,
    variants: Sequence[str] = IMPLEMENTATIONS,
    precisions: Sequence[str] = PRECISIONS,
    device: torch.device | None = None,
    peak_gflop_per_s: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Pairs/s of our loop and of sentence-transformers' ``fit`` on the same pairs, per precision; ratios ours/ST beside the target.

    ``variants``: the implementations (``calibrank`` always, ``st``); ``precisions``: among
    ``fp32``, ``bf16`` (those the device has no native support for are left out and listed in
    ``precisions_skipped``). Results are keyed ``<implementation>_<precision>``. ``rounds``
    repeats every variant (alternating the order); each variant's figure is its median pairs/s.
    Model loading is outside every timing. ``peak_gflop_per_s`` (precision -> GFLOP/s, from
    :func:`benchmarks.flops.measure_peak`) adds each variant's ``fraction_of_peak``.
    """
    warmup = positive_int(warmup, "warmup", minimum=1)
    steps = positive_int(steps, "steps")
    rounds = positive_int(rounds, "rounds")
    unknown = [v for v in variants if v not in IMPLEMENTATIONS]
    if unknown or "calibrank" not in variants:
        raise ValueError(
            f"variants must include 'calibrank' and be among {list(IMPLEMENTATIONS)}, got {list(variants)}"
        )
    device = device or torch.device("cpu")
    precisions, skipped = available_precisions(device, tuple(precisions))
    if not precisions:
        raise ValueError(f"no precision left to measure: {skipped}")
    n = (warmup + steps) * settings.batch_size
    k = len(queries[0].candidates) if queries else 0
    if len(queries) * k < n:
        raise ValueError(f"queries: {len(queries) * k} training pairs, need (warmup + steps) x batch_size = {n}")
    queries = list(queries[: math.ceil(n / k)])
    examples = _examples(queries, n, context_style)
    fit_ok, why = st_fit_available()
    method = "fit" if fit_ok else "old_fit"
    keys = [(f"{v}_{p}", v, p) for p in precisions for v in variants]
    runs: dict[str, list[dict[str, Any]]] = {key: [] for key, _, _ in keys}
    for r in range(rounds):
        order = keys if r % 2 == 0 else list(reversed(keys))
        for key, v, p in order:
            log(f"training_throughput round {r + 1}/{rounds}: {key} ({warmup} warm-up + {steps} timed steps)")
            if v != "st":
                res = run_calibrank(
                    queries,
                    settings,
                    warmup=warmup,
                    steps=steps,
                    seed=seed,
                    context_style=context_style,
                    device=device,
                    precision=p,
                    model=v,
                )
            else:
                res = run_sentence_transformers(
                    examples, settings, warmup=warmup, steps=steps, seed=seed, precision=p, method=method, device=device
                )
            runs[key].append(res)
            log(
                f"  {key}: {res['pairs_per_s']:.2f} pairs/s, {res.get('gflop_per_s', float('nan')):.1f} GFLOP/s "
                f"({res['precision']})"
            )
    out: dict[str, Any] = {
        "backbone": settings.backbone,
        "batch_size": settings.batch_size,
        "max_length": settings.max_length,
        "max_response_length": settings.max_response_length,
        "warmup_steps": warmup,
        "timed_steps": steps,
        "timed_pairs": steps * settings.batch_size,
        "rounds": rounds,
        "device": str(device),
        "torch_threads": torch.get_num_threads(),
        "st_method": method,
        "precisions": list(precisions),
        "default_precision": str(getattr(settings.precision, "value", settings.precision)),
    }
    if skipped:
        out["precisions_skipped"] = skipped
    if why:
        out["st_method_note"] = why
    peak = peak_gflop_per_s or {}
    for key, _v, p in keys:
        rs = runs[key]
        pps = [x["pairs_per_s"] for x in rs]
        entry = {
            **{name: val for name, val in rs[-1].items() if name not in ("pairs_per_s", "seconds", "gflop_per_s")},
            "precision_asked": p,
            "pairs_per_s": float(np.median(pps)),
            "seconds": float(np.median([x["seconds"] for x in rs])),
            "pairs_per_s_rounds": pps,
        }
        if "gflop_per_s" in rs[-1]:
            entry["gflop_per_s"] = float(np.median([x["gflop_per_s"] for x in rs]))
            if p in peak:
                entry["peak_gflop_per_s"] = peak[p]
                entry["fraction_of_peak"] = ratio(entry["gflop_per_s"], peak[p])
        out[key] = entry
    targets = []
    ratios = {}
    for key, v, p in keys:
        if v != "st":
            continue
        ratios[key] = ratio(out[f"calibrank_{p}"]["pairs_per_s"], out[key]["pairs_per_s"])
        targets.append(
            target(
                f"training pairs/s calibrank / {v}, both {p} ({out[key]['precision']})",
                ratios[key],
                ">=",
                TARGET_SPEEDUP,
            )
        )
    out["ratio_ours_over"] = ratios
    if set(PROFILE_MODELS) <= set(variants):
        out["ratio_once_over_pairs"] = {
            p: ratio(out[f"once_{p}"]["pairs_per_s"], out[f"pairs_{p}"]["pairs_per_s"]) for p in precisions
        }
    if "st" in variants and "fp32" in precisions:  # each side's default: ours training.precision (auto), fit's fp32
        from calibrank.hardware import use_bf16

        ours = "bf16" if use_bf16(settings.precision, device) else "fp32"
        if f"calibrank_{ours}" in out:
            out["ratio_defaults"] = {
                "figure": f"calibrank_{ours} / st_fp32",
                "value": ratio(out[f"calibrank_{ours}"]["pairs_per_s"], out["st_fp32"]["pairs_per_s"]),
            }
    out["targets"] = targets
    out["note"] = (
        "same backbone weights, classifier start, pairs, steps, batch size, max length, lr, weight decay, warm-up "
        "share and clipping; ours batches by length, ST pads random batches; model loading excluded; ratios at "
        "the same precision"
    )
    return out
