"""The replication verdicts (calibrank.study.analysis.verdicts) on Predictions built to give each verdict."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from calibrank.metrics.resample import features
from calibrank.predictions import Predictions
from calibrank.study.analysis import uncertainty as unc
from calibrank.study.analysis import verdicts as V

Q, K = 60, 10


def _ranker(n_top: int, name: str, seed: int = 0) -> Predictions:
    """The relevant candidate (column 0) is ranked first on the first ``n_top`` queries, last on the others."""
    rng = np.random.default_rng(seed)
    labels = np.zeros((Q, K), dtype=int)
    labels[:, 0] = 1
    probs = rng.uniform(0.3, 0.6, size=(Q, K))
    probs[:, 0] = np.where(np.arange(Q) < n_top, 0.9, 0.1)
    return Predictions(np.arange(Q).astype(str), labels, probs, probs[None], meta={"name": name})


def _verdict_of(a_top: int, b_top: int) -> pd.Series:
    """The claim "A has higher R@1 than B" tested on one condition."""
    a, b = _ranker(a_top, "a.npz", 1), _ranker(b_top, "b.npz", 2)
    row = V.claim_row(
        "paper",
        "A ranks better than B",
        "a",
        "greater",
        0.1,
        [features(a, "R@1")],
        [features(b, "R@1")],
        groups=["corpus"],
        n_resamples=1999,
    )
    return V.summary(V.claims_frame([row])).iloc[0]


@pytest.mark.parametrize(
    "a_top, b_top, expected",
    [
        (45, 15, "replicates"),  # A better on 30 more queries of 60
        (31, 30, "same direction, not significant"),  # one query's difference
        (30, 31, "opposite direction, not significant"),
        (15, 45, "contradicted"),  # A significantly worse
    ],
)
def test_each_verdict_on_fixtures_built_for_it(a_top, b_top, expected):
    row = _verdict_of(a_top, b_top)
    assert row["verdict"] == expected
    assert row["lo"] <= row["ours"] <= row["hi"]
    assert row["ours"] == pytest.approx((a_top - b_top) / b_top)


def test_holm_across_claims_can_turn_a_replication_into_not_significant():
    rows = pd.DataFrame(
        [
            {**dict.fromkeys(V.CLAIM_COLUMNS, ""), "ours": 0.1, "direction": "greater", "p": 0.03, "p opposite": 0.97}
            for _ in range(3)
        ]
    )
    alone = V.summary(rows.iloc[:1])
    together = V.summary(rows)
    assert alone["verdict"].iloc[0] == "replicates"
    assert (together["verdict"] == "same direction, not significant").all()  # 3 x 0.03 > 0.05


def test_verdict_rules():
    assert V.verdict(-0.2, "less", 0.01, 1.0) == "replicates"
    assert V.verdict(-0.2, "less", 0.2, 1.0) == "same direction, not significant"
    assert V.verdict(0.2, "less", 1.0, 0.01) == "contradicted"
    assert V.verdict(0.2, "less", 1.0, 0.3) == "opposite direction, not significant"
    assert V.verdict(float("nan"), "less", float("nan"), float("nan")) == "opposite direction, not significant"
    with pytest.raises(ValueError, match="direction"):
        V.verdict(0.1, "up", 0.1, 0.1)


def test_summary_of_nothing_has_the_columns():
    empty = V.summary({})
    assert empty.empty and "verdict" in empty.columns


def test_a_claim_row_is_the_claims_tables_columns_in_their_order():
    """The claims CSVs keep their columns in this order (readers index them by name and position); new ones go last."""
    assert V.CLAIM_COLUMNS == [
        "paper",
        "claim",
        "method",
        "direction",
        "paper effect",
        "ours",
        "lo",
        "hi",
        "unit",
        "p",
        "p opposite",
        "conditions",
        "seeds",
        "test",
        "protocol",
        "note",
        "se",
        "df",
        "verdict",
    ]
    row = V.untested_row("paper", "A ranks better than B", "a", "greater", 0.1, why="no second corpus")
    assert list(row.record()) == V.CLAIM_COLUMNS and row.record()["paper effect"] == 0.1
    assert list(V.claims_frame([row]).columns) == V.CLAIM_COLUMNS
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.note = "changed"  # type: ignore[misc]
    with pytest.raises(ValueError, match="summary decides the others"):
        dataclasses.replace(row, verdict=V.Verdict.replicates)
    with pytest.raises(ValueError, match="direction must be"):
        dataclasses.replace(row, direction="up")


def test_verdicts_are_a_str_enum_of_the_texts_tables_show():
    assert [v.value for v in V.Verdict] == [
        "replicates",
        "same direction, not significant",
        "opposite direction, not significant",
        "contradicted",
        "not tested",
    ]
    assert str(V.Verdict.not_tested) == f"{V.Verdict.not_tested}" == "not tested"
    assert V.verdict(-0.2, "less", 0.01, 1.0) is V.Verdict.replicates


def test_not_tested_is_stored_in_the_row_not_read_from_its_counts():
    """The verdict of a claim the runs cannot test comes from its row; a tested row with 0 in ``conditions`` (a count
    no test gives, or one a table lost) is still decided by its test."""
    untested = V.untested_row("paper", "A ranks better than B", "a", "greater", 0.1, why="no second corpus")
    tested = dataclasses.replace(
        untested,
        claim="C ranks better than D",
        ours=0.3,
        lo=0.1,
        hi=0.5,
        p=0.001,
        p_opposite=0.999,
        note="",
        verdict=None,
    )
    s = V.summary(V.claims_frame([untested, tested]))
    assert s["verdict"].tolist() == [V.Verdict.not_tested, V.Verdict.replicates]
    assert s["power"].iloc[0] == "" and s["note"].iloc[0] == "not tested: no second corpus"
    # read back from CSV: the stored text is the verdict
    import io

    buf = io.StringIO()
    V.claims_frame([untested, tested]).to_csv(buf, index=False)
    back = V.summary(pd.read_csv(io.StringIO(buf.getvalue())))
    assert back["verdict"].tolist() == ["not tested", "replicates"]


def test_nota_claims_need_two_conditions_for_a_test():
    nota = pd.DataFrame(
        {"input": ["+var[mc_dropout]", "+var[mc_dropout]", "+var[mc_dropout]"], "rel_change": [0.2, 0.25, 0.3]}
    )
    row = V.nota_claims(nota).iloc[0]
    assert row["method"] == "mc_dropout" and row["p"] < 0.05 and row["lo"] < 0.25 < row["hi"]
    one = V.nota_claims(nota.iloc[:1]).iloc[0]
    assert np.isnan(one["p"]) and "no test" in one["note"]


# ------------------------------------------------------------------ the thresholds of the verdict rules
ALPHA = unc.ALPHA  # the default of verdict() and summary()
BELOW = float(np.nextafter(ALPHA, 0.0))  # the largest p-value under alpha
TINY = float(np.nextafter(0.0, 1.0))  # the smallest positive effect


@pytest.mark.parametrize("direction, sign", [("less", -1.0), ("greater", 1.0)])
def test_the_effects_sign_decides_the_side_and_zero_is_on_neither(direction, sign):
    """With both p-values significant, the side is the effect's sign; an effect of exactly 0 is not the claimed
    direction, and cannot contradict it either."""
    assert V.verdict(sign * TINY, direction, 0.001, 0.001) == "replicates"
    assert V.verdict(-sign * TINY, direction, 0.001, 0.001) == "contradicted"
    assert V.verdict(0.0, direction, 0.001, 0.001) == "opposite direction, not significant"
    assert V.verdict(-0.0, direction, 0.001, 0.001) == "opposite direction, not significant"


@pytest.mark.parametrize("direction, sign", [("less", -1.0), ("greater", 1.0)])
def test_significance_flips_exactly_at_alpha(direction, sign):
    """p < alpha is significant, p = alpha is not: for the claimed side (p) and the opposite one (p opposite)."""
    assert V.verdict(sign * 0.2, direction, BELOW, 1.0) == "replicates"
    assert V.verdict(sign * 0.2, direction, ALPHA, 1.0) == "same direction, not significant"
    assert V.verdict(-sign * 0.2, direction, 1.0, BELOW) == "contradicted"
    assert V.verdict(-sign * 0.2, direction, 1.0, ALPHA) == "opposite direction, not significant"


def test_only_the_p_value_of_the_effects_side_counts():
    # an effect in the claimed direction is never contradicted by its opposite p-value, and vice versa
    assert V.verdict(-0.2, "less", 0.5, 0.001) == "same direction, not significant"
    assert V.verdict(0.2, "less", 0.001, 0.5) == "opposite direction, not significant"


def test_alpha_is_the_threshold_passed():
    assert V.verdict(-0.2, "less", 0.02, 1.0) == "replicates"
    assert V.verdict(-0.2, "less", 0.02, 1.0, alpha=0.02) == "same direction, not significant"
    assert V.verdict(-0.2, "less", 0.02, 1.0, alpha=float(np.nextafter(0.02, 1.0))) == "replicates"


@pytest.mark.parametrize(
    "effect, p, p_opp, expected",
    [
        (-0.2, float("nan"), 0.001, "same direction, not significant"),  # no test on the claimed side
        (0.2, 0.001, float("nan"), "opposite direction, not significant"),  # no test on the other side
        (
            float("nan"),
            0.001,
            0.001,
            "opposite direction, not significant",
        ),  # undefined effect: on no side, never contradicting
        (float("-inf"), 0.001, 0.001, "opposite direction, not significant"),  # not finite: as undefined
    ],
)
def test_undefined_numbers_are_not_significant(effect, p, p_opp, expected):
    assert V.verdict(effect, "less", p, p_opp) == expected


def _rows(effects, ps, ps_opp) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {**dict.fromkeys(V.CLAIM_COLUMNS, ""), "ours": e, "direction": "greater", "p": p, "p opposite": q}
            for e, p, q in zip(effects, ps, ps_opp)
        ]
    )


def test_summary_flips_at_the_holm_adjusted_alpha():
    """Two claims: the smaller p-value is doubled by Holm, so alpha / 2 is the raw threshold."""
    inside = V.summary(_rows([0.1, 0.1], [BELOW / 2, 0.5], [0.9, 0.5]))
    assert inside["p (Holm)"].iloc[0] == BELOW and inside["verdict"].iloc[0] == "replicates"
    at = V.summary(_rows([0.1, 0.1], [ALPHA / 2, 0.5], [0.9, 0.5]))
    assert at["p (Holm)"].iloc[0] == ALPHA and at["verdict"].iloc[0] == "same direction, not significant"
    # the second claim's own adjusted p-value is max(2 p_1, p_2) = 0.5 either way
    assert (inside["p (Holm)"].iloc[1], at["p (Holm)"].iloc[1]) == (0.5, 0.5)
    # and the opposite side, Holm-adjusted on its own column
    contra = V.summary(_rows([-0.1, 0.1], [0.9, 0.5], [BELOW / 2, 0.5]))
    assert contra["verdict"].tolist() == ["contradicted", "same direction, not significant"]
    not_contra = V.summary(_rows([-0.1, 0.1], [0.9, 0.5], [ALPHA / 2, 0.5]))
    assert not_contra["verdict"].iloc[0] == "opposite direction, not significant"


def test_summary_leaves_a_claim_without_p_value_out_of_holm():
    """A NaN p-value does not count in Holm's m: one tested claim keeps its raw p-value."""
    out = V.summary(_rows([0.1, 0.1], [0.04, float("nan")], [0.96, float("nan")]))
    assert out["p (Holm)"].iloc[0] == 0.04 and out["verdict"].tolist() == [
        "replicates",
        "same direction, not significant",
    ]


# ------------------------------------------------------------------------------ power beside every verdict
def test_power_texts_known_answers():
    assert unc.power_text(True, 0.1, -0.5, "less", "relative change") == ""
    assert unc.power_text(False, 0.1, -0.5, "less", "relative change") == "no effect larger than -10.0% (80% power)"
    assert (
        unc.power_text(False, 0.1, -0.05, "less", "relative change")
        == "underpowered: the paper's effect -5.0% is below the detectable -10.0%"
    )
    assert unc.power_text(False, 0.02, 0.004, "greater", "difference") == (
        "underpowered: the paper's effect +0.004 is below the detectable +0.020"
    )
    # a paper effect in the other direction, or none, cannot be "below" the detectable one
    assert unc.power_text(False, 0.02, -0.004, "greater", "difference").startswith("no effect larger than +0.020")
    assert unc.power_text(False, 0.02, float("nan"), "greater", "difference").startswith("no effect larger than")
    assert unc.power_text(False, float("nan"), 0.1, "greater", "difference").startswith("no power estimate")


def test_summary_gives_the_detectable_effect_at_the_bonferroni_level_of_its_rows():
    from scipy import stats

    rows = [_verdict_row(31, 30, 0.05), _verdict_row(31, 30, 0.5), _verdict_row(45, 15, 0.1)]
    s = V.summary(V.claims_frame(rows))
    z = stats.norm.ppf(1 - 0.05 / 3) + stats.norm.ppf(0.8)
    np.testing.assert_allclose(s["detectable"], z * s["se"].to_numpy())
    # paired: A and B differ on one query of 60, so the SE of the relative change is about (1 / 60) / 0.5
    assert 0.5 * (1 / 60) / 0.5 < s["se"].iloc[0] < 2.0 * (1 / 60) / 0.5
    # about 3 SE = ~10%: the paper's 5% is below it, its 50% well above it
    assert s["power"].iloc[0].startswith("underpowered: the paper's effect +5.0% is below the detectable +")
    assert s["power"].iloc[1].startswith("no effect larger than +") and s["power"].iloc[1].endswith("(80% power)")
    assert s["power"].iloc[2] == "" and s["verdict"].iloc[2] == "replicates"


def test_nota_claims_carry_a_t_based_detectable_effect():
    from scipy import stats

    nota = pd.DataFrame({"input": ["+var[mc_dropout]"] * 4, "rel_change": [0.01, -0.02, 0.03, 0.0]})
    s = V.summary(V.nota_claims(nota))
    se = np.std([0.01, -0.02, 0.03, 0.0], ddof=1) / 2
    assert s["se"].iloc[0] == pytest.approx(se) and s["df"].iloc[0] == 3
    assert s["detectable"].iloc[0] == pytest.approx((stats.t.ppf(0.95, 3) + stats.t.ppf(0.8, 3)) * se)
    assert s["power"].iloc[0].startswith(("no effect larger than", "underpowered"))


def _verdict_row(a_top: int, b_top: int, paper_effect: float) -> dict:
    a, b = _ranker(a_top, "a.npz", 1), _ranker(b_top, "b.npz", 2)
    return V.claim_row(
        "paper",
        f"A ranks better than B ({a_top}, {b_top})",
        "a",
        "greater",
        paper_effect,
        [features(a, "R@1")],
        [features(b, "R@1")],
        groups=["corpus"],
        n_resamples=1999,
    )
