"""The tables of calibrank.study.analysis.practice (notebook 08) check themselves where they are built.

On a synthetic study every table is built without a TableError and agrees with the tables it relates
to; a corrupted input (a Predictions file of another shape, a collaborator that returns a wrong
number, a table with a row twice) makes the builder raise a TableError naming table, row and
expectation."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from calibrank.methods import conformal as m_conformal
from calibrank.methods import listwise as m_listwise
from calibrank.methods import prior as m_prior
from calibrank.methods import recalibrate as m_recalibrate
from calibrank.methods import selective as m_selective
from calibrank.predictions import Predictions
from calibrank.study.analysis import study as st
from calibrank.study.analysis.practice import (
    conformal,
    findings,
    fitdata,
    listwise,
    nota_sets,
    prior,
    recalibrate,
    selective,
    signals,
)
from calibrank.study.analysis.practice.cells import CELL, study_cells
from calibrank.study.data.conditions import eval_conditions, predictions_path, ranker_conditions
from calibrank.table_checks import TableError
from conftest import project_root
from test_study import RANKERS, _labels, _samples, synthetic_config

Q, K = 24, 10  # 24 test queries: the half a deterministic ranker is fitted on (12) is enough for alpha = 0.1
R = 60  # bootstrap resamples: enough for intervals, fast
IN = "in distribution"


def _write_study(q: int = Q):
    """Predictions for every ranker x condition of the synthetic profile (under CALIBRANK_ROOT), the queries of
    one corpus and split sharing their ids across samplers (as real query sets do: the shift table pairs them).
    Every fourth query has its candidates' probabilities reversed: the rankers err there."""
    cfg = synthetic_config()
    for ci, cond in enumerate(eval_conditions(cfg)):
        labels = _labels(q, K, 100 + ci)
        qids = np.array([f"{cond.corpus}-{cond.split}-q{i}" for i in range(q)])
        for ranker in RANKERS:
            if cond in ranker_conditions(cfg, ranker):
                samples = _samples(ranker, labels, 1000 * ci, 0.0)
                samples[:, ::4] = samples[:, ::4, ::-1]
                Predictions(
                    qids=qids,
                    labels=labels,
                    probs=samples.mean(axis=0),
                    samples=samples,
                    meta={"ranker": ranker, "seed": 0, "condition": cond.name},
                ).save(predictions_path(cfg, ranker, "chitchat", cond, 0))
    return cfg


@pytest.fixture(scope="module")
def t(tmp_path_factory):
    """Every table of notebook 08 on the synthetic study, built once (each builder checks its own table)."""
    with project_root(tmp_path_factory.mktemp("study")):
        data = st.load_study(_write_study())
        tables = {
            "prior_by_negatives": prior.prior_ece_by_negatives(data, n_resamples=R),
            "prior_summary": prior.prior_summary(data, n_resamples=R),
            "recalibration": recalibrate.recalibration_table(data, n_resamples=R),
            "selective": selective.selective_table(data, n_resamples=R),
            "conformal": conformal.conformal_table(data),
            "shift_detection": signals.shift_detection(data, n_resamples=R),
            "performance_prediction": signals.performance_prediction(data),
            "listwise": listwise.listwise_calibration(data, n_resamples=R),
            "nota_conformal": nota_sets.nota_conformal_table(data, n_estimators=10),
            "nota_threshold": nota_sets.nota_threshold_table(data),
        }
        yield SimpleNamespace(
            data=data,
            best=recalibrate.recalibration_best(tables["recalibration"]),
            found=findings.findings_table(tables),
            **tables,
        )


@pytest.fixture
def cfg(tmp_root):
    return _write_study()


def _rewrite(cfg, ranker: str, corpus: str, sampler: str, change) -> None:
    """Replace the test Predictions of ``ranker`` on ``corpus`` x ``sampler`` by ``change(labels, samples)``."""
    cond = next(c for c in eval_conditions(cfg) if (c.corpus, c.sampler, c.split) == (corpus, sampler, "test"))
    path = predictions_path(cfg, ranker, "chitchat", cond, 0)
    pred = Predictions.load(path)
    labels, samples = change(pred.labels, pred.samples)
    Predictions(qids=pred.qids, labels=labels, probs=samples.mean(axis=0), samples=samples, meta=pred.meta).save(path)


def _raises(build, *parts: str) -> None:
    """``build()`` raises a TableError whose message names every part (table, row, expectation)."""
    with pytest.raises(TableError) as err:
        build()
    assert all(p in str(err.value) for p in parts), (parts, str(err.value))


def _row(table: str, ranker: str, corpus: str, sampler: str, *more: str) -> str:
    return ", ".join(
        [f"{table}: ranker={ranker}", "train_corpus=chitchat", f"corpus={corpus}", f"sampler={sampler}", *more]
    )


# ------------------------------------------------------------------------------ built tables agree with each other
def test_prior_tables_agree_with_each_other(t):
    by_n, ps = t.prior_by_negatives, t.prior_summary
    assert np.allclose(by_n["pi_test"], 1 / (by_n["n_nonrel"] + 1))
    full = by_n[by_n["n_nonrel"] == t.data.k].merge(ps, on=list(CELL), suffixes=("", " all"))
    assert len(full) == len(ps) == len(study_cells(t.data))
    for col in ("ECE raw", "ECE corrected"):  # n = k is every candidate
        assert np.allclose(full[col], full[f"{col} all"])


def test_recalibration_agrees_with_the_prior_summary(t):
    recal, ps = t.recalibration, t.prior_summary
    stochastic = set(t.data.stochastic_rankers())
    assert set(recal["fitted_on"]) == {fitdata.VALIDATION, fitdata.TEST_HALF}
    assert set(recal.loc[recal["fitted_on"] == fitdata.VALIDATION, "ranker"]) == stochastic
    m = recal.merge(ps, on=list(CELL), suffixes=("", " all"))
    assert len(m) == len(recal)
    valid = m[m["fitted_on"] == fitdata.VALIDATION]
    assert (valid["queries"] == valid["queries all"]).all()  # every test query evaluated
    for method, col in (("none", "ECE raw"), ("prior", "ECE corrected")):
        rows = valid[valid["method"] == method]
        assert len(rows) and np.allclose(rows["ECE"], rows[col])
    half = m[m["fitted_on"] == fitdata.TEST_HALF]
    own = half["corpus"] == half["train_corpus"]  # the fitting half is dropped from the training corpus's conditions
    assert (half.loc[own, "queries"] == Q - Q // 2).all() and (half.loc[~own, "queries"] == Q).all()


def test_every_recalibrator_is_ranked_in_each_setting(t):
    best = t.best
    for _, grp in best.groupby("setting"):
        assert set(grp["method"]) == set(m_recalibrate.METHODS) and grp["rank"].min() == 1
        assert grp["cells won"].sum() == grp["cells"].iloc[0]


def test_listwise_agrees_with_the_selective_table_and_the_prior_summary(t):
    lw = t.listwise
    top = t.selective[t.selective["confidence"] == "top prob"].merge(lw, on=list(CELL))
    assert len(top) == len(lw) and np.allclose(top["risk"], 1 - top["R@1"])  # the same top answer, the same loss
    raw = lw.merge(t.prior_summary[[*CELL, "ECE raw"]], on=list(CELL))
    assert len(raw) == len(lw) and np.allclose(raw["pointwise ECE"], raw["ECE raw"])


@pytest.mark.parametrize(
    "table, column, keys", [("selective", "AURC", "confidence"), ("shift_detection", "AUROC", "signal")]
)
def test_a_percentile_interval_holds_its_estimate_in_most_rows(t, table, column, keys):
    """Not in every row (a skewed statistic), but in more than 90% of them."""
    tab = getattr(t, table)
    inside = (tab[f"{column} lo"] <= tab[column] + 1e-9) & (tab[column] <= tab[f"{column} hi"] + 1e-9)
    assert inside.mean() > 0.9, tab.loc[~inside, [*CELL, keys, column, f"{column} lo", f"{column} hi"]]


def test_shift_pairs_exactly_the_conditions_of_the_training_corpus(t):
    shift = t.shift_detection
    assert shift["paired"].eq(shift["corpus"] == shift["train_corpus"]).all()
    assert shift["paired"].any() and not shift["paired"].all()  # both kinds occur


def test_the_conformal_tables_have_rows_with_a_coverage(t):
    for table in (t.conformal, t.nota_conformal):
        ok = table[table["note"] == ""]
        assert len(ok) and ok["coverage"].notna().all()
    assert t.conformal["note"].str.contains("too few").sum() == 0  # 12 fitting queries are enough for alpha = 0.1


def test_findings_cover_every_section_and_each_ranker(t):
    found = t.found
    assert list(dict.fromkeys(found["section"])) == list(findings.SECTIONS)
    prior_rows = found[found["section"] == findings.PRIOR_SHIFT]
    assert set(t.data.rankers) <= set(prior_rows["ranker"])  # one prior-shift finding per ranker (one training corpus)


# ------------------------------------------------------------------------------ a corrupted input is named
def test_a_condition_with_fewer_negatives_is_named(cfg):
    def drop_a_negative(labels, samples):
        keep = np.ones(labels.shape, dtype=bool)
        keep[np.arange(len(labels)), np.argmin(labels, axis=1)] = False  # the first non-relevant candidate
        return labels[keep].reshape(len(labels), -1), samples[:, keep].reshape(samples.shape[0], len(labels), -1)

    _rewrite(cfg, "bert", "chatterbot", "bm25", drop_a_negative)
    data = st.load_study(cfg)
    _raises(
        lambda: prior.prior_ece_by_negatives(data, ["bert"], n_resamples=R),
        "prior ECE by negatives: 53 rows, expected 54 (6 cells x n = 1..9)",
        "prior ECE by negatives: 0 rows for ranker=bert, train_corpus=chitchat, corpus=chatterbot, sampler=bm25, "
        "n_nonrel=9, expected 1",
    )


def test_samples_that_are_not_the_rankers_are_named(cfg):
    _rewrite(cfg, "bert", "chatterbot", "bm25", lambda y, s: (y, np.concatenate([s, s])))  # S = 2 for S = 1
    _rewrite(cfg, "mc_dropout", "chitchat", "bm25", lambda y, s: (y, s[:1]))  # S = 1 in distribution for S = 3
    data = st.load_study(cfg)
    _raises(
        lambda: selective.selective_table(data, ["bert"], n_resamples=R),
        "selective: 1 unexpected row for ranker=bert, train_corpus=chitchat, corpus=chatterbot, sampler=bm25, "
        "confidence=-top var, expected none",
    )
    _raises(
        lambda: signals.performance_prediction(data, ["bert"]),
        "performance prediction: 1 unexpected row for ranker=bert",
        "sampler=bm25, signal=mean var, expected none",
    )
    _raises(
        lambda: selective.selective_table(data, ["mc_dropout"], n_resamples=R),
        "selective: 0 rows for ranker=mc_dropout, train_corpus=chitchat, corpus=chitchat, sampler=bm25, "
        "confidence=-top var, expected 1",
    )
    # the in-distribution queries of mc_dropout have no variance: no variance signal to flag any shift with
    _raises(
        lambda: signals.shift_detection(data, ["mc_dropout"], n_resamples=R),
        "shift detection: 0 rows for ranker=mc_dropout, train_corpus=chitchat, corpus=chitchat, "
        "sampler=random, signal=mean var, expected 1",
    )


def test_prior_tables_name_a_wrong_number(cfg, monkeypatch):
    data = st.load_study(cfg)
    correct = m_prior.correct_predictions
    monkeypatch.setattr(prior, "correct_predictions", lambda pred, pi_train, pi_test=None: correct(pred, pi_train, 0.1))
    _raises(
        lambda: prior.prior_ece_by_negatives(data, ["bert"], n_resamples=R),
        _row(
            "prior ECE by negatives",
            "bert",
            "chitchat",
            "random",
            "n_nonrel=1: expected ECE corrected = ECE raw where pi_test = pi_train (nothing to correct)",
        ),
    )
    monkeypatch.setattr(prior, "correct_predictions", correct)
    monkeypatch.setattr(prior, "ece", lambda probs, labels: 1.5)
    _raises(
        lambda: prior.prior_ece_by_negatives(data, ["bert"], n_resamples=R),
        _row(
            "prior ECE by negatives",
            "bert",
            "chitchat",
            "random",
            "n_nonrel=1: expected ECE raw in [0, 1], found ECE raw 1.5",
        ),
    )
    compare = prior.compare
    monkeypatch.setattr(prior, "compare", lambda *a, **kw: dataclasses.replace(compare(*a, **kw), pvalue=1.5))
    _raises(
        lambda: prior.prior_summary(data, ["ensemble"], n_resamples=R),
        _row("prior summary", "ensemble", "chitchat", "random") + ": expected pvalue in [0, 1], found pvalue 1.5",
    )


def test_recalibration_names_a_wrong_number_and_a_cell_given_twice(cfg, monkeypatch, t):
    data = st.load_study(cfg)
    monkeypatch.setattr(recalibrate, "ece", lambda probs, labels: float("nan"))
    _raises(
        lambda: recalibrate.recalibration_table(data, ["bert"], n_resamples=R),
        _row("recalibration", "bert", "chitchat", "random", "method=none: expected ECE in [0, 1], found ECE nan"),
    )
    recal = t.recalibration
    cell = (recal["ranker"] == "bert") & (recal["corpus"] == "chatterbot") & (recal["sampler"] == "random")
    winner = recal[cell].sort_values("ECE").iloc[[0]]
    _raises(
        lambda: recalibrate.recalibration_best(pd.concat([recal, winner], ignore_index=True)),
        "best recalibrator: setting=under shift: expected the cells won to add up to the 20 cells "
        "(one winner per cell), found 21",
    )


def test_selective_names_a_wrong_number(cfg, monkeypatch):
    data = st.load_study(cfg)
    scores, spans = m_selective.selective_scores, m_selective.selective_intervals
    monkeypatch.setattr(selective, "selective_intervals", lambda *a, **kw: spans(*a, **kw)[::-1])
    _raises(
        lambda: selective.selective_table(data, ["mc_dropout"], n_resamples=R),
        _row("selective", "mc_dropout", "chitchat", "random", "confidence=top prob: expected AURC lo <= AURC hi"),
    )
    monkeypatch.setattr(selective, "selective_intervals", spans)
    monkeypatch.setattr(
        selective, "selective_scores", lambda *a, **kw: dataclasses.replace(scores(*a, **kw), eaurc=-0.01)
    )
    _raises(
        lambda: selective.selective_table(data, ["mc_dropout"], n_resamples=R),
        _row("selective", "mc_dropout", "chitchat", "random", "confidence=top prob: expected E-AURC >= 0"),
        "found E-AURC -0.01",
    )
    monkeypatch.setattr(
        selective,
        "selective_scores",
        lambda conf, loss, **kw: dataclasses.replace(scores(conf, loss, **kw), risk=float(conf[0])),
    )
    _raises(
        lambda: selective.selective_table(data, ["mc_dropout"], n_resamples=R),
        _row("selective", "mc_dropout", "chitchat", "random") + ": expected one risk for every confidence",
    )


def test_conformal_names_a_wrong_row(tmp_root, monkeypatch):
    data = st.load_study(_write_study(q=12))  # a deterministic ranker is fitted on 6 queries: too few for alpha 0.1
    quantile = m_conformal.conformal_quantile
    monkeypatch.setattr(conformal, "conformal_quantile", lambda s, alpha: float(np.quantile(s, 1 - alpha)))
    _raises(
        lambda: conformal.conformal_table(data, ["bert"]),
        _row(
            "conformal",
            "bert",
            "chitchat",
            "random",
            "score=LAC, alpha=0.1: expected n_cal >= "
            "min_calibration_queries(alpha) (ceil(1 / alpha - 1)), found n_cal 6, alpha 0.1",
        ),
    )
    monkeypatch.setattr(conformal, "conformal_quantile", lambda s, alpha: quantile(s, 0.3 - alpha))  # alphas swapped
    _raises(
        lambda: conformal.conformal_table(data, ["mc_dropout"]),
        _row(
            "conformal",
            "mc_dropout",
            "chatterbot",
            "random",
            "score=LAC: expected coverage at alpha 0.1 >= at alpha 0.2, found 0.75 vs 1",
        ),
    )
    monkeypatch.setattr(conformal, "conformal_quantile", quantile)
    row = conformal._coverage_row
    monkeypatch.setattr(conformal, "_coverage_row", lambda *a: {**row(*a), "coverage": float("nan")})
    _raises(
        lambda: conformal.conformal_table(data, ["mc_dropout"]),
        _row(
            "conformal",
            "mc_dropout",
            "chitchat",
            "random",
            "score=LAC, alpha=0.1: expected a note saying why "
            "there is no coverage (too few calibration queries), found note ''",
        ),
    )


def test_signals_name_a_wrong_row(cfg, monkeypatch):
    data = st.load_study(cfg)
    home = data.condition("chitchat", "random")  # not the training sampler (bm25): its condition is in distribution
    monkeypatch.setattr(signals, "default_condition", lambda study, tc: home)
    _raises(
        lambda: signals.shift_detection(data, ["bert"], n_resamples=R),
        _row(
            "shift detection",
            "bert",
            "chitchat",
            "bm25",
            "signal=1 - max prob: expected a shifted condition (not 'in distribution'), found shift 'in distribution'",
        ),
    )
    monkeypatch.undo()
    monkeypatch.setattr(signals, "roc_auc_score", lambda y, x: 1.5)
    _raises(
        lambda: signals.shift_detection(data, ["bert"], n_resamples=R),
        _row(
            "shift detection", "bert", "chitchat", "random", "signal=entropy: expected AUROC in [0, 1], found AUROC 1.5"
        ),
    )
    monkeypatch.setattr(signals.stats, "kendalltau", lambda x, y: SimpleNamespace(statistic=1.5, pvalue=0.5))
    _raises(
        lambda: signals.performance_prediction(data, ["mc_dropout"]),
        _row(
            "performance prediction",
            "mc_dropout",
            "chitchat",
            "random",
            "signal=1 - max prob: expected tau RR in [-1, 1] or NaN, found tau RR 1.5",
        ),
    )


def test_listwise_names_a_confidence_below_one_in_k(cfg, monkeypatch):
    data = st.load_study(cfg)
    spread = m_listwise.candidate_distribution
    monkeypatch.setattr(m_listwise, "candidate_distribution", lambda probs, mask=None: spread(probs, mask) / 2)
    _raises(
        lambda: listwise.listwise_calibration(data, ["temperature"], n_resamples=R),
        _row("listwise", "temperature", "chitchat", "random") + ": expected mean confidence in [0.1, 1], "
        "found mean confidence 0.05",
    )


def test_nota_tables_name_a_wrong_row(cfg, monkeypatch):
    data = st.load_study(cfg)
    empty = nota_sets.empty_set_nota
    monkeypatch.setattr(nota_sets, "empty_set_nota", lambda *a: (empty(*a)[0], np.ones(len(a[0]), dtype=bool)))
    _raises(
        lambda: nota_sets.nota_conformal_table(data, ["ensemble"], forest_rankers=[]),
        _row(
            "NOTA conformal",
            "ensemble",
            "chitchat",
            "random",
            "view=pointwise, alpha=0.1: expected false NOTA <= 1 - coverage (an empty set misses the true response)",
        ),
    )
    ltt = nota_sets.ltt_threshold
    monkeypatch.setattr(
        nota_sets, "ltt_threshold", lambda *a, **kw: dataclasses.replace(ltt(*a, **kw), certified=False)
    )
    _raises(
        lambda: nota_sets.nota_threshold_table(data, ["ensemble"]),
        _row(
            "NOTA threshold",
            "ensemble",
            "chitchat",
            "random",
            "risk=false NOTA: expected a certified false-NOTA threshold, found certified False",
        ),
    )
    monkeypatch.setattr(nota_sets, "ltt_threshold", lambda *a, **kw: dataclasses.replace(ltt(*a, **kw), ucb=0.99))
    _raises(
        lambda: nota_sets.nota_threshold_table(data, ["ensemble"]),
        _row(
            "NOTA threshold",
            "ensemble",
            "chitchat",
            "random",
            "risk=false NOTA: expected cal UCB <= target (certified on calibration)",
        ),
    )


def test_findings_name_a_section_without_a_finding_and_a_finding_about_no_cell(t, monkeypatch):
    tables = {k: getattr(t, k) for k in findings.REQUIRED + findings.OPTIONAL}
    conf = tables["conformal"]
    _raises(
        lambda: findings.findings_table({**tables, "conformal": conf[conf["shift"] != IN]}),
        "findings: section=4 conformal shortlists, ranker=all: expected cells >= 1, found cells 0",
    )
    monkeypatch.setattr(findings, "_qpp", lambda table: [])
    _raises(
        lambda: findings.findings_table(tables),
        "findings: expected a finding of section '6 performance prediction' (its table 'performance_prediction' "
        "has 72 rows), found none",
    )
    with pytest.raises(KeyError, match="unknown \\['listwise_08'\\]"):
        findings.findings_table({**tables, "listwise_08": tables["listwise"]})


def test_fit_data_names_a_rule_it_does_not_follow(t):
    fd = fitdata.fit_data(t.data, "bert", "chitchat")
    assert fd.fitted_on == fitdata.TEST_HALF and fd.exclude == frozenset(fd.pred.qids.tolist())
    with pytest.raises(ValueError, match="fitted_on must be one of"):
        fitdata.FitData(fd.pred, fd.exclude, "test")
    with pytest.raises(ValueError, match="expected to exclude nothing from evaluation, found 12 excluded"):
        fitdata.FitData(fd.pred, fd.exclude, fitdata.VALIDATION)
    with pytest.raises(ValueError, match="expected to exclude exactly the fitting queries"):
        fitdata.FitData(fd.pred, frozenset(), fitdata.TEST_HALF)
