"""How well the scores read as probabilities: as given, and after each map fitted on the validation queries.

Views: ``as given``; ``platt``, ``isotonic``, ``beta``, ``temperature``
(:func:`calibrank.analysis.practice.recalibrate.fit_recalibrator`) fitted on validation pairs, a
bare score first squashed by ``sigmoid((s - m) / d)``; and ``base rate``, whose near-zero ECE
shows that ECE means little without Brier and NLL. Each view on the test pairs: ECE (Penha &
Hauff 2021, eq. 1), Brier and NLL with 95% query-bootstrap intervals, and reliability buckets.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from ..analysis.practice.recalibrate import fit_recalibrator
from ..metrics.calibration import reliability_curve
from ..metrics.resample import features, intervals
from ..predictions import Predictions
from .scored import ScoredRun, ScoreKind
from .selfcheck import checked

__all__ = ["AS_GIVEN", "BASE_RATE", "MAX_FIT_PAIRS", "METRICS", "N_BINS", "NO_SCALE", "View", "calibration_tables", "methods_for",
           "predictions", "views", "working"]

AS_GIVEN = "as given"
BASE_RATE = "base rate"
METRICS = ("ECE", "ECE equal-mass", "Brier", "NLL")
N_BINS = 10
MAX_FIT_PAIRS = 250_000
NO_SCALE = "a score has no probability scale; only fitted maps are reported"


@dataclasses.dataclass(frozen=True, eq=False)
class View:
    """One reading of the scores as probabilities: ``test`` and ``valid`` Predictions, what was fitted and where."""

    name: str
    test: Predictions
    valid: Predictions | None
    params: str
    fitted_on: str


def predictions(run: ScoredRun, samples: np.ndarray, name: str) -> Predictions:
    """Predictions of ``run``'s queries from probability ``samples [S, Q, K]`` (candidate ids left out: the
    analyses never read them, and a copy of millions of strings per view is memory the engine does not spend)."""
    samples = np.where(run.mask[None], samples, 0.0)
    return Predictions(run.qids, run.labels, samples.mean(axis=0), samples, meta={"name": f"{run.source} ({name})"},
                       mask=None if run.mask.all() else run.mask)


def methods_for(kind: ScoreKind) -> tuple[str, ...]:
    """The maps fitted for a kind of score."""
    return ("platt", "isotonic", "beta") if kind is ScoreKind.score else ("platt", "isotonic", "beta", "temperature")


def _squash(valid: ScoredRun):
    real = valid.scores[:, valid.mask]
    m, d = float(real.mean()), float(real.std())
    d = d if d > 0 else 1.0
    return lambda s: 0.5 * (1.0 + np.tanh(0.5 * (s - m) / d)), f"m={m:.4g}, d={d:.4g}"


def _fit_pairs(valid: Predictions, max_pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """The validation (probability, label) pairs a map is fitted on: all, or a seeded sample of ``max_pairs``."""
    p, y = valid.probs[valid.valid], valid.labels[valid.valid]
    if p.size <= max_pairs:
        return p, y, f"{p.size} candidates"
    rows = np.sort(np.random.default_rng(seed).choice(p.size, max_pairs, replace=False))
    return p[rows], y[rows], f"a seeded sample of {max_pairs} of its {p.size} candidates"


def views(test: ScoredRun, valid: ScoredRun, *, keep: Sequence[str] = (), max_fit_pairs: int = MAX_FIT_PAIRS,
          seed: int = 0) -> Iterator[View]:
    """Yield the :class:`View` s in order: ``as given`` (not for a score), then each fitted map.

    A map is fitted on at most ``max_fit_pairs`` validation pairs (a seeded sample beyond); only the
    views named in ``keep`` carry their ``valid`` Predictions.
    """
    if test.kind is not ScoreKind.score:
        base_test, base_valid, squash_note = test.probabilities(), valid.probabilities(), ""
        yield View(AS_GIVEN, predictions(test, base_test, AS_GIVEN),
                   predictions(valid, base_valid, AS_GIVEN) if AS_GIVEN in keep else None, "", "")
    else:
        squash, squash_note = _squash(valid)
        base_test, base_valid = squash(test.scores), squash(valid.scores)
    fit_p, fit_y, pairs = _fit_pairs(predictions(valid, base_valid, "base"), max_fit_pairs, seed)
    fitted_on = f"valid ({valid.qids.size} queries, {pairs})"
    for method in methods_for(test.kind):
        recal = fit_recalibrator(method, fit_p, fit_y)
        params = ", ".join(f"{k}={v:.4g}" for k, v in recal.params.items())
        mapped_valid = predictions(valid, np.clip(recal(base_valid), 0.0, 1.0), method) if method in keep else None
        yield View(method, predictions(test, np.clip(recal(base_test), 0.0, 1.0), method), mapped_valid,
                   ", ".join(p for p in (params, f"squash {squash_note}" if squash_note else "") if p), fitted_on)
    rate = float(valid.labels[valid.mask].mean())
    constant = lambda run: np.full((1, *run.mask.shape), rate)  # noqa: E731 - one sample, padded slots zeroed
    yield View(BASE_RATE, predictions(test, constant(test), BASE_RATE),
               predictions(valid, constant(valid), BASE_RATE) if BASE_RATE in keep else None, f"p={rate:.4g}",
               f"valid ({valid.qids.size} queries, the share of relevant candidates)")


def working(kind: ScoreKind) -> str:
    """The view the later sections read: the probabilities as given, or Platt's map for a score."""
    return "platt" if kind is ScoreKind.score else AS_GIVEN


def calibration_tables(views_: Iterable[View], kind: ScoreKind, *, keep: Sequence[str] = (), level: float = 0.95,
                       n_resamples: int = 1000, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, View]]:
    """``(calibration, reliability, kept)``: one row per view with each metric and its interval on the test
    queries; one row per view and bucket (equal width); the views named in ``keep`` (the others are
    dropped as soon as they are measured). For a score the ``as given`` row is kept empty and says why."""
    rows, buckets, kept = [], [], {}
    if kind is ScoreKind.score:
        rows.append({"view": AS_GIVEN, "fitted_on": "", "params": "", "note": NO_SCALE,
                     **{c: np.nan for m in METRICS for c in (m, f"{m} lo", f"{m} hi")}})
    for v in views_:
        row = {"view": v.name, "fitted_on": v.fitted_on, "params": v.params, "note": ""}
        ests = intervals([features(v.test, m, n_bins=N_BINS) for m in METRICS], level=level, n_resamples=n_resamples,
                         seed=seed)
        for m, est in zip(METRICS, ests):
            row.update({m: est.value, f"{m} lo": est.low, f"{m} hi": est.high})
        rows.append(row)
        if v.name in keep:
            kept[v.name] = v
        curve = reliability_curve(v.test.probs[v.test.valid], v.test.labels[v.test.valid], n_bins=N_BINS)
        for i in range(N_BINS):
            buckets.append({"view": v.name, "bin": i, "lower": float(curve.bin_edges[i]),
                            "upper": float(curve.bin_edges[i + 1]), "mean predicted": float(curve.mean_predicted[i]),
                            "fraction relevant": float(curve.fraction_positive[i]), "count": int(curve.counts[i])})
    table = checked("calibration", pd.DataFrame(rows), keys=("view",), inside=("Brier", "NLL"),
                    unit=("ECE", "ECE equal-mass", "Brier"), nonneg=("NLL",))
    reliability = checked("reliability", pd.DataFrame(buckets), keys=("view", "bin"),
                          unit=("mean predicted", "fraction relevant"), nonneg=("count",))
    return table, reliability, kept
