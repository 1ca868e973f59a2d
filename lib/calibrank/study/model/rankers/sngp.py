"""``sngp``: SNGP cross-encoder (Liu et al. 2020) as used by GPF-BERT (Ye et al., ICASSP 2023, sec. 2.1).

The cross-encoder (:mod:`calibrank.study.model.cross_encoder`) with spectral normalisation (eq. 1,
:class:`calibrank.study.model.gp.spectral.SpectralNormLinear`) of the pooler, of every encoder linear
layer or of none, and a random-Fourier-feature GP output layer (eqs. 2-5,
:class:`calibrank.study.model.gp.random_features.RandomFeatureGP`). Training minimises BCE (``sngp``) or
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

from calibrank.study.data.schema import RankingQuery
from calibrank.study.model.backbone import Backbone
from calibrank.study.model.cross_encoder import CrossEncoder, head_param_groups, init_cosine_head
from calibrank.study.model.gp.random_features import RandomFeatureGP
from calibrank.study.model.gp.spectral import SpectralNormLinear
from calibrank.study.model.losses import binary_cross_entropy, focal
from calibrank.study.model.rankers.gp_base import GPRanker
from calibrank.study.model.rankers.run import RankerRun
from calibrank.study.model.rankers.scoring import sigmoid
from calibrank.study.settings.checks import check_choice
from calibrank.study.settings.choices import FocalGamma, Pooling, RFOutputInit, SNGPLoss, SpectralNormPlacement
from calibrank.study.settings.config import build_section
from calibrank.study.settings.schema import RandomFeatureGPConfig, SNGPConfig, check_spectral_norm_placement

__all__ = ["SNGPCrossEncoder", "SNGPRanker", "apply_spectral_norm_to"]

_D = RandomFeatureGPConfig  # the defaults


# ----------------------------------------------------------------------------- spectral normalisation


def apply_spectral_norm_to(
    encoder: nn.Module, where: SpectralNormPlacement | str, *, bound: float, n_power_iterations: int, seed: int
) -> list[str]:
    """Wrap linear layers of ``encoder`` in :class:`SpectralNormLinear`; returns their names.

    ``where`` (:class:`calibrank.study.settings.choices.SpectralNormPlacement`): ``"pooler"`` (the pooler's dense
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
                setattr(
                    parent,
                    name,
                    SpectralNormLinear(
                        child, bound=bound, n_power_iterations=n_power_iterations, seed=seed + len(wrapped)
                    ),
                )
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
        segments = Pooling(pooling) is Pooling.segments
        head = RandomFeatureGP(backbone.hidden_size, seed=seed, linear_mean=segments, **(gp or {}))
        if segments:  # the GP's prior mean starts where the dense head on these features starts
            init_cosine_head(head.prior_mean, backbone.hidden_size)
        super().__init__(backbone, head_dropout=head_dropout, seed=seed, pooling=pooling, head=head)
        spectral_norm = check_choice("spectral_norm", spectral_norm, SpectralNormPlacement)
        check_spectral_norm_placement(spectral_norm, self.pooling)
        self.spectral_layers = apply_spectral_norm_to(
            self.encoder, spectral_norm, bound=sn_bound, n_power_iterations=sn_power_iterations, seed=seed
        )

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, **sides) -> torch.Tensor:
        return self.head(self.dropout(self.features(input_ids, attention_mask, token_type_ids, **sides)))

    def train_logits(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean logits [B], Phi [B, L])`` of a batch (dropout active in training mode)."""
        return self.head(self.dropout(self.features(**batch)), return_features=True)


# ----------------------------------------------------------------------------- the ranker


class SNGPRanker(GPRanker):
    """SNGP: spectral normalisation + random-feature GP head with a Laplace posterior (:mod:`.sngp`).

    Parameters (after the :class:`~calibrank.study.model.rankers.run.RankerRun`), the fields of
    :class:`calibrank.study.settings.schema.SNGPConfig` with its defaults and checks:

    spectral_norm, sn_bound, sn_power_iterations
        Where spectral normalisation wraps linear layers (eq. 1), its bound and power iterations.
    n_features, length_scale, feature_scale
        The random features (eq. 2); the length scale is against the spread of the pooled features.
    ridge, momentum, mean_field_factor, samples
        The posterior: eq. 4's ridge, ``None`` or eq. 5's momentum, the mean-field factor, joint draws per query.
    loss, focal_gamma, head_dropout, output_init, head_lr
        Training: BCE or focal loss, its gamma, dropout before the head, the start of beta and the head's
        rate (``None``: ``training.lr``, one rate as in GPF-BERT).
    """

    name = "sngp"
    kind = "sngp"  # cache kind: sngp and gpf_bert with identical settings share the trained model
    draw_stream = 0x5E6
    #: The config section that checks the settings.
    section: ClassVar[type[RandomFeatureGPConfig]] = SNGPConfig

    def __init__(
        self,
        run: RankerRun,
        /,
        *,
        spectral_norm: SpectralNormPlacement | str = _D.spectral_norm,
        sn_bound: float = _D.sn_bound,
        sn_power_iterations: int = _D.sn_power_iterations,
        n_features: int = _D.n_features,
        length_scale: float = _D.length_scale,
        feature_scale: float = _D.feature_scale,
        ridge: float = _D.ridge,
        momentum: float | None = _D.momentum,
        mean_field_factor: float = _D.mean_field_factor,
        samples: int = _D.samples,
        loss: SNGPLoss | str = SNGPConfig.loss,
        focal_gamma: float | FocalGamma | str = _D.focal_gamma,
        head_dropout: float = _D.head_dropout,
        head_lr: float | None = _D.head_lr,
        output_init: RFOutputInit | str = _D.output_init,
    ) -> None:
        super().__init__(run)
        values = dict(
            spectral_norm=spectral_norm,
            sn_bound=sn_bound,
            sn_power_iterations=sn_power_iterations,
            n_features=n_features,
            length_scale=length_scale,
            feature_scale=feature_scale,
            ridge=ridge,
            momentum=momentum,
            mean_field_factor=mean_field_factor,
            samples=samples,
            focal_gamma=focal_gamma,
            head_dropout=head_dropout,
            head_lr=head_lr,
            output_init=output_init,
            loss=loss,
        )
        self._configure(values)

    def _configure(self, values: dict[str, Any]) -> None:
        """Check ``values`` as the :attr:`section` of a profile (errors name the ranker) and keep them."""
        fields = {f for f in self.section.__dataclass_fields__}
        self.settings = build_section(self.section, {k: v for k, v in values.items() if k in fields}, where=self.name)
        self.samples = self.settings.samples
        # gpf_bert's section has no loss: it always trains with focal loss (GPFBertRanker passes it)
        self.loss_kind = SNGPLoss(getattr(self.settings, "loss", values["loss"]))

    # -------------------------------------------------------------- model, loss, hooks
    def params(self) -> dict[str, Any]:
        """Everything that determines the trained model besides the training settings (the cache key's extra)."""
        s = self.settings
        gamma = s.focal_gamma.value if isinstance(s.focal_gamma, FocalGamma) else s.focal_gamma
        return {
            **self._gp_params(),
            "spectral_norm": s.spectral_norm.value,
            "sn_bound": s.sn_bound,
            "sn_power_iterations": s.sn_power_iterations,
            "loss": self.loss_kind.value,
            "focal_gamma": gamma if self.loss_kind is SNGPLoss.focal else None,
            "head_dropout": s.head_dropout,
            "head_lr": self._head_lr(),
        }

    def _gp_params(self) -> dict[str, Any]:
        s = self.settings
        return {
            "n_features": s.n_features,
            "length_scale": s.length_scale,
            "feature_scale": s.feature_scale,
            "ridge": s.ridge,
            "momentum": s.momentum,
            "mean_field_factor": s.mean_field_factor,
            "output_init": s.output_init.value,
        }

    def _head_lr(self) -> float:
        """The GP layer's rate: its own, or ``training.lr`` (one rate for the whole model, as in the papers)."""
        return float(self.training.lr if self.settings.head_lr is None else self.settings.head_lr)

    def build_model(self, backbone: Backbone, seed: int) -> SNGPCrossEncoder:
        s = self.settings
        try:
            return SNGPCrossEncoder(
                backbone,
                spectral_norm=s.spectral_norm,
                sn_bound=s.sn_bound,
                sn_power_iterations=s.sn_power_iterations,
                gp=self._gp_params(),
                head_dropout=s.head_dropout,
                seed=seed,
                pooling=self.training.pooling,
            )
        except ValueError as exc:
            raise ValueError(f"{self.name}: {exc}") from exc

    def loss(self, model: nn.Module, batch: dict, labels: torch.Tensor) -> torch.Tensor:
        logits, phi = model.train_logits(batch)
        if model.training:  # always so inside the training loop; never in evaluation
            model.head.update_precision(phi, logits)
        if self.loss_kind is SNGPLoss.focal:
            return focal(logits, labels, self.settings.focal_gamma)
        return binary_cross_entropy(logits, labels)

    @staticmethod
    def _reset_precision(model: nn.Module, epoch: int) -> None:
        model.head.reset_precision()

    def model_key_extra(self) -> dict:
        return self.params()

    def train_hooks(self) -> dict[str, Any]:
        return {
            "on_epoch_start": self._reset_precision,
            "param_groups": lambda model: head_param_groups(model, self._head_lr()),
        }

    def training_loss(self):
        return focal if self.loss_kind is SNGPLoss.focal else binary_cross_entropy

    # -------------------------------------------------------------- interface
    def fit(self, train: Sequence[RankingQuery], valid: Sequence[RankingQuery] = ()) -> SNGPRanker:
        self.trained = self._train(self.seed, train, valid)
        self.fit_seconds = self.trained.result.seconds
        return self

    @property
    def model(self) -> SNGPCrossEncoder:
        return self._require_fit().model  # type: ignore[return-value]

    @torch.no_grad()
    def joint_logits(
        self, queries: Sequence[RankingQuery], features: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean [Q, K], cov [Q, K, K])``: the Laplace posterior of each query's candidate logits (float64,
        :meth:`calibrank.study.model.gp.random_features.RandomFeatureGP.query_moments`)."""
        h = self.features(queries) if features is None else features
        return self.model.head.query_moments(h, len(queries[0].candidates))

    def probabilities(self, mean: torch.Tensor, var: torch.Tensor) -> np.ndarray:
        """The sigmoid of the mean-field logit ``mean / sqrt(1 + lambda var)`` (Lu et al. 2020)."""
        return sigmoid((mean / torch.sqrt(1.0 + self.settings.mean_field_factor * var)).cpu().numpy())

    def meta(self) -> dict:
        return {"params": self.params(), "samples": self.samples}

    def precision_state(self) -> dict[str, torch.Tensor]:
        """Copies of the Laplace-posterior buffers (``precision``, ``n_seen``) of the trained model."""
        head = self.model.head
        return {"precision": head.precision.detach().clone(), "n_seen": head.n_seen.detach().clone()}
