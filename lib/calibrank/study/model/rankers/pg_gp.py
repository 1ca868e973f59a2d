"""``pg_drr``: PG-DRR (Ye et al., AAAI 2023): a GP output layer with Pólya-Gamma augmentation.

The cross-encoder (:mod:`calibrank.study.model.cross_encoder`) with a GP output layer in place of the
dense one, on a learnable projection of the pooled feature (sec. 3.3; RBF kernel of eq. 4, Matérn and linear for sec. 5.3).
Training (Algorithm 1): each mini-batch is the conditioning set, Gibbs sampling
(:func:`calibrank.study.model.gp.polya_gamma.gibbs_gp`) seeded from the loop's torch RNG gives ``w``, and
the loss is eq. 13 (:func:`calibrank.study.model.gp.polya_gamma.fisher_loss`). Prediction (eqs. 14-15)
conditions on a seeded inducing set (:func:`calibrank.study.model.gp.polya_gamma.select_inducing`), its
posterior stored beside the model with its sha256. Departures (inducing set, moment matching, a
linear mean, the projection's rate): docs/decisions.md, "Settings of the GP and focal rankers on laptop".
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from calibrank.atomic import stable_hash
from calibrank.metrics.ranking import recall_at_k
from calibrank.study.data.schema import RankingQuery
from calibrank.study.model.backbone import Backbone
from calibrank.study.model.cross_encoder import SEGMENT_COSINE_BIAS, SEGMENT_COSINE_WEIGHT, CrossEncoder
from calibrank.study.model.gp.inducing import InducingPosterior, inducing_posterior, predictive_mean, predictive_moments
from calibrank.study.model.gp.polya_gamma import (
    fisher_loss,
    gauss_hermite_sigmoid,
    gibbs_gp,
    linear_kernel,
    matern_kernel,
    rbf_kernel,
    select_inducing,
)
from calibrank.study.model.rankers.gp_base import GPRanker
from calibrank.study.model.rankers.run import RankerRun
from calibrank.study.model.rankers.scoring import encode_features
from calibrank.study.model.training import read_recorded, save_recorded
from calibrank.study.settings.checks import ConfigError, check_choice
from calibrank.study.settings.choices import GPKernel, GPMeanFunction, Pooling
from calibrank.study.settings.config import build_section
from calibrank.study.settings.schema import PGDRRConfig, check_gp_batch_size

__all__ = ["PGCrossEncoder", "PGDRRRanker", "PGHead", "pg_param_groups"]

log = logging.getLogger(__name__)

_D = PGDRRConfig  # the defaults


# ----------------------------------------------------------------------------- the model


class PGHead(nn.Module):
    """The GP layer's learnable parts: projection ``z = A h + c`` (or identity) and the prior mean function.

    ``m(z) = m0 + v^T z`` (``v`` starts as a dense output layer, so the encoder gets a gradient from
    the first step) or ``m0``; ``m0`` is learnt with ``learn_mean``, else 0.
    """

    mean: torch.Tensor

    def __init__(
        self,
        hidden_size: int,
        *,
        projection: bool = _D.projection,
        learn_mean: bool = _D.learn_mean,
        mean_function: GPMeanFunction | str = _D.mean_function,
        seed: int = 0,
    ) -> None:
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

    def __init__(
        self,
        backbone: Backbone,
        *,
        projection: bool = _D.projection,
        learn_mean: bool = _D.learn_mean,
        mean_function: GPMeanFunction | str = _D.mean_function,
        head_dropout: float = _D.head_dropout,
        seed: int = 0,
        pooling: Pooling | str = Pooling.pooler,
    ) -> None:
        head = PGHead(
            backbone.hidden_size, projection=projection, learn_mean=learn_mean, mean_function=mean_function, seed=seed
        )
        super().__init__(backbone, head_dropout=head_dropout, seed=seed, pooling=pooling, head=head)
        if self.pooling is Pooling.segments and self.head.mean_function == GPMeanFunction.linear:
            # The prior mean starts where the dense head on these features starts (a scaled
            # cosine of the two segments, :func:`calibrank.study.model.cross_encoder.init_cosine_head`),
            # through an identity projection.
            d = backbone.hidden_size
            with torch.no_grad():
                if isinstance(self.head.projection, nn.Linear):
                    self.head.projection.weight.copy_(torch.eye(d))
                    self.head.projection.bias.zero_()
                self.head.mean_weight.fill_(SEGMENT_COSINE_WEIGHT / math.sqrt(d))
                if learn_mean:  # a fixed mean stays 0, as PGHead documents
                    self.head.mean.fill_(SEGMENT_COSINE_BIAS)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, **sides) -> torch.Tensor:
        return self.head(self.dropout(self.features(input_ids, attention_mask, token_type_ids, **sides)))


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


# ----------------------------------------------------------------------------- the stored posterior


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
        log.warning(
            "%s: the cached inducing posterior is not used (%s); computing it again",
            path,
            str(exc).removeprefix(f"{path}: "),
        )
        return None
    return tensors, meta


# ----------------------------------------------------------------------------- the ranker


class PGDRRRanker(GPRanker):
    """PG-DRR: GP output layer with Pólya-Gamma Gibbs sampling and Fisher-identity training (:mod:`.pg_gp`).

    Parameters (after the :class:`~calibrank.study.model.rankers.run.RankerRun`), the fields of
    :class:`calibrank.study.settings.schema.PGDRRConfig` with its defaults and checks:

    kernel, length_scale, output_scale, nu
        The kernel (``rbf``, ``matern`` with ``nu``, ``linear``) and its scales (the output scale is the prior variance).
    gibbs_steps, gibbs_chains, inducing, samples, quadrature_points
        Sampling: Gibbs steps and chains, the inducing set (capped at the training pairs), joint draws
        per query, Gauss-Hermite points for ``probs``.
    projection, projection_lr, learn_mean, mean_function, gp_lr, head_dropout
        The learnable parts: the projection and its rate (``None``: ``training.lr``), the prior mean and
        the GP layer's rate, dropout before the head.

    The training batch is the GP's conditioning set: ``training.batch_size`` must be at least 2.
    """

    name = "pg_drr"
    kind = "pg_drr"
    draw_stream = 0x5A3

    def __init__(
        self,
        run: RankerRun,
        /,
        *,
        kernel: GPKernel | str = _D.kernel,
        length_scale: float = _D.length_scale,
        output_scale: float = _D.output_scale,
        nu: float = _D.nu,
        gibbs_steps: int = _D.gibbs_steps,
        gibbs_chains: int = _D.gibbs_chains,
        gp_lr: float = _D.gp_lr,
        projection: bool = _D.projection,
        learn_mean: bool = _D.learn_mean,
        mean_function: GPMeanFunction | str = _D.mean_function,
        projection_lr: float | None = _D.projection_lr,
        inducing: int = _D.inducing,
        samples: int = _D.samples,
        quadrature_points: int = _D.quadrature_points,
        head_dropout: float = _D.head_dropout,
    ) -> None:
        super().__init__(run)
        try:
            check_gp_batch_size(self.training.batch_size)
        except ConfigError as exc:
            raise ConfigError(f"{self.name}: {exc}") from None
        self.settings = build_section(
            PGDRRConfig,
            dict(
                kernel=kernel,
                length_scale=length_scale,
                output_scale=output_scale,
                nu=nu,
                gibbs_steps=gibbs_steps,
                gibbs_chains=gibbs_chains,
                gp_lr=gp_lr,
                projection=projection,
                learn_mean=learn_mean,
                mean_function=mean_function,
                projection_lr=projection_lr,
                inducing=inducing,
                samples=samples,
                quadrature_points=quadrature_points,
                head_dropout=head_dropout,
            ),
            where=self.name,
        )
        self.samples = self.settings.samples
        self.state: InducingPosterior | None = None
        self._fit_queries: Sequence[RankingQuery] = ()

    # -------------------------------------------------------------- parameters and kernel
    def params(self) -> dict[str, Any]:
        """What determines the trained model besides the training settings (the cache key's extra)."""
        s = self.settings
        return {
            "kernel": s.kernel.value,
            "length_scale": s.length_scale,
            "output_scale": s.output_scale,
            "nu": s.nu if s.kernel is GPKernel.matern else None,
            "gibbs_steps": s.gibbs_steps,
            "gibbs_chains": s.gibbs_chains,
            "gp_lr": s.gp_lr,
            "projection": s.projection,
            "learn_mean": s.learn_mean,
            "mean_function": s.mean_function.value,
            "projection_lr": s.projection_lr,
            "head_dropout": s.head_dropout,
            "inducing": s.inducing,
        }  # early selection validates through the inducing posterior

    def prediction_params(self) -> dict[str, Any]:
        """What determines the inducing posterior given the trained model."""
        s = self.settings
        return {
            "inducing": s.inducing,
            "gibbs_steps": s.gibbs_steps,
            "gibbs_chains": s.gibbs_chains,
            "seed": self.seed,
            "stratified": True,
        }

    def kernel_fn(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        """The kernel (float64, autocast off) between feature matrices ``[n, d]`` and ``[m, d]``."""
        s = self.settings
        if s.kernel is GPKernel.rbf:
            fn = partial(rbf_kernel, length_scale=s.length_scale, output_scale=s.output_scale)
        elif s.kernel is GPKernel.matern:
            fn = partial(matern_kernel, nu=s.nu, length_scale=s.length_scale, output_scale=s.output_scale)
        else:
            fn = partial(linear_kernel, length_scale=s.length_scale, output_scale=s.output_scale)
        with torch.autocast(device_type=x1.device.type, enabled=False):
            a = x1.to(torch.float64)
            b = a if x2 is x1 else x2.to(torch.float64)
            return fn(a, b)

    # -------------------------------------------------------------- model, loss, hooks
    def build_model(self, backbone: Backbone, seed: int) -> PGCrossEncoder:
        s = self.settings
        return PGCrossEncoder(
            backbone,
            projection=s.projection,
            learn_mean=s.learn_mean,
            mean_function=s.mean_function,
            head_dropout=s.head_dropout,
            seed=seed,
            pooling=self.training.pooling,
        )

    def loss(self, model: nn.Module, batch: dict, labels: torch.Tensor) -> torch.Tensor:
        z = model(**batch)
        n = int(labels.shape[0])
        if n < 2:  # a 1-pair last batch: no conditioning set; zero loss, zero gradient
            return z.float().sum() * 0.0
        # the Gibbs draws: a numpy generator seeded from the loop's (seeded, checkpointed) torch RNG
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,)).item()))
        K = self.kernel_fn(z, z)
        mu = model.head.prior_mean(z)
        chains = gibbs_gp(
            K.detach(), labels, mu.detach(), self.settings.gibbs_steps, self.settings.gibbs_chains, rng=rng
        )
        return fisher_loss(K, mu, labels, chains.w, jitter=chains.jitter).float()

    def model_key_extra(self) -> dict:
        return self.params()

    def train_hooks(self) -> dict[str, Any]:
        return {"param_groups": lambda model: pg_param_groups(model, self.settings.gp_lr, self.settings.projection_lr)}

    def training_loss(self) -> None:
        return None  # the Fisher-identity loss of calibrank.study.model.gp, reached through loss

    # -------------------------------------------------------------- the inducing posterior
    def _inducing_pairs(self, tokenizer, train: Sequence[RankingQuery]):
        """Indices (query-major pair order) and the tokenised pairs of the seeded, stratified inducing set."""
        labels = np.array([lab for q in train for lab in q.labels], dtype=np.int64)
        k = len(train[0].candidates)
        size = min(self.settings.inducing, labels.shape[0])
        if size < self.settings.inducing:
            log.info(
                "%s: inducing set capped at the %d training pairs (asked for %d)",
                self.name,
                size,
                self.settings.inducing,
            )
        index = select_inducing(labels, size, np.random.default_rng([self.seed, 0x1D]))
        singles = []
        for i in index:
            q = train[int(i) // k]
            c = int(i) % k
            singles.append(RankingQuery(f"{q.qid}#{c}", q.context, (q.candidates[c],), (q.labels[c],)))
        return index, self._encode(tokenizer, singles), torch.as_tensor(labels[index], dtype=torch.float64)

    def _posterior(
        self,
        model: PGCrossEncoder,
        index: np.ndarray,
        features: torch.Tensor,
        labels: torch.Tensor,
        w: torch.Tensor,
        jitter: float,
    ) -> InducingPosterior:
        return inducing_posterior(self.kernel_fn, model.head.prior_mean, index, features, labels, w, jitter)

    def _gp_inputs(self, model: nn.Module, pairs) -> torch.Tensor:
        """The GP inputs ``[N, d]`` of pairs on the pair path (the model's forward)."""
        return encode_features(
            model, pairs, batch_size=self.eval_batch_size, precision=self.training.precision, fn=lambda m, b: m(**b)
        )

    @torch.no_grad()
    def _compute_posterior(
        self, model: PGCrossEncoder, index: np.ndarray, pairs, labels: torch.Tensor
    ) -> InducingPosterior:
        feats = self._gp_inputs(model, pairs)
        K = self.kernel_fn(feats, feats)
        rng = np.random.default_rng([self.seed, 0x61B])
        chains = gibbs_gp(
            K,
            labels.to(feats.device),
            model.head.prior_mean(feats).detach(),
            self.settings.gibbs_steps,
            self.settings.gibbs_chains,
            rng=rng,
        )
        return self._posterior(model, index, feats, labels, chains.w.to(torch.float64), chains.jitter)

    def _posterior_path(self, workdir: Path) -> Path:
        return workdir / f"pg_posterior-{stable_hash(self.prediction_params(), 10)}.safetensors"

    def _load_or_compute_posterior(self, trained, train: Sequence[RankingQuery]) -> InducingPosterior:
        path = self._posterior_path(trained.workdir)
        model: PGCrossEncoder = trained.model  # type: ignore[assignment]
        device = next(model.parameters()).device
        stored = _read_posterior(path)
        if stored is None:
            index, pairs, labels = self._inducing_pairs(trained.backbone.tokenizer, train)
            state = self._compute_posterior(model, index, pairs, labels)
            save_recorded(
                path, state.tensors(), {"params": self.prediction_params(), "model_step": trained.result.best_step}
            )
            stored = read_recorded(path)
        # always rebuilt from the stored tensors, so a fresh fit and a cached one predict identically
        t, meta = stored
        if meta.get("params") != self.prediction_params():
            raise ValueError(
                f"{path}: stored inducing posterior was made with {meta.get('params')}, not {self.prediction_params()}"
            )
        return self._posterior(
            model,
            t["index"].numpy(),
            t["features"].to(device),
            t["labels"].to(device),
            t["w"].to(device),
            float(t["jitter"]),
        )

    def _validator(self, tokenizer, valid: Sequence[RankingQuery]):
        """R@1 on ``valid`` from the posterior mean given an inducing posterior computed with the current encoder."""
        pairs = self._encode(tokenizer, valid)
        index, ind_pairs, ind_labels = self._inducing_pairs(tokenizer, self._fit_queries)

        def validate(model: nn.Module) -> float:
            state = self._compute_posterior(model, index, ind_pairs, ind_labels)
            mean = predictive_mean(state, self.kernel_fn, model.head.prior_mean, self._gp_inputs(model, pairs))
            scores = mean.cpu().numpy().reshape(len(pairs.qids), pairs.n_candidates)
            labels = pairs.labels.reshape(len(pairs.qids), pairs.n_candidates)
            return float(np.nanmean(recall_at_k(scores, labels, 1)))

        return validate

    # -------------------------------------------------------------- interface
    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> PGDRRRanker:
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

    def _require_state(self) -> InducingPosterior:
        self._require_fit()
        if self.state is None:
            raise RuntimeError(f"ranker {self.name!r}: call fit() before predict()")
        return self.state

    def gp_input(self, model: nn.Module, pooled: torch.Tensor) -> torch.Tensor:
        """The GP layer's input: the projection of the pooled feature after dropout (the model's forward)."""
        return model.head(model.dropout(pooled))

    @torch.no_grad()
    def joint_logits(
        self, queries: Sequence[RankingQuery], features: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean [Q, K], cov [Q, K, K])``: the moment-matched Gaussian predictive of each query's logits
        (float64, :func:`calibrank.study.model.gp.inducing.predictive_moments`)."""
        state = self._require_state()
        x = self.features(queries) if features is None else features
        return predictive_moments(
            state, self.kernel_fn, self._require_fit().model.head.prior_mean, x, len(queries[0].candidates)
        )

    def probabilities(self, mean: torch.Tensor, var: torch.Tensor) -> np.ndarray:
        """``E[sigmoid(f)]`` under each logit's Gaussian by Gauss-Hermite quadrature (eq. 15)."""
        return gauss_hermite_sigmoid(mean, var, self.settings.quadrature_points).cpu().numpy()

    def meta(self) -> dict[str, Any]:
        state = self._require_state()
        return {
            "params": self.params(),
            "samples": self.samples,
            "inducing": int(state.features.shape[0]),
            "gibbs_jitter": state.jitter,
        }
