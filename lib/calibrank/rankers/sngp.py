"""``sngp``: SNGP cross-encoder (Liu et al. 2020) as used by GPF-BERT (Ye et al., ICASSP 2023, sec. 2.1).

The model
---------
The pointwise cross-encoder of :mod:`.base` with two changes:

* **spectral normalisation** (GPF-BERT eq. 1; :class:`calibrank.gp.SpectralNormLinear`) of the
  pooler's dense layer (``spectral_norm="pooler"``, the BERT-scale practice of SNGP), of every
  linear layer of the encoder (``"all"``: the paper's "each residual layer"; it rescales the
  pretrained weights, so it is an ablation) or of none (``"none"``). ``sn_bound`` is the bound
  ``c`` and ``sn_power_iterations`` the power-iteration steps per training forward pass;
* the dense output layer is replaced by a **random-Fourier-feature GP**
  (:class:`calibrank.gp.RandomFeatureGP`, eqs. 2-5) on the (dropped-out, in training) pooled
  feature: ``n_features`` features, ``length_scale``, ``feature_scale``, ``ridge`` (prior
  precision of the output weights), ``momentum`` (``None``: the exact sum of eq. 4, else the
  moving average of eq. 5) and ``mean_field_factor`` (lambda = pi/8).

Training
--------
The one training loop of :mod:`calibrank.training`, with

* the loss on the GP **posterior-mean** logits ``Phi^T beta``: binary cross-entropy
  (``loss="bce"``, SNGP) or focal loss (``loss="focal"``, GPF-BERT; ``focal_gamma`` a number
  >= 0 or ``"adaptive"``, see :mod:`.focal`);
* the **Laplace precision** ``P = ridge I + sum p(1-p) Phi Phi^T`` reset to ``ridge I`` at the
  start of every epoch (the loop's ``on_epoch_start`` hook) and updated in every training
  step from the step's features and logits (inside the loss, the only place the model is in
  training mode). So the finished model's ``P`` holds the last epoch (exact sum) or its
  moving average. Evaluation never writes ``P``: the update is only called from the training
  loss, and :meth:`RandomFeatureGP.update_precision` raises in eval mode.
* ``P`` (and the spectral-norm vectors ``u, v``) are model buffers: they are saved in
  ``model.safetensors`` (and in checkpoints and the early-selection snapshot, so a resumed
  run and the selected best weights carry the ``P`` that goes with them), and a model loaded
  from the cache has the same predictive variance.

Prediction
----------
For each query, the joint Gaussian of its ``K`` candidates' logits,
``N(Phi^T beta, Phi Sigma Phi^T)`` with ``Sigma = P^-1``:

* ``probs`` = sigmoid of the **mean-field logits** ``m / sqrt(1 + lambda var)`` (Lu et al.
  2020), what GPF-BERT reports;
* ``samples`` = sigmoid of ``samples`` (S, default 30) **joint draws** from that Gaussian per
  query, seeded by the ranker's seed (numpy ``Generator``), so that covariances between a
  query's candidates are real. The samples' mean is not ``probs`` (the mean-field logit is an
  approximation of ``E[sigmoid(g)]``); both are recorded.

Departures and choices (see also :mod:`calibrank.gp.random_features`)
----------------------------------------------------------------------
* One logit and a sigmoid (binary pointwise ranker) for the paper's 2-class softmax.
* ``momentum=None`` (exact sum, eq. 4 as written) is the default; eq. 5's moving average is
  ``momentum=0.999``-style. With the exact sum and ``training.eval_every`` set, a model
  selected mid-epoch carries the precision of a partial epoch.
* The precision is accumulated from training-mode features (dropout on), as SNGP does, not
  recomputed by an extra pass over the training data at the final weights.
* The GP output weights ``beta`` start from a seeded draw of the dense layer's default
  initialisation ``U(-1/sqrt(L), 1/sqrt(L))`` (``output_init="dense"``), not from zero. The
  papers do not say how ``beta`` is initialised; zero is a saddle for fine-tuning: the
  encoder receives no gradient until ``beta`` has grown, and ``beta``'s own gradient is
  dominated by the feature component that all pairs share (the pooled features of MiniLM
  have norm ~1.2 and pairwise distances ~0.4-1, so at length scale 1 the random features of
  any two pairs have correlation 0.6-0.95) times the batch's label imbalance, which flips
  sign from batch to batch. On the laptop profile the training loss stayed at ``log 2`` for
  the first ~250 of 500 steps (validation R@1 0.45 at the end against 0.575 for ``bert``).
  A draw from the prior ``N(0, I / ridge)`` (``"prior"``) avoids the saddle but starts from
  logits of standard deviation ~1 that training must first undo (BCE 0.73 after 120 steps).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from ..backbone import Backbone
from ..data.schema import RankingQuery
from ..gp import RandomFeatureGP, SpectralNormLinear
from ..gp.random_features import OUTPUT_INITS
from ..losses import binary_cross_entropy
from ..predictions import Predictions
from ..training import Pairs, TrainResult, collate, length_batches, use_bf16
from ..config import Pooling
from .base import CrossEncoder, Ranker, TrainedModel, head_param_groups, init_cosine_head, sigmoid

__all__ = [
    "SNGPCrossEncoder",
    "SNGPRanker",
    "SPECTRAL_NORM_CHOICES",
    "encode_features",
    "draw_joint",
    "apply_spectral_norm_to",
]

SPECTRAL_NORM_CHOICES = ("pooler", "none", "all")
_JITTERS = (0.0, 1e-9, 1e-7, 1e-5, 1e-3)


# ----------------------------------------------------------------------------- shared helpers


@torch.no_grad()
def encode_features(
    model: nn.Module,
    pairs: Pairs,
    *,
    batch_size: int,
    precision,
    fn: Callable[[nn.Module, dict[str, torch.Tensor]], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Feature vectors ``[N, d]`` (float32, on the model's device) of every pair, in eval mode.

    ``fn(model, batch)`` gives the vectors of a batch (default: ``model.features(**batch)``,
    the pooled [CLS] feature). The vector counterpart of :func:`calibrank.training.score_pairs`
    (which returns one number per pair): same length-sorted batches, same autocast rule.
    """
    device = next(model.parameters()).device
    bf16 = use_bf16(precision, device)
    model.eval()
    out: torch.Tensor | None = None
    for index in length_batches(pairs.lengths, batch_size):
        batch = {k: v.to(device) for k, v in collate(pairs, index).items()}
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=bf16):
            h = fn(model, batch) if fn is not None else model.features(**batch)
        h = h.float()
        if out is None:
            out = torch.empty((len(pairs), h.shape[1]), dtype=torch.float32, device=device)
        out[torch.as_tensor(index, device=device)] = h
    assert out is not None  # pairs are never empty (encode_pairs refuses)
    return out


def draw_joint(mean: torch.Tensor, cov: torch.Tensor, n_samples: int, rng: np.random.Generator) -> torch.Tensor:
    """``n_samples`` joint draws ``[S, Q, K]`` from ``N(mean[q], cov[q])`` for every query ``q``.

    ``mean`` ``[Q, K]``, ``cov`` ``[Q, K, K]`` (float64 inside). Batched Cholesky factors; a
    query whose covariance is numerically singular (near-duplicate candidates) gets a
    diagonal jitter, escalating from 1e-9 to 1e-3 of its mean variance. The standard normals
    come from the numpy ``rng`` (reproducible whatever the device).
    """
    if int(n_samples) != n_samples or n_samples < 1:
        raise ValueError(f"n_samples must be an integer >= 1, got {n_samples}")
    mean64 = mean.detach().to(torch.float64)
    cov64 = cov.detach().to(torch.float64)
    cov64 = 0.5 * (cov64 + cov64.transpose(-1, -2))
    q, k = mean64.shape
    if cov64.shape != (q, k, k):
        raise ValueError(f"cov must have shape [{q}, {k}, {k}], got {tuple(cov64.shape)}")
    scale = cov64.diagonal(dim1=-2, dim2=-1).mean(-1).clamp_min(1e-30)  # [Q]
    eye = torch.eye(k, dtype=torch.float64, device=cov64.device)
    chol = torch.zeros_like(cov64)
    todo = torch.ones(q, dtype=torch.bool, device=cov64.device)
    for jitter in _JITTERS:
        idx = todo.nonzero().squeeze(-1)
        if idx.numel() == 0:
            break
        factor, info = torch.linalg.cholesky_ex(cov64[idx] + (jitter * scale[idx])[:, None, None] * eye)
        ok = info == 0
        chol[idx[ok]] = factor[ok]
        todo[idx[ok]] = False
    if bool(todo.any()):
        raise ValueError(
            f"predictive covariance of {int(todo.sum())} queries is not positive semi-definite even with jitter"
        )
    z = torch.from_numpy(rng.standard_normal((int(n_samples), q, k))).to(cov64.device)
    return mean64.unsqueeze(0) + torch.einsum("qij,sqj->sqi", chol, z)


def apply_spectral_norm_to(
    encoder: nn.Module, where: str, *, bound: float, n_power_iterations: int, seed: int
) -> list[str]:
    """Wrap linear layers of ``encoder`` in :class:`SpectralNormLinear`; returns their names.

    ``where``: ``"pooler"`` (the pooler's dense layer), ``"all"`` (every ``nn.Linear`` in the
    encoder, pooler included) or ``"none"``.
    """
    if where not in SPECTRAL_NORM_CHOICES:
        raise ValueError(f"spectral_norm must be one of {', '.join(SPECTRAL_NORM_CHOICES)}, got {where!r}")
    if where == "none":
        return []
    if where == "pooler":
        pooler = getattr(encoder, "pooler", None)
        dense = getattr(pooler, "dense", None)
        if not isinstance(dense, nn.Linear):
            raise ValueError(
                "spectral_norm='pooler' but the backbone has no pooler dense layer (encoder.pooler.dense); "
                "use spectral_norm='all' or 'none'"
            )
        pooler.dense = SpectralNormLinear(dense, bound=bound, n_power_iterations=n_power_iterations, seed=seed)
        return ["pooler.dense"]
    wrapped = []
    for parent_name, parent in list(encoder.named_modules()):
        if isinstance(parent, SpectralNormLinear):
            continue
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear):
                full = f"{parent_name}.{name}" if parent_name else name
                setattr(parent, name, SpectralNormLinear(child, bound=bound, n_power_iterations=n_power_iterations,
                                                         seed=seed + len(wrapped)))
                wrapped.append(full)
    if not wrapped:
        raise ValueError("spectral_norm='all' found no linear layer in the encoder")
    return wrapped


def _check_positive(where: str, name: str, value: Any, *, integer: bool = False, allow_zero: bool = False) -> None:
    ok_type = (isinstance(value, int) and not isinstance(value, bool)) if integer else (
        isinstance(value, (int, float)) and not isinstance(value, bool))
    ok = ok_type and math.isfinite(value) and (value >= 0 if allow_zero else value > 0)
    if not ok:
        kind = "an integer" if integer else "a finite number"
        rel = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{where}: {name} must be {kind} {rel}, got {value!r}")


# ----------------------------------------------------------------------------- the model


class SNGPCrossEncoder(CrossEncoder):
    """Encoder (spectrally normalised where asked) + dropout + :class:`RandomFeatureGP` on the pooled feature.

    ``forward`` returns the posterior-mean logits (eval-mode validation and ranking use it);
    :meth:`train_logits` also returns the random features for the precision update.
    """

    def __init__(
        self,
        backbone: Backbone,
        *,
        spectral_norm: str = "pooler",
        sn_bound: float = 0.95,
        sn_power_iterations: int = 1,
        gp: dict[str, Any] | None = None,
        head_dropout: float = 0.1,
        seed: int = 0,
        pooling: Pooling | str = Pooling.pooler,
    ) -> None:
        super().__init__(backbone, head_dropout=head_dropout, seed=seed, pooling=pooling)
        if spectral_norm == "pooler" and self.pooling is not Pooling.pooler:
            raise ValueError(f"spectral_norm='pooler' normalises the pooler, which {self.pooling.value!r} pooling "
                             f"does not use; choose 'none' or 'all', or pooling 'pooler'")
        self.spectral_layers = apply_spectral_norm_to(
            self.encoder, spectral_norm, bound=sn_bound, n_power_iterations=sn_power_iterations, seed=seed
        )
        segments = self.pooling is Pooling.segments
        self.head = RandomFeatureGP(backbone.hidden_size, seed=seed, linear_mean=segments, **(gp or {}))
        if segments:  # the GP's prior mean starts where the dense head on these features starts
            init_cosine_head(self.head.prior_mean, backbone.hidden_size)

    def forward(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        return self.head(self.dropout(self.features(input_ids, attention_mask, token_type_ids)))

    def train_logits(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean logits [B], Phi [B, L])`` of a batch (dropout active in training mode)."""
        return self.head(self.dropout(self.features(**batch)), return_features=True)


# ----------------------------------------------------------------------------- the ranker


class SNGPRanker(Ranker):
    """SNGP: spectral normalisation + random-feature GP head with a Laplace posterior (module docstring).

    Args (besides :class:`Ranker`'s):
        spectral_norm: ``"pooler"`` (default), ``"all"`` or ``"none"``.
        sn_bound: spectral-norm bound ``c`` (> 0), default 0.95.
        sn_power_iterations: power-iteration steps per training forward (>= 1).
        n_features: random features ``L`` (>= 1), default 1024.
        length_scale: RBF length scale of the random features (> 0), default 1 (eq. 2). Set it
            against the spread of the pooled features: over distances well below ``l`` the
            features are close to linear in ``h``, and the encoder's gradient through them,
            ``J(h)^T beta``, keeps its direction from one input to the next, as through a dense
            head; over distances near ``l`` it turns from input to input and fine-tuning leaves
            the loss plateau at ``log 2`` late. MiniLM's pooled features have pairwise distances
            0.4-1.2; on the laptop profile (``head_lr`` 3e-3, validation R@1 at steps 250 / 500,
            test R10@1) ``l = 1`` gave 0.30 / 0.44 (test 0.405, ``head_lr`` 1e-3), ``l = 2``
            0.35 / 0.50 (0.475) and ``l = 4`` 0.50 / 0.55 (0.55; seeds 14 and 15: 0.58 and
            0.445, bert 0.58 and 0.56).
        feature_scale: multiplier of the features (> 0), default 1.
        ridge: prior precision of the output weights (> 0), default 1 (eq. 4).
        momentum: ``None`` (exact sum over the last epoch) or in (0, 1) (eq. 5).
        mean_field_factor: lambda of the mean-field logit (>= 0), default pi/8.
        samples: joint posterior draws per query (>= 1), default 30.
        loss: ``"bce"`` or ``"focal"``.
        focal_gamma: focal-loss gamma (>= 0) or ``"adaptive"`` (used with ``loss="focal"``).
        head_dropout: dropout on the pooled feature before the GP layer, default 0.1.
        output_init: initial GP output weights beta: ``"dense"`` (default: a seeded draw of
            ``U(-1/sqrt(L), 1/sqrt(L))``), ``"prior"`` (``N(0, I / ridge)``) or ``"zero"``
            (see :mod:`calibrank.gp.random_features` for why zero stalls fine-tuning).
        head_lr: learning rate of the GP output layer beta (default ``None``: the encoder's
            ``training.lr``, one rate for the whole model as in GPF-BERT). The random features
            are bounded (``||Phi|| <= sqrt(2) s``), so the encoder cannot widen the logits'
            range as it does through a dense head (there the pooled features, of norm ~1.2 at
            the start, can grow to ``sqrt(d)``): ``||beta||`` alone sets it, and at the
            encoder's rate beta barely grows in a short run. PG-DRR (sec. 4.4) gives its GP
            layer a rate of its own, 3e-3, because it "is not fine-tuned"; the laptop profile
            does the same here. Measured on the laptop profile
            (MiniLM, lr 5e-5, 500 steps, in-domain test R10@1 of bert 0.585): at length scale 1
            and ``head_lr=None`` the probabilities stayed within 0.42-0.58, the training BCE at
            0.67 and R10@1 at 0.355; ``head_lr=1e-3`` alone gave 0.405.
    """

    name = "sngp"
    kind = "sngp"  # cache kind: sngp and gpf_bert with identical settings share the trained model

    def __init__(
        self,
        *,
        spectral_norm: str = "pooler",
        sn_bound: float = 0.95,
        sn_power_iterations: int = 1,
        n_features: int = 1024,
        length_scale: float = 1.0,
        feature_scale: float = 1.0,
        ridge: float = 1.0,
        momentum: float | None = None,
        mean_field_factor: float = math.pi / 8,
        samples: int = 30,
        loss: str = "bce",
        focal_gamma: float | str = 2.0,
        head_dropout: float = 0.1,
        head_lr: float | None = None,
        output_init: str = "dense",
        **kw: Any,
    ) -> None:
        super().__init__(**kw)
        from .focal import check_gamma  # local import: focal.py imports this module

        where = self.name
        spectral_norm = getattr(spectral_norm, "value", spectral_norm)  # a config enum member or its value
        loss = getattr(loss, "value", loss)
        if spectral_norm not in SPECTRAL_NORM_CHOICES:
            raise ValueError(f"{where}: spectral_norm must be one of {', '.join(map(repr, SPECTRAL_NORM_CHOICES))}, "
                             f"got {spectral_norm!r}")
        _check_positive(where, "sn_bound", sn_bound)
        _check_positive(where, "sn_power_iterations", sn_power_iterations, integer=True)
        if not (isinstance(n_features, int) and not isinstance(n_features, bool) and n_features >= 1):
            raise ValueError(f"{where}: n_features must be an integer >= 1 (number of random features), got {n_features!r}")
        _check_positive(where, "length_scale", length_scale)
        _check_positive(where, "feature_scale", feature_scale)
        _check_positive(where, "ridge", ridge)
        if momentum is not None and not (isinstance(momentum, (int, float)) and 0.0 < momentum < 1.0):
            raise ValueError(f"{where}: momentum must be null (exact sum) or in the open interval (0, 1), got {momentum!r}")
        _check_positive(where, "mean_field_factor", mean_field_factor, allow_zero=True)
        _check_positive(where, "samples", samples, integer=True)
        if head_lr is None:
            head_lr = self.training.lr  # one rate for the whole model, as in the papers
        _check_positive(where, "head_lr", head_lr)
        output_init = getattr(output_init, "value", output_init)
        if output_init not in OUTPUT_INITS:
            raise ValueError(f"{where}: output_init must be one of {', '.join(map(repr, OUTPUT_INITS))}, "
                             f"got {output_init!r}")
        if loss not in ("bce", "focal"):
            raise ValueError(f"{where}: loss must be 'bce' or 'focal', got {loss!r}")
        focal_gamma = check_gamma(focal_gamma, f"{where}: focal_gamma")
        if not (isinstance(head_dropout, (int, float)) and 0.0 <= head_dropout < 1.0):
            raise ValueError(f"{where}: head_dropout must be a probability in [0, 1), got {head_dropout!r}")
        self.spectral_norm = spectral_norm
        self.sn_bound = float(sn_bound)
        self.sn_power_iterations = int(sn_power_iterations)
        self.gp_params = {
            "n_features": int(n_features),
            "length_scale": float(length_scale),
            "feature_scale": float(feature_scale),
            "ridge": float(ridge),
            "momentum": None if momentum is None else float(momentum),
            "mean_field_factor": float(mean_field_factor),
            "output_init": output_init,
        }
        self.samples = int(samples)
        self.loss = loss
        self.focal_gamma = focal_gamma
        self.head_dropout = float(head_dropout)
        self.head_lr = float(head_lr)
        self.trained: TrainedModel | None = None

    # -------------------------------------------------------------- model, loss, hooks
    def params(self) -> dict[str, Any]:
        """Everything that determines the trained model besides the training settings (the cache key's extra)."""
        return {
            "spectral_norm": self.spectral_norm,
            "sn_bound": self.sn_bound,
            "sn_power_iterations": self.sn_power_iterations,
            **self.gp_params,
            "loss": self.loss,
            "focal_gamma": self.focal_gamma if self.loss == "focal" else None,
            "head_dropout": self.head_dropout,
            "head_lr": self.head_lr,
        }

    def _build(self, seed: int) -> tuple[CrossEncoder, Backbone]:
        _, backbone = super()._build(seed)  # the plain CrossEncoder is dropped; the backbone is reused
        try:
            model = SNGPCrossEncoder(
                backbone,
                spectral_norm=self.spectral_norm,
                sn_bound=self.sn_bound,
                sn_power_iterations=self.sn_power_iterations,
                gp=self.gp_params,
                head_dropout=self.head_dropout,
                seed=seed,
                pooling=self.training.pooling,
            )
        except ValueError as exc:
            raise ValueError(f"{self.name}: {exc}") from exc
        return model, backbone

    def _loss(self, model: nn.Module, batch: dict, labels: torch.Tensor) -> torch.Tensor:
        logits, phi = model.train_logits(batch)
        if model.training:  # always so inside the training loop; never in evaluation
            model.head.update_precision(phi, logits)
        if self.loss == "focal":
            from .focal import focal_loss

            return focal_loss(logits, labels, self.focal_gamma)
        return binary_cross_entropy(logits, labels)

    @staticmethod
    def _reset_precision(model: nn.Module, epoch: int) -> None:
        model.head.reset_precision()

    # -------------------------------------------------------------- interface
    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> "SNGPRanker":
        self.trained = self._train(self.kind, self.seed, train, valid, key_extra=self.params(),
                                   on_epoch_start=self._reset_precision,
                                   param_groups=lambda model: head_param_groups(model, self.head_lr))
        self.fit_seconds = self.trained.result.seconds
        return self

    @property
    def model(self) -> SNGPCrossEncoder:
        return self._require_fit().model  # type: ignore[return-value]

    @torch.no_grad()
    def joint_logits(self, queries: Sequence[RankingQuery]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean [Q, K], cov [Q, K, K])``: the Gaussian posterior of each query's candidate logits (float64)."""
        trained = self._require_fit()
        model = trained.model
        pairs = self._encode(trained.backbone.tokenizer, queries)
        h = encode_features(model, pairs, batch_size=self.training.eval_batch_size, precision=self.training.precision)
        head: RandomFeatureGP = model.head
        q, k = len(queries), pairs.n_candidates
        sigma = head.covariance()  # [L, L] float64, cached until P changes
        means, covs = [], []
        chunk = max(1, 4096 // k)  # queries per chunk: bounds memory at ~4096 x L
        for start in range(0, q, chunk):
            hq = h[start * k:(start + chunk) * k]
            logits, phi = head(hq, return_features=True)
            phi64 = phi.to(torch.float64).reshape(-1, k, head.n_features)
            cov = phi64 @ sigma.to(phi64.device) @ phi64.transpose(1, 2)
            means.append(logits.to(torch.float64).reshape(-1, k))
            covs.append(0.5 * (cov + cov.transpose(1, 2)))
        return torch.cat(means), torch.cat(covs)

    def logit_moments(self, queries: Sequence[RankingQuery]) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance ``[Q, K]`` of each candidate's logit."""
        mean, cov = self.joint_logits(queries)
        return mean.cpu().numpy(), cov.diagonal(dim1=-2, dim2=-1).clamp_min(0.0).cpu().numpy()

    def _predict_arrays(self, queries: Sequence[RankingQuery]) -> tuple[np.ndarray, np.ndarray]:
        mean, cov = self.joint_logits(queries)
        var = cov.diagonal(dim1=-2, dim2=-1).clamp_min(0.0)
        mf = mean / torch.sqrt(1.0 + self.gp_params["mean_field_factor"] * var)
        rng = np.random.default_rng([self.seed, 0x5E6])
        draws = draw_joint(mean, cov, self.samples, rng)
        return sigmoid(mf.cpu().numpy()), sigmoid(draws.cpu().numpy())

    def predict(self, queries: Sequence[RankingQuery]) -> Predictions:
        (probs, samples), seconds = self.timed(self._predict_arrays, queries)
        return self._predictions(queries, probs, samples, seconds=seconds, n_parameters=self.n_parameters,
                                 extra={"params": self.params(), "samples": self.samples})

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def training_results(self) -> list[TrainResult]:
        return [self._require_fit().result]

    def precision_state(self) -> dict[str, torch.Tensor]:
        """Copies of the Laplace-posterior buffers (``precision``, ``n_seen``) of the trained model."""
        head = self.model.head
        return {"precision": head.precision.detach().clone(), "n_seen": head.n_seen.detach().clone()}
