"""Uncertainty of set-level metrics by resampling test queries (and training seeds) with scipy.

Every metric is a function of sums over queries of per-query features (:func:`features`), so a
resample is a vector of query counts and one matrix product. :func:`interval` (percentile
bootstrap), :func:`compare` (paired permutation test, one-sided) and :func:`detectable_effect`.
Degenerate cases are reported in ``note``. Features per metric: docs/decisions.md,
"Resampling by query features"; why these choices: "Resampling protocol".
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats as _sps

from calibrank.metrics.calibration import EPS, _bin_edges, debiased_gap_sum
from calibrank.metrics.ranking import average_precision, recall_at_k, reciprocal_rank
from calibrank.predictions import Predictions, PredictionsError

__all__ = [
    "METRICS",
    "Comparison",
    "Estimate",
    "QueryFeatures",
    "compare",
    "detectable_effect",
    "features",
    "interval",
    "intervals",
    "mean_features",
    "ONE_SEED_NOTE",
]

METRICS = ("R@1", "MAP", "MRR", "ECE", "ECE equal-mass", "ECE debiased", "Brier", "NLL")
"""Metrics :func:`features` knows; ``R@k`` for any k >= 1 works too."""

ONE_SEED_NOTE = "1 training seed: intervals cover test-query sampling only"

_ALTERNATIVES = ("two-sided", "less", "greater")
_BATCH = 250


@dataclasses.dataclass(frozen=True, eq=False)
class QueryFeatures:
    """Per-query features of one metric for one ranker on one query set, one row per training seed.

    ``values [S, Q, D]``; ``reduce`` maps summed features ``[..., D]`` to the metric; ``source``
    names the Predictions file (for errors); ``data_hash`` is compared before a paired comparison.
    ``plugin``: for a debiased metric, the plug-in statistic of the same features (else ``None``).
    """

    metric: str
    values: np.ndarray
    reduce: Callable[[np.ndarray], np.ndarray]
    qids: np.ndarray
    source: str = ""
    data_hash: str = ""
    plugin: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def n_seeds(self) -> int:
        return int(self.values.shape[0])

    @property
    def value(self) -> float:
        """The metric on the full query set, averaged over seeds."""
        return float(np.mean(self.reduce(self.values.sum(axis=1))))

    @property
    def plugin_value(self) -> float:
        """The plug-in statistic on the full set (= :attr:`value` without a ``plugin``)."""
        return float(np.mean((self.plugin or self.reduce)(self.values.sum(axis=1))))


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A metric with its ``level`` interval ``[low, high]`` (:func:`interval`); ``se`` the bootstrap
    standard error; ``bias`` the plug-in statistic minus ``value`` (0 without a ``plugin``)."""

    value: float
    low: float
    high: float
    level: float
    n_queries: int
    n_seeds: int
    note: str = ""
    se: float = float("nan")
    bias: float = 0.0


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Effect of ranker A over ranker B: ``a - b`` (or ``(a - b) / b`` when ``relative``), its interval and one-sided p.

    ``pvalue`` tests "A and B are exchangeable on every query" against ``alternative``;
    ``pvalue_opposite`` the other direction (NaN for a two-sided test). ``se`` is the bootstrap
    standard error of the effect, read from its central 68.3% (:func:`detectable_effect`).
    """

    value: float
    low: float
    high: float
    pvalue: float
    pvalue_opposite: float
    alternative: str
    relative: bool
    a: float
    b: float
    level: float
    n_queries: int
    n_seeds: int
    n_conditions: int
    note: str = ""
    se: float = float("nan")


# ------------------------------------------------------------------------------ features
def _mean_reduce(s: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(s[..., 1] > 0, s[..., 0] / np.where(s[..., 1] > 0, s[..., 1], 1.0), np.nan)


def _ece_debiased_reduce(n_bins: int) -> Callable[[np.ndarray], np.ndarray]:
    def reduce(s: np.ndarray) -> np.ndarray:
        count = s[..., n_bins : 2 * n_bins]
        total = count.sum(axis=-1)
        gap = debiased_gap_sum(s[..., :n_bins], count, s[..., 2 * n_bins :])
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, gap / np.where(total > 0, total, 1.0), np.nan)

    return reduce


def _ece_reduce(n_bins: int) -> Callable[[np.ndarray], np.ndarray]:
    def reduce(s: np.ndarray) -> np.ndarray:
        total = s[..., n_bins:].sum(axis=-1)
        gap = np.abs(s[..., :n_bins]).sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, gap / np.where(total > 0, total, 1.0), np.nan)

    return reduce


def _mean_features(v: np.ndarray) -> np.ndarray:
    defined = ~np.isnan(v)
    return np.stack([np.where(defined, v, 0.0), defined.astype(np.float64)], axis=-1)


def _one_run(
    metric: str, probs: np.ndarray, labels: np.ndarray, n_bins: int, edges: np.ndarray, mask: np.ndarray | None = None
) -> np.ndarray:
    q, k = labels.shape
    y = labels.astype(np.float64)
    if metric == "MAP":
        return _mean_features(average_precision(probs, labels, mask=mask))
    if metric == "MRR":
        return _mean_features(reciprocal_rank(probs, labels, mask=mask))
    if metric.startswith("R@"):
        return _mean_features(recall_at_k(probs, labels, int(metric[2:]), mask=mask))
    n_pairs = np.full(q, float(k)) if mask is None else mask.sum(axis=1).astype(np.float64)
    if metric == "Brier":
        loss = (probs - y) ** 2
        return np.stack([(loss if mask is None else loss * mask).sum(axis=1), n_pairs], axis=-1)
    if metric == "NLL":
        p = np.clip(probs, EPS, 1.0 - EPS)
        loss = -(y * np.log(p) + (1.0 - y) * np.log1p(-p))
        return np.stack([(loss if mask is None else loss * mask).sum(axis=1), n_pairs], axis=-1)
    # ECE: right-closed buckets exactly as metrics.calibration; a padded slot is in no bucket
    rows = np.broadcast_to(np.arange(q)[:, None], (q, k))
    if mask is None:
        p, yy, rows = probs.ravel(), y.ravel(), rows.ravel()
    else:
        p, yy, rows = probs[mask], y[mask], rows[mask]
    ids = np.searchsorted(edges[1:-1], p, side="left")
    blocks = 3 if metric == "ECE debiased" else 2  # gaps, counts[, label sums]
    slot = rows * (blocks * n_bins) + ids
    size = q * blocks * n_bins
    out = np.bincount(slot, weights=p - yy, minlength=size) + np.bincount(slot + n_bins, minlength=size)
    if blocks == 3:
        out += np.bincount(slot + 2 * n_bins, weights=yy, minlength=size)
    return out.reshape(q, blocks * n_bins)


def mean_features(
    metric: str, values: np.ndarray, qids: np.ndarray, *, source: str = "", data_hash: str = ""
) -> QueryFeatures:
    """Features of a mean of per-query values ``[Q]`` (or ``[S, Q]``, one row per seed), NaN where undefined.

    For per-query numbers computed elsewhere (e.g. the graded, trec_eval-style metrics of
    :func:`calibrank.metrics.ranking.per_query_ranking`): the metric is the mean over the
    queries where it is defined, its interval the same bootstrap as :func:`features`.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[None] if v.ndim == 1 else v
    q = np.asarray(qids).astype(str)
    if v.ndim != 2 or v.shape[1] != q.shape[0]:
        raise ValueError(f"values must be [Q={q.shape[0]}] or [S, Q]; got shape {np.shape(values)}")
    return QueryFeatures(metric, _mean_features(v), _mean_reduce, q, source, data_hash)


def features(
    runs: Predictions | Sequence[Predictions],
    metric: str,
    *,
    scores: Sequence[np.ndarray] | None = None,
    n_bins: int = 10,
) -> QueryFeatures:
    """Per-query features of ``metric`` for the Predictions of one cell, one per training seed.

    ``runs`` must cover the same queries, candidates and labels (an error names both files
    otherwise). Ranking metrics use ``probs`` unless ``scores`` (one ``[Q, K]`` array per run,
    e.g. risk-aware scores) is given. ``metric``: one of :data:`METRICS` or ``R@k``. A
    Predictions with a ``mask`` counts its candidates only (a padded slot is in no sum).
    """
    runs = [runs] if isinstance(runs, Predictions) else list(runs)
    if not runs:
        raise ValueError("features needs at least one Predictions")
    if metric not in METRICS and not (metric.startswith("R@") and metric[2:].isdigit() and int(metric[2:]) >= 1):
        raise ValueError(f"metric must be one of {METRICS} or R@k; got {metric!r}")
    for other in runs[1:]:
        runs[0].check_aligned(other)
    if scores is not None and len(scores) != len(runs):
        raise ValueError(f"scores must hold one array per run ({len(runs)}); got {len(scores)}")
    calibration = metric in ("ECE", "ECE equal-mass", "ECE debiased", "Brier", "NLL")
    if scores is not None and calibration:
        raise ValueError(f"{metric} is measured on probabilities; scores= applies to ranking metrics only")
    strategy = "quantile" if metric == "ECE equal-mass" else "uniform"
    values = []
    for i, r in enumerate(runs):
        probs = r.probs if scores is None else np.asarray(scores[i], dtype=np.float64)
        if probs.shape != r.labels.shape:
            raise ValueError(f"scores[{i}] has shape {probs.shape}; {r.meta.get('name', 'run')} has {r.labels.shape}")
        real = r.probs.ravel() if r.mask is None else r.probs[r.mask]
        edges = _bin_edges(real, n_bins, strategy)  # each run's own edges, as metrics.calibration.ece
        values.append(_one_run(metric, probs, r.labels, n_bins, edges, r.mask))
    plugin = None
    if metric == "ECE debiased":
        reduce, plain = _ece_debiased_reduce(n_bins), _ece_reduce(n_bins)
        plugin = lambda s: plain(s[..., : 2 * n_bins])  # noqa: E731 - the same buckets without the label sums
    else:
        reduce = _ece_reduce(n_bins) if metric.startswith("ECE") else _mean_reduce
    return QueryFeatures(
        metric, np.stack(values), reduce, runs[0].qids, runs[0].source, str(runs[0].meta.get("data_hash") or ""), plugin
    )


# ------------------------------------------------------------------------------ resampling
def _check_level(level: float) -> None:
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) or not 0.0 < level < 1.0:
        raise ValueError(f"level must be a number strictly between 0 and 1; got {level!r}")


def _check_resamples(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n_resamples must be a positive integer; got {n!r}")


def _counts(idx: np.ndarray, n: int) -> np.ndarray:
    """Rows of resampled indices ``[R, m]`` -> how often each of ``n`` items was drawn ``[R, n]``."""
    r = idx.shape[0]
    flat = (idx.astype(np.int64) + n * np.arange(r)[:, None]).ravel()
    return np.bincount(flat, minlength=r * n).reshape(r, n).astype(np.float64)


@dataclasses.dataclass
class _Layout:
    """Units (group, qid) shared by the cells, and where each cell's queries sit among them."""

    n_units: int
    rows: list[np.ndarray]


def _layout(cells: Sequence[QueryFeatures], groups: Sequence[str] | None) -> _Layout:
    groups = list(groups) if groups is not None else [f"cell{i}" for i in range(len(cells))]
    if len(groups) != len(cells):
        raise ValueError(f"groups must name one group per condition ({len(cells)}); got {len(groups)}")
    index: dict[tuple[str, str], int] = {}
    rows = []
    for g, f in zip(groups, cells):
        rows.append(np.array([index.setdefault((g, str(q)), len(index)) for q in f.qids], dtype=np.int64))
    return _Layout(len(index), rows)


def _seed_count(cells: Sequence[QueryFeatures]) -> int:
    s = {f.n_seeds for f in cells}
    if len(s) != 1:
        raise ValueError(f"every condition and ranker must have the same number of training seeds; got {sorted(s)}")
    return s.pop()


def _per_cell_values(f: QueryFeatures, counts: np.ndarray) -> np.ndarray:
    """Metric per resample and seed ``[R, S]`` from unit counts of this cell's queries ``[R, n_c]``."""
    return np.stack([f.reduce(counts @ f.values[s]) for s in range(f.n_seeds)], axis=1)


def _seed_mean(v: np.ndarray, seed_counts: np.ndarray | None) -> np.ndarray:
    if seed_counts is None:
        return v.mean(axis=1)
    return (v * seed_counts).sum(axis=1) / seed_counts.sum(axis=1)


def _effect(a: np.ndarray, b: np.ndarray, relative: bool) -> np.ndarray:
    if not relative:
        return a - b
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(b > 0, (a - b) / np.where(b > 0, b, 1.0), np.nan)  # a debiased ECE can be <= 0


def _bootstrap(statistic, n_units: int, n_seeds: int, level: float, n_resamples: int, seed: int):
    """Percentile bootstrap over units (and seeds when there are several); returns (low, high, distribution),
    each with a leading axis when ``statistic`` returns several values."""
    data = (np.arange(n_units),) if n_seeds < 2 else (np.arange(n_units), np.arange(n_seeds))
    with warnings.catch_warnings():  # a degenerate or partly undefined distribution is reported in the note
        warnings.simplefilter("ignore", _sps.DegenerateDataWarning)
        res = _sps.bootstrap(
            data,
            statistic,
            paired=False,
            vectorized=True,
            n_resamples=n_resamples,
            batch=_BATCH,
            confidence_level=level,
            method="percentile",
            random_state=np.random.default_rng(seed),
        )
    low, high = np.asarray(res.confidence_interval.low), np.asarray(res.confidence_interval.high)
    if low.ndim == 0:
        return float(low), float(high), np.asarray(res.bootstrap_distribution)
    return low, high, np.asarray(res.bootstrap_distribution)


def _interval_note(dist: np.ndarray, n_seeds: int) -> list[str]:
    notes = [] if n_seeds > 1 else [ONE_SEED_NOTE]
    n_nan = int(np.isnan(dist).sum())
    if n_nan:
        notes.append(f"metric undefined in {n_nan} of {dist.size} resamples (no relevant candidate drawn)")
    finite = dist[np.isfinite(dist)]
    if finite.size and np.ptp(finite) == 0:
        notes.append("the metric is the same in every resample: degenerate interval")
    return notes


def _finish_interval(lo: float, hi: float, dist: np.ndarray, level: float) -> tuple[float, float]:
    """scipy's percentile interval, except that a constant distribution gives ``[v, v]`` and resamples
    where the metric is undefined are left out (the note counts them)."""
    finite = dist[np.isfinite(dist)]
    if finite.size == 0:
        return float("nan"), float("nan")
    if np.ptp(finite) == 0:
        return float(finite[0]), float(finite[0])
    if not (np.isfinite(lo) and np.isfinite(hi)):
        tail = 50.0 * (1.0 - level)
        lo, hi = (float(x) for x in np.percentile(finite, [tail, 100.0 - tail]))
    return lo, hi


def _robust_se(dist: np.ndarray) -> float:
    """Standard error read from the central 68.3% of a bootstrap distribution (half its width)."""
    finite = dist[np.isfinite(dist)]
    if finite.size < 2:
        return float("nan")
    lo, hi = np.percentile(finite, [100.0 * _sps.norm.cdf(-1.0), 100.0 * _sps.norm.cdf(1.0)])
    return float((hi - lo) / 2.0)


def detectable_effect(
    se: float | np.ndarray, *, alpha: float = 0.05, power: float = 0.8, df: float | None = None, n_tests: int = 1
) -> float | np.ndarray:
    """Smallest true effect a one-sided test at level ``alpha / n_tests`` detects with probability ``power``.

    ``(q_{1 - alpha / n_tests} + q_power) * se``, ``q`` the standard normal quantile or Student t's
    with ``df`` degrees of freedom. The Bonferroni level bounds Holm's across ``n_tests`` rows.
    NaN where ``se`` is NaN or ``df`` < 1.
    """
    for name, x in (("alpha", alpha), ("power", power)):
        if isinstance(x, bool) or not isinstance(x, (int, float, np.floating)) or not 0.0 < x < 1.0:
            raise ValueError(f"{name} must be a number strictly between 0 and 1; got {x!r}")
    if isinstance(n_tests, bool) or not isinstance(n_tests, (int, np.integer)) or n_tests < 1:
        raise ValueError(f"n_tests must be a positive integer; got {n_tests!r}")
    level = 1.0 - alpha / n_tests
    if df is None:
        q = _sps.norm.ppf(level) + _sps.norm.ppf(power)
    elif not np.isfinite(df) or df < 1:
        q = float("nan")
    else:
        q = _sps.t.ppf(level, df) + _sps.t.ppf(power, df)
    out = q * np.asarray(se, dtype=np.float64)
    return float(out) if out.ndim == 0 else out


def _centred(lo: float, hi: float, dist: np.ndarray, value: float) -> tuple[float, float, np.ndarray]:
    """Move a bootstrap distribution (and its percentiles) so that its median is ``value``."""
    finite = dist[np.isfinite(dist)]
    if finite.size == 0:
        return lo, hi, dist
    shift = float(np.median(finite)) - value
    return lo - shift, hi - shift, dist - shift


def interval(cell: QueryFeatures, *, level: float = 0.95, n_resamples: int = 2000, seed: int = 0) -> Estimate:
    """The metric of one ranker on one condition with its bootstrap interval (queries, and seeds when several).

    With a ``plugin`` (the debiased ECE), the bootstrap distribution is centred on ``value``
    (see the module docstring) and ``bias`` is the plug-in minus the estimate.
    """
    _check_level(level)
    _check_resamples(n_resamples)
    n_q, n_s = int(cell.values.shape[1]), cell.n_seeds

    def statistic(*samples, axis=-1):
        q = samples[0].reshape(-1, samples[0].shape[-1])
        v = _per_cell_values(cell, _counts(q, n_q))
        sc = None if len(samples) < 2 else _counts(samples[1].reshape(-1, samples[1].shape[-1]), n_s)
        return _seed_mean(v, sc).reshape(samples[0].shape[:-1])

    value = cell.value
    bias = cell.plugin_value - value
    with np.errstate(all="ignore"):
        lo, hi, dist = _bootstrap(statistic, n_q, n_s, level, n_resamples, seed)
        if cell.plugin is not None:
            lo, hi, dist = _centred(lo, hi, dist, value)
    notes = _interval_note(dist, n_s)
    lo, hi = _finish_interval(lo, hi, dist, level)
    return Estimate(value, lo, hi, level, n_q, n_s, "; ".join(notes), _robust_se(dist), bias)


def intervals(
    cells: Sequence[QueryFeatures], *, level: float = 0.95, n_resamples: int = 2000, seed: int = 0
) -> list[Estimate]:
    """:func:`interval` of several metrics of the same queries from one set of resamples.

    The cells must hold the same qids and seeds (e.g. several metrics of one Predictions). Each
    resample's counts are drawn once and reduced by every cell, so the result equals
    ``[interval(c, ...) for c in cells]`` (the same seed draws the same resamples) at the cost of one.
    """
    _check_level(level)
    _check_resamples(n_resamples)
    cells = list(cells)
    if not cells:
        raise ValueError("intervals needs at least one QueryFeatures")
    for c in cells[1:]:
        if not np.array_equal(c.qids, cells[0].qids) or c.n_seeds != cells[0].n_seeds:
            raise ValueError(
                f"intervals: {c.metric} of {c.source} is not on the queries and seeds of "
                f"{cells[0].metric} of {cells[0].source}"
            )
    n_q, n_s = int(cells[0].values.shape[1]), cells[0].n_seeds

    def statistic(*samples, axis=-1):
        q = samples[0].reshape(-1, samples[0].shape[-1])
        counts = _counts(q, n_q)
        sc = None if len(samples) < 2 else _counts(samples[1].reshape(-1, samples[1].shape[-1]), n_s)
        return np.stack([_seed_mean(_per_cell_values(c, counts), sc).reshape(samples[0].shape[:-1]) for c in cells])

    with np.errstate(all="ignore"):
        lo, hi, dist = _bootstrap(statistic, n_q, n_s, level, n_resamples, seed)
    out = []
    for i, c in enumerate(cells):
        d = np.asarray(dist)[i]
        low, high = float(np.atleast_1d(lo)[i]), float(np.atleast_1d(hi)[i])
        if c.plugin is not None:
            low, high, d = _centred(low, high, d, c.value)
        notes = _interval_note(d, n_s)
        low, high = _finish_interval(low, high, d, level)
        out.append(
            Estimate(c.value, low, high, level, n_q, n_s, "; ".join(notes), _robust_se(d), c.plugin_value - c.value)
        )
    return out


def _check_pair(a: QueryFeatures, b: QueryFeatures) -> None:
    if a.metric != b.metric:
        raise ValueError(f"cannot compare {a.metric} of {a.source} with {b.metric} of {b.source}")
    if a.data_hash and b.data_hash and a.data_hash != b.data_hash:
        raise PredictionsError(
            f"{a.source} and {b.source} were computed on different data (data_hash {a.data_hash} "
            f"vs {b.data_hash}): a paired comparison needs the same test set"
        )
    if a.values.shape[1] != b.values.shape[1] or not np.array_equal(a.qids, b.qids):
        raise PredictionsError(
            f"{a.source or 'ranker A'} and {b.source or 'ranker B'} are on different queries "
            f"({a.values.shape[1]} vs {b.values.shape[1]} queries, or a different order): a paired comparison needs the same test set"
        )


_OPPOSITE = {"less": "greater", "greater": "less"}


def compare(
    a: QueryFeatures | Sequence[QueryFeatures],
    b: QueryFeatures | Sequence[QueryFeatures],
    *,
    alternative: str = "two-sided",
    relative: bool = False,
    groups: Sequence[str] | None = None,
    b_groups: Sequence[str] | None = None,
    paired: bool = True,
    level: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Effect of A over B, averaged over conditions: interval and one-sided p-values.

    ``a[i]`` and ``b[i]`` are compared on condition ``i``; Predictions in the same ``groups[i]``
    (``b_groups[i]``) share queries by qid and are resampled jointly. ``alternative`` is the
    claimed direction (``"less"`` for ECE, ``"greater"`` for R@1); ``relative`` gives ``(a - b) / b``.
    ``paired=True``: p-values of the paired permutation test. ``paired=False`` (one ranker on two
    test sets): the percentile bootstrap's ``(1 + #{effect* on the null side of 0}) / (1 + R)``.
    """
    _check_level(level)
    _check_resamples(n_resamples)
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}; got {alternative!r}")
    a_cells = [a] if isinstance(a, QueryFeatures) else list(a)
    b_cells = [b] if isinstance(b, QueryFeatures) else list(b)
    if not a_cells or len(a_cells) != len(b_cells):
        raise ValueError(
            f"a and b must list the same number (>= 1) of conditions; got {len(a_cells)} and {len(b_cells)}"
        )
    groups = list(groups) if groups is not None else [f"cell{i}" for i in range(len(a_cells))]
    b_groups = list(b_groups) if b_groups is not None else groups
    if paired:
        if b_groups != groups:
            raise ValueError("a paired comparison resamples A and B together: b_groups must equal groups")
        for fa, fb in zip(a_cells, b_cells):
            _check_pair(fa, fb)
    n_s = _seed_count(a_cells + b_cells)
    layout = _layout(a_cells + b_cells, groups + b_groups)
    n_u = layout.n_units
    rows_a, rows_b = layout.rows[: len(a_cells)], layout.rows[len(a_cells) :]

    def effect_from(
        sums_a: list[list[np.ndarray]],
        sums_b: list[list[np.ndarray]],
        seed_counts: np.ndarray | None,
        plugin: bool = False,
    ) -> np.ndarray:
        per_cell = []
        for fa, fb, sa, sb in zip(a_cells, b_cells, sums_a, sums_b):
            ra = (fa.plugin or fa.reduce) if plugin else fa.reduce
            rb = (fb.plugin or fb.reduce) if plugin else fb.reduce
            va = np.stack([ra(sa[s]) for s in range(n_s)], axis=1)
            vb = np.stack([rb(sb[s]) for s in range(n_s)], axis=1)
            per_cell.append(_effect(_seed_mean(va, seed_counts), _seed_mean(vb, seed_counts), relative))
        return np.mean(per_cell, axis=0)

    def boot_stat(*samples, axis=-1):
        q = samples[0].reshape(-1, samples[0].shape[-1])
        counts = _counts(q, n_u)
        sc = None if len(samples) < 2 else _counts(samples[1].reshape(-1, samples[1].shape[-1]), n_s)
        sums_a = [[counts[:, rows] @ fa.values[s] for s in range(n_s)] for fa, rows in zip(a_cells, rows_a)]
        sums_b = [[counts[:, rows] @ fb.values[s] for s in range(n_s)] for fb, rows in zip(b_cells, rows_b)]
        return effect_from(sums_a, sums_b, sc).reshape(samples[0].shape[:-1])

    def perm_stat(x, y, axis=-1):
        shape = x.shape[:-1]
        swapped = (x.reshape(-1, n_u) >= n_u).astype(np.float64)  # unit u holds B's predictions on the A side
        sums_a, sums_b = [], []
        for fa, fb, rows in zip(a_cells, b_cells, rows_a):
            sw = swapped[:, rows]
            sa, sb = [], []
            for s in range(n_s):
                delta = sw @ (fb.values[s] - fa.values[s])
                sa.append(fa.values[s].sum(axis=0) + delta)
                sb.append(fb.values[s].sum(axis=0) - delta)
            sums_a.append(sa)
            sums_b.append(sb)
        return effect_from(sums_a, sums_b, None).reshape(shape)

    def permutation_p(alt: str) -> tuple[float, np.ndarray]:
        res = _sps.permutation_test(
            (np.arange(n_u), np.arange(n_u) + n_u),
            perm_stat,
            permutation_type="samples",
            vectorized=True,
            n_resamples=n_resamples,
            batch=_BATCH,
            alternative=alt,
            random_state=np.random.default_rng(seed + 1),
        )
        return float(res.pvalue), np.asarray(res.null_distribution)

    def bootstrap_p(alt: str, dist: np.ndarray) -> float:
        finite = dist[np.isfinite(dist)]
        if alt == "two-sided" or finite.size == 0:
            return float("nan")
        null_side = (finite >= 0) if alt == "less" else (finite <= 0)
        return float((1 + null_side.sum()) / (1 + finite.size))

    full_a = [[fa.values[s].sum(axis=0)[None] for s in range(n_s)] for fa in a_cells]
    full_b = [[fb.values[s].sum(axis=0)[None] for s in range(n_s)] for fb in b_cells]
    value = float(effect_from(full_a, full_b, None)[0])
    a_val = float(np.mean([f.value for f in a_cells]))
    b_val = float(np.mean([f.value for f in b_cells]))
    notes: list[str] = []
    p_opp = float("nan")
    with np.errstate(all="ignore"):
        lo, hi, dist = _bootstrap(boot_stat, n_u, n_s, level, n_resamples, seed)
        if any(f.plugin is not None for f in a_cells + b_cells) and np.isfinite(value):
            lo, hi, dist = _centred(lo, hi, dist, value)
        notes += _interval_note(dist, n_s)
        lo, hi = _finish_interval(lo, hi, dist, level)
        if not np.isfinite(value):
            pvalue = float("nan")
            notes.append("effect undefined on the full set (base metric 0 or no relevant candidate)")
        elif paired:
            pvalue, null = permutation_p(alternative)
            if alternative in _OPPOSITE:
                p_opp = permutation_p(_OPPOSITE[alternative])[0]
            if null.size and np.ptp(null[np.isfinite(null)]) == 0:
                notes.append("the rankers' predictions are identical on every query: no evidence either way")
        else:
            pvalue = bootstrap_p(alternative, dist)
            if alternative in _OPPOSITE:
                p_opp = bootstrap_p(_OPPOSITE[alternative], dist)
            notes.append("unpaired: p-values from the bootstrap")
    return Comparison(
        value,
        lo,
        hi,
        pvalue,
        p_opp,
        alternative,
        relative,
        a_val,
        b_val,
        level,
        n_u,
        n_s,
        len(a_cells),
        "; ".join(dict.fromkeys(notes)),
        _robust_se(dist),
    )
