"""How well the scores read as probabilities: as given, and after each map fitted on the validation queries.

Views: ``as given`` (a probability or a logit through the sigmoid; a bare score has no
probability scale); every map of :func:`calibrank.assess.deploy.maps.maps_for` fitted on validation
pairs (the calibrator's own map object for the map it deploys, so the page and ``calibrator.json``
agree); and ``base rate``, a constant at the validation share of relevant candidates, whose
near-zero ECE shows that ECE means little without Brier and NLL. Each view on the test pairs:
ECE (Penha & Hauff 2021, eq. 1), Brier and NLL with 95% query-bootstrap intervals, and
reliability buckets with their counts. A map worse than the constant (by Brier), or degenerate,
is flagged. Each fitted map also counts the test candidates whose probability rests on fewer than
:data:`~calibrank.assess.deploy.fit.TAIL` validation candidates (:func:`~calibrank.assess.deploy.maps.support`):
past the isotonic map's end blocks, or past the ``TAIL``-th lowest or highest validation score where a
parametric map's curve is extrapolated (``beyond support``, split ``low`` and ``high``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

import numpy as np
import pandas as pd

from calibrank.assess.deploy.fit import MAX_FIT_PAIRS, TAIL, _fit_pairs, fit_map, raw_scores
from calibrank.assess.deploy.maps import ScoreMap, maps_for, support
from calibrank.assess.read.scored import ScoredRun, ScoreKind
from calibrank.assess.sections.selfcheck import checked
from calibrank.metrics.calibration import reliability_curve
from calibrank.metrics.resample import features, intervals
from calibrank.predictions import Predictions

__all__ = [
    "AS_GIVEN",
    "BASE_RATE",
    "METRICS",
    "N_BINS",
    "NO_SCALE",
    "View",
    "calibration_tables",
    "deployed_view",
    "mapped",
    "views",
]

AS_GIVEN = "as given"
BASE_RATE = "base rate"
METRICS = ("ECE", "ECE equal-mass", "Brier", "NLL")
N_BINS = 10
NO_SCALE = "a score has no probability scale; only fitted maps are reported"


@dataclasses.dataclass(frozen=True, eq=False)
class View:
    """One reading of the scores as probabilities: ``test`` Predictions, the map (None for the constant), and how
    many test candidates score ``below`` / ``above`` what the map's probability rests on (None: nothing fitted)."""

    name: str
    test: Predictions
    score_map: ScoreMap | None
    params: str
    fitted_on: str
    below: int | None = None
    above: int | None = None


def beyond(score_map: ScoreMap, valid: ScoredRun, test: ScoredRun, *, tail: int = TAIL) -> tuple[int, int] | None:
    """``(below, above)``: the test candidates whose base probability lies below or above the range over which
    ``score_map`` rests on at least ``tail`` validation candidates (:func:`~calibrank.assess.deploy.maps.support`);
    None for ``identity``."""
    span = support(score_map, raw_scores(valid)[valid.mask], tail)
    if span is None:
        return None
    q = score_map.base(raw_scores(test)[test.mask])
    return int((q < span[0]).sum()), int((q > span[1]).sum())


def mapped(run: ScoredRun, score_map: ScoreMap, name: str) -> Predictions:
    """Predictions of ``run``'s queries through ``score_map``: ``probs`` the map of the mean raw score (what the
    calibrator applies), ``samples`` the map of each sample (for variances)."""
    mask = run.mask
    probs = np.where(mask, score_map(raw_scores(run)), 0.0)
    samples = probs[None] if run.n_samples == 1 else np.where(mask[None], score_map(run.scores), 0.0)
    return Predictions(
        run.qids, run.labels, probs, samples, meta={"name": f"{run.source} ({name})"}, mask=None if mask.all() else mask
    )


def _constant(run: ScoredRun, rate: float) -> Predictions:
    p = np.where(run.mask, rate, 0.0)
    return Predictions(
        run.qids,
        run.labels,
        p,
        p[None],
        meta={"name": f"{run.source} ({BASE_RATE})"},
        mask=None if run.mask.all() else run.mask,
    )


def views(
    test: ScoredRun, valid: ScoredRun, deployed: ScoreMap, *, max_fit_pairs: int = MAX_FIT_PAIRS, seed: int = 0
) -> Iterator[View]:
    """Yield the :class:`View` s in order: ``as given`` (not for a score), each map, the base rate.

    ``deployed`` is the calibrator's map: its view reads it rather than a refit.
    """
    kind = test.kind.value
    s, y, m = raw_scores(valid), valid.labels, valid.mask
    fit_s, fit_y = _fit_pairs(s[m], y[m].astype(int), max_fit_pairs, seed)
    pairs = (
        f"{fit_s.size} candidates"
        if fit_s.size == m.sum()
        else f"a seeded sample of {fit_s.size} of its {m.sum()} candidates"
    )
    fitted_on = f"valid ({valid.qids.size} queries, {pairs})"
    for method in maps_for(kind):
        score_map = deployed if method == deployed.method else fit_map(method, fit_s, fit_y, kind)
        name = AS_GIVEN if method == "identity" else method
        tails = beyond(score_map, valid, test)
        yield View(
            name,
            mapped(test, score_map, name),
            score_map,
            "" if method == "identity" else score_map.describe(),
            "" if method == "identity" else fitted_on,
            *(tails or (None, None)),
        )
    rate = float(y[m].mean())
    yield View(
        BASE_RATE,
        _constant(test, rate),
        None,
        f"p={rate:.4g}",
        f"valid ({valid.qids.size} queries, the share of relevant candidates)",
    )


def _flags(table: pd.DataFrame, maps: dict[str, ScoreMap | None]) -> list[str]:
    base = table.set_index("view").loc[BASE_RATE, "Brier"]
    out = []
    for _, row in table.iterrows():
        sm = maps.get(row["view"])
        why = []
        if sm is not None and sm.degenerate():
            why.append(f"degenerate: {sm.degenerate()}")
        if row["view"] != BASE_RATE and np.isfinite(row["Brier"]) and row["Brier"] >= base:
            why.append(f"worse than the base-rate constant (Brier {row['Brier']:.3g} against {base:.3g})")
        out.append("; ".join(why))
    return out


def calibration_tables(
    views_: Iterable[View],
    kind: ScoreKind,
    *,
    deployed: str,
    level: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(calibration, reliability)``: one row per view with each metric and its interval on the test queries,
    ``deployed`` (the calibrator's map), ``beyond support`` (with its ``low`` and ``high`` parts: test candidates
    whose probability rests on fewer than :data:`TAIL` validation candidates) and ``flag``; one row per view
    and bucket (equal width) with its count. For a score the ``as given`` row is kept empty and says why."""
    rows, buckets, maps = [], [], {}
    tails = ("beyond support", "beyond support low", "beyond support high")
    if kind is ScoreKind.score:
        rows.append(
            {
                "view": AS_GIVEN,
                "fitted_on": "",
                "params": "",
                "note": NO_SCALE,
                **{c: np.nan for m in METRICS for c in (m, f"{m} lo", f"{m} hi")},
                **dict.fromkeys(tails, np.nan),
            }
        )
    for v in views_:
        maps[v.name] = v.score_map
        row: dict[str, object] = {"view": v.name, "fitted_on": v.fitted_on, "params": v.params, "note": ""}
        row.update(
            dict.fromkeys(tails, np.nan)
            if v.below is None or v.above is None
            # both or neither
            else dict(zip(tails, (float(v.below + v.above), float(v.below), float(v.above))))
        )
        ests = intervals(
            [features(v.test, m, n_bins=N_BINS) for m in METRICS], level=level, n_resamples=n_resamples, seed=seed
        )
        for m, est in zip(METRICS, ests):
            row.update({m: est.value, f"{m} lo": est.low, f"{m} hi": est.high})
        rows.append(row)
        curve = reliability_curve(v.test.probs[v.test.valid], v.test.labels[v.test.valid], n_bins=N_BINS)
        for i in range(N_BINS):
            buckets.append(
                {
                    "view": v.name,
                    "bin": i,
                    "lower": float(curve.bin_edges[i]),
                    "upper": float(curve.bin_edges[i + 1]),
                    "mean predicted": float(curve.mean_predicted[i]),
                    "fraction relevant": float(curve.fraction_positive[i]),
                    "count": int(curve.counts[i]),
                }
            )
    table = pd.DataFrame(rows)
    table.insert(1, "deployed", table["view"] == deployed)
    table["flag"] = _flags(table, maps)
    table = checked(
        "calibration",
        table,
        keys=("view",),
        inside=("Brier", "NLL"),
        unit=("ECE", "ECE equal-mass", "Brier"),
        nonneg=("NLL",) + tails,
    )
    reliability = checked(
        "reliability",
        pd.DataFrame(buckets),
        keys=("view", "bin"),
        unit=("mean predicted", "fraction relevant"),
        nonneg=("count",),
    )
    return table, reliability


def deployed_view(deployed: ScoreMap) -> str:
    """The view name of the calibrator's map."""
    return AS_GIVEN if deployed.method == "identity" else deployed.method
