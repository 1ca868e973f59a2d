"""What replicates: one row per claim of the papers and per method it was made for, each with a verdict from a test.

A claim is a direction; each row (:class:`ClaimRow`) holds the paper's effect, ours over the
conditions the claim covers with its 95% interval (:func:`calibrank.metrics.resample.compare`),
the one-sided p-values in both directions, Holm across the summary's rows, a :class:`Verdict` and
the smallest effect the test could detect (:func:`summary`). ECE claims are differences of the
debiased ECE; cells are conditions, never seeds. Protocol: docs/decisions.md, "Claims and verdicts".
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as _sps

from calibrank.metrics.resample import QueryFeatures, compare, features
from calibrank.metrics.stats import holm, mean_ci
from calibrank.study.analysis import uncertainty as unc
from calibrank.study.analysis.calibration import PROTOCOL_2023, paper2023_sampler, protocol_note
from calibrank.study.analysis.efficiency import PAPER_EFFICIENCY
from calibrank.study.analysis.load import BASELINE
from calibrank.study.analysis.papers import PAPERS_2023
from calibrank.study.analysis.papers import PENHA_HAUFF as ph
from calibrank.study.analysis.risk_aware import risk_aware_scores
from calibrank.study.analysis.subsets import subset_negatives
from calibrank.study.settings import registry
from calibrank.table_checks import raise_problems, rows_failing

__all__ = [
    "CLAIM_COLUMNS",
    "SIGNIFICANT",
    "UNDECIDED",
    "ClaimRow",
    "Verdict",
    "calibration_claims",
    "claim_row",
    "claims_frame",
    "efficiency_claims",
    "nota_claims",
    "risk_claims",
    "summary",
    "untested_row",
    "verdict",
]


class Verdict(enum.StrEnum):
    """What a claim's test says, in the report's words (the member's value is the text tables and the page show)."""

    replicates = "replicates"
    same_direction = "same direction, not significant"
    opposite_direction = "opposite direction, not significant"
    contradicted = "contradicted"
    not_tested = "not tested"
    """A claim the profile's runs cannot test (its note says why): it keeps its row, stored as such when it is built."""


SIGNIFICANT = (Verdict.replicates, Verdict.contradicted)
"""The verdicts of a test that decided the direction (the paper's or the opposite one)."""
UNDECIDED = (Verdict.same_direction, Verdict.opposite_direction)
"""The verdicts of a test that decided nothing: such a row says what it could have detected."""


@dataclasses.dataclass(frozen=True)
class ClaimRow:
    """One claim tested for one method: a row of the claims tables, its fields their columns (``_`` read as a space).

    ``se``: standard error of ``ours`` behind the test (bootstrap, or of the mean for a t-test);
    ``df``: the t-test's degrees of freedom (NaN for a bootstrap or permutation test, and where the
    row gives no power estimate); ``verdict``: :attr:`Verdict.not_tested` for a claim the runs
    cannot test, else None, left to :func:`summary` (Holm across the rows decides it).
    """

    paper: str
    claim: str
    method: str
    direction: str
    paper_effect: float
    ours: float
    lo: float
    hi: float
    unit: str
    p: float
    p_opposite: float
    conditions: int
    seeds: int
    test: str
    protocol: str
    note: str
    se: float = float("nan")
    df: float = float("nan")
    verdict: Verdict | None = None

    def __post_init__(self) -> None:
        if self.direction not in ("less", "greater"):
            raise ValueError(f"claim {self.claim!r}: direction must be 'less' or 'greater'; got {self.direction!r}")
        if self.verdict not in (None, Verdict.not_tested):
            raise ValueError(
                f"claim {self.claim!r}: a row stores no verdict but {Verdict.not_tested.value!r} "
                f"(summary decides the others); got {self.verdict!r}"
            )

    def record(self) -> dict:
        """The row as the claims tables hold it: ``{column: value}`` in :data:`CLAIM_COLUMNS` order."""
        return {f.name.replace("_", " "): getattr(self, f.name) for f in dataclasses.fields(self)}


CLAIM_COLUMNS = [f.name.replace("_", " ") for f in dataclasses.fields(ClaimRow)]
"""The columns of a claims table: :class:`ClaimRow`'s fields, in order."""


def claims_frame(rows: Sequence[ClaimRow]) -> pd.DataFrame:
    """A claims table: one row per :class:`ClaimRow`, the columns :data:`CLAIM_COLUMNS`."""
    return pd.DataFrame([r.record() for r in rows], columns=CLAIM_COLUMNS)


PAPERS_2023_PATTERN = "PG-DRR|GPF-BERT"
"""The 2023 papers: the only ones whose claims concern the Gaussian-process rankers."""

PH = "Penha & Hauff 2021"
ECE = "ECE debiased"
PH_PROTOCOL = "paper: bert-base trained on 1 BM25 negative per positive, ECE on the balanced 1:1 set"


def verdict(effect: float, direction: str, p_holm: float, p_opposite_holm: float, alpha: float = unc.ALPHA) -> Verdict:
    """The :class:`Verdict` of a tested effect whose claimed ``direction`` is ``"less"`` or ``"greater"``.

    Significance is the Holm-adjusted one-sided p-value of the side the effect falls on; an
    undefined effect or p-value counts as not significant, on the side of its sign.
    """
    if direction not in ("less", "greater"):
        raise ValueError(f"direction must be 'less' or 'greater'; got {direction!r}")
    same = bool(np.isfinite(effect) and (effect < 0 if direction == "less" else effect > 0))
    if same:
        return Verdict.replicates if np.isfinite(p_holm) and p_holm < alpha else Verdict.same_direction
    if np.isfinite(p_opposite_holm) and p_opposite_holm < alpha and np.isfinite(effect) and effect != 0:
        return Verdict.contradicted
    return Verdict.opposite_direction


def claim_row(
    paper: str,
    claim: str,
    method: str,
    direction: str,
    paper_effect: float,
    a: Sequence[QueryFeatures],
    b: Sequence[QueryFeatures],
    *,
    groups: Sequence[str],
    b_groups: Sequence[str] | None = None,
    paired: bool = True,
    relative: bool = True,
    seed: int = 0,
    protocol: str = "",
    n_resamples: int = unc.N_RESAMPLES,
) -> ClaimRow:
    """One claim tested on Predictions: ``a[i]`` against ``b[i]`` on condition ``i`` (see :func:`calibrank.metrics.resample.compare`)."""
    c = compare(
        list(a),
        list(b),
        alternative=direction,
        relative=relative,
        groups=groups,
        b_groups=b_groups,
        paired=paired,
        level=unc.LEVEL,
        n_resamples=n_resamples,
        seed=seed,
    )
    test = (
        "paired permutation test over test queries" if paired else "bootstrap over test queries (different test sets)"
    )
    return ClaimRow(
        paper,
        claim,
        method,
        direction,
        paper_effect,
        c.value,
        c.low,
        c.high,
        _unit(relative),
        c.pvalue,
        c.pvalue_opposite,
        c.n_conditions,
        c.n_seeds,
        test + (", seeds in the interval" if c.n_seeds > 1 else ""),
        protocol,
        c.note,
        se=c.se,
    )


def untested_row(
    paper: str,
    claim: str,
    method: str,
    direction: str,
    paper_effect: float,
    *,
    why: str,
    relative: bool = True,
    protocol: str = "",
) -> ClaimRow:
    """A claim the profile's runs cannot test (e.g. no model trained on another corpus): no numbers, no conditions,
    ``note`` saying why and the verdict :attr:`Verdict.not_tested`, so that the claim keeps its row."""
    nan = float("nan")
    return ClaimRow(
        paper,
        claim,
        method,
        direction,
        paper_effect,
        nan,
        nan,
        nan,
        _unit(relative),
        nan,
        nan,
        0,
        0,
        "not tested",
        protocol,
        f"not tested: {why}",
        verdict=Verdict.not_tested,
    )


def _unit(relative: bool) -> str:
    return "relative change" if relative else "difference"


@dataclasses.dataclass(frozen=True)
class _TTest:
    """A one-sample t-test of ``values`` against 0: their mean with its Student-t interval, the one-sided p-values
    in the claimed direction and the opposite one (NaN without two values that differ), the mean's SE and df."""

    mean: float
    lo: float
    hi: float
    p: float
    p_opposite: float
    se: float
    df: float
    tested: bool


def _t_test(values: np.ndarray, direction: str) -> _TTest:
    values = np.asarray(values, dtype=float)
    n = values.size
    mean, lo, hi = mean_ci(values) if n else (float("nan"),) * 3
    se = float(np.std(values, ddof=1) / np.sqrt(n)) if n >= 2 else float("nan")
    tested = bool(n >= 2 and np.ptp(values) > 0)
    p, p_opp = (
        (
            float(_sps.ttest_1samp(values, 0.0, alternative=direction).pvalue),
            float(_sps.ttest_1samp(values, 0.0, alternative=_OPPOSITE[direction]).pvalue),
        )
        if tested
        else (float("nan"), float("nan"))
    )
    return _TTest(mean, lo, hi, p, p_opp, se, float(n - 1), tested)


def _ph_mean(column: str, kinds: Sequence[str] | None = None) -> float:
    rows = ph if kinds is None else ph[ph["shift"].isin(kinds)]
    return float(rows[column].mean()) if column in rows else float("nan")


def _change(shifted: float, ind: float, relative: bool) -> float:
    return (shifted - ind) / ind if relative else shifted - ind


def _ph_shift_effect(metric: str, kind: str, relative: bool = True) -> float:
    """Mean over the paper's training corpora of (mean over its ``kind`` columns - in distribution),
    relative to in distribution or as a difference."""

    out = []
    for _, grp in ph.groupby("train_corpus"):
        ind = float(grp.loc[grp["shift"] == "in distribution", metric].iloc[0])
        out.append(_change(float(grp.loc[grp["shift"] == kind, metric].mean()), ind, relative))
    return float(np.mean(out))


def _ph_cross_domain_effect(metric: str, relative: bool = True) -> float:
    """Mean over the paper's test corpora (its Table 1 columns) of (mean over the models trained
    elsewhere - the model trained there), relative or as a difference."""

    out = []
    for corpus, grp in ph[ph["shift"].isin(["in distribution", "cross-domain"])].groupby("corpus"):
        ind = float(grp.loc[grp["train_corpus"] == corpus, metric].iloc[0])
        out.append(_change(float(grp.loc[grp["train_corpus"] != corpus, metric].mean()), ind, relative))
    return float(np.mean(out))


def _protocol(study) -> str:
    return f"{PH_PROTOCOL}; {protocol_note(study)}"


def _balanced(study, runs):
    return [subset_negatives(p, 1, seed=study.cfg.seed) for p in runs]


def calibration_claims(study, *, n_resamples: int = unc.N_RESAMPLES) -> pd.DataFrame:
    """Claims of Table 1, Figure 2 and Table 2 (Penha & Hauff) and of the 2023 papers' ECE and R@1 tables."""

    seed = study.cfg.seed
    rows: list[ClaimRow] = []
    proto = _protocol(study)
    tests = study.test_conditions()
    shift_claims = (
        ("R@1", "less", "R@1 is lower", "R10@1", True),
        ("ECE 1:1", "greater", "balanced ECE (debiased) is higher", "ECE 1:1", False),
    )

    def feats(runs, metric):
        return features(_balanced(study, runs), ECE) if metric == "ECE 1:1" else features(runs, metric)

    if BASELINE in study.rankers:
        for corpus in study.train_corpora:  # cross-domain, per test corpus, on its queries
            others = [tc for tc in study.train_corpora if tc != corpus]
            cond = [c for c in tests if c.corpus == corpus and study.shift(c, corpus) == "in distribution"]
            if not cond:
                continue
            if not others:  # the claim keeps its row: the profile trains no model on another corpus
                rows += [
                    untested_row(
                        f"{PH}, Table 1",
                        f"bert tested on {corpus} ({cond[0].sampler}): {claim} when "
                        f"trained on another corpus than on {corpus} (cross-domain)",
                        BASELINE,
                        direction,
                        _ph_cross_domain_effect(col, relative),
                        relative=relative,
                        protocol=proto,
                        why=f"rankers.train_corpora lists {corpus} only, and the claim compares the model "
                        f"trained there with one trained on another corpus, on {corpus}'s queries",
                    )
                    for _, direction, claim, col, relative in shift_claims
                ]
                continue
            for metric, direction, claim, col, relative in shift_claims:
                a = [feats(study.runs(BASELINE, tc, cond[0]), metric) for tc in others]
                b = [feats(study.runs(BASELINE, corpus, cond[0]), metric)] * len(others)
                rows.append(
                    claim_row(
                        f"{PH}, Table 1",
                        f"bert tested on {corpus} ({cond[0].sampler}): {claim} when "
                        f"trained on {' / '.join(others)} than on {corpus} (cross-domain)",
                        BASELINE,
                        direction,
                        _ph_cross_domain_effect(col, relative),
                        a,
                        b,
                        groups=[corpus] * len(others),
                        relative=relative,
                        seed=seed,
                        protocol=proto,
                        n_resamples=n_resamples,
                    )
                )
        for tc in study.train_corpora:  # cross-NS: one model, its test corpus, other negatives
            ind = [c for c in tests if study.shift(c, tc) == "in distribution"]
            shifted = [c for c in tests if study.shift(c, tc) == "cross-NS"]
            if not ind or not shifted:
                continue
            base = study.runs(BASELINE, tc, ind[0])
            for metric, direction, claim, col, relative in shift_claims:
                a = [feats(study.runs(BASELINE, tc, c), metric) for c in shifted]
                b = [feats(base, metric)] * len(shifted)
                rows.append(
                    claim_row(
                        f"{PH}, Table 1",
                        f"bert trained on {tc}: {claim} cross-NS than in distribution",
                        BASELINE,
                        direction,
                        _ph_shift_effect(col, "cross-NS", relative),
                        a,
                        b,
                        groups=[c.corpus for c in shifted],
                        b_groups=[ind[0].corpus] * len(shifted),
                        paired=False,
                        relative=relative,
                        seed=seed,
                        protocol=proto,
                        n_resamples=n_resamples,
                    )
                )
        cells = list(study.cells("test", [BASELINE]))
        if cells:
            a = [features(study.runs(BASELINE, tc, c), ECE) for _, tc, c in cells]
            b = [features(_balanced(study, study.runs(BASELINE, tc, c)), ECE) for _, tc, c in cells]
            rows.append(
                claim_row(
                    f"{PH}, Figure 2",
                    f"bert's ECE (debiased) grows as non-relevant candidates are added (1 + {study.k} against 1 + 1)",
                    BASELINE,
                    "greater",
                    float("nan"),
                    a,
                    b,
                    groups=[c.corpus for _, _, c in cells],
                    relative=False,
                    seed=seed,
                    protocol=proto,
                    n_resamples=n_resamples,
                )
            )
        for method in registry.claimed_by(registry.Papers.penha_hauff):
            if method not in study.rankers:
                continue
            cells = list(study.cells("test", [method]))
            a = [features(_balanced(study, study.runs(method, tc, c)), ECE) for _, tc, c in cells]
            b = [features(_balanced(study, study.runs(BASELINE, tc, c)), ECE) for _, tc, c in cells]
            rows.append(
                claim_row(
                    f"{PH}, Table 2",
                    f"{method} has lower balanced ECE (debiased) than bert",
                    method,
                    "less",
                    _ph_ece_change(method),
                    a,
                    b,
                    groups=[c.corpus for _, _, c in cells],
                    relative=False,
                    seed=seed,
                    protocol=proto,
                    n_resamples=n_resamples,
                )
            )
        sampler = paper2023_sampler(study)
        proto23 = f"{PROTOCOL_2023}; {protocol_note(study)}; tested with 1 + {study.k} {sampler} negatives"
        p23 = PAPERS_2023
        for method in registry.claimed_by(registry.Papers.gp_2023):
            if method not in study.rankers:
                continue
            for setting, in_domain in (("in-domain", True), ("shift", False)):
                cells = [
                    (tc, c)
                    for _, tc, c in study.cells("test", [method])
                    if c.sampler == sampler and (c.corpus == tc) == in_domain
                ]
                if not cells:
                    continue
                theirs = p23[(p23["setting"] == setting)]
                for metric, direction, col in (("ECE", "less", "ECE"), ("R@1", "greater", "R10@1")):
                    if metric == "R@1" and not in_domain:
                        continue  # the 2023 papers give R@1 under shift for no ranker
                    relative = metric != "ECE"
                    paper_eff, paper_name = _paper2023_effect(theirs, method, col, relative)
                    if not paper_name:
                        continue
                    name = ECE if metric == "ECE" else metric
                    a = [features(study.runs(method, tc, c), name) for tc, c in cells]
                    b = [features(study.runs(BASELINE, tc, c), name) for tc, c in cells]
                    what = "lower ECE (debiased)" if metric == "ECE" else f"higher {study.recall_label}"
                    rows.append(
                        claim_row(
                            paper_name,
                            f"{method} has {what} than bert ({setting})",
                            method,
                            direction,
                            paper_eff,
                            a,
                            b,
                            groups=[c.corpus for _, c in cells],
                            relative=relative,
                            seed=seed,
                            protocol=proto23,
                            n_resamples=n_resamples,
                        )
                    )
    out = claims_frame(rows)
    _check_calibration_claims(out)
    return out


def _check_calibration_claims(claims: pd.DataFrame) -> None:
    """At least one claim; a Gaussian-process ranker in the 2023 papers' claims only, and those papers'
    claims about such rankers only (never pooled into the first paper's)."""
    if claims.empty:
        raise_problems(["claims: no rows, expected at least one claim"])
    keys = ("paper", "claim", "method")
    gp = claims["method"].isin(registry.of_family(registry.Family.gp))
    of_2023 = claims["paper"].str.contains(PAPERS_2023_PATTERN)
    raise_problems(
        rows_failing(
            "claims",
            claims,
            ~gp | of_2023,
            keys,
            "a Gaussian-process ranker in a 2023 paper only (PG-DRR or GPF-BERT)",
            ["paper"],
        )
        + rows_failing(
            "claims",
            claims,
            gp | ~of_2023,
            keys,
            f"a Gaussian-process ranker ({', '.join(registry.of_family(registry.Family.gp))}) in a 2023 paper's claim",
            ["method"],
        )
    )


def _ph_ece_change(method: str) -> float:
    """Penha & Hauff Table 2 as a difference: mean over its cells of (relative change x bert's balanced ECE, Table 1)."""

    col = f"ECE change {method}"
    return float((ph[col] * ph["ECE 1:1"]).mean()) if col in ph else float("nan")


def _paper2023_effect(theirs: pd.DataFrame, method: str, col: str, relative: bool = True) -> tuple[float, str]:
    """Mean change of ``method`` over bert (relative, or a difference) in the 2023 papers' table rows, and which tables."""
    effects, papers = [], []
    for (paper, _tc, _corpus), grp in theirs.groupby(["paper", "train_corpus", "corpus"], sort=False):
        by = grp.set_index("ranker")[col]
        if method in by and "bert" in by and np.isfinite(by[method]) and np.isfinite(by["bert"]) and by["bert"] != 0:
            effects.append(_change(by[method], by["bert"], relative))
            papers.append(paper)
    if not effects:
        return float("nan"), ""
    return float(np.mean(effects)), " / ".join(dict.fromkeys(papers))


def risk_claims(study, *, b_from: str = "training", n_resamples: int = unc.N_RESAMPLES) -> pd.DataFrame:
    """Table 3 (Penha & Hauff): risk-aware R@1 above the mean ranker's, for ``mc_dropout`` and ``ensemble``."""

    rows: list[ClaimRow] = []
    for method in registry.claimed_by(registry.Papers.penha_hauff):
        if method not in study.stochastic_rankers():
            continue
        cells = list(study.cells("test", [method]))
        a, b = [], []
        for _, tc, cond in cells:
            runs, risk_s, mean_s, _ = risk_aware_scores(study, method, tc, cond, b_from=b_from)
            a.append(features(runs, "R@1", scores=risk_s))
            b.append(features(runs, "R@1", scores=mean_s))
        row = claim_row(
            f"{PH}, Table 3",
            f"risk-aware ranking (b from the {b_from} condition's validation) raises R@1 over the mean ranker",
            method,
            "greater",
            _ph_mean(f"RA change {method}"),
            a,
            b,
            groups=[c.corpus for _, _, c in cells],
            seed=study.cfg.seed,
            protocol=_protocol(study),
            n_resamples=n_resamples,
        )
        if all(np.array_equal(x.values, y.values) for x, y in zip(a, b)):
            row = dataclasses.replace(
                row,
                note="; ".join(
                    filter(
                        None,
                        [
                            "b = 0 chosen on validation everywhere: the risk-aware ranker is the mean ranker, no change at all",
                            row.note,
                        ],
                    )
                ),
            )
        rows.append(row)
    return claims_frame(rows)


def nota_claims(nota: pd.DataFrame, protocol: str = "") -> pd.DataFrame:
    """Tables 4-5 (Penha & Hauff): adding a method's variances raises NOTA macro-F1 over E[R] alone.

    One row per ``+var[mc_dropout]`` / ``+var[ensemble]``; the effect is the mean relative F1 change
    over conditions, tested by a one-sample t-test over conditions (the forest's folds give no
    query resampling).
    """

    rows: list[ClaimRow] = []
    if nota is None or nota.empty:
        return claims_frame(rows)
    for method in registry.claimed_by(registry.Papers.penha_hauff):
        inp = f"+var[{method}]"
        grp = nota[nota["input"] == inp]
        if grp.empty:
            continue
        changes = grp["rel_change"].to_numpy(dtype=float)
        t = _t_test(changes, "greater")
        n = len(changes)
        note = "" if t.tested else f"no test: {n} condition(s)" + (" with equal changes" if n >= 2 else "")
        col = f"NOTA {inp}"
        paper_eff = float(((ph[col] - ph["NOTA E[R]"]) / ph["NOTA E[R]"]).mean()) if col in ph else float("nan")
        rows.append(
            ClaimRow(
                f"{PH}, Tables 4-5",
                f"adding {method}'s variances raises NOTA macro-F1 over E[R]",
                method,
                "greater",
                paper_eff,
                t.mean,
                t.lo,
                t.hi,
                _unit(True),
                t.p,
                t.p_opposite,
                n,
                1,
                "one-sample t-test over conditions (each a 5-fold cross-validated forest)",
                protocol,
                note,
                se=t.se,
                df=t.df,
            )
        )
    return claims_frame(rows)


def efficiency_claims(eff: pd.DataFrame) -> pd.DataFrame:
    """PG-DRR Table 2 / GPF-BERT Table 3: MC Dropout and the ensemble cost several times bert's inference, the GP rankers less.

    From :func:`calibrank.study.analysis.efficiency.efficiency_table` on its ``clock``; the effect is the
    mean per-repeat cost ratio minus 1, tested by a one-sample t-test over repeats. Protocol:
    docs/decisions.md, "Cost claims".
    """

    rows: list[ClaimRow] = []
    if eff is None or eff.empty or "ratio per repeat" not in eff.columns:
        return claims_frame(rows)
    ratios = {
        r: np.array([float(x) for x in str(v).split()]) if isinstance(v, str) and v.strip() else np.array([])
        for r, v in zip(eff["ranker"], eff["ratio per repeat"])
    }
    clock = str(eff["clock"].iloc[0]) if "clock" in eff.columns else ""
    clock_name = {"cpu": "process CPU time", "wall": "wall time"}.get(clock, "")
    other = {"cpu": "wall", "wall": "cpu"}.get(clock)
    other_ratio = dict(zip(eff["ranker"], eff[f"{other} ratio"])) if other and f"{other} ratio" in eff.columns else {}
    paper = PAPER_EFFICIENCY.set_index("ranker")

    def paper_ratio(r: str) -> float:
        vals = [
            paper.loc[r, c]
            for c in ("PG-DRR ratio", "GPF-BERT ratio")
            if r in paper.index and np.isfinite(paper.loc[r, c])
        ]
        return float(np.mean(vals)) if vals else float("nan")

    def beside(method: str, over: str | None) -> str:
        """The other clock's ratio of medians, for the note."""
        if method not in other_ratio or (over is not None and over not in other_ratio):
            return ""
        value = other_ratio[method] / (other_ratio[over] if over is not None else 1.0)
        return f"{'wall' if other == 'wall' else 'CPU'}-time ratio {value:.2f}" + (f" of {over}'s" if over else "")

    def add(method: str, claim: str, values: np.ndarray, direction: str, paper_effect: float, note: str) -> None:
        # the test over the timing repeats, one value each: its effect, interval and p-values; the row carries no
        # se / df, so the summary gives it no power estimate
        t = _t_test(values, direction)
        if not t.tested:
            note = "; ".join(filter(None, [f"no test: {values.size} repeat(s)", note]))
        test = f"one-sample t-test over {values.size} timing repeats" + (f" of {clock_name}" if clock_name else "")
        rows.append(
            ClaimRow(
                "PG-DRR Table 2 / GPF-BERT Table 3",
                claim,
                method,
                direction,
                paper_effect,
                t.mean,
                t.lo,
                t.hi,
                _unit(True),
                t.p,
                t.p_opposite,
                1,
                1,
                test,
                "",
                note,
            )
        )

    for method in registry.claimed_by(registry.Papers.penha_hauff):
        if method in ratios and ratios[method].size:
            add(
                method,
                f"{method} costs more inference time than bert",
                ratios[method] - 1.0,
                "greater",
                paper_ratio(method) - 1.0,
                beside(method, None),
            )
    mc = ratios.get("mc_dropout", np.array([]))
    for method in registry.claimed_by(registry.Papers.gp_2023):
        own = ratios.get(method, np.array([]))
        if own.size and own.size == mc.size:
            add(
                method,
                f"{method} costs less inference time than MC Dropout",
                own / mc - 1.0,
                "less",
                paper_ratio(method) / paper_ratio("mc_dropout") - 1.0,
                beside(method, "mc_dropout"),
            )
    return claims_frame(rows)


_OPPOSITE = {"less": "greater", "greater": "less"}


def summary(claims: Mapping[str, pd.DataFrame] | pd.DataFrame, alpha: float = unc.ALPHA) -> pd.DataFrame:
    """All claim rows with ``p (Holm)``, ``p opposite (Holm)`` (Holm across the rows), ``verdict``,
    ``detectable`` (the smallest effect each test detects at 80% power, one-sided, at the
    Bonferroni level ``alpha / m`` of the ``m`` tested rows, which bounds Holm's from above) and
    ``power`` (what a row that is not significant could decide, :func:`calibrank.study.analysis.uncertainty.power_text`).
    A row stored as :attr:`Verdict.not_tested` keeps that verdict; a row without ``se`` gets no power estimate.
    """
    frames = [claims] if isinstance(claims, pd.DataFrame) else [f for f in claims.values() if f is not None and len(f)]
    extra = ["p (Holm)", "p opposite (Holm)", "verdict", "detectable", "power"]
    if not frames:
        return pd.DataFrame(columns=[*(c for c in CLAIM_COLUMNS if c not in extra), *extra])
    out = pd.concat(frames, ignore_index=True)
    for col in ("se", "df"):
        out[col] = pd.to_numeric(out[col], errors="coerce")
    out["p (Holm)"] = holm(out["p"].to_numpy(dtype=float))
    out["p opposite (Holm)"] = holm(out["p opposite"].to_numpy(dtype=float))
    untested = out["verdict"].eq(Verdict.not_tested) if "verdict" in out else pd.Series(False, index=out.index)
    out["verdict"] = [
        Verdict.not_tested if u else verdict(e, d, p, q, alpha)
        for e, d, p, q, u in zip(out["ours"], out["direction"], out["p (Holm)"], out["p opposite (Holm)"], untested)
    ]
    m = max(int(np.isfinite(out["p"].to_numpy(dtype=float)).sum()), 1)
    out["detectable"] = [
        unc.detectable_effect(se, alpha=alpha, power=unc.POWER, n_tests=m, df=None if not np.isfinite(df) else df)
        for se, df in zip(out["se"], out["df"])
    ]
    out["power"] = [
        "" if v == Verdict.not_tested else unc.power_text(v in SIGNIFICANT, x, pe, d, u)
        for v, x, pe, d, u in zip(
            out["verdict"],
            out["detectable"],
            pd.to_numeric(out["paper effect"], errors="coerce"),
            out["direction"],
            out["unit"],
        )
    ]
    out = out[[*(c for c in out.columns if c not in extra), *extra]]
    _check_summary(out)
    return out


def _check_summary(table: pd.DataFrame) -> None:
    """Every verdict a :class:`Verdict`; a row that is not significant says what it could have detected; a row
    not tested says why."""
    keys = ("paper", "claim", "method")
    undecided = table["verdict"].isin(UNDECIDED)
    untested = table["verdict"] == Verdict.not_tested
    raise_problems(
        rows_failing(
            "claims",
            table,
            table["verdict"].isin(list(Verdict)),
            keys,
            f"one of the verdicts {', '.join(Verdict)}",
            ["verdict"],
        )
        + rows_failing(
            "claims",
            table,
            ~untested | table["note"].astype(str).str.startswith("not tested: "),
            keys,
            "a row not tested to say why in its note",
            ["verdict", "note"],
        )
        + rows_failing(
            "claims",
            table,
            ~undecided | (table["power"].str.len() > 0),
            keys,
            "a row that is not significant to say what it could have detected",
            ["verdict", "power"],
        )
    )
