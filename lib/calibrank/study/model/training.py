"""The one training loop of every ranker, and batched scoring.

A pointwise cross-encoder (Penha & Hauff 2021, sec. 3.2) scores ``[CLS] context [SEP] candidate
[SEP]`` with one logit; rankers differ only in head and loss (:mod:`calibrank.study.model.losses`). The
loop: AdamW, linear or constant lr, gradient clipping, bf16 autocast where supported,
length-sorted batches, selection on a validation metric or the last step, and checkpoints from
which an interrupted run resumes to the same weights. Files are written atomically with their
sha256; one process trains a model at a time (:func:`calibrank.study.locks.exclusive`); under
``torchrun`` a model trains data-parallel. Why: docs/decisions.md, "Training: reproducibility and
several processes".
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from safetensors.torch import load as load_safetensors
from safetensors.torch import save_file
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from calibrank.atomic import (
    DigestMismatch,
    atomic_path,
    atomic_recorded,
    check_recorded,
    digest_path,
    read_json,
    record_digest,
    sha256_file,
    write_json,
)
from calibrank.pairs import Pairs, _autocast, collate, length_batches, use_bf16
from calibrank.study.data.schema import DataError, RankingQuery
from calibrank.study.data.splits import format_context
from calibrank.study.locks import exclusive, sweep_temp
from calibrank.study.model import encode_once
from calibrank.study.settings.choices import ContextStyle, Schedule, Selection
from calibrank.study.settings.schema import TrainingConfig

__all__ = [
    "TrainingDiverged",
    "TrainResult",
    "encode_pairs",
    "train_model",
    "setup_distributed",
    "save_weights",
    "load_weights",
    "save_recorded",
    "read_recorded",
]

log = logging.getLogger(__name__)


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the message names the step, the batch and the last good checkpoint."""


# ----------------------------------------------------------------------------- tokenisation


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

    :class:`DataError` for a query without a relevant candidate (``require_relevant``), unequal
    candidate counts, or a candidate that leaves no room for context (``max_response_length=None``).
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


# ----------------------------------------------------------------------------- precision


# ----------------------------------------------------------------------------- weights I/O


def save_weights(model: nn.Module, path: Path, metadata: dict | None = None) -> str:
    """Write the model's weights to ``path`` (safetensors) atomically; return the sha256 the caller records."""
    tensors = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={"calibrank": json.dumps(metadata or {})})
        digest = sha256_file(tmp)
    return digest


def load_weights(
    model: nn.Module, path: Path, sha256: str | None = None, record: Path | None = None, *, recorded: bool = False
) -> None:
    """Load the weights in ``path`` into ``model``, reading the file once; on any error no weight changes.

    Bytes other than ``sha256`` or the ``recorded`` digest raise :class:`calibrank.atomic.DigestMismatch`;
    a file that is not safetensors or does not fit raises ``ValueError`` naming it.
    """
    data = Path(path).read_bytes()
    if sha256 is not None or recorded:
        check_recorded(path, data, sha256, record)
    try:
        state = load_safetensors(data)
    except Exception as exc:  # safetensors raises its own error type for a truncated or foreign file
        raise ValueError(f"{path}: not a readable safetensors file ({exc})") from exc
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    shapes = [k for k in own if k in state and tuple(state[k].shape) != tuple(own[k].shape)]
    if missing or unexpected or shapes:
        raise ValueError(
            f"{path}: weights do not fit the model (missing {missing[:3]}, unexpected {unexpected[:3]}, "
            f"other shapes {shapes[:3]})"
        )
    model.load_state_dict(state, strict=True)


def save_recorded(path: Path, tensors: dict[str, torch.Tensor], metadata: dict) -> None:
    """Write ``tensors`` with ``metadata`` (JSON, under the ``calibrank`` key) to ``path``, atomically,
    its sha256 recorded beside it last (:func:`calibrank.atomic.atomic_recorded`)."""
    with atomic_recorded(path) as tmp:
        save_file(tensors, str(tmp), metadata={"calibrank": json.dumps(metadata)})


def read_recorded(path: Path) -> tuple[dict[str, torch.Tensor], dict]:
    """The tensors and ``calibrank`` metadata of a file written by :func:`save_recorded`, read once.

    A missing or unmatched record raises :class:`calibrank.atomic.DigestMismatch`, another file ``ValueError``.
    """
    data = Path(path).read_bytes()
    check_recorded(path, data)
    try:
        tensors = load_safetensors(data)
        size = int.from_bytes(data[:8], "little")  # safetensors: header length, then the JSON header
        metadata = json.loads(json.loads(data[8 : 8 + size])["__metadata__"]["calibrank"])
    except Exception as exc:  # safetensors raises its own error type for a truncated or foreign file
        raise ValueError(f"{path}: not a readable safetensors file with calibrank metadata ({exc})") from exc
    if not isinstance(metadata, dict):
        raise ValueError(f"{path}: calibrank metadata is a {type(metadata).__name__}, expected a JSON object")
    return tensors, metadata


def _save_checkpoint(
    path: Path,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    state: dict,
    rank_rng: list[tuple[torch.Tensor, torch.Tensor | None]] | None = None,
) -> None:
    """``rank_rng``: (CPU, CUDA) RNG states of processes 1.. of a data-parallel run (process 0's are the plain keys)."""
    tensors = {f"model/{k}": v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    opt = optimizer.state_dict()
    for idx, st in opt["state"].items():
        for key, val in st.items():
            tensors[f"optim/{idx}/{key}"] = (
                (val if torch.is_tensor(val) else torch.tensor(val)).detach().contiguous().cpu()
            )
    tensors["rng/torch"] = torch.random.get_rng_state()
    if torch.cuda.is_available():
        tensors["rng/cuda"] = torch.cuda.get_rng_state()
    for rank, (cpu_state, cuda_state) in enumerate(rank_rng or [], start=1):
        tensors[f"rng/torch/rank{rank}"] = cpu_state
        if cuda_state is not None:
            tensors[f"rng/cuda/rank{rank}"] = cuda_state
    save_recorded(path, tensors, dict(state, param_groups=opt["param_groups"]))


def _read_checkpoint(path: Path) -> tuple[dict[str, torch.Tensor], dict] | None:
    """The tensors and metadata of the checkpoint at ``path``; None when there is none to resume from:
    missing, or not the bytes recorded beside it, or unreadable (logged, naming the file)."""
    try:
        tensors, meta = read_recorded(path)
        lacking = sorted({"step", "result", "window", "param_groups"} - meta.keys())
        if lacking:
            raise ValueError(f"{path}: its metadata lacks {lacking}")
    except FileNotFoundError:
        return None
    except (ValueError, OSError) as exc:  # DigestMismatch is a ValueError
        log.warning("%s: not resumed from (%s); training starts from scratch", path, str(exc).removeprefix(f"{path}: "))
        return None
    return tensors, meta


def _load_checkpoint(
    path: Path,
    tensors: dict[str, torch.Tensor],
    meta: dict,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    rank: int = 0,
) -> dict:
    """Restore weights, optimizer and RNG state from a checkpoint read by :func:`_read_checkpoint`;
    ``rank`` > 0 takes that process's RNG state (data parallel)."""
    meta = dict(meta)
    model.load_state_dict({k[len("model/") :]: v for k, v in tensors.items() if k.startswith("model/")})
    opt_state: dict = {}
    for k, v in tensors.items():
        if k.startswith("optim/"):
            _, idx, key = k.split("/", 2)
            opt_state.setdefault(int(idx), {})[key] = v
    optimizer.load_state_dict({"state": opt_state, "param_groups": meta.pop("param_groups")})
    suffix = f"/rank{rank}" if rank else ""
    if f"rng/torch{suffix}" in tensors:
        torch.random.set_rng_state(tensors[f"rng/torch{suffix}"])
    else:  # resumed with more processes than the checkpoint was written by
        log.warning("%s holds no RNG state for process %d: it keeps its freshly seeded one", path, rank)
    if f"rng/cuda{suffix}" in tensors and torch.cuda.is_available():
        torch.cuda.set_rng_state(tensors[f"rng/cuda{suffix}"])
    return meta


# ----------------------------------------------------------------------------- data parallel


def setup_distributed(device: torch.device | None = None) -> tuple[int, int, torch.device]:
    """``(rank, world size, device)`` of this process; joins the process group under ``torchrun``.

    Outside ``torchrun``: ``(0, 1, device or cpu)``. Under it: ``cuda:LOCAL_RANK`` with NCCL when CUDA
    is available, else gloo on CPU.
    """

    initialised = dist.is_available() and dist.is_initialized()
    try:
        world = int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        raise ValueError(f"WORLD_SIZE={os.environ['WORLD_SIZE']!r}: expected an integer (set by torchrun)") from None
    if not initialised and world <= 1:
        return 0, 1, device or torch.device("cpu")
    if not dist.is_available():
        raise RuntimeError(
            f"WORLD_SIZE={world} asks for data-parallel training, but this torch build has no torch.distributed"
        )
    if torch.cuda.is_available() and (device is None or device.type == "cuda"):
        try:
            local = int(os.environ.get("LOCAL_RANK", "0"))
        except ValueError:
            raise ValueError(
                f"LOCAL_RANK={os.environ['LOCAL_RANK']!r}: expected an integer (set by torchrun)"
            ) from None
        if local >= torch.cuda.device_count():
            raise RuntimeError(
                f"LOCAL_RANK={local} but only {torch.cuda.device_count()} CUDA devices are visible: "
                f"start at most that many processes per node (torchrun --nproc_per_node)"
            )
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
    else:
        device = device or torch.device("cpu")
    if not initialised:
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return dist.get_rank(), dist.get_world_size(), device


def _diverged(
    loss: float, step: int, epoch: int, train: Pairs, index: np.ndarray, ckpt_path: Path, batch: str
) -> TrainingDiverged:
    """The error of a non-finite loss: the step, the batch's query ids and the last good checkpoint."""
    qids = sorted({train.qids[train.query_index[i]] for i in index})
    good = ckpt_path if ckpt_path.exists() else "none yet"
    return TrainingDiverged(
        f"loss is {loss} at step {step + 1} (epoch {epoch}); {batch} of {len(index)} pairs "
        f"from queries {qids[:8]}{' ...' if len(qids) > 8 else ''}; last good checkpoint: {good}"
    )


def _rank_seed(seed: int, rank: int) -> int:
    """Process ``rank``'s torch seed in a data-parallel run (process 0 keeps ``seed``): distinct dropout masks per share."""
    return (
        seed if rank == 0 else int(np.random.SeedSequence([seed, rank]).generate_state(1, dtype=np.uint64)[0] % (2**63))
    )


class _LossOf(nn.Module):
    """``model`` with its loss as the forward pass, so that DistributedDataParallel sees the loss function's own calls
    (e.g. a GP head's ``train_logits``) as one forward and synchronises every parameter's gradient."""

    def __init__(self, model: nn.Module, loss_fn: Callable) -> None:
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn

    def forward(self, batch: dict[str, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
        return self.loss_fn(self.model, batch, labels)


def _broadcast_state(model: nn.Module, src: int = 0) -> None:
    with torch.no_grad():
        for tensor in model.state_dict().values():
            dist.broadcast(tensor, src)


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
    validation_seconds: float = 0.0  # part of ``seconds`` spent in ``validate``
    train_pairs_per_second: float = 0.0  # training pairs x epochs over the seconds not spent validating
    threads: int = 0  # torch's intra-op threads while training
    encode_once: bool = False  # each distinct side of a batch encoded once (whole queries per batch)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _lr_factor(step: int, total: int, warmup: int, schedule: Schedule = Schedule.linear) -> float:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 (``linear``) or the full lr (``constant``)."""
    if warmup and step < warmup:
        return (step + 1) / warmup
    if Schedule(schedule) is Schedule.constant:
        return 1.0
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

    ``loss_fn(model, batch, labels)`` gives a batch's loss, ``validate(model)`` a metric to maximise,
    ``param_groups(model)`` optional groups with their own ``lr``, ``on_step(step)`` runs after each
    update. The torch RNG is seeded from ``seed`` in a forked context. A model another trainer
    finished meanwhile is loaded, not trained.
    """
    rank, world, device = setup_distributed(device)
    main = rank == 0
    with contextlib.ExitStack() as held:
        finished = None
        if main:
            workdir.mkdir(parents=True, exist_ok=True)
            held.enter_context(exclusive(workdir, what=f"training {workdir}"))
            sweep_temp(workdir)  # leftovers of a trainer of this model that died
            finished = load_trained(model, workdir)  # made by the trainer we waited for
        if world > 1:
            shared = [finished.to_dict() if finished is not None else None]
            dist.broadcast_object_list(shared, 0)
            if shared[0] is not None:
                model.to(device)
                _broadcast_state(model, 0)
                finished = TrainResult(**shared[0])
        if finished is not None:
            if main:
                log.info("%s: trained by another process meanwhile; loaded its model", workdir)
            model.to(device)
            return finished
        return _train_model(
            model,
            loss_fn,
            train,
            settings,
            workdir,
            seed=seed,
            validate=validate,
            param_groups=param_groups,
            on_step=on_step,
            on_epoch_start=on_epoch_start,
            rank=rank,
            world=world,
            device=device,
        )


def _train_model(
    model: nn.Module,
    loss_fn: Callable[[nn.Module, dict[str, torch.Tensor], torch.Tensor], torch.Tensor],
    train: Pairs,
    settings: TrainingConfig,
    workdir: Path,
    *,
    seed: int,
    validate: Callable[[nn.Module], float] | None,
    param_groups: Callable[[nn.Module], list[dict]] | None,
    on_step: Callable[[int], None] | None,
    on_epoch_start: Callable[[nn.Module, int], None] | None,
    rank: int,
    world: int,
    device: torch.device,
) -> TrainResult:
    """The loop of :func:`train_model`, run while this process holds the model's lock."""

    main = rank == 0
    bf16 = use_bf16(settings.precision, device)
    ckpt_path, best_path = workdir / "checkpoint.safetensors", workdir / "best.safetensors"
    # Each context once per step where no layer is joint (one process: a data-parallel share splits pairs).
    once = settings.encode_once and world == 1 and encode_once.applies(model)
    sides = encode_once.split_sides(train) if once else None

    def batches_of(epoch: int) -> list[np.ndarray]:
        if once:
            return encode_once.query_batches(train, settings.batch_size, seed=seed, epoch=epoch)
        return length_batches(train.lengths, settings.batch_size, seed=seed, epoch=epoch)

    def collated(index: np.ndarray) -> dict[str, torch.Tensor]:
        parts = encode_once.collate_sides(sides, index) if sides is not None else collate(train, index)
        return {k: v.to(device) for k, v in parts.items()}

    steps_per_epoch = len(batches_of(0))
    total = steps_per_epoch * settings.epochs
    warmup = int(settings.warmup_ratio * total)
    keep_best = Selection(settings.selection) is Selection.best  # "last": validation is only logged
    model.to(device)
    groups: list[dict[str, Any]] = (
        param_groups(model) if param_groups else [{"params": [p for p in model.parameters() if p.requires_grad]}]
    )
    for g in groups:
        g.setdefault("lr", settings.lr)
        g["base_lr"] = g["lr"]
    # The fused kernel updates all parameters in one pass: the same update up to rounding, faster
    # (docs/decisions.md, "Fused AdamW").
    optimizer = torch.optim.AdamW(groups, lr=settings.lr, weight_decay=settings.weight_decay, fused=True)

    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(_rank_seed(seed, rank))
        result = TrainResult()
        step, window = 0, [0.0, 0]  # loss sum and count since the last logged step
        if world > 1:
            dist.barrier()  # every process sees the same checkpoint (or none) before any trains on
        checkpoint = _read_checkpoint(ckpt_path)
        if world > 1:  # every process resumes, or none: a checkpoint one of them cannot read is not used
            usable = torch.tensor([int(checkpoint is not None)], device=device)
            dist.all_reduce(usable, op=dist.ReduceOp.MIN)
            checkpoint = checkpoint if usable.item() else None
        if checkpoint is not None:
            meta = _load_checkpoint(ckpt_path, *checkpoint, model, optimizer, rank)
            step, result, window = meta["step"], TrainResult(**meta["result"]), meta["window"]
            result.resumed_from = step
            if main:
                log.info("resumed from %s at step %d", ckpt_path, step)
        # Data parallel: the loss function runs inside DDP's forward pass (gradients of every
        # parameter are averaged across processes in the backward pass).
        ddp = None
        if world > 1:
            ddp = DistributedDataParallel(
                _LossOf(model, loss_fn), device_ids=[device.index] if device.type == "cuda" else None
            )
        t0 = time.perf_counter() - result.seconds
        bar = tqdm(
            total=total,
            initial=step,
            desc=f"train {workdir.name}",
            unit="step",
            leave=False,
            **({} if main else {"disable": True}),
        )
        for epoch in range(step // steps_per_epoch, settings.epochs):
            batches = batches_of(epoch)
            if on_epoch_start is not None and step % steps_per_epoch == 0:
                on_epoch_start(model, epoch)
            model.train()
            for b, index in enumerate(batches):
                if epoch * steps_per_epoch + b < step:
                    continue  # done before the interruption
                factor = _lr_factor(step, total, warmup, settings.schedule)
                for g in optimizer.param_groups:
                    g["lr"] = g["base_lr"] * factor
                if ddp is None:
                    batch = collated(index)
                    labels = torch.as_tensor(train.labels[index], device=device)
                    with _autocast(device, bf16):
                        loss = loss_fn(model, batch, labels)
                    if not torch.isfinite(loss):
                        raise _diverged(loss.item(), step, epoch, train, index, ckpt_path, "batch")
                    objective, step_loss = loss, float(loss.item())
                else:
                    objective, step_loss = _share_loss(ddp, train, index, rank, world, device, bf16)
                    if not math.isfinite(step_loss):
                        raise _diverged(
                            step_loss, step, epoch, train, index, ckpt_path, f"global batch over {world} processes"
                        )
                optimizer.zero_grad(set_to_none=True)
                objective.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
                if not torch.isfinite(grad_norm):
                    good = ckpt_path if ckpt_path.exists() else "none yet"
                    raise TrainingDiverged(
                        f"gradient norm is {grad_norm.item()} at step {step + 1} (epoch {epoch}) with a finite loss "
                        f"{step_loss:.4g}; the weights were not updated; last good checkpoint: {good}"
                    )
                optimizer.step()
                step += 1
                bar.update(1)
                window[0] += step_loss
                window[1] += 1
                if step % settings.log_every == 0 or step == total:
                    mean_loss = window[0] / window[1]
                    result.history.append(
                        {"step": step, "epoch": epoch, "loss": mean_loss, "lr": optimizer.param_groups[0]["lr"]}
                    )
                    if main:
                        log.info("step %d/%d loss %.4f (mean of the last %d steps)", step, total, mean_loss, window[1])
                    window = [0.0, 0]
                end_of_epoch = b == len(batches) - 1
                if validate is not None and ((settings.eval_every and step % settings.eval_every == 0) or end_of_epoch):
                    v0 = time.perf_counter()
                    if world > 1:  # process 0 validates; all follow its metric
                        shared = torch.tensor(
                            [float(validate(model)) if main else 0.0], dtype=torch.float64, device=device
                        )
                        dist.broadcast(shared, 0)
                        metric = float(shared.item())
                    else:
                        metric = float(validate(model))
                    result.validation_seconds += time.perf_counter() - v0
                    model.train()
                    result.validation.append({"step": step, "metric": metric})
                    if main:
                        log.info("step %d validation %.4f", step, metric)
                    if keep_best and not result.best_metric >= metric:  # also true when best is NaN
                        result.best_metric, result.best_step = metric, step
                        if main:
                            record_digest(best_path, save_weights(model, best_path, {"step": step, "metric": metric}))
                if step % settings.checkpoint_every == 0 and step < total:
                    result.seconds = time.perf_counter() - t0
                    state = {"step": step, "result": result.to_dict(), "window": window}
                    if world > 1:
                        states: list = [None] * world
                        dist.all_gather_object(
                            states,
                            (
                                torch.random.get_rng_state(),
                                torch.cuda.get_rng_state() if torch.cuda.is_available() else None,
                            ),
                        )
                        if main:
                            _save_checkpoint(ckpt_path, model, optimizer, state, rank_rng=states[1:])
                    else:
                        _save_checkpoint(ckpt_path, model, optimizer, state)
                if on_step is not None:
                    on_step(step)
        bar.close()
    result.steps = step
    result.seconds = time.perf_counter() - t0
    result.pairs_per_second = len(train) * settings.epochs / max(result.seconds, 1e-9)
    result.train_pairs_per_second = len(train) * settings.epochs / max(result.seconds - result.validation_seconds, 1e-9)
    result.threads = torch.get_num_threads()
    result.encode_once = once
    if world > 1:
        # Process 0 holds the selected weights (best.safetensors lives on its disk): every process takes them.
        decision = [bool(validate is not None and _load_best(model, best_path))] if main else [False]
        dist.broadcast_object_list(decision, 0)
        if not decision[0]:
            result.best_step = step
        _broadcast_state(model, 0)
    elif not (validate is not None and _load_best(model, best_path)):
        result.best_step = step
    if main:
        digest = save_weights(model, workdir / "model.safetensors", {"step": result.best_step})
        write_json(workdir / "train.json", {**result.to_dict(), "model_sha256": digest})
        for path in (ckpt_path, best_path):
            path.unlink(missing_ok=True)
            digest_path(path).unlink(missing_ok=True)
    if world > 1:
        dist.barrier()  # the finished model is on disk before any process returns
    return result


def _load_best(model: nn.Module, path: Path) -> bool:
    """Load the best weights kept in ``path``; False, the model left as it was, when there are none
    or they are not the bytes recorded beside them (logged, naming the file)."""
    try:
        load_weights(model, path, recorded=True)
    except FileNotFoundError:
        return False
    except DigestMismatch as exc:
        log.warning(
            "%s: the best weights are not used (%s); the last step's weights are kept",
            path,
            str(exc).removeprefix(f"{path}: "),
        )
        return False
    return True


def _share_loss(
    ddp: nn.Module, train: Pairs, index: np.ndarray, rank: int, world: int, device: torch.device, bf16: bool
) -> tuple[torch.Tensor, float]:
    """This process's weighted loss on its share of a global batch, and the global batch's mean loss.

    The weight ``n_share x world / n_batch`` makes DDP's average gradient that of the whole batch's
    mean; an empty share runs one pair with weight 0 so every process joins the exchange.
    """

    share = np.array_split(index, world)[rank]
    part = share if len(share) else index[:1]
    batch = {k: v.to(device) for k, v in collate(train, part).items()}
    labels = torch.as_tensor(train.labels[part], device=device)
    with _autocast(device, bf16):
        loss = ddp(batch, labels)
    weight = len(share) / len(index)
    stats = torch.stack([loss.detach().double() * weight, (~torch.isfinite(loss.detach())).double()])
    dist.all_reduce(stats)
    total_loss, bad = float(stats[0].item()), float(stats[1].item())
    if bad > 0 and math.isfinite(total_loss):
        total_loss = float("nan")
    return loss * (weight * world), total_loss


def is_trained(workdir: Path) -> bool:
    """Whether ``workdir`` holds a finished model. Both files are renamed into place only once
    complete, ``train.json`` last, so a model a concurrent trainer is still writing is not finished.
    Only their presence is looked at (cheap): :func:`load_trained` checks the weights' bytes."""
    return (workdir / "model.safetensors").exists() and (workdir / "train.json").exists()


def load_trained(model: nn.Module, workdir: Path) -> TrainResult | None:
    """A sound finished model from ``workdir`` (weights matching ``train.json``'s sha256), else None with a warning."""
    if not is_trained(workdir):
        return None
    record = workdir / "train.json"
    try:
        history = read_json(record)
        if not isinstance(history, dict):
            raise ValueError(f"{record}: expected a JSON object (a training history), got {type(history).__name__}")
        digest = history.pop("model_sha256", None)
        if not isinstance(digest, str):
            raise ValueError(f"{record} records no sha256 of model.safetensors (written by an older version)")
        try:
            result = TrainResult(**history)
        except TypeError as exc:
            raise ValueError(f"{record}: not a training history ({exc})") from None
        load_weights(model, workdir / "model.safetensors", sha256=digest, record=record)
    except (ValueError, OSError) as exc:  # DigestMismatch and JSON errors are ValueErrors
        log.warning("%s; training this model again", exc)  # the message names the file
        return None
    return result


# ----------------------------------------------------------------------------- scoring
