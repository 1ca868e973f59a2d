"""How close to the limit: the machine's matmul peak, and FLOPs of a transformer encoder counted from its shapes.

``matmul_peak``: the FLOP/s a single ``torch.mm`` of two square ``n x n`` matrices reaches on
this machine with torch's current thread count, per precision (fp32 always; bf16 where the
hardware has native bf16 arithmetic: a CPU with AVX512-BF16 or AMX, a CUDA GPU that
supports bf16). One untimed call, then the best of ``repeats`` timed calls;
FLOP/s = 2 n^3 / t (n^3 multiply-adds). ``n`` is chosen large enough that the product is
compute-bound (2048: 16 MB per fp32 matrix, arithmetic intensity ~n/6 FLOP/byte), so the
figure is what the BLAS library (oneDNN/MKL on CPU) reaches on its best shape: a practical
peak, not the data sheet's.

FLOPs of an encoder (:func:`encoder_forward_flops`), counted from the model's configuration
(layers ``N``, hidden size ``d``, heads ``h`` of size ``d_head`` so that ``d_attn = h d_head``,
intermediate size ``d_ff``) and the shapes it is run on (batch ``B``, padded sequence length
``L``)::

    params_matmul (per layer) = 4 d d_attn + 2 d d_ff          # Q, K, V, output; FFN in and out
    forward  = N B (2 L params_matmul + 4 L^2 d_attn)
    backward = 2 forward                                        # gradients w.r.t. inputs and weights
    training step = 3 forward

``2 x params_matmul x tokens`` is one multiply-add per weight per token (Kaplan et al. 2020,
"Scaling Laws for Neural Language Models", Table 1: C_forward ~ 2N + 2 n_layer n_ctx d_attn per
token, whose attention term counts ``Q K^T`` only). ``4 L^2 d_attn`` per layer per sequence counts
both attention products, ``Q K^T`` and ``softmax(.) V``, at ``2 L^2 d_attn`` each, and the
backward pass costs twice the forward (Narayanan et al. 2021, "Efficient Large-Scale Language
Model Training on GPU Clusters Using Megatron-LM", appendix on floating-point operations:
24 B s h^2 + 4 B s^2 h per layer forward, with d_ff = 4h; their factor 4 for a training step
includes activation recomputation, which our loops do not do, hence 3). Left out (small here):
embeddings (look-ups), layer norms, softmax, GELU, biases, the pooler and the one-logit head
(< 0.1% for MiniLM at L ~ 70). The count is of padded shapes, i.e. of the work the kernels do,
padding included: shapes are recorded as the model runs (:class:`ShapeRecorder`, a hook on the
encoder's embedding layer), so our length-bucketed batches and sentence-transformers' random
batches padded to the longest are each counted as they were.

Achieved FLOP/s = counted FLOPs / measured seconds; its fraction of the matmul peak of the same
precision says how much of the machine the loop uses (bf16 autocast loops also run layer norms,
softmax, the optimizer and the loss in fp32, and small matrices are further from the peak than
the square benchmark).
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "EncoderShape",
    "ShapeRecorder",
    "attach_peak",
    "available_precisions",
    "bf16_support",
    "encoder_forward_flops",
    "encoder_shape",
    "find_encoder",
    "matmul_gflops",
    "measure_peak",
    "merge_peaks",
    "shapes_flops",
    "utilisation",
]

SECTION = "matmul_peak"
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


# ----------------------------------------------------------------------------- peak


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def bf16_support(device: torch.device | str = "cpu") -> dict[str, Any]:
    """Whether ``device`` has native bf16 arithmetic, and from what: ``{"supported", "via", ...}``.

    CPU: AVX512-BF16 (``torch.cpu._is_avx512_bf16_supported``, the probe
    :func:`calibrank.hardware.use_bf16` uses) or AMX tiles (``_is_amx_tile_supported``, or the
    ``amx_bf16`` flag of /proc/cpuinfo). CUDA: ``torch.cuda.is_bf16_supported()``.
    """
    device = torch.device(device)
    if device.type == "cuda":
        ok = bool(torch.cuda.is_bf16_supported())
        return {"supported": ok, "via": "cuda" if ok else None}
    flags = _cpu_flags()
    probe = getattr(torch.cpu, "_is_avx512_bf16_supported", None)
    avx512_bf16 = bool(probe()) if probe is not None else "avx512_bf16" in flags
    amx_probe = getattr(torch.cpu, "_is_amx_tile_supported", None)
    amx = bool(amx_probe()) if amx_probe is not None else False
    amx = amx or "amx_bf16" in flags
    via = [name for name, ok in (("AVX512-BF16", avx512_bf16), ("AMX", amx)) if ok]
    return {"supported": bool(via), "via": " + ".join(via) or None, "avx512_bf16": avx512_bf16, "amx": amx}


def available_precisions(
    device: torch.device | str = "cpu", wanted=("fp32", "bf16")
) -> tuple[list[str], dict[str, str]]:
    """The precisions of ``wanted`` this device runs natively, and a reason for each one left out."""
    unknown = [p for p in wanted if p not in DTYPES]
    if unknown:
        raise ValueError(f"precisions must be among {list(DTYPES)}, got {list(wanted)}")
    keep, skipped = [], {}
    for p in wanted:
        if p == "bf16" and not bf16_support(device)["supported"]:
            skipped[p] = f"{torch.device(device).type} has no native bf16 (no AVX512-BF16 or AMX): not measured"
        else:
            keep.append(p)
    return keep, skipped


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_gflops(
    dtype: torch.dtype | str, n: int, *, repeats: int = 5, device: torch.device | str = "cpu"
) -> dict[str, Any]:
    """GFLOP/s of ``torch.mm`` on two square ``n x n`` matrices of ``dtype``: best of ``repeats`` after one untimed call."""
    from .common import positive_int

    n = positive_int(n, "n")
    repeats = positive_int(repeats, "repeats")
    dtype = DTYPES[dtype] if isinstance(dtype, str) else dtype
    device = torch.device(device)
    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(n, n, generator=gen).to(device=device, dtype=dtype)
    b = torch.randn(n, n, generator=gen).to(device=device, dtype=dtype)
    out = torch.empty(n, n, device=device, dtype=dtype)
    torch.mm(a, b, out=out)  # lazy initialisation, thread pool, kernel selection
    _sync(device)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b, out=out)
        _sync(device)
        times.append(time.perf_counter() - t0)
    best = min(times)
    flops = 2.0 * n**3
    return {
        "gflop_per_s": flops / best / 1e9,
        "best_s": best,
        "median_s": float(sorted(times)[len(times) // 2]),
        "gflop_per_s_median": flops / float(sorted(times)[len(times) // 2]) / 1e9,
    }


def measure_peak(
    n: int = 2048, repeats: int = 10, *, device: torch.device | str = "cpu", precisions=("fp32", "bf16")
) -> dict[str, Any]:
    """The ``matmul_peak`` section: GFLOP/s of ``torch.mm`` per precision, with the thread count and bf16 support."""
    device = torch.device(device)
    keep, skipped = available_precisions(device, precisions)
    out: dict[str, Any] = {
        "method": f"torch.mm of two {n}x{n} matrices, best of {repeats} after one untimed call; FLOP/s = 2 n^3 / t",
        "n": n,
        "repeats": repeats,
        "device": str(device),
        "torch_threads": torch.get_num_threads(),
        "bf16_support": bf16_support(device),
    }
    for p in keep:
        out[p] = matmul_gflops(p, n, repeats=repeats, device=device)
    if skipped:
        out["skipped"] = skipped
    out["peak_gflop_per_s"] = {p: out[p]["gflop_per_s"] for p in keep}
    return out


def merge_peaks(first: dict[str, Any], again: dict[str, Any]) -> dict[str, Any]:
    """``first`` (a :func:`measure_peak` result) with a second measurement ``again``: per precision the higher figure.

    On a machine shared with other work a single measurement can catch a busy moment; the peak
    is the best the machine showed, so the best of both is kept (both are recorded).
    """
    out = dict(first)
    peaks = dict(first.get("peak_gflop_per_s") or {})
    for p, value in (again.get("peak_gflop_per_s") or {}).items():
        peaks[p] = max(value, peaks.get(p, 0.0))
        if p in out:
            out[p] = {**out[p], "gflop_per_s_measurements": [first[p]["gflop_per_s"], again[p]["gflop_per_s"]]}
    out["peak_gflop_per_s"] = peaks
    out["method"] = f"{first.get('method')}; measured before and after the loops, the higher kept"
    return out


# ----------------------------------------------------------------------------- FLOPs of an encoder


@dataclasses.dataclass(frozen=True)
class EncoderShape:
    """What the FLOP count needs of a transformer encoder's configuration."""

    layers: int
    hidden: int
    heads: int
    head_dim: int
    intermediate: int

    @property
    def attn_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def params_matmul_per_layer(self) -> int:
        """Weights of the matrix products of one layer: Q, K, V and output (4 d d_attn), FFN in and out (2 d d_ff)."""
        return 4 * self.hidden * self.attn_dim + 2 * self.hidden * self.intermediate

    def to_dict(self) -> dict[str, int]:
        return {**dataclasses.asdict(self), "params_matmul": self.layers * self.params_matmul_per_layer}


def encoder_shape(config_or_model: Any) -> EncoderShape:
    """The :class:`EncoderShape` of a Hugging Face config (BERT-style names), or of a model holding one."""
    config = getattr(config_or_model, "config", config_or_model)
    hidden, heads = int(config.hidden_size), int(config.num_attention_heads)
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    return EncoderShape(
        layers=int(config.num_hidden_layers),
        hidden=hidden,
        heads=heads,
        head_dim=int(head_dim),
        intermediate=int(config.intermediate_size),
    )


def encoder_forward_flops(shape: EncoderShape, batch: int, seq_len: int) -> float:
    """FLOPs of one forward pass of ``batch`` sequences padded to ``seq_len``: ``N B (2 L P + 4 L^2 d_attn)``.

    ``P`` = :attr:`EncoderShape.params_matmul_per_layer`; see the module docstring for the
    formula's source (Kaplan et al. 2020; Narayanan et al. 2021). A training step (forward and
    backward) is 3 times this.
    """
    per_layer = 2.0 * seq_len * shape.params_matmul_per_layer + 4.0 * seq_len**2 * shape.attn_dim
    return float(shape.layers * batch * per_layer)


def shapes_flops(shape: EncoderShape, shapes, *, training: bool) -> float:
    """FLOPs of the forward passes on ``shapes`` (``(batch, seq_len)`` each), times 3 when ``training``."""
    total = sum(encoder_forward_flops(shape, b, n) for b, n in shapes)
    return 3.0 * total if training else total


def find_encoder(model: torch.nn.Module) -> torch.nn.Module:
    """The transformer encoder inside ``model``: the first module with ``embeddings``, ``encoder`` and ``config``."""
    for m in model.modules():
        if all(hasattr(m, a) for a in ("embeddings", "encoder", "config")):
            return m
    raise ValueError(f"no BERT-style encoder (a module with embeddings, encoder and config) in {type(model).__name__}")


class ShapeRecorder:
    """Notes ``(batch, seq_len)`` of every pass through ``model``'s encoder (a forward hook on its embeddings).

    Use as a context manager; ``shapes`` lists the passes in order, ``shape`` is the encoder's
    :class:`EncoderShape`.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        encoder = find_encoder(model)
        self.shape = encoder_shape(encoder)
        self._module = encoder.embeddings
        self.shapes: list[tuple[int, int]] = []
        self._handle = None

    def _hook(self, _module, _inputs, output) -> None:
        out = output[0] if isinstance(output, tuple) else output
        self.shapes.append((int(out.shape[0]), int(out.shape[1])))

    def __enter__(self) -> ShapeRecorder:
        self._handle = self._module.register_forward_hook(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def flops(self, start: int = 0, stop: int | None = None, *, training: bool) -> float:
        return shapes_flops(self.shape, self.shapes[start:stop], training=training)


def utilisation(flops: float, seconds: float, peak_gflop_per_s: float | None) -> dict[str, Any]:
    """``{"gflop_per_s", "fraction_of_peak"}`` of ``flops`` done in ``seconds`` (fraction NaN without a peak)."""
    from .common import ratio

    gflops = ratio(flops / 1e9, seconds)
    frac = ratio(gflops, peak_gflop_per_s) if peak_gflop_per_s is not None else float("nan")
    return {"gflop_per_s": gflops, "fraction_of_peak": frac if not math.isnan(gflops) else float("nan")}


def attach_peak(section: dict[str, Any], peak: dict[str, float]) -> dict[str, Any]:
    """``section`` with ``peak_gflop_per_s`` and ``fraction_of_peak`` (re)set on every entry holding ``gflop_per_s``.

    An entry's precision is its ``precision_asked`` (training variants) or its key (``fp32``, ``bf16``).
    """
    from .common import ratio

    out = dict(section)
    for key, entry in section.items():
        if not isinstance(entry, dict) or "gflop_per_s" not in entry:
            continue
        p = entry.get("precision_asked", key)
        if p in peak:
            out[key] = {**entry, "peak_gflop_per_s": peak[p], "fraction_of_peak": ratio(entry["gflop_per_s"], peak[p])}
    return out
