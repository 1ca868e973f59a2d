"""``sngp``: SNGP cross-encoder (Liu et al. 2020) as used by GPF-BERT (Ye et al., ICASSP 2023, sec. 2.1).

The cross-encoder of :mod:`.base` with spectral normalisation (eq. 1,
:class:`calibrank.model.gp.spectral.SpectralNormLinear`) of the pooler, of every encoder linear
layer or of none, and a random-Fourier-feature GP output layer (eqs. 2-5,
:class:`calibrank.model.gp.random_features.RandomFeatureGP`). Training minimises BCE (``sngp``) or
focal loss (``gpf_bert``) on the posterior-mean logits and updates the Laplace precision (eq. 4
or 5), reset each epoch. ``probs`` is the sigmoid of the mean-field logit, ``samples`` sigmoids of
seeded joint draws per query. Departures (a sigmoid for the 2-class softmax, ``P`` from
training-mode features, a non-zero initial ``beta``): docs/decisions.md, "Settings of the GP and
focal rankers on laptop".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from ...data.schema import RankingQuery
from ...predictions import Predictions
from ...settings.checks import check_choice
from ...settings.choices import FocalGamma, Pooling, SNGPLoss, SpectralNormPlacement
from ...settings.schema import RandomFeatureGPConfig, SNGPConfig, check_spectral_norm_placement
from .. import encode_once
from ..backbone import Backbone
from ..gp.gaussian import draw_joint
from ..gp.random_features import RandomFeatureGP
from ..gp.spectral import SpectralNormLinear
from ..losses import binary_cross_entropy, focal
from ..training import TrainResult
from .base import (
    CrossEncoder,
    Ranker,
    TrainedModel,
    encode_features,
    head_param_groups,
    init_cosine_head,
    ranker_settings,
    sigmoid,
)

__all__ = [
    "SNGPCrossEncoder",
    "SNGPRanker",
    "apply_spectral_norm_to",
]

_D = RandomFeatureGPConfig  # the defaults


# ----------------------------------------------------------------------------- spectral normalisation


def apply_spectral_norm_to(
    encoder: nn.Module, where: SpectralNormPlacement | str, *, bound: float, n_power_iterations: int, seed: int
) -> list[str]:
    """Wrap linear layers of ``encoder`` in :class:`SpectralNormLinear`; returns their names.

    ``where`` (:class:`calibrank.settings.choices.SpectralNormPlacement`): ``"pooler"`` (the pooler's dense
    layer), ``"all"`` (every ``nn.Linear`` in the encoder, pooler included) or ``"none"``.
    """
    where = check_choice("spectral_norm", where, SpectralNormPlacement)
    if where is SpectralNormPlacement.none:
        return []
    if where is SpectralNormPlacement.pooler:
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
        spectral_norm: SpectralNormPlacement | str = _D.spectral_norm,
        sn_bound: float = _D.sn_bound,
        sn_power_iterations: int = _D.sn_power_iterations,
        gp: dict[str, Any] | None = None,
        head_dropout: float = _D.head_dropout,
        seed: int = 0,
        pooling: Pooling | str = Pooling.pooler,
    ) -> None:
        super().__init__(backbone, head_dropout=head_dropout, seed=seed, pooling=pooling)
        spectral_norm = check_choice("spectral_norm", spectral_norm, SpectralNormPlacement)
        check_spectral_norm_placement(spectral_norm, self.pooling)
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
    """SNGP: spectral normalisation + random-feature GP head with a Laplace posterior (:mod:`.sngp`).

    Keyword arguments (besides :class:`Ranker`'s): the fields of :class:`calibrank.settings.config.SNGPConfig`,
    with its defaults and checks (:func:`calibrank.model.rankers.base.ranker_settings`):

    * spectral normalisation: ``spectral_norm`` (``"pooler"``, ``"all"``, ``"none"``), ``sn_bound``,
      ``sn_power_iterations``;
    * random features (eq. 2): ``n_features``, ``length_scale`` (against the spread of the pooled
      features), ``feature_scale``;
    * posterior: ``ridge`` (eq. 4), ``momentum`` (``None``, or eq. 5), ``mean_field_factor``, ``samples``;
    * training: ``loss`` (``"bce"``, ``"focal"``), ``focal_gamma``, ``head_dropout``, ``output_init``
      (``"dense"``, ``"prior"``, ``"zero"``), ``head_lr`` (``None``: ``training.lr``, as GPF-BERT).
    """

    name = "sngp"
    kind = "sngp"  # cache kind: sngp and gpf_bert with identical settings share the trained model
    #: The config section whose fields are the keyword arguments.
    section: ClassVar[type[RandomFeatureGPConfig]] = SNGPConfig

    def __init__(self, **kw: Any) -> None:
        settings, kw = ranker_settings(self.section, self.name, kw)
        super().__init__(**kw)
        self.settings = settings
        self.spectral_norm = settings.spectral_norm.value
        self.sn_bound = settings.sn_bound
        self.sn_power_iterations = settings.sn_power_iterations
        self.gp_params = {
            "n_features": settings.n_features,
            "length_scale": settings.length_scale,
            "feature_scale": settings.feature_scale,
            "ridge": settings.ridge,
            "momentum": settings.momentum,
            "mean_field_factor": settings.mean_field_factor,
            "output_init": settings.output_init.value,
        }
        self.samples = settings.samples
        # gpf_bert's section has no loss: it always trains with focal loss
        self.loss = getattr(settings, "loss", SNGPLoss.focal).value
        gamma = settings.focal_gamma
        self.focal_gamma = gamma.value if isinstance(gamma, FocalGamma) else gamma
        self.head_dropout = settings.head_dropout
        # None: one rate for the whole model, as in the papers
        self.head_lr = float(self.training.lr if settings.head_lr is None else settings.head_lr)
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
            "focal_gamma": self.focal_gamma if self.loss == SNGPLoss.focal else None,
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
        if self.loss == SNGPLoss.focal:
            return focal(logits, labels, self.focal_gamma)
        return binary_cross_entropy(logits, labels)

    @staticmethod
    def _reset_precision(model: nn.Module, epoch: int) -> None:
        model.head.reset_precision()

    def _model_key_extra(self) -> dict:
        return self.params()

    def _train_hooks(self) -> dict[str, Any]:
        return {"on_epoch_start": self._reset_precision,
                "param_groups": lambda model: head_param_groups(model, self.head_lr)}

    def training_loss(self):
        return focal if self.loss == SNGPLoss.focal else binary_cross_entropy

    # -------------------------------------------------------------- interface
    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> "SNGPRanker":
        self.trained = self._train(self.seed, train, valid)
        self.fit_seconds = self.trained.result.seconds
        return self

    @property
    def model(self) -> SNGPCrossEncoder:
        return self._require_fit().model  # type: ignore[return-value]

    @torch.no_grad()
    def _features(self, queries: Sequence[RankingQuery]) -> torch.Tensor:
        """The pooled features ``[Q*K, d]`` the GP layer reads, one row per pair in query order."""
        trained = self._require_fit()
        pairs = self._encode(trained.backbone.tokenizer, queries)
        if encode_once.applies(trained.model):  # no joint layer: each distinct side encoded once
            return encode_once.features_once(trained.model, pairs, batch_size=self.training.eval_batch_size,
                                             precision=self.training.precision)
        return encode_features(trained.model, pairs, batch_size=self.training.eval_batch_size,
                               precision=self.training.precision)

    @torch.no_grad()
    def joint_logits(self, queries: Sequence[RankingQuery], features: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean [Q, K], cov [Q, K, K])``: the Gaussian posterior of each query's candidate logits (float64).

        ``features``: the queries' pooled features (:meth:`_features`) when already computed.
        """
        model = self._require_fit().model
        h = self._features(queries) if features is None else features
        head: RandomFeatureGP = model.head
        q, k = len(queries), len(queries[0].candidates)
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

    def _predict_arrays(self, queries: Sequence[RankingQuery], features: torch.Tensor | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
        mean, cov = self.joint_logits(queries, features)
        var = cov.diagonal(dim1=-2, dim2=-1).clamp_min(0.0)
        mf = mean / torch.sqrt(1.0 + self.gp_params["mean_field_factor"] * var)
        rng = np.random.default_rng([self.seed, 0x5E6])
        draws = draw_joint(mean, cov, self.samples, rng)
        return sigmoid(mf.cpu().numpy()), sigmoid(draws.cpu().numpy())

    def predict(self, queries: Sequence[RankingQuery]) -> Predictions:
        return self.predict_many([queries])[0]

    #: A pair's pooled feature depends on the pair only; the joint draws are made per query set.
    shares_pairs = True

    def predict_many(self, query_sets: Sequence[Sequence[RankingQuery]]) -> list[Predictions]:
        """Each distinct pair's feature encoded once; each set's joint Gaussian and seeded draws as :meth:`predict`."""
        return self._posterior_predictions(query_sets, lambda: {"params": self.params(), "samples": self.samples})

    @property
    def n_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def training_results(self) -> list[TrainResult]:
        return [self._require_fit().result]

    def precision_state(self) -> dict[str, torch.Tensor]:
        """Copies of the Laplace-posterior buffers (``precision``, ``n_seen``) of the trained model."""
        head = self.model.head
        return {"precision": head.precision.detach().clone(), "n_seen": head.n_seen.detach().clone()}
