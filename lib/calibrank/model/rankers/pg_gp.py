"""``pg_drr``: PG-DRR (Ye et al., AAAI 2023): a GP output layer with Pólya-Gamma augmentation.

The cross-encoder of :mod:`.base` with its dense output layer replaced by a GP on a learnable
projection of the pooled feature (sec. 3.3; RBF kernel of eq. 4, Matérn and linear for sec. 5.3).
Training (Algorithm 1): each mini-batch is the conditioning set, Gibbs sampling
(:func:`calibrank.model.gp.polya_gamma.gibbs_gp`) seeded from the loop's torch RNG gives ``w``, and
the loss is eq. 13 (:func:`calibrank.model.gp.polya_gamma.fisher_loss`). Prediction (eqs. 14-15)
conditions on a seeded inducing set (:func:`calibrank.model.gp.polya_gamma.select_inducing`), its
posterior stored beside the model with its sha256. Departures (inducing set, moment matching, a
linear mean, the projection's rate): docs/decisions.md, "Settings of the GP and focal rankers on laptop".
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from ...data.schema import RankingQuery
from ...metrics.ranking import recall_at_k
from ...predictions import Predictions
from ...atomic import stable_hash
from ...settings.checks import check_choice
from ...settings.choices import GPKernel, GPMeanFunction, Pooling
from ...settings.schema import PGDRRConfig, check_gp_batch_size
from .. import encode_once
from ..backbone import Backbone
from ..gp.gaussian import draw_joint
from ..gp.polya_gamma import (
    PGPosterior,
    fisher_loss,
    gauss_hermite_sigmoid,
    gibbs_gp,
    linear_kernel,
    matern_kernel,
    rbf_kernel,
    select_inducing,
)
from ..training import TrainResult, read_recorded, save_recorded
from .base import (
    SEGMENT_COSINE_BIAS,
    SEGMENT_COSINE_WEIGHT,
    CrossEncoder,
    Ranker,
    TrainedModel,
    checked,
    encode_features,
    ranker_settings,
    sigmoid,
)

__all__ = ["PGCrossEncoder", "PGDRRRanker", "PGHead", "InducingPosterior", "pg_param_groups"]

log = logging.getLogger(__name__)

_D = PGDRRConfig  # the defaults


# ----------------------------------------------------------------------------- the model


class PGHead(nn.Module):
    """The GP layer's learnable parts: projection ``z = A h + c`` (or identity) and the prior mean function.

    ``m(z) = m0 + v^T z`` (``v`` starts as a dense output layer, so the encoder gets a gradient from
    the first step) or ``m0``; ``m0`` is learnt with ``learn_mean``, else 0.
    """

    mean: torch.Tensor

    def __init__(self, hidden_size: int, *, projection: bool = _D.projection, learn_mean: bool = _D.learn_mean,
                 mean_function: GPMeanFunction | str = _D.mean_function, seed: int = 0) -> None:
        super().__init__()
        mean_function = check_choice("mean_function", mean_function, GPMeanFunction).value
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.projection: nn.Module = nn.Linear(hidden_size, hidden_size) if projection else nn.Identity()
        if learn_mean:
            self.mean = nn.Parameter(torch.zeros(()))
        else:
            self.register_buffer("mean", torch.zeros(()))
        self.mean_function = mean_function
        self.mean_weight: nn.Parameter | None = None
        if mean_function == "linear":  # nn.Linear's default initialisation U(-1/sqrt(d), 1/sqrt(d)), seeded
            gen = torch.Generator(device="cpu").manual_seed(int(seed) + 1)
            bound = 1.0 / math.sqrt(hidden_size)
            self.mean_weight = nn.Parameter((2.0 * torch.rand(hidden_size, generator=gen) - 1.0) * bound)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.projection(h)

    def prior_mean(self, z: torch.Tensor) -> torch.Tensor:
        """``m(z)`` ``[n]`` (float64, differentiable in ``m0``, ``v`` and ``z``) of GP inputs ``z`` ``[n, d]``."""
        with torch.autocast(device_type=z.device.type, enabled=False):
            m0 = self.mean.to(device=z.device, dtype=torch.float64)
            if self.mean_weight is None:
                return m0.expand(z.shape[0])
            return m0 + z.to(torch.float64) @ self.mean_weight.to(torch.float64)


class PGCrossEncoder(CrossEncoder):
    """Encoder + dropout + :class:`PGHead`; ``forward`` returns the GP input features ``z`` ``[B, d]``."""

    def __init__(self, backbone: Backbone, *, projection: bool = _D.projection, learn_mean: bool = _D.learn_mean,
                 mean_function: GPMeanFunction | str = _D.mean_function, head_dropout: float = _D.head_dropout,
                 seed: int = 0, pooling: Pooling | str = Pooling.pooler) -> None:
        super().__init__(backbone, head_dropout=head_dropout, seed=seed, pooling=pooling)
        self.head = PGHead(backbone.hidden_size, projection=projection, learn_mean=learn_mean,
                           mean_function=mean_function, seed=seed)
        if self.pooling is Pooling.segments and self.head.mean_function == GPMeanFunction.linear:
            # The prior mean starts where the dense head on these features starts (a scaled
            # cosine of the two segments, :func:`calibrank.model.rankers.base.init_cosine_head`),
            # through an identity projection.
            d = backbone.hidden_size
            with torch.no_grad():
                if isinstance(self.head.projection, nn.Linear):
                    self.head.projection.weight.copy_(torch.eye(d))
                    self.head.projection.bias.zero_()
                self.head.mean_weight.fill_(SEGMENT_COSINE_WEIGHT / math.sqrt(d))
                if learn_mean:  # a fixed mean stays 0, as PGHead documents
                    self.head.mean.fill_(SEGMENT_COSINE_BIAS)

    def forward(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        return self.head(self.dropout(self.features(input_ids, attention_mask, token_type_ids)))


def pg_param_groups(model: PGCrossEncoder, gp_lr: float, projection_lr: float | None = None) -> list[dict]:
    """Optimizer groups: encoder at ``training.lr``, mean function at ``gp_lr``, projection at ``projection_lr``."""
    head = model.head
    proj = [p for p in head.projection.parameters() if p.requires_grad]
    mean = [p for p in head.parameters() if p.requires_grad and all(p is not q for q in proj)]
    taken = {id(p) for p in proj + mean}
    rest = [p for p in model.parameters() if p.requires_grad and id(p) not in taken]
    groups: list[dict] = []
    if projection_lr is None:
        groups.append({"params": rest + proj, "name": "encoder"})
    else:
        groups.append({"params": rest, "name": "encoder"})
        if proj:
            groups.append({"params": proj, "lr": float(projection_lr), "name": "projection"})
    if mean:
        groups.append({"params": mean, "lr": float(gp_lr), "name": "gp"})
    return groups


# ----------------------------------------------------------------------------- the posterior


@dataclass
class InducingPosterior:
    """What prediction needs: the inducing pairs (index, features, labels), the chains' ``w`` and derived factors."""

    index: np.ndarray  # [M] indices of the training pairs (query-major order of the training queries)
    features: torch.Tensor  # [M, d] float32 GP input features z of the inducing pairs
    labels: torch.Tensor  # [M] float64 0/1
    w: torch.Tensor  # [C, M] float64 Pólya-Gamma draws of the last Gibbs step
    jitter: float  # diagonal jitter Gibbs added to K
    posterior: PGPosterior
    q_bar: torch.Tensor  # [M, M] mean over chains of (K + W_c^-1)^-1

    def tensors(self) -> dict[str, torch.Tensor]:
        return {
            "index": torch.as_tensor(self.index, dtype=torch.int64),
            "features": self.features.detach().cpu().contiguous(),
            "labels": self.labels.detach().cpu().contiguous(),
            "w": self.w.detach().cpu().contiguous(),
            "jitter": torch.tensor(float(self.jitter), dtype=torch.float64),
        }


def _read_posterior(path: Path) -> tuple[dict[str, torch.Tensor], dict] | None:
    """The tensors and metadata of the inducing posterior cached in ``path``; None when there is no sound
    file there (missing; not the bytes recorded beside it; unreadable), logged unless missing."""
    try:
        tensors, meta = read_recorded(path)
        lacking = sorted({"index", "features", "labels", "w", "jitter"} - tensors.keys())
        if lacking:
            raise ValueError(f"{path}: it holds no {lacking}")
    except FileNotFoundError:
        return None
    except (ValueError, OSError) as exc:  # DigestMismatch is a ValueError
        log.warning("%s: the cached inducing posterior is not used (%s); computing it again", path,
                    str(exc).removeprefix(f"{path}: "))
        return None
    return tensors, meta


# ----------------------------------------------------------------------------- the ranker


class PGDRRRanker(Ranker):
    """PG-DRR: GP output layer with Pólya-Gamma Gibbs sampling and Fisher-identity training (:mod:`.pg_gp`).

    Keyword arguments (besides :class:`Ranker`'s): the fields of :class:`calibrank.settings.config.PGDRRConfig`,
    with its defaults and checks (:func:`calibrank.model.rankers.base.ranker_settings`):

    * kernel: ``kernel`` (``"rbf"``, ``"matern"`` with ``nu``, ``"linear"``), ``length_scale``,
      ``output_scale`` (the prior variance);
    * sampling: ``gibbs_steps``, ``gibbs_chains``, ``inducing`` (capped at the training pairs),
      ``samples`` per query, ``quadrature_points`` for ``probs``;
    * learnable parts: ``projection``, ``projection_lr`` (``None``: ``training.lr``), ``learn_mean``,
      ``mean_function`` (``"linear"``, ``"constant"``), ``gp_lr``, ``head_dropout``.

    The training batch is the GP's conditioning set: ``training.batch_size`` must be at least 2.
    """

    name = "pg_drr"
    kind = "pg_drr"
    #: The config section whose fields are the keyword arguments.
    section: ClassVar[type[PGDRRConfig]] = PGDRRConfig

    def __init__(self, **kw: Any) -> None:
        settings, kw = ranker_settings(self.section, self.name, kw)
        super().__init__(**kw)
        checked(self.name, check_gp_batch_size, self.training.batch_size)
        self.settings = settings
        self.kernel = settings.kernel.value
        self.length_scale = settings.length_scale
        self.output_scale = settings.output_scale
        self.nu = settings.nu
        self.gibbs_steps = settings.gibbs_steps
        self.gibbs_chains = settings.gibbs_chains
        self.gp_lr = settings.gp_lr
        self.projection = settings.projection
        self.learn_mean = settings.learn_mean
        self.mean_function = settings.mean_function.value
        self.projection_lr = settings.projection_lr
        self.inducing = settings.inducing
        self.samples = settings.samples
        self.quadrature_points = settings.quadrature_points
        self.head_dropout = settings.head_dropout
        self.trained: TrainedModel | None = None
        self.state: InducingPosterior | None = None
        self._fit_queries: Sequence[RankingQuery] = ()

    # -------------------------------------------------------------- parameters and kernel
    def params(self) -> dict[str, Any]:
        """What determines the trained model besides the training settings (the cache key's extra)."""
        return {
            "kernel": self.kernel,
            "length_scale": self.length_scale,
            "output_scale": self.output_scale,
            "nu": self.nu if self.kernel == GPKernel.matern else None,
            "gibbs_steps": self.gibbs_steps,
            "gibbs_chains": self.gibbs_chains,
            "gp_lr": self.gp_lr,
            "projection": self.projection,
            "learn_mean": self.learn_mean,
            "mean_function": self.mean_function,
            "projection_lr": self.projection_lr,
            "head_dropout": self.head_dropout,
            "inducing": self.inducing,  # early selection validates through the inducing posterior
        }

    def prediction_params(self) -> dict[str, Any]:
        """What determines the inducing posterior given the trained model."""
        return {"inducing": self.inducing, "gibbs_steps": self.gibbs_steps, "gibbs_chains": self.gibbs_chains,
                "seed": self.seed, "stratified": True}

    def kernel_fn(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        """The kernel (float64, autocast off) between feature matrices ``[n, d]`` and ``[m, d]``."""
        if self.kernel == GPKernel.rbf:
            fn = partial(rbf_kernel, length_scale=self.length_scale, output_scale=self.output_scale)
        elif self.kernel == GPKernel.matern:
            fn = partial(matern_kernel, nu=self.nu, length_scale=self.length_scale, output_scale=self.output_scale)
        else:
            fn = partial(linear_kernel, length_scale=self.length_scale, output_scale=self.output_scale)
        with torch.autocast(device_type=x1.device.type, enabled=False):
            a = x1.to(torch.float64)
            b = a if x2 is x1 else x2.to(torch.float64)
            return fn(a, b)

    # -------------------------------------------------------------- model, loss, hooks
    def _build(self, seed: int) -> tuple[CrossEncoder, Backbone]:
        _, backbone = super()._build(seed)
        model = PGCrossEncoder(backbone, projection=self.projection, learn_mean=self.learn_mean,
                               mean_function=self.mean_function, head_dropout=self.head_dropout, seed=seed,
                               pooling=self.training.pooling)
        return model, backbone

    def _loss(self, model: nn.Module, batch: dict, labels: torch.Tensor) -> torch.Tensor:
        z = model(**batch)
        n = int(labels.shape[0])
        if n < 2:  # a 1-pair last batch: no conditioning set; zero loss, zero gradient
            return z.float().sum() * 0.0
        # the Gibbs draws: a numpy generator seeded from the loop's (seeded, checkpointed) torch RNG
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,)).item()))
        K = self.kernel_fn(z, z)
        mu = model.head.prior_mean(z)
        chains = gibbs_gp(K.detach(), labels, mu.detach(), self.gibbs_steps, self.gibbs_chains, rng=rng)
        return fisher_loss(K, mu, labels, chains.w, jitter=chains.jitter).float()

    def _param_groups(self, model: nn.Module) -> list[dict]:
        return pg_param_groups(model, self.gp_lr, self.projection_lr)

    # -------------------------------------------------------------- the inducing posterior
    def _inducing_pairs(self, tokenizer, train: Sequence[RankingQuery]):
        """Indices (query-major pair order) and the tokenised pairs of the seeded, stratified inducing set."""
        labels = np.array([lab for q in train for lab in q.labels], dtype=np.int64)
        k = len(train[0].candidates)
        size = min(self.inducing, labels.shape[0])
        if size < self.inducing:
            log.info("%s: inducing set capped at the %d training pairs (asked for %d)", self.name, size, self.inducing)
        index = select_inducing(labels, size, np.random.default_rng([self.seed, 0x1D]))
        singles = []
        for i in index:
            q = train[int(i) // k]
            c = int(i) % k
            singles.append(RankingQuery(f"{q.qid}#{c}", q.context, (q.candidates[c],), (q.labels[c],)))
        return index, self._encode(tokenizer, singles), torch.as_tensor(labels[index], dtype=torch.float64)

    def _posterior(self, model: PGCrossEncoder, index: np.ndarray, features: torch.Tensor, labels: torch.Tensor,
                   w: torch.Tensor, jitter: float) -> InducingPosterior:
        device = features.device
        K = self.kernel_fn(features, features)
        post = PGPosterior.from_w(K, w.to(device), labels.to(device), model.head.prior_mean(features).detach(),
                                  jitter=jitter)
        b_inv = torch.cholesky_inverse(post.chol_b)  # [C, M, M]
        s = post.sqrt_w
        q_bar = (s.unsqueeze(-1) * b_inv * s.unsqueeze(-2)).mean(0)
        return InducingPosterior(index=np.asarray(index), features=features, labels=labels.to(device), w=w.to(device),
                                 jitter=float(jitter), posterior=post, q_bar=0.5 * (q_bar + q_bar.t()))

    @torch.no_grad()
    def _compute_posterior(self, model: PGCrossEncoder, index: np.ndarray, pairs, labels: torch.Tensor) -> InducingPosterior:
        feats = encode_features(model, pairs, batch_size=self.training.eval_batch_size, precision=self.training.precision,
                                fn=lambda m, b: m(**b))
        K = self.kernel_fn(feats, feats)
        rng = np.random.default_rng([self.seed, 0x61B])
        chains = gibbs_gp(K, labels.to(feats.device), model.head.prior_mean(feats).detach(), self.gibbs_steps,
                          self.gibbs_chains, rng=rng)
        return self._posterior(model, index, feats, labels, chains.w.to(torch.float64), chains.jitter)

    def _posterior_path(self, workdir: Path) -> Path:
        return workdir / f"pg_posterior-{stable_hash(self.prediction_params(), 10)}.safetensors"

    def _load_or_compute_posterior(self, trained: TrainedModel, train: Sequence[RankingQuery]) -> InducingPosterior:
        path = self._posterior_path(trained.workdir)
        model: PGCrossEncoder = trained.model  # type: ignore[assignment]
        device = next(model.parameters()).device
        stored = _read_posterior(path)
        if stored is None:
            index, pairs, labels = self._inducing_pairs(trained.backbone.tokenizer, train)
            state = self._compute_posterior(model, index, pairs, labels)
            save_recorded(path, state.tensors(), {"params": self.prediction_params(),
                                                  "model_step": trained.result.best_step})
            stored = read_recorded(path)
        # always rebuilt from the stored tensors, so a fresh fit and a cached one predict identically
        t, meta = stored
        if meta.get("params") != self.prediction_params():
            raise ValueError(f"{path}: stored inducing posterior was made with {meta.get('params')}, "
                             f"not {self.prediction_params()}")
        return self._posterior(model, t["index"].numpy(), t["features"].to(device), t["labels"].to(device),
                               t["w"].to(device), float(t["jitter"]))

    def _validator(self, tokenizer, valid: Sequence[RankingQuery]):
        """R@1 on ``valid`` from the posterior mean given an inducing posterior computed with the current encoder."""
        pairs = self._encode(tokenizer, valid)
        index, ind_pairs, ind_labels = self._inducing_pairs(tokenizer, self._fit_queries)

        def validate(model: nn.Module) -> float:
            state = self._compute_posterior(model, index, ind_pairs, ind_labels)
            feats = encode_features(model, pairs, batch_size=self.training.eval_batch_size,
                                    precision=self.training.precision, fn=lambda m, b: m(**b))
            mean = self._mean(state, feats, model).cpu().numpy()
            scores = mean.reshape(len(pairs.qids), pairs.n_candidates)
            labels = pairs.labels.reshape(len(pairs.qids), pairs.n_candidates)
            return float(np.nanmean(recall_at_k(scores, labels, 1)))

        return validate

    # -------------------------------------------------------------- predictive (eq. 14)
    def _mean(self, state: InducingPosterior, feats: torch.Tensor, model: PGCrossEncoder, chunk: int = 8192) -> torch.Tensor:
        out = []
        for start in range(0, feats.shape[0], chunk):
            x = feats[start:start + chunk]
            kc = self.kernel_fn(state.features, x)
            out.append(model.head.prior_mean(x).detach() + (state.posterior.alpha @ kc).mean(0))
        return torch.cat(out)

    @torch.no_grad()
    def _features(self, queries: Sequence[RankingQuery]) -> torch.Tensor:
        """The GP layer's inputs ``[Q*K, d]`` (the model's forward), one row per pair in query order."""
        trained, _ = self._require_fit()
        pairs = self._encode(trained.backbone.tokenizer, queries)
        if encode_once.applies(trained.model):  # no joint layer: each distinct side encoded once
            return encode_once.features_once(trained.model, pairs, batch_size=self.training.eval_batch_size,
                                             precision=self.training.precision,
                                             head=lambda m, pooled: m.head(m.dropout(pooled)))
        return encode_features(trained.model, pairs, batch_size=self.training.eval_batch_size,
                               precision=self.training.precision, fn=lambda m, b: m(**b))

    @torch.no_grad()
    def joint_logits(self, queries: Sequence[RankingQuery], features: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean [Q, K], cov [Q, K, K])``: the moment-matched Gaussian predictive of each query's logits (float64).

        ``features``: the queries' GP inputs (:meth:`_features`) when already computed.
        """
        trained, state = self._require_fit()
        model: PGCrossEncoder = trained.model  # type: ignore[assignment]
        feats = self._features(queries) if features is None else features
        q, k = len(queries), len(queries[0].candidates)
        alpha, q_bar = state.posterior.alpha, state.q_bar
        m = state.features.shape[0]
        means, covs = [], []
        per_chunk = max(1, 4096 // k)
        for start in range(0, q, per_chunk):
            x = feats[start * k:(start + per_chunk) * k]
            nq = x.shape[0] // k
            kc = self.kernel_fn(state.features, x)  # [M, nq*k]
            chain_means = model.head.prior_mean(x).detach() + alpha @ kc  # [C, nq*k]
            reduction = (kc.reshape(m, nq, k).permute(1, 2, 0) @ (q_bar @ kc).reshape(m, nq, k).permute(1, 0, 2))
            k_test = torch.stack([self.kernel_fn(x[i * k:(i + 1) * k], x[i * k:(i + 1) * k]) for i in range(nq)])
            cm = chain_means.reshape(-1, nq, k)
            centred = cm - cm.mean(0, keepdim=True)
            between = torch.einsum("cqi,cqj->qij", centred, centred) / cm.shape[0]
            cov = k_test - reduction + between
            means.append(cm.mean(0))
            covs.append(0.5 * (cov + cov.transpose(1, 2)))
        return torch.cat(means), torch.cat(covs)

    def logit_moments(self, queries: Sequence[RankingQuery]) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and variance ``[Q, K]`` of each candidate's logit."""
        mean, cov = self.joint_logits(queries)
        return mean.cpu().numpy(), cov.diagonal(dim1=-2, dim2=-1).clamp_min(0.0).cpu().numpy()

    def _model_key_extra(self) -> dict:
        return self.params()

    def _train_hooks(self) -> dict[str, Any]:
        return {"param_groups": self._param_groups}

    def training_loss(self) -> None:
        return None  # the Fisher-identity loss of calibrank.model.gp, reached through _loss

    # -------------------------------------------------------------- interface
    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> "PGDRRRanker":
        if not train:
            raise ValueError(f"{self.name}: no training queries")
        self._fit_queries = train
        try:
            self.trained = self._train(self.seed, train, valid)
        finally:
            self._fit_queries = ()
        self.state = self._load_or_compute_posterior(self.trained, train)
        self.fit_seconds = self.trained.result.seconds
        return self

    def _require_fit(self) -> tuple[TrainedModel, InducingPosterior]:
        if self.trained is None or self.state is None:
            raise RuntimeError(f"ranker {self.name!r}: call fit() before predict()")
        return self.trained, self.state

    def _predict_arrays(self, queries: Sequence[RankingQuery], features: torch.Tensor | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
        mean, cov = self.joint_logits(queries, features)
        var = cov.diagonal(dim1=-2, dim2=-1).clamp_min(0.0)
        probs = gauss_hermite_sigmoid(mean, var, self.quadrature_points)
        draws = draw_joint(mean, cov, self.samples, np.random.default_rng([self.seed, 0x5A3]))
        return probs.cpu().numpy(), sigmoid(draws.cpu().numpy())

    def predict(self, queries: Sequence[RankingQuery]) -> Predictions:
        return self.predict_many([queries])[0]

    def _meta(self) -> dict[str, Any]:
        _, state = self._require_fit()
        return {"params": self.params(), "samples": self.samples, "inducing": int(state.features.shape[0]),
                "gibbs_jitter": state.jitter}

    #: A pair's GP input depends on the pair only; the joint draws are made per query set.
    shares_pairs = True

    def predict_many(self, query_sets: Sequence[Sequence[RankingQuery]]) -> list[Predictions]:
        """Each distinct pair's GP input encoded once; each set's joint Gaussian and seeded draws as :meth:`predict`."""
        return self._posterior_predictions(query_sets, self._meta)

    @property
    def n_parameters(self) -> int:
        trained, _ = self._require_fit()
        return sum(p.numel() for p in trained.model.parameters())

    def training_results(self) -> list[TrainResult]:
        return [self._require_fit()[0].result]
