"""``guarantee``: does the certified cutoff keep its promise on data whose truth is known, and what does it keep?

Known-truth Monte Carlo. A query holds 20-60 candidates (uniform), 1-3 of them relevant (uniform); a
candidate's raw score is ``3 * relevant + u_q + e`` with ``u_q ~ N(0, tau^2)`` shared by the query's
candidates (alike candidates: an easy query scores high throughout) and ``e ~ N(0, 1)``. The true
precision of "keep ``score >= c``" is then exact: ``E[hits] / E[kept]`` with
``E[hits] = 2 * P(N(3, 1 + tau^2) >= c)`` and ``E[kept] = E[hits] + 38 * P(N(0, 1 + tau^2) >= c)``.

For each setting (``tau``, validation queries ``n``, target precision, confidence) every draw of
``n`` validation queries is certified by three procedures side by side on the same scores:

- ``calibrank``: :func:`calibrank.assess.deploy.certify.certified_cutoff`, betting over queries;
- ``t-test``: the procedure before it, kept here for the comparison: 200 quantiles of the
  validation scores, each cutoff's p-value the larger of the candidate-level exact binomial test and
  a one-sided t-test over queries of ``hits_q - target * kept_q``, fixed-sequence testing from the
  same label-free starts at an equal (Bonferroni) share of ``1 - confidence``;
- ``MAPIE``: MAPIE's ``BinaryClassificationController`` (Learn-then-Test with Hoeffding-Bentkus
  p-values over candidates and Holm's step-down), fed ``sigmoid(score - 3)`` and its default grid
  of 100 probability thresholds in [0, 0.99], less those that keep no validation candidate (its Holm
  step stops at the NaN p-value of such a threshold).

Per setting and procedure: the violation rate (a cutoff certified whose true precision is below the
target; no cutoff is no violation) with its 95% Clopper-Pearson interval, the certified rate, and
the mean kept share (the true share of candidates the cutoff keeps, 0 when none is certified), with
the mean true recall. The promise is a violation rate of at most ``1 - confidence``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from calibrank.assess.deploy.certify import certified_cutoff, min_kept

from .common import positive_int, target

__all__ = [
    "SECTION",
    "TARGETS",
    "bench_guarantee",
    "certify_mapie",
    "certify_ttest",
    "draw",
    "markdown_table",
    "table",
    "truth",
]

SECTION = "guarantee"
SIGNAL, LIST_MIN, LIST_MAX, RELEVANT_MAX = 3.0, 20, 60, 3
MEAN_RELEVANT, MEAN_OTHERS, MEAN_LIST = 2.0, 38.0, 40.0
TAUS = (0.0, 0.5, 1.0, 1.5)
QUERIES = (100, 300, 1000)
CONFIDENCES = (0.9, 0.95)
#: Two target precisions per tau: a moderate one and one near the best certifiable at these sizes.
TARGETS = {0.0: (0.6, 0.9), 0.5: (0.6, 0.85), 1.0: (0.6, 0.75), 1.5: (0.45, 0.6)}
PROCEDURES = ("calibrank", "t-test", "MAPIE")


def draw(rng: np.random.Generator, n: int, tau: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(scores, labels, mask)`` of ``n`` queries padded to 60 candidates (module docstring)."""
    size = rng.integers(LIST_MIN, LIST_MAX + 1, n)
    rel = rng.integers(1, RELEVANT_MAX + 1, n)
    slot = np.arange(LIST_MAX)[None]
    mask = slot < size[:, None]
    labels = (slot < rel[:, None]) & mask
    scores = SIGNAL * labels + rng.normal(0.0, tau, (n, 1)) + rng.normal(0.0, 1.0, (n, LIST_MAX))
    return np.where(mask, scores, 0.0), labels, mask


def truth(cutoff: float, tau: float) -> tuple[float, float, float]:
    """``(precision, recall, kept share)`` of keeping ``score >= cutoff`` over the whole population."""
    sd = math.sqrt(1.0 + tau * tau)
    hits = MEAN_RELEVANT * stats.norm.sf((cutoff - SIGNAL) / sd)
    kept = hits + MEAN_OTHERS * stats.norm.sf(cutoff / sd)
    return (float(hits / kept) if kept > 0 else 1.0), float(hits / MEAN_RELEVANT), float(kept / MEAN_LIST)


# --------------------------------------------------------------------------- the procedure before, for the comparison


def _quantile_grid(scores: np.ndarray, max_cutoffs: int = 200) -> np.ndarray:
    distinct = np.unique(scores)
    if distinct.size <= max_cutoffs:
        return distinct
    return np.unique(np.quantile(distinct, np.linspace(0.0, 1.0, max_cutoffs), method="lower"))


def certify_ttest(
    scores: np.ndarray, labels: np.ndarray, mask: np.ndarray, target: float, confidence: float, starts: int = 6
) -> float:
    """The certified cutoff of the procedure before (module docstring); NaN when none is."""
    from calibrank.assess.deploy.certify import kept_by_cutoff

    cutoffs = _quantile_grid(scores[mask])
    kept, hits, _ = kept_by_cutoff(scores, labels & mask, mask, cutoffs)
    total, good = kept.sum(axis=0), hits.sum(axis=0)
    need = min_kept(target, confidence)
    order = np.flatnonzero(total >= need)[::-1]
    if order.size == 0:
        return float("nan")
    along = total[order]
    levels = [need * 4**j for j in range(starts - 1) if need * 4**j < along[-1]]
    first = np.asarray(sorted({int(np.searchsorted(along, v)) for v in levels} | {order.size - 1})[-starts:])
    p_binom = stats.binom.cdf(total[order] - good[order], total[order], 1.0 - target)
    d = hits[:, order] - target * kept[:, order]
    n = d.shape[0]
    mean, sd = d.mean(axis=0), (d.std(axis=0, ddof=1) if n > 1 else np.zeros(order.size))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_t = np.where(sd > 0, stats.t.sf(mean / (sd / math.sqrt(n)), max(n - 1, 1)), np.where(mean > 0, 0.0, 1.0))
    fail = np.maximum(p_binom, p_t) > (1.0 - confidence) / first.size
    reached = -1
    for s in first:
        after = np.flatnonzero(fail[s:])
        stop = s + (after[0] if after.size else order.size - s)
        if stop > s:
            reached = max(reached, stop - 1)
    return float(cutoffs[order[reached]]) if reached >= 0 else float("nan")


def certify_mapie(scores: np.ndarray, labels: np.ndarray, mask: np.ndarray, target: float, confidence: float) -> float:
    """MAPIE's ``BinaryClassificationController`` on every validation candidate as one sample (module docstring)."""
    from mapie.risk_control import BinaryClassificationController
    from scipy.special import expit, logit

    s, y = scores[mask], labels[mask].astype(int)
    prob = expit(s - SIGNAL)
    params = np.linspace(0.0, 0.99, 100)
    params = params[params <= prob.max()]  # every threshold keeps at least one candidate

    def predict_proba(x: np.ndarray) -> np.ndarray:
        p = expit(np.asarray(x, dtype=np.float64)[:, 0] - SIGNAL)
        return np.c_[1.0 - p, p]

    controller = BinaryClassificationController(
        predict_proba, "precision", float(target), confidence_level=confidence, list_predict_params=params
    )
    controller.calibrate(s[:, None], y)
    best = controller.best_predict_param
    if best is None:
        return float("nan")
    return float(logit(best) + SIGNAL) if best > 0 else float("-inf")


def _calibrank(scores, labels, mask, target, confidence) -> float:
    return certified_cutoff(scores, labels, mask, target=target, confidence=confidence)


_RUN = {"calibrank": _calibrank, "t-test": certify_ttest, "MAPIE": certify_mapie}


def _interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson interval of a rate ``k / n``."""
    a = (1.0 - level) / 2.0
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1.0 - a, k + 1, n - k))
    return lo, hi


def _setting(
    tau: float,
    n: int,
    draws: int,
    targets: Sequence[float],
    confidences: Sequence[float],
    procedures: Sequence[str],
    seed: int,
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """The rows of one ``(tau, n)``: ``draws`` validation sets (seeded by ``seed``, ``tau`` and ``n``, so that a
    setting's numbers do not depend on which others run), each certified for every target, confidence and procedure."""
    rng = np.random.default_rng([seed, round(tau * 1000), n])
    tally: dict[tuple, list[float]] = {}
    seconds = {p: 0.0 for p in procedures}
    for _ in range(draws):
        s, y, m = draw(rng, n, tau)
        for t in targets:
            for conf in confidences:
                for proc in procedures:
                    start = time.process_time()
                    cut = _RUN[proc](s, y, m, t, conf)
                    seconds[proc] += time.process_time() - start
                    acc = tally.setdefault((t, conf, proc), [0, 0, 0.0, 0.0])
                    if not math.isnan(cut):
                        precision, recall, share = truth(cut, tau)
                        acc[0] += 1
                        acc[1] += precision < t
                        acc[2] += share
                        acc[3] += recall
    rows = []
    for (t, conf, proc), (cert, viol, share, recall) in tally.items():
        lo, hi = _interval(int(viol), draws)
        rows.append(
            {
                "tau": tau,
                "queries": n,
                "target": t,
                "confidence": conf,
                "procedure": proc,
                "draws": draws,
                "certified": cert / draws,
                "violations": viol / draws,
                "violations lo": lo,
                "violations hi": hi,
                "promise": round(1.0 - conf, 10),
                "kept share": share / draws,
                "recall": recall / draws,
            }
        )
    return rows, seconds


def bench_guarantee(
    draws: int = 1000,
    *,
    taus: Sequence[float] = TAUS,
    queries: Sequence[int] = QUERIES,
    confidences: Sequence[float] = CONFIDENCES,
    targets: dict[float, Sequence[float]] | None = None,
    procedures: Sequence[str] = PROCEDURES,
    seed: int = 0,
    jobs: int = 1,
) -> dict[str, Any]:
    """Run the grid (module docstring): ``draws`` validation sets per ``(tau, n)``, each certified for every target,
    confidence and procedure, the settings spread over ``jobs`` processes. Returns one row per setting and
    procedure, and a target per setting: the upper end of calibrank's violation interval at or under the promise."""
    draws, jobs = positive_int(draws, "draws"), positive_int(jobs, "jobs")
    targets = TARGETS if targets is None else targets
    bad = [p for p in procedures if p not in _RUN]
    if bad:
        raise ValueError(f"procedures: expected some of {', '.join(_RUN)}, got {bad}")
    settings = [
        (tau, n, draws, tuple(targets[tau]), tuple(confidences), tuple(procedures), seed)
        for tau in taus
        for n in queries
    ]
    if jobs == 1:
        done = [_setting(*a) for a in settings]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(jobs) as pool:
            done = list(pool.map(_setting, *zip(*settings)))
    rows = [r for part, _ in done for r in part]
    seconds = {p: sum(sec[p] for _, sec in done) for p in procedures}
    checks = [
        target(
            f"calibrank violations hi, tau {r['tau']:g}, {r['queries']} queries, target {r['target']:g}, "
            f"confidence {r['confidence']:g}",
            r["violations hi"],
            "<=",
            r["promise"],
        )
        for r in rows
        if r["procedure"] == "calibrank"
    ]
    res = {
        "draws": draws,
        "seed": seed,
        "taus": list(taus),
        "queries": list(queries),
        "confidences": list(confidences),
        "targets_by_tau": {f"{k:g}": list(v) for k, v in targets.items() if k in taus},
        "procedures": list(procedures),
        "rows": rows,
        "cpu_seconds": seconds,
        "targets": checks,
    }
    return {**res, "table": table(res)}


def table(result: dict[str, Any]) -> dict[str, list]:
    """``{"header", "rows"}``: one line per setting, the procedures side by side (violations with their 95%
    Clopper-Pearson interval, certified, mean kept share), as bench.md and docs/decisions.md show them."""
    procs = list(dict.fromkeys(r["procedure"] for r in result["rows"]))
    header = ["tau", "queries", "target", "confidence"] + [
        f"{p} {what}" for p in procs for what in ("violations [95% CI]", "certified", "kept")
    ]
    by: dict[tuple, dict[str, dict[str, Any]]] = {}
    for r in result["rows"]:
        by.setdefault((r["tau"], r["queries"], r["target"], r["confidence"]), {})[r["procedure"]] = r
    rows = []
    for key in sorted(by):
        cells = [f"{key[0]:g}", str(key[1]), f"{key[2]:g}", f"{key[3]:g}"]
        for p in procs:
            r = by[key][p]
            cells += [
                f"{r['violations']:.1%} [{r['violations lo']:.1%}, {r['violations hi']:.1%}]",
                f"{r['certified']:.1%}",
                f"{r['kept share']:.2%}",
            ]
        rows.append(cells)
    return {"header": header, "rows": rows}


def markdown_table(result: dict[str, Any]) -> str:
    """:func:`table` as markdown."""
    t = table(result)
    return "\n".join(
        ["| " + " | ".join(t["header"]) + " |", "|" + "---|" * len(t["header"])]
        + ["| " + " | ".join(row) + " |" for row in t["rows"]]
    )
