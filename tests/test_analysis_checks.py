"""Tests of calibrank.analysis.checks: each check passes the tables of a synthetic study and names what a broken table breaks.

The study is test_study's synthetic one (bert, mc_dropout, ensemble, temperature trained on
chitchat; two test corpora x three samplers) with Predictions of the four no-learning rules
beside it; every table is computed once per module.
"""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from calibrank import study as st
from calibrank.analysis import checks, verdicts
from calibrank.risk import DEFAULT_BS

from test_baselines import write_rule_predictions
from conftest import project_root
from test_study import write_synthetic_study

N = 200  # resamples: enough for the tables' shape, fast


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``(root, study, tables)``: every table notebooks 04-06 check, on the synthetic study."""
    with project_root(tmp_path_factory.mktemp("root")) as root:
        data = st.load_study(write_synthetic_study(root))
        write_rule_predictions(data.cfg)
        t = {"rankers": st.overview(data), "intervals": st.interval_table(data, n_resamples=N),
             "metrics": st.metrics_table(data)}
        t["table1"] = st.table1(data, t["intervals"])
        baseline_intervals = st.baseline_interval_table(data, n_resamples=N)
        t["table1_rules"] = st.table1_reference(data, baseline_intervals)
        t["table2"] = st.table2(data, n_resamples=N)
        t["figure2"] = st.ece_by_negatives(data, n_resamples=N)
        t["reliability"] = st.reliability_table(data)
        t["layout2023"] = st.paper2023_tables(data, pd.concat([t["intervals"], baseline_intervals], ignore_index=True))
        t["claims"] = verdicts.calibration_claims(data, n_resamples=N)
        t["sweep"] = st.risk_sweep(data)
        t["table3"] = st.table3(data, n_resamples=N)
        t["nota"] = st.nota_table(data, n_estimators=5)
        t["exported_tables"] = {"table1_bert": t["table1"], "table2_ece_change": t["table2"], "reliability": t["reliability"]}
        t["exported"] = st.export_tables(data.cfg, t["exported_tables"], notebook="04_calibration")
        t["trec"] = st.write_trec_runs(data)
    return root, data, t


@pytest.fixture
def study(built):
    return built[1]


@pytest.fixture
def tables(built):
    """Fresh copies: a test may break them."""
    return {k: (v.copy() if isinstance(v, pd.DataFrame) else dict(v)) for k, v in built[2].items()}


def _one(problems: list[str], *words: str) -> None:
    """Some problem names every one of ``words``."""
    assert problems, "the broken table passed"
    assert any(all(w in p for w in words) for p in problems), problems


def _first(df: pd.DataFrame, **where) -> int:
    mask = np.ones(len(df), dtype=bool)
    for c, v in where.items():
        mask &= (df[c] == v).to_numpy()
    return int(np.flatnonzero(mask)[0])


def test_the_checks_module_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, calibrank.analysis.checks; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# ------------------------------------------------------------------------------ 04: rankers
def test_overview_of_a_valid_study_has_no_problems(study, tables):
    assert checks.overview_problems(study, tables["rankers"]) == []


def test_overview_problems_name_the_ranker(study, tables):
    t = tables["rankers"]
    _one(checks.overview_problems(study, t[t["ranker"] != "ensemble"]), "rankers", "ranker=ensemble", "expected 1")
    bad = t.copy()
    bad.loc[_first(bad, ranker="temperature"), "S"] = 0
    _one(checks.overview_problems(study, bad), "ranker=temperature", "expected S >= 1", "found S 0")
    bad = t.copy()
    bad.loc[_first(bad, ranker="mc_dropout"), "S"] = 1
    _one(checks.overview_problems(study, bad), "ranker=mc_dropout", "expected S > 1 for a stochastic ranker",
         "found S 1")


# ------------------------------------------------------------------------------ 04: metrics and intervals
def test_metrics_of_a_valid_study_have_no_problems(study, tables):
    assert checks.metrics_problems(study, tables["intervals"], tables["metrics"]) == []


def _cell(df: pd.DataFrame, ranker: str = "ensemble", corpus: str = "chatterbot", sampler: str = "bm25") -> int:
    return _first(df, ranker=ranker, corpus=corpus, sampler=sampler)


@pytest.mark.parametrize("column, value, words", [
    ("ECE debiased lo", np.nan, ("expected no NaN in ECE debiased and its interval", "ECE debiased lo nan")),
    ("ECE 1:1 debiased", 0.99, ("expected ECE 1:1 debiased inside its interval", "ECE 1:1 debiased 0.99")),
    ("Brier lo", 5.0, ("expected Brier lo <= Brier hi", "found Brier lo 5")),
    ("R@1", 2.0, ("expected R@1 inside its interval", "R@1 lo <= R@1 <= R@1 hi", "R@1 2")),
    ("MRR hi", -1.0, ("MRR", "expected")),
])
def test_interval_problems_name_the_cell_and_metric(study, tables, column, value, words):
    iv = tables["intervals"]
    iv.loc[_cell(iv), column] = value
    _one(checks.metrics_problems(study, iv, tables["metrics"]), "intervals", "ranker=ensemble", "corpus=chatterbot",
         "sampler=bm25", *words)


def test_a_missing_or_duplicated_cell_is_named(study, tables):
    iv, m = tables["intervals"], tables["metrics"]
    _one(checks.metrics_problems(study, iv.drop(index=_cell(iv)), m), "intervals", "0 rows", "ranker=ensemble",
         "corpus=chatterbot", "sampler=bm25", "expected 1")
    _one(checks.metrics_problems(study, pd.concat([iv, iv.iloc[[_cell(iv)]]]), m), "2 rows", "ranker=ensemble")
    keep = ~((m["ranker"] == "bert") & (m["corpus"] == "chitchat") & (m["sampler"] == "random"))
    _one(checks.metrics_problems(study, iv, m[keep]), "metrics", "ranker=bert", "corpus=chitchat", "sampler=random")


def test_a_nan_metric_of_a_run_is_named(study, tables):
    m = tables["metrics"]
    m.loc[_cell(m, "temperature"), "mean var"] = np.nan
    _one(checks.metrics_problems(study, tables["intervals"], m), "metrics", "expected a value of mean var",
         "ranker=temperature", "seed=0")


# ------------------------------------------------------------------------------ 04: Table 1
def test_table1_of_a_valid_study_has_no_problems(study, tables):
    assert checks.table1_problems(study, tables["table1"], tables["table1_rules"]) == []


def test_table1_problems_name_the_condition(study, tables):
    t1, rules = tables["table1"], tables["table1_rules"]
    row = _first(t1, corpus="chatterbot", sampler="embedding")
    _one(checks.table1_problems(study, t1.drop(index=row), rules), "table1", "0 rows", "corpus=chatterbot",
         "sampler=embedding", "expected 1")
    bad = t1.copy()
    bad.loc[row, "R10@1 lo"] = np.nan
    _one(checks.table1_problems(study, bad, rules), "table1", "expected a value of R10@1 lo", "sampler=embedding")
    bad = t1.copy()
    bad.loc[row, "ECE 1:9"] = 1.0
    _one(checks.table1_problems(study, bad, rules), "expected ECE 1:9 in [0, 1)", "found ECE 1:9 1",
         "corpus=chatterbot")
    bad = t1.copy()
    bad["shift"] = "cross-domain"
    _one(checks.table1_problems(study, bad, rules), "train_corpus=chitchat", "expected 1 in-distribution row",
         "found 0")


def test_table1_rule_problems_name_the_rule(study, tables):
    t1, rules = tables["table1"], tables["table1_rules"]
    row = _first(rules, ranker="baseline:least_overlap", corpus="chitchat", sampler="bm25")
    _one(checks.table1_problems(study, t1, rules.drop(index=row)), "table1 rules", "ranker=baseline:least_overlap",
         "sampler=bm25", "expected 1")
    bad = rules.copy()
    bad.loc[row, "R10@1"] = 1.5
    _one(checks.table1_problems(study, t1, bad), "table1 rules", "found R10@1 1.5", "[0, 1]",
         "ranker=baseline:least_overlap")


# ------------------------------------------------------------------------------ 04: Table 2
def test_table2_of_a_valid_study_has_no_problems(study, tables):
    assert checks.table2_problems(study, tables["table2"]) == []


@pytest.mark.parametrize("changes, words", [
    ({"change": np.nan}, ("expected a value of change",)),
    ({"pvalue": 1.5}, ("found pvalue 1.5", "[0, 1]")),
    ({"mark": "*"}, ("found mark '*'", "expected one of")),
    ({"mark": "†", "change": 0.2, "lo": 0.1, "hi": 0.3}, ("found mark '†', change 0.2", "decrease")),
    ({"mark": "worse", "change": -0.2, "lo": -0.3, "hi": -0.1}, ("found mark 'worse', change -0.2", "rise")),
    ({"change": 0.5, "lo": -0.1, "hi": 0.1}, ("expected change inside [lo, hi]", "change 0.5")),
])
def test_table2_problems_name_the_cell(study, tables, changes, words):
    t2 = tables["table2"]
    row = _cell(t2, "mc_dropout", "chitchat", "embedding")
    for c, v in changes.items():
        t2.loc[row, c] = v
    _one(checks.table2_problems(study, t2), "table2", "ranker=mc_dropout", "sampler=embedding", *words)


def test_table2_without_a_ranker_is_named(study, tables):
    t2 = tables["table2"]
    _one(checks.table2_problems(study, t2[t2["ranker"] != "temperature"]), "table2", "ranker=temperature", "expected 1")


# ------------------------------------------------------------------------------ 04: Figure 2
def test_figure2_of_a_valid_study_has_no_problems(study, tables):
    assert checks.figure2_problems(study, tables["figure2"], tables["metrics"]) == []


def test_figure2_problems_name_the_cell_and_n(study, tables):
    f2, m, k = tables["figure2"], tables["metrics"], study.k
    row = _first(f2, ranker="ensemble", corpus="chitchat", sampler="random", n_nonrel=4)
    _one(checks.figure2_problems(study, f2.drop(index=row), m), "figure2", "ranker=ensemble", "n_nonrel=4", "expected 1")
    bad = f2.copy()
    bad.loc[row, "ECE"] = 1.2
    _one(checks.figure2_problems(study, bad, m), "found ECE 1.2", "n_nonrel=4", "[0, 1]")
    for n, column in ((1, "ECE 1:1"), (k, "ECE")):
        bad = f2.copy()
        at = _first(bad, ranker="bert", corpus="chatterbot", sampler="bm25", n_nonrel=n)
        bad.loc[at, "ECE"] += 1e-6
        _one(checks.figure2_problems(study, bad, m), "figure2", "ranker=bert", "sampler=bm25", f"n_nonrel={n}",
             f"expected metrics' {column} of seed 0")


# ------------------------------------------------------------------------------ 04: reliability
def test_reliability_of_a_valid_study_has_no_problems(study, tables):
    assert checks.reliability_problems(study, tables["reliability"]) == []


def test_reliability_problems_name_the_ranker_and_bucket(study, tables):
    rel = tables["reliability"]
    row = _first(rel, ranker="ensemble", bin=7)
    _one(checks.reliability_problems(study, rel.drop(index=row)), "reliability", "ranker=ensemble", "bin=7", "expected 1")
    bad = rel.copy()
    bad.loc[row, "count"] += 3
    _one(checks.reliability_problems(study, bad), "reliability", "ensemble: 123", "bert: 120", "same pairs")
    bad = rel.copy()
    bad.loc[row, "fraction_positive"] = 1.5
    _one(checks.reliability_problems(study, bad), "found fraction_positive 1.5", "ranker=ensemble", "bin=7")


def test_reliability_buckets_come_from_the_library_constant(study):
    few = st.reliability_table(study, n_bins=5)
    _one(checks.reliability_problems(study, few), "reliability", "bin=9", "0 rows")


# ------------------------------------------------------------------------------ 04: the 2023 layout
def test_paper2023_of_a_valid_study_has_no_problems(study, tables):
    assert checks.paper2023_problems(study, tables["layout2023"]) == []


def test_paper2023_problems_name_the_row(study, tables):
    lay = tables["layout2023"]
    ind = lay["in-domain"]
    row = _first(ind, ranker="baseline:biencoder")
    _one(checks.paper2023_problems(study, {**lay, "in-domain": ind.drop(index=row)}), "paper2023 in-domain",
         "ranker=baseline:biencoder", "train on=chitchat", "expected 1")
    bad = ind.copy()
    bad.loc[_first(bad, ranker="temperature"), "MAP mean"] = np.nan
    _one(checks.paper2023_problems(study, {**lay, "in-domain": bad}), "expected a value of MAP mean",
         "ranker=temperature")


# ------------------------------------------------------------------------------ 04: claims
def test_claims_of_a_valid_study_have_no_problems(tables):
    assert checks.claims_problems(tables["claims"]) == []


def test_claims_problems_name_the_claim(tables, monkeypatch):
    claims = tables["claims"]
    _one(checks.claims_problems(claims.iloc[:0]), "claims", "no rows")
    row = _first(claims, method="ensemble")
    bad = claims.copy()
    bad.loc[row, "method"] = "sngp"
    _one(checks.claims_problems(bad), "claims", "method=sngp", "expected a Gaussian-process ranker in a 2023 paper",
         "PG-DRR or GPF-BERT")
    bad = claims.copy()
    bad.loc[row, "paper"] = "PG-DRR Table 1"
    _one(checks.claims_problems(bad), "claims", "paper=PG-DRR Table 1", "method=ensemble", "expected a Gaussian-process")
    summary = verdicts.summary
    monkeypatch.setattr(verdicts, "summary", lambda c: summary(c).assign(verdict=["maybe"] + ["replicates"] * (len(c) - 1)))
    first = claims.iloc[0]
    _one(checks.claims_problems(claims), "claims", "found verdict 'maybe'", "expected one of",
         f"method={first['method']}")


# ------------------------------------------------------------------------------ 04: files
def test_exports_of_a_valid_study_have_no_problems(built, monkeypatch):
    root, data, t = built
    monkeypatch.setenv("CALIBRANK_ROOT", str(root))
    assert checks.export_problems(data, t["exported_tables"], t["exported"], t["trec"]) == []


def test_export_problems_name_the_table_and_the_run(built, tables, monkeypatch):
    root, data, _ = built
    monkeypatch.setenv("CALIBRANK_ROOT", str(root))
    asked, exported, trec = tables["exported_tables"], tables["exported"], tables["trec"]
    _one(checks.export_problems(data, {**asked, "extra": asked["reliability"]}, exported, trec), "'extra' was not written")
    _one(checks.export_problems(data, asked, {**exported, "reliability": root / "nowhere.csv"}, trec),
         "'reliability'", "does not exist")
    run = _first(trec, kind="run", run="temperature-chitchat")
    cond = trec.loc[run, "condition"]
    _one(checks.export_problems(data, asked, exported, trec.drop(index=run)), "trec runs", "run=temperature-chitchat",
         f"condition={cond}", "expected 1")
    _one(checks.export_problems(data, asked, exported, trec, required=("table1_bert", "figure2_ece_by_negatives")),
         "figure2_ece_by_negatives.csv cannot be read back")


# ------------------------------------------------------------------------------ 05: Figure 3 and Table 3
def test_sweep_of_a_valid_study_has_no_problems(study, tables):
    assert checks.sweep_problems(study, tables["sweep"]) == []


def test_sweep_problems_name_the_cell_and_b(study, tables):
    sw = tables["sweep"]
    row = _first(sw, ranker="ensemble", corpus="chatterbot", sampler="random", b=0.3)
    _one(checks.sweep_problems(study, sw.drop(index=row)), "sweep", "ranker=ensemble", "sampler=random", "b=0.3", "expected 1")
    bad = sw.copy()
    bad.loc[row, "value"] = np.nan
    _one(checks.sweep_problems(study, bad), "found value nan", "b=0.3", "[0, 1]")
    bad = sw.copy()
    bad.loc[row, "b"] = 1.3
    _one(checks.sweep_problems(study, bad), "found b 1.3", "[0, 1]")
    bad = sw.copy()
    bad.loc[_first(bad, ranker="mc_dropout", corpus="chitchat", sampler="bm25", b=0.0), "rel_change"] = 0.1
    _one(checks.sweep_problems(study, bad), "expected rel_change 0 at b = 0", "found rel_change 0.1",
         "ranker=mc_dropout", "sampler=bm25")


def test_sweep_b_grid_comes_from_the_library_constant(study):
    short = st.risk_sweep(study, [0.0, 0.5, 1.0])
    problems = checks.sweep_problems(study, short)
    _one(problems, "sweep", f"expected {len(DEFAULT_BS) * 2 * 6}")
    _one(problems, "b=0.1", "0 rows")


def test_table3_of_a_valid_study_has_no_problems(study, tables):
    assert checks.table3_problems(study, tables["table3"]) == []


@pytest.mark.parametrize("column, value, words", [
    ("S", 1, ("found S 1", "S > 1")),
    ("b", 1.5, ("found b 1.5", "[0, 1]")),
    ("risk_aware", np.nan, ("found risk_aware nan",)),
    ("prob_mean_ranker", 1.1, ("found prob_mean_ranker 1.1",)),
    ("mean_ranker", -0.1, ("found mean_ranker -0.1",)),
    ("pvalue", -0.1, ("found pvalue -0.1",)),
    ("mark", "?", ("found mark '?'",)),
])
def test_table3_problems_name_the_cell(study, tables, column, value, words):
    t3 = tables["table3"]
    t3.loc[_cell(t3, "mc_dropout", "chatterbot", "random"), column] = value
    _one(checks.table3_problems(study, t3), "table3", "ranker=mc_dropout", "corpus=chatterbot", "sampler=random", *words)


def test_table3_without_a_cell_is_named(study, tables):
    t3 = tables["table3"]
    _one(checks.table3_problems(study, t3.drop(index=_cell(t3))), "table3", "0 rows", "ranker=ensemble", "sampler=bm25")


# ------------------------------------------------------------------------------ 06: Tables 4-5
def test_nota_of_a_valid_study_has_no_problems(study, tables):
    assert checks.nota_problems(study, tables["nota"]) == []


def _nota_row(nt: pd.DataFrame, input_: str = "+var[ensemble]") -> int:
    return _first(nt, table="Table 5 (cross-NS)", sampler="random", input=input_)


@pytest.mark.parametrize("input_, changes, words", [
    ("+var[ensemble]", {"f1_mean": 1.1}, ("found f1_mean 1.1", "[0, 1]")),
    ("+var[ensemble]", {"f1_sd": np.nan}, ("expected a value of f1_sd",)),
    ("+var[ensemble]", {"folds": 4}, ("found folds 4", "expected folds 5")),
    ("+var[ensemble]", {"pvalue": 2.0}, ("found pvalue 2",)),
    ("E[R]", {"pvalue": 0.5}, ("expected no pvalue on the base input", "found pvalue 0.5")),
    ("+var[ensemble]", {"mark": "†", "rel_change": -0.1}, ("found mark '†', rel_change -0.1", "gain")),
])
def test_nota_problems_name_the_condition_and_input(study, tables, input_, changes, words):
    nt = tables["nota"]
    row = _nota_row(nt, input_)
    for c, v in changes.items():
        nt.loc[row, c] = v
    _one(checks.nota_problems(study, nt), "nota", "table=Table 5 (cross-NS)", "sampler=random", f"input={input_}", *words)


def test_nota_without_an_input_or_rows_is_named(study, tables):
    nt = tables["nota"]
    _one(checks.nota_problems(study, nt.drop(index=_nota_row(nt))), "nota", "sampler=random", "expected 3 inputs",
         "found 2: E[R], +var[mc_dropout]")
    _one(checks.nota_problems(study, nt.iloc[:0]), "nota", "no rows")
    _one(checks.nota_problems(study, pd.DataFrame()), "nota", "no rows")


def test_notebook_04s_checks_pass_on_a_study_trained_on_both_corpora(tmp_path):
    """Table 1 as the train x test matrix, Table 2, Figure 2, the 2023 layouts and the claims of a
    study whose rankers were trained on both corpora: every check notebook 04 runs holds."""
    import shutil

    from calibrank import baselines as bl
    from calibrank.experiment import eval_conditions

    with project_root(tmp_path):
        data = st.load_study(write_synthetic_study(tmp_path, train_corpora=("chitchat", "chatterbot"), domain_drop=True))
        write_rule_predictions(data.cfg)  # the rules Platt-scaled on chitchat; the same numbers stand in for chatterbot's
        for name in bl.BaselineName:
            for c in eval_conditions(data.cfg, ("test",)):
                shutil.copytree(bl.baselines_path(data.cfg, name, "chitchat", c).parent,
                                bl.baselines_path(data.cfg, name, "chatterbot", c).parent, dirs_exist_ok=True)
        intervals, metrics = st.interval_table(data, n_resamples=N), st.metrics_table(data)
        baseline_intervals = st.baseline_interval_table(data, n_resamples=N)
        table1 = st.table1(data, intervals)
        assert checks.metrics_problems(data, intervals, metrics) == []
        assert checks.table1_problems(data, table1, st.table1_reference(data, baseline_intervals)) == []
        assert checks.table2_problems(data, st.table2(data, n_resamples=N)) == []
        assert checks.figure2_problems(data, st.ece_by_negatives(data, n_resamples=N), metrics) == []
        layout = st.paper2023_tables(data, pd.concat([intervals, baseline_intervals], ignore_index=True))
        assert checks.paper2023_problems(data, layout) == []
        assert sorted(set(zip(layout["shift"]["train on"], layout["shift"]["test on"]))) == [
            ("chatterbot", "chitchat"), ("chitchat", "chatterbot")]
        assert checks.claims_problems(verdicts.calibration_claims(data, n_resamples=N)) == []
        # the matrix: one in-distribution row per training corpus, on its own corpus
        ind = table1[table1["shift"] == "in distribution"]
        assert sorted(zip(ind["train_corpus"], ind["corpus"])) == [("chatterbot", "chatterbot"), ("chitchat", "chitchat")]


def test_a_claim_that_did_not_decide_without_its_power_is_a_problem(tables, monkeypatch):
    from calibrank.analysis import uncertainty

    assert checks.claims_problems(tables["claims"]) == []
    monkeypatch.setattr(uncertainty, "power_text", lambda *args: "")
    _one(checks.claims_problems(tables["claims"]), "claims", "not significant", "could have detected", "power")
