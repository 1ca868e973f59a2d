"""The one training loop of every ranker, and batched scoring.

A pointwise cross-encoder (Penha & Hauff 2021, sec. 3.2): each (context, candidate) pair is
encoded as ``[CLS] context [SEP] candidate [SEP]`` and a head on the pooled ``[CLS]`` feature
gives one relevance logit. What varies between rankers is the head and the loss, which plug in
(:class:`calibrank.rankers.base.CrossEncoder`, :mod:`calibrank.losses`).

The loop: AdamW (fused kernel), linear warm-up then linear decay, gradient clipping, bf16 autocast where the
hardware supports it, dynamic padding over length-sorted batches, a progress bar and a logged
loss every ``log_every`` steps, a validation metric every ``eval_every`` steps and at the end
of each epoch with the best weights kept (early selection), and a checkpoint every
``checkpoint_every`` steps from which an interrupted run resumes to the same weights as an
uninterrupted one. A non-finite loss stops training with the step number and the batch's
query ids, leaving the last good checkpoint in place.

Files in a model's folder: ``checkpoint.safetensors`` (weights, optimizer moments, RNG state;
the loop's counters in its metadata), ``best.safetensors`` (the best weights so far),
``model.safetensors`` and ``train.json`` (the finished model and its history). Every file is
written to a temporary name and renamed.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from .config import ContextStyle, Precision, TrainingConfig
from .data.schema import DataError, RankingQuery
from .data.splits import format_context
from .runs import atomic_path, read_json, write_json

__all__ = [
    "Pairs",
    "TrainingDiverged",
    "TrainResult",
    "encode_pairs",
    "length_batches",
    "collate",
    "use_bf16",
    "train_model",
    "score_pairs",
    "save_weights",
    "load_weights",
]

log = logging.getLogger(__name__)


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the message names the step, the batch and the last good checkpoint."""


# ----------------------------------------------------------------------------- tokenisation


@dataclass
class Pairs:
    """Tokenised (context, candidate) pairs of a query set, flattened in query order."""

    input_ids: list[list[int]]
    token_type_ids: list[list[int]]
    labels: np.ndarray  # [N] 0/1
    query_index: np.ndarray  # [N] index of the pair's query
    qids: list[str]  # [Q]
    n_candidates: int  # K (every query has K candidates)
    truncated_responses: int = 0

    @property
    def lengths(self) -> np.ndarray:
        return np.fromiter((len(x) for x in self.input_ids), dtype=np.int64, count=len(self.input_ids))

    def __len__(self) -> int:
        return len(self.input_ids)


def encode_pairs(
    tokenizer,
    queries: Sequence[RankingQuery],
    *,
    max_length: int,
    max_response_length: int | None,
    context_style: ContextStyle | str = ContextStyle.plain,
    require_relevant: bool = False,
) -> Pairs:
    """Tokenise every (context, candidate) pair; keep the most recent context that fits.

    Raises :class:`DataError` for a query without a relevant candidate when
    ``require_relevant`` (training), queries with different candidate counts, and (with
    ``max_response_length=None``) a candidate that leaves no room for any context.
    """
    if not queries:
        raise DataError("no queries to encode")
    k = len(queries[0].candidates)
    contexts, responses, labels, qindex = [], [], [], []
    for i, q in enumerate(queries):
        if len(q.candidates) != k:
            raise DataError(f"query {q.qid!r} has {len(q.candidates)} candidates, the first query has {k}")
        if require_relevant and not any(q.labels):
            raise DataError(f"query {q.qid!r} has no relevant candidate: a training query needs one")
        ctx = format_context(q.context, context_style)
        for cand, lab in zip(q.candidates, q.labels):
            contexts.append(ctx)
            responses.append(cand)
            labels.append(lab)
            qindex.append(i)
    # Tokenise each distinct text once (contexts repeat K times).
    uniq_ctx = list(dict.fromkeys(contexts))
    uniq_resp = list(dict.fromkeys(responses))
    ctx_ids = dict(zip(uniq_ctx, tokenizer(uniq_ctx, add_special_tokens=False)["input_ids"]))
    resp_ids = dict(zip(uniq_resp, tokenizer(uniq_resp, add_special_tokens=False)["input_ids"]))
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    ids, types, truncated = [], [], 0
    for ctx, resp, qi in zip(contexts, responses, qindex):
        r = resp_ids[resp]
        if max_response_length is not None and len(r) > max_response_length:
            r = r[:max_response_length]
            truncated += 1
        room = max_length - 3 - len(r)
        if room < 1:
            raise DataError(
                f"query {queries[qi].qid!r}: a candidate of {len(r)} tokens leaves no room for context within "
                f"max_length={max_length}; raise training.max_length or set training.max_response_length"
            )
        c = ctx_ids[ctx][-room:] if room < len(ctx_ids[ctx]) else ctx_ids[ctx]
        ids.append([cls, *c, sep, *r, sep])
        types.append([0] * (len(c) + 2) + [1] * (len(r) + 1))
    return Pairs(
        input_ids=ids,
        token_type_ids=types,
        labels=np.asarray(labels, dtype=np.int64),
        query_index=np.asarray(qindex, dtype=np.int64),
        qids=[q.qid for q in queries],
        n_candidates=k,
        truncated_responses=truncated,
    )


# ----------------------------------------------------------------------------- batching


def length_batches(lengths: np.ndarray, batch_size: int, *, seed: int | None = None, epoch: int = 0, bucket: int = 50) -> list[np.ndarray]:
    """Index batches of similar lengths (less padding).

    With a seed (training): a permutation seeded by (seed, epoch), cut into buckets of
    ``bucket`` batches, each sorted by length and cut into batches, and the batches shuffled.
    Without (inference): sorted by length, longest first.
    """
    n = len(lengths)
    if seed is None:
        order = np.argsort(-lengths, kind="stable")
        return [order[i : i + batch_size] for i in range(0, n, batch_size)]
    rng = np.random.default_rng([seed, epoch])
    perm = rng.permutation(n)
    batches = []
    span = batch_size * bucket
    for start in range(0, n, span):
        chunk = perm[start : start + span]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def collate(pairs: Pairs, index: np.ndarray, pad_id: int = 0) -> dict[str, torch.Tensor]:
    width = max(len(pairs.input_ids[i]) for i in index)
    ids = torch.full((len(index), width), pad_id, dtype=torch.long)
    types = torch.zeros((len(index), width), dtype=torch.long)
    mask = torch.zeros((len(index), width), dtype=torch.long)
    for row, i in enumerate(index):
        n = len(pairs.input_ids[i])
        ids[row, :n] = torch.tensor(pairs.input_ids[i])
        types[row, :n] = torch.tensor(pairs.token_type_ids[i])
        mask[row, :n] = 1
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}


# ----------------------------------------------------------------------------- precision


def use_bf16(precision: Precision | str, device: torch.device) -> bool:
    precision = Precision(precision)
    if precision is Precision.fp32:
        return False
    if device.type == "cuda":
        supported = torch.cuda.is_bf16_supported()
    else:
        probe = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
        supported = bool(probe()) if probe is not None else False
    if precision is Precision.bf16 and not supported:
        log.warning("bf16 asked for but not supported on %s: using fp32", device)
    return supported


def _autocast(device: torch.device, enabled: bool):
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=enabled)


# ----------------------------------------------------------------------------- weights I/O


def save_weights(model: nn.Module, path: Path, metadata: dict | None = None) -> None:
    tensors = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={"calibrank": json.dumps(metadata or {})})


def load_weights(model: nn.Module, path: Path) -> None:
    state = load_file(str(path))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(f"{path}: weights do not fit the model (missing {missing[:3]}, unexpected {unexpected[:3]})")


def _save_checkpoint(path: Path, model: nn.Module, optimizer: torch.optim.Optimizer, state: dict) -> None:
    tensors = {f"model/{k}": v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    opt = optimizer.state_dict()
    for idx, st in opt["state"].items():
        for key, val in st.items():
            tensors[f"optim/{idx}/{key}"] = (val if torch.is_tensor(val) else torch.tensor(val)).detach().contiguous().cpu()
    tensors["rng/torch"] = torch.random.get_rng_state()
    if torch.cuda.is_available():
        tensors["rng/cuda"] = torch.cuda.get_rng_state()
    meta = dict(state, param_groups=opt["param_groups"])
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={"calibrank": json.dumps(meta)})


def _load_checkpoint(path: Path, model: nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as fh:
        meta = json.loads(fh.metadata()["calibrank"])
    tensors = load_file(str(path))
    model.load_state_dict({k[len("model/"):]: v for k, v in tensors.items() if k.startswith("model/")})
    opt_state: dict = {}
    for k, v in tensors.items():
        if k.startswith("optim/"):
            _, idx, key = k.split("/", 2)
            opt_state.setdefault(int(idx), {})[key] = v
    optimizer.load_state_dict({"state": opt_state, "param_groups": meta.pop("param_groups")})
    torch.random.set_rng_state(tensors["rng/torch"])
    if "rng/cuda" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors["rng/cuda"])
    return meta


# ----------------------------------------------------------------------------- training


@dataclass
class TrainResult:
    history: list[dict] = field(default_factory=list)  # per logged step: step, epoch, mean loss since the last, lr
    validation: list[dict] = field(default_factory=list)  # per evaluation: step, metric
    best_step: int = 0
    best_metric: float = float("nan")
    steps: int = 0
    seconds: float = 0.0
    pairs_per_second: float = 0.0
    resumed_from: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _lr_factor(step: int, total: int, warmup: int) -> float:
    if warmup and step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def train_model(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, dict[str, torch.Tensor], torch.Tensor], torch.Tensor],
    train: Pairs,
    settings: TrainingConfig,
    workdir: Path,
    *,
    seed: int,
    validate: Callable[[nn.Module], float] | None = None,
    param_groups: Callable[[nn.Module], list[dict]] | None = None,
    on_step: Callable[[int], None] | None = None,
    on_epoch_start: Callable[[nn.Module, int], None] | None = None,
    device: torch.device | None = None,
) -> TrainResult:
    """Train ``model`` on ``train`` pairs; write ``model.safetensors`` and ``train.json`` in ``workdir``.

    ``loss_fn(model, batch, labels)`` returns the scalar loss of a batch. ``validate(model)``
    returns a metric to maximise (early selection). ``param_groups(model)`` may split the
    parameters into groups with their own ``lr`` (e.g. a GP layer's). ``on_step(step)`` runs
    after every optimizer step (tests use it to interrupt a run). The torch RNG is seeded from
    ``seed`` inside a forked RNG context, so the caller's global state is left as it was.
    """
    from tqdm import tqdm  # plain text bar: tqdm.auto needs ipywidgets inside notebooks

    workdir.mkdir(parents=True, exist_ok=True)
    device = device or torch.device("cpu")
    bf16 = use_bf16(settings.precision, device)
    ckpt_path, best_path = workdir / "checkpoint.safetensors", workdir / "best.safetensors"
    steps_per_epoch = math.ceil(len(train) / settings.batch_size)
    total = steps_per_epoch * settings.epochs
    warmup = int(settings.warmup_ratio * total)
    model.to(device)
    groups = param_groups(model) if param_groups else [{"params": [p for p in model.parameters() if p.requires_grad]}]
    for g in groups:
        g.setdefault("lr", settings.lr)
        g["base_lr"] = g["lr"]
    # The fused kernel does the update of all parameters in one pass: 12 ms against 93 ms per
    # step for MiniLM on one CPU thread (~15% of a training step), same update up to rounding.
    optimizer = torch.optim.AdamW(groups, lr=settings.lr, weight_decay=settings.weight_decay, fused=True)

    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        result = TrainResult()
        step, window = 0, [0.0, 0]  # loss sum and count since the last logged step
        if ckpt_path.exists():
            meta = _load_checkpoint(ckpt_path, model, optimizer)
            step, result, window = meta["step"], TrainResult(**meta["result"]), meta["window"]
            result.resumed_from = step
            log.info("resumed from %s at step %d", ckpt_path, step)
        t0 = time.perf_counter() - result.seconds
        bar = tqdm(total=total, initial=step, desc=f"train {workdir.name}", unit="step", leave=False)
        for epoch in range(step // steps_per_epoch, settings.epochs):
            batches = length_batches(train.lengths, settings.batch_size, seed=seed, epoch=epoch)
            if on_epoch_start is not None and step % steps_per_epoch == 0:
                on_epoch_start(model, epoch)
            model.train()
            for b, index in enumerate(batches):
                if epoch * steps_per_epoch + b < step:
                    continue  # done before the interruption
                batch = {k: v.to(device) for k, v in collate(train, index).items()}
                labels = torch.as_tensor(train.labels[index], device=device)
                factor = _lr_factor(step, total, warmup)
                for g in optimizer.param_groups:
                    g["lr"] = g["base_lr"] * factor
                with _autocast(device, bf16):
                    loss = loss_fn(model, batch, labels)
                if not torch.isfinite(loss):
                    qids = sorted({train.qids[train.query_index[i]] for i in index})
                    good = ckpt_path if ckpt_path.exists() else "none yet"
                    raise TrainingDiverged(
                        f"loss is {loss.item()} at step {step + 1} (epoch {epoch}); batch of {len(index)} pairs "
                        f"from queries {qids[:8]}{' ...' if len(qids) > 8 else ''}; last good checkpoint: {good}"
                    )
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
                if not torch.isfinite(grad_norm):
                    good = ckpt_path if ckpt_path.exists() else "none yet"
                    raise TrainingDiverged(
                        f"gradient norm is {grad_norm.item()} at step {step + 1} (epoch {epoch}) with a finite loss "
                        f"{loss.item():.4g}; the weights were not updated; last good checkpoint: {good}"
                    )
                optimizer.step()
                step += 1
                bar.update(1)
                window[0] += float(loss.item())
                window[1] += 1
                if step % settings.log_every == 0 or step == total:
                    mean_loss = window[0] / window[1]
                    result.history.append({"step": step, "epoch": epoch, "loss": mean_loss, "lr": optimizer.param_groups[0]["lr"]})
                    log.info("step %d/%d loss %.4f (mean of the last %d steps)", step, total, mean_loss, window[1])
                    window = [0.0, 0]
                end_of_epoch = (b == len(batches) - 1)
                if validate is not None and ((settings.eval_every and step % settings.eval_every == 0) or end_of_epoch):
                    metric = float(validate(model))
                    model.train()
                    result.validation.append({"step": step, "metric": metric})
                    log.info("step %d validation %.4f", step, metric)
                    if not result.best_metric >= metric:  # also true when best is NaN
                        result.best_metric, result.best_step = metric, step
                        save_weights(model, best_path, {"step": step, "metric": metric})
                if step % settings.checkpoint_every == 0 and step < total:
                    result.seconds = time.perf_counter() - t0
                    _save_checkpoint(ckpt_path, model, optimizer, {"step": step, "result": result.to_dict(), "window": window})
                if on_step is not None:
                    on_step(step)
        bar.close()
    result.steps = step
    result.seconds = time.perf_counter() - t0
    result.pairs_per_second = len(train) * settings.epochs / max(result.seconds, 1e-9)
    if validate is not None and best_path.exists():
        load_weights(model, best_path)
    else:
        result.best_step = step
    save_weights(model, workdir / "model.safetensors", {"step": result.best_step})
    write_json(workdir / "train.json", result.to_dict())
    ckpt_path.unlink(missing_ok=True)
    best_path.unlink(missing_ok=True)
    return result


def load_trained(model: nn.Module, workdir: Path) -> TrainResult | None:
    """Load a finished model from ``workdir`` if there is one; None otherwise."""
    if not (workdir / "model.safetensors").exists() or not (workdir / "train.json").exists():
        return None
    load_weights(model, workdir / "model.safetensors")
    return TrainResult(**read_json(workdir / "train.json"))


# ----------------------------------------------------------------------------- scoring


@torch.no_grad()
def score_pairs(
    model: nn.Module,
    pairs: Pairs,
    *,
    batch_size: int = 64,
    passes: int = 1,
    dropout: bool = False,
    seed: int = 0,
    precision: Precision | str = Precision.auto,
    forward: Callable[[nn.Module, dict[str, torch.Tensor]], torch.Tensor] | None = None,
    device: torch.device | None = None,
) -> np.ndarray:
    """Relevance logits ``[passes, N]`` of every pair.

    ``dropout=True`` keeps dropout layers active (MC dropout): each pass draws new masks from
    a torch RNG seeded with ``seed``. ``forward(model, batch)`` overrides ``model(**batch)``.
    """
    device = device or next(model.parameters()).device
    bf16 = use_bf16(precision, device)
    model.eval()
    if dropout:
        # Every stochastic layer as in training: nn.Dropout modules and the attention-probability
        # dropout that BERT's self-attention applies when its own module is in training mode.
        # Modules that would update state in training mode (spectral-norm power iteration)
        # stay in eval mode.
        model.train()
        for m in model.modules():
            if getattr(m, "updates_in_training", False):
                m.eval()
    out = np.empty((passes, len(pairs)), dtype=np.float64)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        for index in length_batches(pairs.lengths, batch_size):
            batch = {k: v.to(device) for k, v in collate(pairs, index).items()}
            for t in range(passes):
                with _autocast(device, bf16):
                    logits = forward(model, batch) if forward else model(**batch)
                out[t, index] = logits.float().cpu().numpy()
    model.eval()
    return out
