"""The replication verdicts (calibrank.analysis.verdicts) on Predictions built to give each verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibrank.analysis import verdicts as V
from calibrank.metrics.resample import features
from calibrank.predictions import Predictions

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
    row = V.claim_row("paper", "A ranks better than B", "a", "greater", 0.1, [features(a, "R@1")], [features(b, "R@1")],
                      groups=["corpus"], n_resamples=1999)
    return V.summary(pd.DataFrame([row])).iloc[0]


@pytest.mark.parametrize("a_top, b_top, expected", [
    (45, 15, "replicates"),                            # A better on 30 more queries of 60
    (31, 30, "same direction, not significant"),       # one query's difference
    (30, 31, "opposite direction, not significant"),
    (15, 45, "contradicted"),                          # A significantly worse
])
def test_each_verdict_on_fixtures_built_for_it(a_top, b_top, expected):
    row = _verdict_of(a_top, b_top)
    assert row["verdict"] == expected
    assert row["lo"] <= row["ours"] <= row["hi"]
    assert row["ours"] == pytest.approx((a_top - b_top) / b_top)


def test_holm_across_claims_can_turn_a_replication_into_not_significant():
    rows = pd.DataFrame([{**dict.fromkeys(V.CLAIM_COLUMNS, ""), "ours": 0.1, "direction": "greater", "p": 0.03,
                          "p opposite": 0.97} for _ in range(3)])
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


def test_nota_claims_need_two_conditions_for_a_test():
    nota = pd.DataFrame({"input": ["+var[mc_dropout]", "+var[mc_dropout]", "+var[mc_dropout]"],
                         "rel_change": [0.2, 0.25, 0.3]})
    row = V.nota_claims(nota).iloc[0]
    assert row["method"] == "mc_dropout" and row["p"] < 0.05 and row["lo"] < 0.25 < row["hi"]
    one = V.nota_claims(nota.iloc[:1]).iloc[0]
    assert np.isnan(one["p"]) and "no test" in one["note"]
