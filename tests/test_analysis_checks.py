"""The tables of notebooks 04-06 check themselves where they are built: a synthetic study's tables build,
and a broken input or table raises TableError naming the table, the row and what was expected.

The study is test_study's synthetic one (bert, mc_dropout, ensemble, temperature trained on
chitchat; two test corpora x three samplers) with Predictions of the four no-learning rules
beside it; every table is built once per module.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calibrank.study.analysis import calibration, exports, load, nota_tables, risk_aware, uncertainty, verdicts
from calibrank.study.analysis import study as st
from calibrank.table_checks import TableError
from conftest import project_root
from test_baselines import write_rule_predictions
from test_study import write_synthetic_study

N = 200  # resamples: enough for the tables' shape, fast


def build_all(data, n: int = N) -> dict:
    """Every table notebooks 04-06 build, as they build them."""
    t = {
        "rankers": st.overview(data),
        "intervals": st.interval_table(data, n_resamples=n),
        "metrics": st.metrics_table(data),
        "rules": st.baseline_interval_table(data, n_resamples=n),
    }
    t["table1"] = st.table1(data, t["intervals"])
    t["table1_rules"] = st.table1_reference(data, t["rules"])
    t["table2"] = st.table2(data, n_resamples=n)
    t["figure2"] = st.ece_by_negatives(data, n_resamples=n)
    t["reliability"] = st.reliability_table(data)
    t["layout2023"] = st.paper2023_tables(data, pd.concat([t["intervals"], t["rules"]], ignore_index=True))
    t["claims"] = verdicts.calibration_claims(data, n_resamples=n)
    t["sweep"] = st.risk_sweep(data)
    t["table3"] = st.table3(data, n_resamples=n)
    t["nota"] = st.nota_table(data, n_estimators=5)
    t["exported"] = st.export_tables(
        data.cfg, {"table1_bert": t["table1"], "table2_ece_change": t["table2"]}, notebook="04_calibration"
    )
    t["trec"] = st.write_trec_runs(data)
    return t


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``(root, study, tables)``: building them raised nothing."""
    with project_root(tmp_path_factory.mktemp("root")) as root:
        data = st.load_study(write_synthetic_study(root))
        write_rule_predictions(data.cfg)
        return root, data, build_all(data)


@pytest.fixture
def study(built):
    return built[1]


@pytest.fixture
def t(built):
    """Fresh copies: a test may break them."""
    return {k: (v.copy() if isinstance(v, pd.DataFrame) else dict(v)) for k, v in built[2].items()}


def raises(check, *args, words: tuple[str, ...], **kwargs) -> None:
    """``check(*args, **kwargs)`` raises TableError and one of its problems names every one of ``words``."""
    with pytest.raises(TableError) as err:
        check(*args, **kwargs)
    assert any(all(w in p for w in words) for p in str(err.value).split("; ")), str(err.value)


def _first(df: pd.DataFrame, where: dict):
    """The index of the first row of ``df`` matching ``where``."""
    return df.index[np.flatnonzero(np.logical_and.reduce([(df[c] == v).to_numpy() for c, v in where.items()]))[0]]


def _set(df: pd.DataFrame, where: dict, **values) -> pd.DataFrame:
    """``df`` with ``values`` on the first row matching ``where``."""
    out = df.copy()
    out.loc[_first(df, where), list(values)] = list(values.values())
    return out


def _drop(df: pd.DataFrame, where: dict) -> pd.DataFrame:
    return df.drop(index=_first(df, where))


CELL = {"ranker": "ensemble", "corpus": "chatterbot", "sampler": "bm25"}
NAMED = ("ranker=ensemble", "corpus=chatterbot", "sampler=bm25")


def test_the_rankers_table(study, t):
    r = t["rankers"]
    raises(
        load._check_overview, study, r[r["ranker"] != "ensemble"], words=("rankers", "ranker=ensemble", "expected 1")
    )
    raises(load._check_overview, study, _set(r, {"ranker": "temperature"}, S=0), words=("expected S >= 1", "found S 0"))
    raises(
        load._check_overview,
        study,
        _set(r, {"ranker": "mc_dropout"}, S=1),
        words=("ranker=mc_dropout", "expected S > 1 for a stochastic ranker"),
    )


@pytest.mark.parametrize(
    "column, value, words",
    [
        ("ECE debiased lo", np.nan, ("expected no NaN in ECE debiased and its interval", "ECE debiased lo nan")),
        ("ECE 1:1 debiased", 0.99, ("expected ECE 1:1 debiased inside its interval", "ECE 1:1 debiased 0.99")),
        ("Brier lo", 5.0, ("expected Brier lo <= Brier hi", "found Brier lo 5")),
        ("R@1", 2.0, ("expected R@1 inside its interval", "R@1 lo <= R@1 <= R@1 hi", "R@1 2")),
    ],
)
def test_the_intervals_name_the_cell_and_metric(study, t, column, value, words):
    raises(
        calibration._check_intervals,
        _set(t["intervals"], CELL, **{column: value}),
        study.expected_cells(),
        words=("intervals", *NAMED, *words),
    )


def test_a_missing_or_duplicated_cell_or_a_nan_metric_is_named(study, t):
    iv, m, cells = t["intervals"], t["metrics"], study.expected_cells()
    raises(calibration._check_intervals, _drop(iv, CELL), cells, words=("intervals", "0 rows", *NAMED, "expected 1"))
    raises(
        calibration._check_intervals,
        pd.concat([iv, iv.iloc[:1]]),
        cells,
        words=("intervals", "2 rows", f"ranker={iv['ranker'].iloc[0]}"),
    )
    raises(calibration._check_metrics, _drop(m, CELL), cells, words=("metrics (distinct cells)", *NAMED))
    raises(
        calibration._check_metrics,
        _set(m, {"ranker": "temperature"}, **{"mean var": np.nan}),
        cells,
        words=("metrics", "expected a value of mean var", "ranker=temperature", "seed=0"),
    )


def test_table1_from_broken_intervals_names_the_condition(study, t):
    iv, where = t["intervals"], {"ranker": "bert", "corpus": "chatterbot", "sampler": "embedding"}
    raises(st.table1, study, _drop(iv, where), words=("table1", "0 rows", "corpus=chatterbot", "sampler=embedding"))
    raises(st.table1, study, _set(iv, where, **{"R@1 lo": np.nan}), words=("expected a value of R10@1 lo",))
    raises(st.table1, study, _set(iv, where, ECE=1.0), words=("expected ECE 1:9 in [0, 1)", "found ECE 1:9 1"))
    raises(
        st.table1,
        study,
        iv.assign(shift="cross-domain"),
        words=("table1: train_corpus=chitchat", "expected 1 in-distribution row", "found 0"),
    )


def test_the_rules_of_table1(study, t):
    rules, where = t["rules"], {"ranker": "baseline:least_overlap", "corpus": "chitchat", "sampler": "bm25"}
    raises(
        st.table1_reference,
        study,
        rules[rules["ranker"] != "baseline:biencoder"],
        words=("table1 rules", "0 rows for ranker=baseline:biencoder"),
    )
    raises(
        st.table1_reference,
        study,
        _set(rules, where, **{"R@1": 1.5}),
        words=("table1 of baseline:least_overlap", "sampler=bm25", "found R10@1 1.5", "[0, 1]"),
    )


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"change": np.nan}, ("expected a value of change",)),
        ({"pvalue": 1.5}, ("found pvalue 1.5", "[0, 1]")),
        ({"mark": "*"}, ("found mark '*'", "expected one of")),
        ({"mark": "†", "change": 0.2, "lo": 0.1, "hi": 0.3}, ("found mark '†', change 0.2", "decrease")),
        ({"mark": "worse", "change": -0.2, "lo": -0.3, "hi": -0.1}, ("found mark 'worse', change -0.2", "rise")),
        ({"change": 0.5, "lo": -0.1, "hi": 0.1}, ("expected change inside [lo, hi]", "change 0.5")),
    ],
)
def test_table2_names_the_cell(study, t, changes, words):
    bad = _set(t["table2"], {"ranker": "mc_dropout", "corpus": "chitchat", "sampler": "embedding"}, **changes)
    raises(calibration._check_table2, study, bad, words=("table2", "ranker=mc_dropout", "sampler=embedding", *words))
    t2 = t["table2"]
    raises(
        calibration._check_table2, study, t2[t2["ranker"] != "temperature"], words=("ranker=temperature", "expected 1")
    )


def test_figure2_names_the_cell_and_n(study, t):
    f2, at, seed = t["figure2"], {**CELL, "n_nonrel": 4}, study.cfg.seed
    raises(
        calibration._check_figure2, study, _drop(f2, at), "test", None, seed, words=("figure2", *NAMED, "n_nonrel=4")
    )
    raises(
        calibration._check_figure2, study, _set(f2, at, ECE=1.2), "test", None, seed, words=("found ECE 1.2", "[0, 1]")
    )
    for n, column in ((1, "ECE 1:1"), (study.k, "ECE")):
        where = {"ranker": "bert", "corpus": "chatterbot", "sampler": "bm25", "n_nonrel": n}
        bad = _set(f2, where, ECE=f2.loc[_first(f2, where), "ECE"] + 1e-6)
        raises(
            calibration._check_figure2,
            study,
            bad,
            "test",
            None,
            seed,
            words=("figure2", "ranker=bert", f"n_nonrel={n}", f"expected metrics' {column} of seed 0"),
        )


def test_reliability_names_the_ranker_and_bucket(study, t):
    rel, at, rankers = t["reliability"], {"ranker": "ensemble", "bin": 7}, list(study.rankers)
    raises(
        calibration._check_reliability, _drop(rel, at), rankers, 10, words=("reliability", "ranker=ensemble", "bin=7")
    )
    raises(
        calibration._check_reliability,
        _set(rel, at, count=rel.loc[_first(rel, at), "count"] + 3),
        rankers,
        10,
        words=("ensemble: 123", "bert: 120", "same pairs"),
    )
    raises(
        calibration._check_reliability,
        _set(rel, at, fraction_positive=1.5),
        rankers,
        10,
        words=("found fraction_positive 1.5", "bin=7"),
    )
    assert (st.reliability_table(study, n_bins=5).groupby("ranker").size() == 5).all()  # the buckets asked for


def test_the_2023_layout_names_the_row(study, t):
    both, sampler = pd.concat([t["intervals"], t["rules"]], ignore_index=True), calibration.paper2023_sampler(study)
    no_rule = _drop(both, {"ranker": "baseline:biencoder", "corpus": "chitchat", "sampler": sampler})
    raises(
        st.paper2023_tables,
        study,
        no_rule,
        words=("paper2023 in-domain", "ranker=baseline:biencoder", "train on=chitchat", "expected 1"),
    )
    raises(
        st.paper2023_tables,
        study,
        _set(both, {"ranker": "temperature", "corpus": "chitchat", "sampler": sampler}, **{"R@1": np.nan}),
        words=("expected a value of R@1 mean", "ranker=temperature"),
    )


def test_claims_name_the_claim(t, monkeypatch):
    claims, check = t["claims"], verdicts._check_calibration_claims
    raises(check, claims.iloc[:0], words=("claims", "no rows"))
    raises(
        check,
        _set(claims, {"method": "ensemble"}, method="sngp"),
        words=("method=sngp", "expected a Gaussian-process ranker in a 2023 paper only"),
    )
    raises(
        check,
        _set(claims, {"method": "ensemble"}, paper="PG-DRR Table 1"),
        words=("paper=PG-DRR Table 1", "method=ensemble", "in a 2023 paper's claim"),
    )
    monkeypatch.setattr(verdicts, "verdict", lambda *args: "maybe")
    raises(verdicts.summary, claims, words=("claims", "found verdict 'maybe'", "expected one of the verdicts"))
    monkeypatch.undo()
    monkeypatch.setattr(uncertainty, "power_text", lambda *args: "")
    raises(verdicts.summary, claims, words=("claims", "not significant to say what it could have detected"))


def test_files_name_the_table_and_the_run(built, t, monkeypatch):
    root, data, _ = built
    monkeypatch.setenv("CALIBRANK_ROOT", str(root))
    asked = {"table1_bert": t["table1"], "table2_ece_change": t["table2"]}
    raises(
        exports._check_exported,
        asked,
        {**t["exported"], "table2_ece_change": root / "nowhere.csv"},
        words=("'table2_ece_change'", "does not exist"),
    )
    cut = root / "cut.csv"
    cut.write_text("\n".join(t["exported"]["table1_bert"].read_text().splitlines()[:3]) + "\n")
    raises(
        exports._check_exported,
        asked,
        {**t["exported"], "table1_bert": cut},
        words=("table1_bert.csv cannot be read back", f"expected {len(t['table1'])} rows"),
    )
    trec = t["trec"]
    run = trec[(trec["kind"] == "run") & (trec["run"] == "temperature-chitchat")].index[0]
    raises(
        exports._check_trec_runs,
        data,
        trec.drop(index=run),
        "test",
        words=("trec runs", "run=temperature-chitchat", f"condition={trec.loc[run, 'condition']}", "expected 1"),
    )


def test_the_sweep_names_the_cell_and_b(study, t):
    sw, at = t["sweep"], {**CELL, "sampler": "random", "b": 0.3}
    rows = [
        (*c, float(b))
        for c in study.expected_cells(rankers=study.stochastic_rankers())
        for b in risk_aware._risk().DEFAULT_BS
    ]
    raises(risk_aware._check_sweep, _drop(sw, at), rows, words=("sweep", "ranker=ensemble", "b=0.3", "expected 1"))
    raises(risk_aware._check_sweep, _set(sw, at, value=np.nan), rows, words=("found value nan", "b=0.3", "[0, 1]"))
    raises(risk_aware._check_sweep, _set(sw, at, b=1.3), rows, words=("found b 1.3", "[0, 1]"))
    raises(
        risk_aware._check_sweep,
        _set(sw, {"ranker": "mc_dropout", "sampler": "bm25", "b": 0.0}, rel_change=0.1),
        rows,
        words=("expected rel_change 0 at b = 0", "found rel_change 0.1", "ranker=mc_dropout"),
    )
    assert sorted(set(st.risk_sweep(study, [0.0, 0.5, 1.0])["b"])) == [0.0, 0.5, 1.0]  # the grid asked for


@pytest.mark.parametrize(
    "column, value, words",
    [
        ("S", 1, ("found S 1", "S > 1")),
        ("b", 1.5, ("found b 1.5", "[0, 1]")),
        ("risk_aware", np.nan, ("found risk_aware nan",)),
        ("prob_mean_ranker", 1.1, ("found prob_mean_ranker 1.1",)),
        ("mean_ranker", -0.1, ("found mean_ranker -0.1",)),
        ("pvalue", -0.1, ("found pvalue -0.1",)),
        ("mark", "?", ("found mark '?'",)),
    ],
)
def test_table3_names_the_cell(study, t, column, value, words):
    where = {"ranker": "mc_dropout", "corpus": "chatterbot", "sampler": "random"}
    raises(
        risk_aware._check_table3,
        study,
        _set(t["table3"], where, **{column: value}),
        words=("table3", "ranker=mc_dropout", "corpus=chatterbot", "sampler=random", *words),
    )
    raises(risk_aware._check_table3, study, _drop(t["table3"], CELL), words=("table3", "0 rows", *NAMED))


@pytest.mark.parametrize(
    "input_, changes, words",
    [
        ("+var[ensemble]", {"f1_mean": 1.1}, ("found f1_mean 1.1", "[0, 1]")),
        ("+var[ensemble]", {"f1_sd": np.nan}, ("expected a value of f1_sd",)),
        ("+var[ensemble]", {"folds": 4}, ("found folds 4", "expected folds 5")),
        ("+var[ensemble]", {"pvalue": 2.0}, ("found pvalue 2",)),
        ("E[R]", {"pvalue": 0.5}, ("expected no pvalue on the base input", "found pvalue 0.5")),
        ("+var[ensemble]", {"mark": "†", "rel_change": -0.1}, ("found mark '†', rel_change -0.1", "gain")),
    ],
)
def test_nota_names_the_condition_and_input(t, input_, changes, words):
    where = {"table": "Table 5 (cross-NS)", "sampler": "random", "input": input_}
    raises(
        nota_tables._check_nota,
        _set(t["nota"], where, **changes),
        3,
        5,
        words=("nota", "table=Table 5 (cross-NS)", "sampler=random", f"input={input_}", *words),
    )
    raises(
        nota_tables._check_nota,
        _drop(t["nota"], {**where, "input": "+var[ensemble]"}),
        3,
        5,
        words=("sampler=random", "expected 3 inputs", "found 2: E[R], +var[mc_dropout]"),
    )


def test_nota_without_a_condition_is_named(study):
    raises(st.nota_table, study, split="nosuch", words=("nota: no rows", "expected at least one condition"))


def test_a_study_trained_on_both_corpora_builds_every_table(tmp_path):
    """Table 1 as the train x test matrix, the 2023 layouts' shift rows, and every other table of 04-06."""
    import shutil

    from calibrank.study.data import baselines as bl
    from calibrank.study.data.conditions import eval_conditions

    with project_root(tmp_path):
        data = st.load_study(
            write_synthetic_study(tmp_path, train_corpora=("chitchat", "chatterbot"), domain_drop=True)
        )
        write_rule_predictions(
            data.cfg
        )  # the rules Platt-scaled on chitchat; the same numbers stand in for chatterbot's
        for name in bl.BaselineName:
            for c in eval_conditions(data.cfg, ("test",)):
                shutil.copytree(
                    bl.baselines_path(data.cfg, name, "chitchat", c).parent,
                    bl.baselines_path(data.cfg, name, "chatterbot", c).parent,
                    dirs_exist_ok=True,
                )
        t = build_all(data)
    assert sorted(set(zip(t["layout2023"]["shift"]["train on"], t["layout2023"]["shift"]["test on"]))) == [
        ("chatterbot", "chitchat"),
        ("chitchat", "chatterbot"),
    ]
    ind = t["table1"][t["table1"]["shift"] == "in distribution"]
    assert sorted(zip(ind["train_corpus"], ind["corpus"])) == [("chatterbot", "chatterbot"), ("chitchat", "chitchat")]
