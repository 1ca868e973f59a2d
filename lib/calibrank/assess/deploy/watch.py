"""Watch a deployed calibrator on new queries that nobody has judged: how does its cutoff do, and does it still apply?

Two questions, with no labels:

- **How does the cutoff do here?** Confidence-based performance estimation (CBPE, the label-free
  estimate of NannyML), read per query and for a ranking: a query's expected hits among its kept
  candidates are the sum of their calibrated probabilities, so the expected precision of the
  kept candidates is ``sum_q sum_kept p / sum_q kept_q`` and the kept share is observed. The
  interval resamples whole queries (their variety, and whatever ties a query's candidates
  together) and, in each resample, draws every kept candidate's relevance from its calibrated
  probability (the chance a judge would add): it is an interval for the precision that judging
  queries like these would measure. Queries resampled alone would give an interval for the
  expected precision only, which covers the judged precision far less often than stated
  (docs/decisions.md, "Watching a deployed calibrator"). The estimate is exactly as good as the
  map is calibrated on the new queries: which the shift test checks.
- **Are these scores like the validation ones?** The calibrator keeps a :class:`Fingerprint` of
  its validation scores: the quantiles of four per-query summaries (the top score, the margin
  between the top two, the mean score and the list length) and of the pooled scores. Summaries,
  not the scores: ``LEVELS + 1`` numbers each. Each per-query summary of the new run is compared
  with the stored one by the two-sample Kolmogorov-Smirnov test, queries being the independent
  units; the stored quantiles bound the validation CDF between two steps ``1 / LEVELS`` apart, and
  the test reads the smallest distance those bounds allow (so storing quantiles instead of the
  values can only make it more cautious). The p-value is Kolmogorov's distribution at the effective
  size ``n m / (n + m)`` (as ``scipy.stats.ks_2samp(method="asymp")`` reads it); the summaries are
  tested at ``false_alarm / 4`` each (Bonferroni), so queries drawn as the validation ones were are
  flagged with probability at most about ``false_alarm``: it assumes the validation and new queries
  are independent draws of one population, and ties (list lengths) only make the test more cautious.
  The pooled quantiles are not tested (candidates of one query are not independent): they say how
  much of the new run lies outside the validation scores' range, where the map extrapolates.

A flagged run is one the certified guarantee was not made for: the cutoff's precision (or recall)
is promised for queries like the validation ones, and the estimate reads a map fitted on them.
Numpy and scipy alone, like the rest of the :class:`~calibrank.assess.deploy.calibrator.Calibrator`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import stats

__all__ = [
    "Distribution",
    "Estimate",
    "Fingerprint",
    "FingerprintError",
    "LEVELS",
    "SUMMARIES",
    "Shift",
    "SummaryTest",
    "Watch",
    "estimate",
    "query_summaries",
    "shift_test",
    "watch",
]

LEVELS = 200
"""Stored quantiles are at ``j / LEVELS``, ``j = 0 .. LEVELS``: the validation CDF is known to within ``1 / LEVELS``."""
SUMMARIES = ("top", "margin", "mean", "length")
"""The per-query summaries the shift test compares: the top score, the top score minus the second (lists of two
candidates or more), the mean score, the number of candidates."""
_NAMES = {
    "top": "top score",
    "margin": "margin top1 - top2",
    "mean": "mean score",
    "length": "list length",
    "scores": "pooled scores",
}
_CHUNK = 4_000_000
"""Binomial draws per block of bootstrap resamples (memory, not results: the draws are the same in any blocks)."""


class FingerprintError(ValueError):
    """A fingerprint that cannot be built from what it was given; the message names the field."""


# --------------------------------------------------------------------------- the fingerprint


def _mask(scores: Any, mask: Any) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    s = s[None] if s.ndim == 1 else s
    if s.ndim != 2:
        raise FingerprintError(f"scores: expected one list [K] or one list per row [Q, K], got shape {s.shape}")
    m = np.ones(s.shape, bool) if mask is None else np.asarray(mask, dtype=bool)
    if m.shape != s.shape:
        raise FingerprintError(f"mask: expected the shape of scores {s.shape}, got {m.shape}")
    if not m.any(axis=1).all():
        raise FingerprintError("scores: every list needs at least one candidate")
    if not np.isfinite(s[m]).all():
        raise FingerprintError("scores: expected finite numbers")
    return s, m


def query_summaries(scores: Any, mask: Any = None) -> dict[str, np.ndarray]:
    """Each list's summaries of :data:`SUMMARIES`: ``{name: [Q]}`` (``margin`` only for lists of two or more).

    Parameters
    ----------
    scores : array-like of float
        ``[Q, K]`` raw scores, one list per row.
    mask : array-like of bool, default=None
        ``[Q, K]`` True where a row has a candidate (None: every slot).

    Returns
    -------
    dict of ndarray
        ``top``, ``margin`` (shorter: the lists with a second candidate), ``mean`` and ``length``.

    Examples
    --------
    >>> out = query_summaries([[3.0, 1.0, 0.5], [2.0, 0.0, 0.0]], [[True, True, True], [True, False, False]])
    >>> {k: v.tolist() for k, v in out.items()}
    {'top': [3.0, 2.0], 'margin': [2.0], 'mean': [1.5, 2.0], 'length': [3.0, 1.0]}
    """
    s, m = _mask(scores, mask)
    length = m.sum(axis=1)
    neg = np.where(m, -s, np.inf)
    two = -np.partition(neg, 1, axis=1)[:, :2] if s.shape[1] >= 2 else np.concatenate([-neg, -neg], axis=1)
    mean = np.where(m, s, 0.0).sum(axis=1) / length
    return {
        "top": two[:, 0],
        "margin": (two[:, 0] - two[:, 1])[length >= 2],
        "mean": mean,
        "length": length.astype(np.float64),
    }


@dataclasses.dataclass(frozen=True)
class Distribution:
    """``n`` values kept as their quantiles at ``j / (len(quantiles) - 1)``: the smallest value whose share of the
    ``n`` reaches each level (the inverted empirical CDF), so the CDF ``F`` at any ``x`` is known to lie in
    :meth:`cdf_bounds`. Empty quantiles when ``n`` is 0."""

    n: int
    quantiles: tuple[float, ...]

    def __post_init__(self) -> None:
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or self.n < 0:
            raise FingerprintError(f"n: expected a whole number >= 0, got {self.n!r}")
        q = tuple(self.quantiles)
        if any(isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) for v in q):
            raise FingerprintError("quantiles: expected numbers")
        a = np.asarray(q, dtype=np.float64)
        if (self.n == 0) != (a.size == 0):
            raise FingerprintError(
                f"quantiles: expected {'none' if self.n == 0 else LEVELS + 1} for n = {self.n}, got {a.size}"
            )
        if a.size and (a.size != LEVELS + 1 or not np.isfinite(a).all() or (np.diff(a) < 0).any()):
            raise FingerprintError(f"quantiles: expected {LEVELS + 1} finite non-decreasing numbers")
        object.__setattr__(self, "n", int(self.n))
        object.__setattr__(self, "quantiles", tuple(float(v) for v in a))

    @classmethod
    def of(cls, values: Any) -> Distribution:
        """The distribution of ``values`` (1-D, finite)."""
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        if not v.size:
            return cls(0, ())
        return cls(int(v.size), tuple(np.quantile(v, np.arange(LEVELS + 1) / LEVELS, method="inverted_cdf").tolist()))

    def cdf_bounds(self, x: Any, *, left: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)``: bounds of ``F(x)`` (``left``: of ``F(x-)``, the share strictly below ``x``).

        With ``q_j`` the smallest value whose share reaches ``u_j = j / LEVELS``: ``F(q_j) >= u_j`` and
        ``F(x) < u_k`` for ``x < q_k``, so ``u_j <= F(x) <= u_k`` for the last ``q_j <= x`` and the first
        ``q_k > x``; 0 below the smallest value, 1 from the largest on.
        """
        q = np.asarray(self.quantiles)
        u = np.concatenate([[0.0], np.arange(q.size) / (q.size - 1), [1.0]])
        at = np.searchsorted(q, np.asarray(x, dtype=np.float64), side="left" if left else "right")
        return u[at], u[at + 1]

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "quantiles": list(self.quantiles)}

    @classmethod
    def from_dict(cls, name: str, d: Any) -> Distribution:
        if not isinstance(d, Mapping) or set(d) != {"n", "quantiles"}:
            got = sorted(d) if isinstance(d, Mapping) else type(d).__name__
            raise FingerprintError(f"{name}: expected an object with keys ['n', 'quantiles'], got {got}")
        if not isinstance(d["quantiles"], list):
            raise FingerprintError(f"{name}.quantiles: expected a list of numbers")
        try:
            return cls(d["n"], tuple(d["quantiles"]))
        except FingerprintError as exc:
            raise FingerprintError(f"{name}.{exc}") from None


@dataclasses.dataclass(frozen=True)
class Fingerprint:
    """What the validation scores looked like, as quantiles: the per-query :data:`SUMMARIES` and the pooled scores.

    Stored in ``calibrator.json`` so that :func:`watch` can tell whether new queries are like the ones the
    cutoff was certified on, without keeping the validation scores themselves.

    Examples
    --------
    >>> import numpy as np
    >>> fp = Fingerprint.of(np.random.default_rng(0).normal(size=(50, 8)))
    >>> fp.queries, fp.candidates, len(fp.top.quantiles)
    (50, 400, 201)
    """

    top: Distribution
    margin: Distribution
    mean: Distribution
    length: Distribution
    scores: Distribution

    def __post_init__(self) -> None:
        for name in (*SUMMARIES, "scores"):
            if not isinstance(getattr(self, name), Distribution):
                raise FingerprintError(f"{name}: expected a Distribution, got {type(getattr(self, name)).__name__}")
        q = self.top.n
        if q < 1 or self.mean.n != q or self.length.n != q:
            raise FingerprintError(
                f"top, mean, length: expected one value per validation query (at least one), got "
                f"{self.top.n}, {self.mean.n}, {self.length.n}"
            )
        if self.margin.n > q:
            raise FingerprintError(f"margin.n: expected at most the {q} queries, got {self.margin.n}")
        lengths = np.asarray(self.length.quantiles)
        if lengths[0] < 1 or (lengths != np.round(lengths)).any():
            raise FingerprintError("length.quantiles: expected whole numbers >= 1")
        if self.scores.n < q or (self.margin.n == 0) != (lengths[-1] == 1):
            raise FingerprintError(
                f"scores.n, margin.n: {self.scores.n} candidates and {self.margin.n} lists of two "
                f"or more do not fit {q} lists of {lengths[0]:g} to {lengths[-1]:g} candidates"
            )
        if self.margin.n and self.margin.quantiles[0] < 0:
            raise FingerprintError("margin.quantiles: expected numbers >= 0 (the top score minus the second)")

    @property
    def queries(self) -> int:
        return self.top.n

    @property
    def candidates(self) -> int:
        return self.scores.n

    @classmethod
    def of(cls, scores: Any, mask: Any = None) -> Fingerprint:
        """The fingerprint of ``[Q, K]`` raw ``scores`` (``mask``: True where a row has a candidate)."""
        s, m = _mask(scores, mask)
        summaries = query_summaries(s, m)
        return cls(**{k: Distribution.of(v) for k, v in summaries.items()}, scores=Distribution.of(s[m]))

    def to_dict(self) -> dict[str, Any]:
        return {"levels": LEVELS, **{name: getattr(self, name).to_dict() for name in (*SUMMARIES, "scores")}}

    @classmethod
    def from_dict(cls, d: Any) -> Fingerprint:
        keys = {"levels", *SUMMARIES, "scores"}
        if not isinstance(d, Mapping):
            raise FingerprintError(f"expected an object, got {type(d).__name__}")
        if set(d) != keys:
            unknown, missing = sorted(set(d) - keys), sorted(keys - set(d))
            raise FingerprintError(
                f"{'unknown' if unknown else 'missing'} key(s) {unknown or missing}; expected {sorted(keys)}"
            )
        if d["levels"] != LEVELS or isinstance(d["levels"], bool):
            raise FingerprintError(f"levels: this calibrank stores quantiles at j / {LEVELS}, got {d['levels']!r}")
        return cls(**{name: Distribution.from_dict(name, d[name]) for name in (*SUMMARIES, "scores")})


# --------------------------------------------------------------------------- the shift test


@dataclasses.dataclass(frozen=True)
class SummaryTest:
    """One summary's two-sample Kolmogorov-Smirnov test: ``statistic`` the smallest sup-distance between the new
    run's CDF and the validation one that the stored quantiles allow, ``p_value`` and ``flagged`` (p below the
    Bonferroni share ``alpha``). ``p_value`` is None when the new run has no value of it (no list of two)."""

    summary: str
    valid: int
    new: int
    statistic: float
    p_value: float | None
    alpha: float

    @property
    def flagged(self) -> bool:
        return self.p_value is not None and self.p_value <= self.alpha


@dataclasses.dataclass(frozen=True)
class Shift:
    """The shift test of a run against a fingerprint: each summary's test, the false-alarm rate of all of them
    together, and ``outside``: the share of the new candidates scored outside the validation scores' range."""

    tests: tuple[SummaryTest, ...]
    false_alarm: float
    outside: float

    @property
    def flagged(self) -> bool:
        return any(t.flagged for t in self.tests)


def _ks_lower(ref: Distribution, x: np.ndarray) -> float:
    """The smallest ``sup_t |F(t) - G(t)|`` that ``ref``'s bounds on the validation CDF ``F`` allow, ``G`` the
    empirical CDF of ``x``. Both are right-continuous steps, so the supremum is read at every step of either,
    at the step and just before it."""
    xs = np.sort(x)
    t = np.union1d(xs, np.asarray(ref.quantiles))
    d = 0.0
    for left in (False, True):
        g = np.searchsorted(xs, t, side="left" if left else "right") / xs.size
        lo, hi = ref.cdf_bounds(t, left=left)
        d = max(d, float(np.max(lo - g)), float(np.max(g - hi)))
    return d


def shift_test(fingerprint: Fingerprint, scores: Any, mask: Any = None, *, false_alarm: float = 0.05) -> Shift:
    """Are these lists' scores like the validation ones? Each of :data:`SUMMARIES` by a two-sample KS test at
    ``false_alarm / len(SUMMARIES)`` (see the module docstring for what it assumes).

    Parameters
    ----------
    fingerprint : Fingerprint
        The validation scores' fingerprint.
    scores, mask : array-like
        ``[Q, K]`` the new raw scores and where a row has a candidate.
    false_alarm : float, default=0.05
        The probability of flagging queries drawn as the validation ones were (at most about).

    Returns
    -------
    Shift

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> fp = Fingerprint.of(rng.normal(size=(300, 10)))
    >>> shift_test(fp, rng.normal(size=(300, 10))).flagged, shift_test(fp, rng.normal(size=(300, 10)) + 1).flagged
    (False, True)
    """
    if not isinstance(fingerprint, Fingerprint):
        raise FingerprintError(f"fingerprint: expected a Fingerprint, got {type(fingerprint).__name__}")
    if isinstance(false_alarm, bool) or not isinstance(false_alarm, (int, float)) or not 0 < false_alarm < 1:
        raise FingerprintError(f"false_alarm: expected a number in (0, 1), got {false_alarm!r}")
    s, m = _mask(scores, mask)
    new = query_summaries(s, m)
    alpha = false_alarm / len(SUMMARIES)
    tests = []
    for name in SUMMARIES:
        ref, x = getattr(fingerprint, name), new[name]
        if ref.n == 0 or x.size == 0:
            tests.append(SummaryTest(name, ref.n, int(x.size), 0.0, None, alpha))
            continue
        d = _ks_lower(ref, x)
        p = 1.0 if d <= 0 else float(stats.kstwo.sf(d, max(1, round(ref.n * x.size / (ref.n + x.size)))))
        tests.append(SummaryTest(name, ref.n, int(x.size), d, p, alpha))
    pooled = fingerprint.scores.quantiles
    outside = float(((s[m] < pooled[0]) | (s[m] > pooled[-1])).mean())
    return Shift(tuple(tests), float(false_alarm), outside)


# --------------------------------------------------------------------------- the label-free estimate


@dataclasses.dataclass(frozen=True)
class Estimate:
    """What the certified cutoff does on the new queries, read from the calibrated probabilities.

    ``kept_share`` (observed) and ``precision`` (expected) with their ``level`` intervals, as
    ``(value, low, high)``; ``recall``: the expected share of the relevant *listed* candidates
    that are kept (None unless the cutoff certifies recall; relevant documents the run did not
    list are not seen, so it can only be higher than the recall certified); ``valid_kept_share``:
    the validation's kept share, from the fingerprint's quantiles (to within ``1 / LEVELS``).
    """

    raw: float
    kept: int
    kept_share: tuple[float, float, float]
    precision: tuple[float, float, float] | None
    recall: tuple[float, float, float] | None
    valid_kept_share: float | None
    level: float
    n_resamples: int
    seed: int


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.nanquantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def estimate(
    probs: Any,
    scores: Any,
    mask: Any,
    raw: float,
    *,
    recall: bool = False,
    level: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Estimate:
    """Expected precision (and recall) of keeping ``scores >= raw``, with intervals: CBPE per query, resampled.

    Parameters
    ----------
    probs : array-like of float
        ``[Q, K]`` each candidate's calibrated probability of relevance.
    scores, mask : array-like
        ``[Q, K]`` the raw scores and where a row has a candidate.
    raw : float
        The cutoff in raw-score units.
    recall : bool, default=False
        Also estimate the recall of the listed candidates.
    level : float, default=0.95
        The intervals' confidence.
    n_resamples : int, default=1000
        Bootstrap resamples of the queries.
    seed : int, default=0
        Seeds the resampling.

    Returns
    -------
    Estimate

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([[0.9, 0.6, 0.1], [0.8, 0.2, 0.1]])
    >>> e = estimate(p, np.log(p / (1 - p)), None, 0.0, n_resamples=200)
    >>> e.kept, round(e.precision[0], 3), round(e.kept_share[0], 3)   # (0.9 + 0.6 + 0.8) / 3 kept of 6
    (3, 0.767, 0.5)
    """
    s, m = _mask(scores, mask)
    p = np.asarray(probs, dtype=np.float64).reshape(s.shape)
    if not ((p[m] >= 0) & (p[m] <= 1)).all():
        raise FingerprintError("probs: expected probabilities in [0, 1]")
    keep = m & (s >= raw)
    k, n = keep.sum(axis=1), m.sum(axis=1)
    h = np.where(keep, p, 0.0).sum(axis=1)
    nq = s.shape[0]
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(nq, np.full(nq, 1.0 / nq), size=n_resamples)  # [B, Q] copies of each query
    kept_b, cand_b = counts @ k, counts @ n
    share = (float(k.sum() / n.sum()), *_interval(kept_b / cand_b, level))
    # each copy of a query draws its kept candidates' relevance afresh: Binomial(copies, p) per candidate
    rows, cols = np.nonzero(keep)
    hits_b = _draws(counts, rows, p[rows, cols], rng)
    precision = None
    if k.sum():
        with np.errstate(invalid="ignore", divide="ignore"):
            precision = (float(h.sum() / k.sum()), *_interval(np.where(kept_b > 0, hits_b / kept_b, np.nan), level))
    rec = None
    total = float(np.where(m, p, 0.0).sum())
    if recall and total > 0:  # no recall where no candidate may be relevant
        rows_out, cols_out = np.nonzero(m & ~keep)
        missed_b = _draws(counts, rows_out, p[rows_out, cols_out], rng)
        with np.errstate(invalid="ignore", divide="ignore"):
            rec = (
                float(h.sum() / total),
                *_interval(np.where(hits_b + missed_b > 0, hits_b / (hits_b + missed_b), np.nan), level),
            )
    return Estimate(float(raw), int(k.sum()), share, precision, rec, None, float(level), int(n_resamples), int(seed))


def _draws(counts: np.ndarray, rows: np.ndarray, p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``[B]`` each resample's relevant candidates among ``rows``' candidates (probabilities ``p``), every copy of a
    query drawn afresh."""
    b = counts.shape[0]
    out = np.zeros(b, np.int64)
    if not rows.size:
        return out
    step = max(1, _CHUNK // rows.size)
    for start in range(0, b, step):
        out[start : start + step] = rng.binomial(counts[start : start + step][:, rows], p).sum(axis=1)
    return out


# --------------------------------------------------------------------------- the watch


@dataclasses.dataclass(frozen=True)
class Watch:
    """A calibrator's watch of one run: the shift test, and the cutoff's label-free estimate (None when no cutoff is
    certified). ``flagged``: the run's scores are unlike the validation ones, so the guarantee does not apply.

    ``cutoff`` and ``fitted_on`` repeat what the calibrator says (its metric, target, confidence and raw cutoff; its
    validation queries), ``edited`` whether it was loaded from an edited file.
    """

    queries: int
    candidates: int
    shift: Shift
    estimate: Estimate | None
    cutoff: Mapping[str, Any]
    valid_queries: int
    edited: bool = False

    @property
    def flagged(self) -> bool:
        return self.shift.flagged

    def lines(self) -> list[str]:
        """The findings as lines of plain text, the verdict first."""
        c, sh = self.cutoff, self.shift
        out = []
        if sh.flagged:
            which = ", ".join(_NAMES[t.summary] for t in sh.tests if t.flagged)
            out.append(
                f"SHIFT: these {self.queries} queries' scores are unlike the {self.valid_queries} validation "
                f"queries' ({which}); the certified guarantee does not apply to them, and the estimate below "
                "reads a map that may not hold here"
            )
        else:
            out.append(
                f"no shift found: these {self.queries} queries' scores are like the {self.valid_queries} "
                f"validation queries' (false-alarm rate {sh.false_alarm:g})"
            )
        if self.edited:
            out.append("the calibrator was loaded from an edited file: its guarantee is not the one certified")
        est = self.estimate
        if est is None:
            out.append(
                f"no cutoff is certified for {c['metric']} >= {c['target']:g} at confidence {c['confidence']:g}: "
                "nothing to estimate"
            )
        else:
            pct = f"{est.level:.0%}"
            out.append(
                f"cutoff: keep score >= {est.raw:.6g}, certified {c['metric']} >= {c['target']:g} at confidence "
                f"{c['confidence']:g}"
            )
            if est.precision is None:
                out.append("expected precision: no candidate reaches the cutoff")
            else:
                v, lo, hi = est.precision
                out.append(
                    f"expected precision {v:.3f} [{lo:.3f}, {hi:.3f}] ({pct} interval; calibrated probabilities, "
                    "no labels)"
                )
                if c["metric"] == "precision" and hi < c["target"]:
                    out.append(f"the expected precision lies below the certified {c['target']:g}, interval and all")
            if est.recall is not None:
                v, lo, hi = est.recall
                out.append(
                    f"expected recall of the listed candidates {v:.3f} [{lo:.3f}, {hi:.3f}] (relevant documents "
                    "the run did not list are not counted)"
                )
                if c["metric"] == "recall" and hi < c["target"]:
                    out.append(f"the expected recall lies below the certified {c['target']:g}, interval and all")
            v, lo, hi = est.kept_share
            valid = "" if est.valid_kept_share is None else f"; validation: {est.valid_kept_share:.3f}"
            out.append(f"kept {est.kept} of {self.candidates} candidates: share {v:.3f} [{lo:.3f}, {hi:.3f}]{valid}")
        tests = "; ".join(f"{_NAMES[t.summary]} D={t.statistic:.3f} p={_p(t.p_value)}" for t in sh.tests)
        out.append(f"shift test (two-sample KS per query, each at {sh.false_alarm / len(sh.tests):.4g}): {tests}")
        if sh.outside > 0:
            out.append(
                f"{sh.outside:.1%} of the candidates score outside the validation scores' range (the map "
                "extrapolates there)"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """The findings as plain JSON values."""
        est = self.estimate
        return {
            "flagged": self.flagged,
            "queries": self.queries,
            "candidates": self.candidates,
            "valid_queries": self.valid_queries,
            "edited": self.edited,
            "cutoff": dict(self.cutoff),
            "shift": {
                "false_alarm": self.shift.false_alarm,
                "outside": self.shift.outside,
                "tests": [{**dataclasses.asdict(t), "flagged": t.flagged} for t in self.shift.tests],
            },
            "estimate": None
            if est is None
            else {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(est).items()},
        }


def _p(p: float | None) -> str:
    if p is None:
        return "n/a"
    return "<1e-6" if p < 1e-6 else f"{p:.3g}"


def watch(
    calibrator: Any,
    scores: Any,
    mask: Any = None,
    *,
    false_alarm: float = 0.05,
    level: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
) -> Watch:
    """:meth:`calibrank.assess.deploy.calibrator.Calibrator.watch` (which checks the settings and holds the
    defaults): the shift test against ``calibrator.fingerprint`` and the cutoff's label-free estimate."""
    fp = calibrator.fingerprint
    s, m = _mask(scores, mask)
    shift = shift_test(fp, s, m, false_alarm=false_alarm)
    cut = calibrator.cutoff
    est = None
    if cut.raw is not None:
        est = estimate(
            calibrator.predict_proba(np.where(m, s, 0.0)),
            s,
            m,
            cut.raw,
            recall=cut.metric == "recall",
            level=level,
            n_resamples=n_resamples,
            seed=seed,
        )
        lo, hi = fp.scores.cdf_bounds(cut.raw, left=True)  # the validation share below the cutoff
        est = dataclasses.replace(est, valid_kept_share=float(1 - (lo + hi) / 2))
    cutoff = {"metric": cut.metric, "target": cut.target, "confidence": cut.confidence, "raw": cut.raw}
    edited = "edited" in calibrator.fitted_on
    return Watch(int(s.shape[0]), int(m.sum()), shift, est, cutoff, fp.queries, edited)
