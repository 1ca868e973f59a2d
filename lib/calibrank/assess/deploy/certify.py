"""A cutoff on the ranker's raw score that keeps precision (or recall) above a target, with a stated confidence.

Learn-then-Test (Angelopoulos et al. 2021): each cutoff ``c`` of a grid of validation scores is the
null hypothesis "keeping every candidate whose score reaches ``c`` has precision below the target";
the hypotheses are tested along a fixed order, and the certified cutoff is the loosest one rejected.
The cutoff is in the ranker's own units, so no map stands between it and the guarantee.

*What the guarantee assumes.* The validation queries and the future ones are independent draws from
one distribution (the deployment's); the candidates of one query may depend on each other in any way
(they share a topic, a difficulty, a judge); and no future query keeps more candidates at a cutoff
than the most any validation query keeps there (recall: holds more relevant documents than the most
any validation query holds). Then, with probability at least ``confidence`` over the draw of the
validation queries, the long-run precision ``E[hits] / E[kept]`` of the certified cutoff on future
queries is at least the target, for any number of validation queries (recall: ``E[hits] / E[relevant]``).

*The test of one cutoff* is over queries, the independent unit: ``D_q = hits_q - target * kept_q``
(recall: ``target * relevant_q``) has mean at least 0 exactly when the long-run precision reaches the
target, and ``D_q >= -target * B`` with ``B`` the bound on a query's kept candidates. Its p-value is a
test by betting (Waudby-Smith & Ramdas 2023, "Estimating means of bounded random variables by
betting", JRSS B 86(1)): a gambler stakes a share ``lambda_i`` of his capital on each query in turn,
``K_i = prod_j (1 + lambda_j D_j / (target B))``, a capital that cannot grow in expectation when the
precision is below the target, so by Ville's inequality ``p = 1 / max_i K_i`` is a p-value whatever
the number of queries. ``lambda_i`` is their predictable plug-in bet for a fixed sample,
``sqrt(2 log(1/alpha) / (n var_{i-1}))`` from the queries before ``i``. Departures from the paper: the
test is one-sided; ``B`` is read from the validation queries (the most any of them keeps at the
cutoff), not known beforehand, which is the third assumption above (the known bound, the longest
list, keeps too few candidates at 300 queries to certify anything: docs/decisions.md); and the bet is
capped at ``0.9`` of the capital rather than their ``1/2`` or ``3/4``, for power (a cap below 1 keeps the
capital positive). A t-test over queries, used before, is valid only as the number of queries
grows, and was optimistic when a few queries carry the kept set.

*The family and its order.* The cutoffs are every distinct validation score while few candidates
are kept, then one each time the kept count has grown by :data:`STEP` (:func:`cutoff_grid`), so
that near the top every candidate counts. Precision is tested from the strictest cutoff down along
a fixed sequence with several starts (a rule that reads no label: where the kept validation
candidates first reach ``min_kept * 4**j``, and keeping every candidate), so that a few wrong
candidates at the very top do not stop every test; each start holds an equal share of
``1 - confidence``, and a cutoff that is rejected passes its level on to the next one (the
fallback procedure, Wiens 2003; a chain in the graphical approach of Bretz et al. 2009), which
controls the family-wise error for any number of cutoffs. Recall falls as the cutoff rises: one
sequence from the loosest cutoff up. Coverage measured on known-truth data (``python -m benchmarks
guarantee``): docs/decisions.md, "Certified thresholds".
"""

from __future__ import annotations

import dataclasses
import math
from enum import Enum

import numpy as np

__all__ = [
    "BET_CAP",
    "Certificate",
    "MAX_CUTOFFS",
    "Metric",
    "PROCEDURE",
    "STEP",
    "certified_cutoff",
    "certify",
    "cutoff_grid",
    "kept_by_cutoff",
    "min_kept",
]

MAX_CUTOFFS = 1000
"""The most cutoffs tested (:func:`cutoff_grid` widens its step until they fit)."""
STEP = 0.01
"""Adjacent cutoffs differ by at most this share of the kept candidates (every distinct score while fewer than
``1 / STEP`` are kept)."""
STARTS = 6
SPACING = 4
"""Most starting points of precision's fixed sequence (the confidence is split among them)."""
BET_CAP = 0.9
"""The largest share of the capital staked on one query (Waudby-Smith & Ramdas use 1/2 or 3/4)."""
PRIOR_VAR = 0.25
"""The variance the bets assume before any query is seen (in units of ``target * B``; theirs, for [0, 1])."""
PROCEDURE = (
    "Learn-then-Test over raw-score cutoffs: fixed-sequence testing with fallback; each cutoff's p-value "
    "from a test by betting over queries (Waudby-Smith & Ramdas 2023), valid for any number of queries "
    "whose candidates may depend on each other"
)


class Metric(str, Enum):
    precision = "precision"
    recall = "recall"


RECALL_OVER = ("qrels", "retrieved")


@dataclasses.dataclass(frozen=True)
class Certificate:
    """What :func:`certify` found on the validation queries.

    ``cutoff``: the certified raw-score cutoff (keep ``score >= cutoff``), NaN when none is;
    ``valid_kept`` / ``valid_hits`` / ``valid_value``: what it kept on validation and its precision
    or recall there; ``best_level``: the highest target certifiable at this confidence (0 when none)
    and ``best_cutoff`` its cutoff; ``queries_needed``: about how many validation queries like these
    would certify ``target`` (None when certified, or when no cutoff reaches it even on validation);
    ``max_value``: the best precision (recall) on validation of a cutoff that keeps enough candidates to be
    certified at all (``min_kept``), for recall the best attainable, keeping every candidate;
    ``candidates``: the validation candidates, ``min_kept``: the fewest kept candidates that can certify
    precision at all; ``tested``: the cutoffs tested; ``recall_over``: what recall counts, every relevant
    document of the qrels (``"qrels"``, as trec_eval) or the relevant candidates the run retrieved
    (``"retrieved"``); ``missed``: relevant documents of the validation qrels the run never retrieved.
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
    recall_over: str = "retrieved"
    missed: int = 0

    @property
    def too_few(self) -> bool:
        """True when the validation candidates are too few for any cutoff to be certified, even an error-free one."""
        return self.metric is Metric.precision and self.candidates < self.min_kept

    @property
    def separation(self) -> bool:
        """False when no cutoff reaches the target even as a point estimate on validation (no clean separation)."""
        return bool(self.max_value >= self.target)

    @property
    def unreachable(self) -> bool:
        """True when a recall target lies above what the run can reach: keeping every candidate it retrieved
        misses too many relevant documents of the qrels."""
        return self.metric is Metric.recall and self.missed > 0 and not self.separation


def min_kept(target: float, confidence: float) -> int:
    """The fewest kept candidates for which even an error-free count certifies precision ``>= target``:
    the binomial p-value after ``n`` hits in ``n`` is ``target ** n`` (no test of the mean does better)."""
    return max(1, math.ceil(math.log(1.0 - confidence) / math.log(target) - 1e-9))


def cutoff_grid(scores: np.ndarray, max_cutoffs: int = MAX_CUTOFFS, step: float = STEP) -> np.ndarray:
    """Increasing cutoffs, each a real score: every distinct score when they are at most ``max_cutoffs``; else
    every distinct one while fewer than ``1 / step`` candidates reach it, then the strictest score at which the
    kept count has grown by the share ``step`` (``step`` widened by half until the cutoffs fit).

    Examples
    --------
    >>> s = np.arange(10_000.0)
    >>> g = cutoff_grid(s, 300)
    >>> kept = (s[None] >= g[:, None]).sum(axis=1)[::-1]     # kept at each cutoff, strictest first
    >>> g.size <= 300, kept[:5].tolist(), bool((np.diff(kept)[20:] <= 0.05 * kept[21:]).all())
    (True, [1, 2, 3, 4, 5], True)
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    neg, counts = np.unique(-s, return_counts=True)  # distinct scores, highest first
    if neg.size <= max_cutoffs:
        return -neg[::-1]
    kept = np.cumsum(counts)  # candidates kept at each distinct score
    while True:
        first = math.ceil(1.0 / step)
        more = first * (1.0 + step) ** np.arange(1, math.ceil(math.log(kept[-1] / first) / math.log1p(step)) + 1)
        levels = np.concatenate([np.arange(1, first + 1), np.ceil(more)])
        at = np.unique(np.r_[np.searchsorted(kept, levels, side="left").clip(max=neg.size - 1), neg.size - 1])
        if at.size <= max_cutoffs:
            return np.sort(-neg[at])
        step *= 1.5


def kept_by_cutoff(
    scores: np.ndarray, labels: np.ndarray, mask: np.ndarray, cutoffs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def _statistic(
    kept: np.ndarray, hits: np.ndarray, rel: np.ndarray, metric: Metric, target: float
) -> tuple[np.ndarray, np.ndarray]:
    """``(D [Q, T], bound [T])``: per query and cutoff ``hits - target * kept`` (recall: ``target * relevant``),
    and the bound ``target * B`` below which no ``-D`` goes (``B``: the most kept, or relevant, in one query)."""
    if metric is Metric.precision:
        return hits - target * kept, target * np.maximum(kept.max(axis=0, initial=0.0), 1.0)
    d = hits - target * rel[:, None]
    return d, np.full(d.shape[1], target * max(float(rel.max(initial=0.0)), 1.0))


def _bet_pvalues(d: np.ndarray, bound: np.ndarray, alpha: float, seed: int, block: int = 256) -> np.ndarray:
    """``[T]`` the betting p-value of H0 ``E[D] <= 0`` for each column of ``d`` (``d >= -bound``), the queries taken
    in a seeded order (module docstring)."""
    n, t = d.shape
    x = d[np.random.default_rng(seed).permutation(n)] / bound
    seen = np.arange(n, dtype=np.float64)[:, None]  # queries before this one
    out = np.empty(t)
    for lo in range(0, t, block):
        xc = x[:, lo : lo + block]
        s1 = np.cumsum(xc, axis=0) - xc  # sums over the queries before
        s2 = np.cumsum(xc * xc, axis=0) - xc * xc
        var = (PRIOR_VAR + np.maximum(s2 - s1 * s1 / np.maximum(seen, 1.0), 0.0)) / (seen + 1.0)
        lam = np.minimum(np.sqrt(2.0 * math.log(1.0 / alpha) / (n * var)), BET_CAP)
        log_capital = np.cumsum(np.log1p(lam * xc), axis=0)
        out[lo : lo + block] = np.exp(-np.maximum(log_capital.max(axis=0), 0.0))
    return out


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
    order = np.flatnonzero(total >= min_kept(target, confidence))[::-1]
    if order.size == 0:
        return order, np.zeros(0, np.int64)
    along = total[order]
    first = _first_start(target, confidence)
    levels = [first * SPACING**j for j in range(STARTS - 1) if first * SPACING**j < along[-1]]
    starts = sorted({int(np.searchsorted(along, n)) for n in levels} | {order.size - 1})
    return order, np.asarray(starts[-STARTS:], np.int64)


def _first_start(target: float, confidence: float) -> int:
    """The fewest kept candidates, one per query and every one relevant, whose bets at the full stake reach a
    start's level ``(1 - confidence) / STARTS``: no start stricter than this could be rejected."""
    return math.ceil(math.log(STARTS / (1.0 - confidence)) / math.log1p(BET_CAP * (1.0 - target) / target) - 1e-9)


def _fallback(p: np.ndarray, starts: np.ndarray, alpha: float) -> tuple[int, int]:
    """``(loosest rejected position or -1, hypotheses tested)``: the fallback procedure along ``p`` (in testing
    order), each start holding ``alpha / len(starts)`` and each rejection passing its level to the next."""
    weight = np.zeros(p.size)
    np.add.at(weight, starts, alpha / starts.size)
    level, reached, tested = 0.0, -1, 0
    for i in range(p.size):
        level += weight[i]
        if level <= 0.0:
            continue
        tested += 1
        if p[i] <= level:
            reached = i
        else:
            level = 0.0
    return reached, tested


def _run(kept, hits, rel, metric, target, confidence, seed) -> tuple[int | None, int, np.ndarray, np.ndarray]:
    """``(certified index or None, cutoffs tested, order, D's bound in order)``."""
    order, starts = _order(kept, metric, target, confidence)
    if order.size == 0:
        return None, 0, order, np.zeros(0)
    alpha = 1.0 - confidence
    d, bound = _statistic(kept[:, order], hits[:, order], rel, metric, target)
    p = _bet_pvalues(d, bound, alpha / starts.size, seed)
    reached, tested = _fallback(p, starts, alpha)
    return (int(order[reached]) if reached >= 0 else None), tested, order, bound


def _values(kept: np.ndarray, hits: np.ndarray, rel: np.ndarray, metric: Metric) -> np.ndarray:
    den = kept.sum(axis=0) if metric is Metric.precision else np.full(kept.shape[1], rel.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, hits.sum(axis=0) / np.where(den > 0, den, 1.0), np.nan)


def _queries_needed(kept, hits, rel, metric, target, confidence, order) -> int | None:
    """About how many queries like these would certify ``target``: ``log(starts / (1 - confidence)) / g`` with ``g``
    the best growth per query of the bettor's log-capital, ``mean log(1 + lambda D / bound)``, over the tested
    cutoffs and the stakes up to :data:`BET_CAP` (the capital grows linearly in the number of queries)."""
    if order.size == 0:
        return None
    _, starts = _order(kept, metric, target, confidence)
    d, bound = _statistic(kept[:, order], hits[:, order], rel, metric, target)
    x = d / bound
    if not (x.mean(axis=0) > 0).any():
        return None
    growth = max(float(np.log1p(lam * x).mean(axis=0).max()) for lam in BET_CAP * np.geomspace(1e-3, 1.0, 40))
    if growth <= 0:
        return None
    return max(d.shape[0] + 1, math.ceil(math.log(max(starts.size, 1) / (1.0 - confidence)) / growth))


def _prepare(scores, labels, mask, relevant, max_cutoffs):
    """``(cutoffs, kept, hits, relevant [Q], missed, candidates)`` of the validation queries."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels).astype(bool)
    m = np.ones(s.shape, bool) if mask is None else np.asarray(mask, dtype=bool)
    cutoffs = cutoff_grid(s[m], max_cutoffs)
    kept, hits, rel = kept_by_cutoff(s, y & m, m, cutoffs)
    missed = 0
    if relevant is not None:
        qrels = np.asarray(relevant, dtype=np.float64).reshape(-1)
        if qrels.shape != rel.shape or (qrels < rel).any():
            raise ValueError(
                f"relevant: expected one count per query, each at least its relevant candidates "
                f"({rel.size} queries), got shape {qrels.shape}"
            )
        missed, rel = int(round(qrels.sum() - rel.sum())), qrels
    return cutoffs, kept, hits, rel, missed, int(m.sum())


def certified_cutoff(
    scores: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray | None = None,
    *,
    metric: Metric | str = Metric.precision,
    target: float = 0.9,
    confidence: float = 0.9,
    relevant: np.ndarray | None = None,
    max_cutoffs: int = MAX_CUTOFFS,
    seed: int = 0,
) -> float:
    """The cutoff :func:`certify` certifies (NaN when none is), without what it adds for the page: the highest
    certifiable level, the queries needed. The parameters are :func:`certify`'s.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random((400, 10)) < 0.2
    >>> s = y + rng.normal(0, 0.5, y.shape)
    >>> certified_cutoff(s, y, target=0.8) == certify(s, y, target=0.8).cutoff
    True
    """
    cutoffs, kept, hits, rel, _, _ = _prepare(scores, labels, mask, relevant, max_cutoffs)
    at, *_ = _run(kept, hits, rel, Metric(metric), target, confidence, seed)
    return float(cutoffs[at]) if at is not None else float("nan")


def certify(
    scores: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray | None = None,
    *,
    metric: Metric | str = Metric.precision,
    target: float = 0.9,
    confidence: float = 0.9,
    relevant: np.ndarray | None = None,
    max_cutoffs: int = MAX_CUTOFFS,
    seed: int = 0,
) -> Certificate:
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
    relevant : ndarray of shape (n_queries,), default=None
        Recall's denominator: every relevant document of each query in the qrels, retrieved or not (as
        trec_eval counts recall). None: the relevant candidates in the lists.
    max_cutoffs : int, default=1000
        The most cutoffs tested (:func:`cutoff_grid`).
    seed : int, default=0
        The order in which the bets meet the queries.

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
    cutoffs, kept, hits, rel, missed, candidates = _prepare(scores, labels, mask, relevant, max_cutoffs)
    at, tested, order, _ = _run(kept, hits, rel, metric, target, confidence, seed)
    values = _values(kept, hits, rel, metric)
    counted = kept.sum(axis=0) >= (min_kept(target, confidence) if metric is Metric.precision else 1)
    max_value = float(np.nanmax(values[counted])) if np.isfinite(values[counted]).any() else 0.0

    lo, hi, best = 0.0, 1.0, None
    for _ in range(30):  # bisection: a target certified implies (nearly always) every lower one is
        mid = 0.5 * (lo + hi)
        got, *_ = _run(kept, hits, rel, metric, mid, confidence, seed)
        if got is None:
            hi = mid
        else:
            lo, best = mid, got
        if hi - lo < 5e-4:
            break
    level = math.floor(lo * 1000) / 1000 if best is not None else 0.0
    if best is not None:
        floored, *_ = _run(kept, hits, rel, metric, level, confidence, seed)
        best = floored if floored is not None else best
    needed = None
    if at is None and max_value >= target:
        needed = _queries_needed(kept, hits, rel, metric, target, confidence, order)
    pick = at
    return Certificate(
        metric=metric,
        target=float(target),
        confidence=float(confidence),
        cutoff=float(cutoffs[pick]) if pick is not None else float("nan"),
        certified=pick is not None,
        tested=tested,
        valid_queries=int(kept.shape[0]),
        valid_kept=int(kept[:, pick].sum()) if pick is not None else 0,
        valid_hits=int(hits[:, pick].sum()) if pick is not None else 0,
        valid_value=float(values[pick]) if pick is not None else float("nan"),
        best_level=float(level),
        best_cutoff=float(cutoffs[best]) if best is not None else float("nan"),
        queries_needed=needed,
        max_value=max_value,
        candidates=candidates,
        min_kept=min_kept(target, confidence),
        recall_over="qrels" if relevant is not None else "retrieved",
        missed=missed,
    )
