"""A cutoff on the ranker's raw score that keeps precision (or recall) above a target, with a stated confidence.

Learn-then-Test (Angelopoulos et al. 2021, fixed-sequence testing, their Proposition 3): for each
cutoff ``c`` of a grid of validation scores, the null hypothesis "keeping every candidate whose
score reaches ``c`` has precision below the target" is tested in a fixed order, from the strictest
cutoff down; the certified cutoff is the loosest one reached before the first test that fails.
Recall is tested from the loosest cutoff up. The cutoff is in the ranker's own units, so no map
stands between it and the guarantee.

Candidates of one query are not independent (they share a topic, a difficulty, a judge), so each
cutoff's p-value is the larger of two tests, and a cutoff is certified only when both reject:

- candidate level: the exact one-sided binomial test on the kept candidates, exact when they are
  independent and the guard for small samples;
- query level: a one-sided t-test over queries of ``D_q = hits_q - target * kept_q`` (recall:
  ``target * relevant_q``), whose mean is at least 0 exactly when the long-run precision
  ``E[hits] / E[kept]`` reaches the target; valid as the number of queries grows, whatever the
  dependence inside a query.

Precision's sequences start at the strictest cutoffs that keep enough validation candidates for an
error-free count to certify, and at a few looser ones (a rule that reads no label), each tested at
an equal share of ``1 - confidence`` (Bonferroni), so a few wrong candidates at the very top of the
scores do not stop every test. What the guarantee means, and the
coverage measured on synthetic data: docs/decisions.md, "Certified thresholds".
"""

from __future__ import annotations

import dataclasses
import math
from enum import Enum

import numpy as np
from scipy import stats

__all__ = ["Certificate", "Metric", "certify", "cutoff_grid", "kept_by_cutoff", "min_kept"]

MAX_CUTOFFS = 200
"""Cutoffs tested: every distinct validation score, or this many of its quantiles."""
STARTS = 6
"""Most starting points of precision's fixed sequences (the confidence is split among them)."""


class Metric(str, Enum):
    precision = "precision"
    recall = "recall"


@dataclasses.dataclass(frozen=True)
class Certificate:
    """What :func:`certify` found on the validation queries.

    ``cutoff``: the certified raw-score cutoff (keep ``score >= cutoff``), NaN when none is;
    ``valid_kept`` / ``valid_hits`` / ``valid_value``: what it kept on validation and its precision
    or recall there; ``best_level``: the highest target certifiable at this confidence (0 when none)
    and ``best_cutoff`` its cutoff; ``queries_needed``: about how many validation queries like these
    would certify ``target`` (None when certified, or when no cutoff reaches it even on validation);
    ``max_value``: the best precision (recall) on validation of a cutoff that keeps enough candidates to be
    certified at all (``min_kept``); ``candidates``: the
    validation candidates, ``min_kept``: the fewest kept candidates that can certify precision at all.
    """

    metric: Metric
    target: float
    confidence: float
    cutoff: float
    certified: bool
    tested: int
    valid_queries: int
    valid_kept: int
    valid_hits: int
    valid_value: float
    best_level: float
    best_cutoff: float
    queries_needed: int | None
    max_value: float
    candidates: int
    min_kept: int

    @property
    def too_few(self) -> bool:
        """True when the validation candidates are too few for any cutoff to be certified, even an error-free one."""
        return self.metric is Metric.precision and self.candidates < self.min_kept

    @property
    def separation(self) -> bool:
        """False when no cutoff reaches the target even as a point estimate on validation (no clean separation)."""
        return bool(self.max_value >= self.target)


def min_kept(target: float, confidence: float) -> int:
    """The fewest kept candidates for which even an error-free count certifies precision ``>= target``:
    the binomial p-value after ``n`` hits in ``n`` is ``target ** n``."""
    return max(1, math.ceil(math.log(1.0 - confidence) / math.log(target) - 1e-9))


def cutoff_grid(scores: np.ndarray, max_cutoffs: int = MAX_CUTOFFS) -> np.ndarray:
    """Increasing cutoffs: every distinct score, or ``max_cutoffs`` of their quantiles (each one a real score)."""
    distinct = np.unique(np.asarray(scores, dtype=np.float64))
    if distinct.size <= max_cutoffs:
        return distinct
    return np.unique(np.quantile(distinct, np.linspace(0.0, 1.0, max_cutoffs), method="lower"))


def kept_by_cutoff(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray,
                   cutoffs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(kept [Q, T], hits [Q, T], relevant [Q])``: per query, candidates with ``score >= cutoffs[t]``,
    the relevant ones among them, and its relevant candidates."""
    q, t = mask.shape[0], cutoffs.size
    rows = np.broadcast_to(np.arange(q)[:, None], mask.shape)[mask]
    s, y = scores[mask], labels[mask].astype(np.float64)
    slot = np.searchsorted(cutoffs, s, side="right") - 1  # the largest cutoff <= s; -1: below every cutoff
    above = slot >= 0
    flat = rows[above] * t + slot[above]
    n = np.bincount(flat, minlength=q * t).reshape(q, t).astype(np.float64)
    h = np.bincount(flat, weights=y[above], minlength=q * t).reshape(q, t)
    kept = n[:, ::-1].cumsum(axis=1)[:, ::-1]
    hits = h[:, ::-1].cumsum(axis=1)[:, ::-1]
    return kept, hits, (labels * mask).sum(axis=1).astype(np.float64)


def _pvalues(kept: np.ndarray, hits: np.ndarray, rel: np.ndarray, metric: Metric, target: float) -> np.ndarray:
    """``[T]`` the larger of the candidate-level binomial and the query-level t-test p-values of H0: below target."""
    total = kept.sum(axis=0) if metric is Metric.precision else np.full(kept.shape[1], rel.sum())
    good = hits.sum(axis=0)
    p_binom = np.where(total > 0, stats.binom.cdf(total - good, np.maximum(total, 1), 1.0 - target), 1.0)
    base = kept if metric is Metric.precision else rel[:, None]
    d = hits - target * base
    n = d.shape[0]
    mean, sd = d.mean(axis=0), d.std(axis=0, ddof=1) if n > 1 else np.zeros(d.shape[1])
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / math.sqrt(n))
    p_t = np.where(sd > 0, stats.t.sf(t, max(n - 1, 1)), np.where(mean > 0, 0.0, 1.0))
    return np.maximum(p_binom, p_t)


def _order(kept: np.ndarray, metric: Metric, target: float, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """``(order, starts)``: indices of the cutoffs in testing order and the positions in it where a sequence
    starts (label-free). Recall: one sequence from the loosest cutoff up (recall only falls as the cutoff
    rises). Precision: from the strictest cutoff down, with a start wherever the kept candidates first reach
    ``min_kept * 4**j`` (at most :data:`STARTS`, the last keeping every candidate), since precision need not
    rise with the cutoff at the very top of a weak ranker's scores."""
    t = kept.shape[1]
    if metric is Metric.recall:
        return np.arange(t), np.zeros(1, np.int64)
    total = kept.sum(axis=0)
    need = min_kept(target, confidence)
    order = np.flatnonzero(total >= need)[::-1]
    if order.size == 0:
        return order, np.zeros(0, np.int64)
    along = total[order]
    levels = [need * 4 ** j for j in range(STARTS - 1) if need * 4 ** j < along[-1]]
    starts = sorted({int(np.searchsorted(along, n)) for n in levels} | {order.size - 1})
    return order, np.asarray(starts[-STARTS:], np.int64)


def _run(kept, hits, rel, metric, target, confidence) -> tuple[int | None, int, np.ndarray, np.ndarray]:
    """``(certified index or None, tests run, order, p-values in order)``: fixed-sequence testing from each start
    at level ``(1 - confidence) / starts`` (Bonferroni over the sequences); the loosest cutoff any reaches."""
    order, starts = _order(kept, metric, target, confidence)
    if order.size == 0:
        return None, 0, order, np.zeros(0)
    p = _pvalues(kept[:, order], hits[:, order], rel, metric, target)
    fail = p > (1.0 - confidence) / starts.size
    reached, tested = -1, np.zeros(order.size, bool)
    for s in starts:
        after = np.flatnonzero(fail[s:])
        stop = s + (after[0] if after.size else order.size - s)  # first failing position, or the end
        tested[s: min(stop + 1, order.size)] = True
        if stop > s:
            reached = max(reached, stop - 1)
    return (int(order[reached]) if reached >= 0 else None), int(tested.sum()), order, p


def _values(kept: np.ndarray, hits: np.ndarray, rel: np.ndarray, metric: Metric) -> np.ndarray:
    den = kept.sum(axis=0) if metric is Metric.precision else np.full(kept.shape[1], rel.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, hits.sum(axis=0) / np.where(den > 0, den, 1.0), np.nan)


def _queries_needed(kept, hits, rel, metric, target, confidence, order) -> int | None:
    """About how many queries like these would certify ``target`` at the tested cutoff whose query-level
    t-statistic is largest (the statistic grows as the square root of the number of queries)."""
    if order.size == 0:
        return None
    base = kept[:, order] if metric is Metric.precision else rel[:, None]
    d = hits[:, order] - target * base
    n = d.shape[0]
    mean, sd = d.mean(axis=0), d.std(axis=0, ddof=1) if n > 1 else np.zeros(order.size)
    ok = (mean > 0) & (sd > 0)
    if not ok.any():
        return None
    z = float(np.max(mean[ok] / sd[ok]))  # effect per query
    crit = stats.norm.isf(1.0 - confidence)
    return max(n + 1, math.ceil((crit / z) ** 2))


def certify(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray | None = None, *,
            metric: Metric | str = Metric.precision, target: float = 0.9, confidence: float = 0.9,
            max_cutoffs: int = MAX_CUTOFFS) -> Certificate:
    """Certify a raw-score cutoff on validation queries (see the module docstring).

    Parameters
    ----------
    scores : ndarray of shape (n_queries, n_candidates)
        One raw score per candidate (padded slots anything, left out by ``mask``).
    labels : ndarray of shape (n_queries, n_candidates)
        1 for a relevant candidate, else 0.
    mask : ndarray of bool, default=None
        True where a query has a candidate (None: every slot).
    metric : {"precision", "recall"}, default="precision"
        What the cutoff guarantees over the kept candidates of future queries.
    target : float, default=0.9
        The level to guarantee, in (0, 1).
    confidence : float, default=0.9
        The probability, over the draw of validation queries, that the guarantee holds.
    max_cutoffs : int, default=200
        Cutoffs tested (:func:`cutoff_grid`).

    Returns
    -------
    Certificate

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random((400, 10)) < 0.2
    >>> s = y + rng.normal(0, 0.5, y.shape)
    >>> c = certify(s, y, target=0.8, confidence=0.9)
    >>> bool(c.certified), c.valid_value >= 0.8
    (True, True)
    """
    metric = Metric(metric)
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(bool)
    m = np.ones(s.shape, bool) if mask is None else np.asarray(mask, dtype=bool)
    cutoffs = cutoff_grid(s[m], max_cutoffs)
    kept, hits, rel = kept_by_cutoff(s, y & m, m, cutoffs)
    at, tested, order, _ = _run(kept, hits, rel, metric, target, confidence)
    values = _values(kept, hits, rel, metric)
    counted = kept.sum(axis=0) >= (min_kept(target, confidence) if metric is Metric.precision else 1)
    max_value = float(np.nanmax(values[counted])) if np.isfinite(values[counted]).any() else 0.0

    lo, hi, best = 0.0, 1.0, None
    for _ in range(30):  # bisection: a target certified implies every lower one is
        mid = 0.5 * (lo + hi)
        got, *_ = _run(kept, hits, rel, metric, mid, confidence)
        if got is None:
            hi = mid
        else:
            lo, best = mid, got
        if hi - lo < 1e-4:
            break
    level = math.floor(lo * 1000) / 1000 if best is not None else 0.0
    if best is not None:
        best, *_ = _run(kept, hits, rel, metric, level, confidence)
    needed = None
    if at is None and max_value >= target:
        needed = _queries_needed(kept, hits, rel, metric, target, confidence, order)
    pick = at
    return Certificate(
        metric=metric, target=float(target), confidence=float(confidence),
        cutoff=float(cutoffs[pick]) if pick is not None else float("nan"), certified=pick is not None, tested=tested,
        valid_queries=int(s.shape[0]), valid_kept=int(kept[:, pick].sum()) if pick is not None else 0,
        valid_hits=int(hits[:, pick].sum()) if pick is not None else 0,
        valid_value=float(values[pick]) if pick is not None else float("nan"),
        best_level=float(level),
        best_cutoff=float(cutoffs[best]) if best is not None else float("nan"), queries_needed=needed,
        max_value=max_value, candidates=int(m.sum()), min_kept=min_kept(target, confidence))
