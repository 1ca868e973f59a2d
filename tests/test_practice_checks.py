"""Tests of calibrank.practice.checks (notebook 08): the tables of calibrank.practice on a synthetic study pass,
and every defect each check looks for is reported with its table and row."""

from __future__ import annotations

import math
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from calibrank import study as st
from calibrank.experiment import eval_conditions, predictions_path, ranker_conditions
from calibrank.practice import (checks, conformal, findings, listwise, nota_sets, prior, recalibrate, selective,
                                signals)
from calibrank.predictions import Predictions
from conftest import project_root
from test_study import RANKERS, _labels, _samples, synthetic_config

Q, K = 24, 10  # 24 test queries: the half a deterministic ranker is fitted on (12) is enough for alpha = 0.1
R = 60  # bootstrap resamples: enough for intervals, fast


def _write_study(root):
    """Predictions for every ranker x condition of the synthetic profile, the queries of one corpus and split
    sharing their ids across samplers (as real query sets do: the shift table pairs them)."""
    cfg = synthetic_config()
    for ci, cond in enumerate(eval_conditions(cfg)):
        labels = _labels(Q, K, 100 + ci)
        qids = np.array([f"{cond.corpus}-{cond.split}-q{i}" for i in range(Q)])
        for ranker in RANKERS:
            if cond in ranker_conditions(cfg, ranker):
                samples = _samples(ranker, labels, 1000 * ci, 0.0)
                Predictions(qids=qids, labels=labels, probs=samples.mean(axis=0), samples=samples,
                            meta={"ranker": ranker, "seed": 0, "condition": cond.name}
                            ).save(predictions_path(cfg, ranker, "chitchat", cond, 0))
    return cfg


@pytest.fixture(scope="module")
def t(tmp_path_factory):
    """Every table of notebook 08 on the synthetic study (built once; tests change copies)."""
    with project_root(tmp_path_factory.mktemp("study")) as root:
        data = st.load_study(_write_study(root))
        by_n = prior.prior_ece_by_negatives(data, n_resamples=R)
        prior_sum = prior.prior_summary(data, n_resamples=R)
        recal = recalibrate.recalibration_table(data, n_resamples=R)
        sel = selective.selective_table(data, n_resamples=R)
        conf = conformal.conformal_table(data)
        shift = signals.shift_detection(data, n_resamples=R)
        qpp = signals.performance_prediction(data)
        lw = listwise.listwise_calibration(data, n_resamples=R)
        nota_conf = nota_sets.nota_conformal_table(data, n_estimators=10)
        nota_thr = nota_sets.nota_threshold_table(data)
        found = findings.findings_table({"prior_summary": prior_sum, "prior_by_negatives": by_n, "recalibration": recal,
                                         "selective": sel, "conformal": conf, "shift_detection": shift,
                                         "performance_prediction": qpp, "listwise": lw, "nota_conformal": nota_conf,
                                         "nota_threshold": nota_thr})
        yield SimpleNamespace(data=data, by_n=by_n, prior_sum=prior_sum, recal=recal,
                              best=recalibrate.recalibration_best(recal), sel=sel, conf=conf, shift=shift, qpp=qpp,
                              lw=lw, nota_conf=nota_conf, nota_thr=nota_thr, found=found)


def _has(problems: list[str], *parts: str) -> None:
    """Some problem names every part (table, row, expectation)."""
    assert any(all(p in msg for p in parts) for msg in problems), (parts, problems)


def _dropped(problems: list[str], table: str, where: str, n: int) -> None:
    """A table of ``n`` rows with the row ``where`` dropped: both the count and the missing row are named."""
    _has(problems, f"{table}: {n - 1} rows, expected {n}")
    _has(problems, f"{table}: 0 rows for {where}, expected 1")


def _set(table: pd.DataFrame, mask, column: str, value) -> pd.DataFrame:
    """A copy with ``column`` set to ``value`` on the rows of ``mask`` (every row for ``None``)."""
    out = table.copy()
    rows = np.ones(len(out), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    out.loc[rows, column] = value
    return out


def _first(table: pd.DataFrame, **where) -> np.ndarray:
    """A mask of the first row matching ``where`` (column = value)."""
    m = np.ones(len(table), dtype=bool)
    for col, value in where.items():
        m &= (table[col] == value).to_numpy()
    assert m.any(), where
    out = np.zeros(len(table), dtype=bool)
    out[np.flatnonzero(m)[0]] = True
    return out


CHECKS = {
    "prior_by_negatives": lambda t: checks.prior_by_negatives_problems(t.data, t.by_n),
    "prior_summary": lambda t: checks.prior_summary_problems(t.data, t.prior_sum, t.by_n),
    "recalibration": lambda t: checks.recalibration_problems(t.data, t.recal, t.prior_sum),
    "recalibration_best": lambda t: checks.recalibration_best_problems(t.best),
    "selective": lambda t: checks.selective_problems(t.data, t.sel),
    "selective_interval": lambda t: checks.selective_interval_problems(t.sel),
    "conformal": lambda t: checks.conformal_problems(t.data, t.conf),
    "shift_detection": lambda t: checks.shift_detection_problems(t.data, t.shift),
    "shift_interval": lambda t: checks.shift_interval_problems(t.shift),
    "performance_prediction": lambda t: checks.performance_prediction_problems(t.data, t.qpp),
    "listwise": lambda t: checks.listwise_problems(t.data, t.lw, t.sel, t.prior_sum),
    "nota_conformal": lambda t: checks.nota_conformal_problems(t.data, t.nota_conf),
    "nota_threshold": lambda t: checks.nota_threshold_problems(t.data, t.nota_thr),
    "findings": lambda t: checks.findings_problems(t.data, t.found),
}


@pytest.mark.parametrize("name", list(CHECKS))
def test_the_tables_of_a_synthetic_study_have_no_problems(t, name):
    assert CHECKS[name](t) == []


# ------------------------------------------------------------------------------ 1 prior shift
def test_prior_by_negatives_problems(t):
    d, by_n = t.data, t.by_n
    f = checks.prior_by_negatives_problems
    row = "ranker=bert, train_corpus=chitchat, corpus=chitchat, sampler=random, n_nonrel=3"
    _has(f(d, by_n[~_first(by_n, ranker="bert", corpus="chitchat", sampler="random", n_nonrel=3)]),
         "prior ECE by negatives", f"0 rows for {row}, expected 1")
    _has(f(d, by_n.iloc[1:]), f"{len(by_n) - 1} rows, expected {len(by_n)}")
    bad = _first(by_n, ranker="bert", corpus="chitchat", sampler="random", n_nonrel=3)
    _has(f(d, _set(by_n, bad, "ECE raw", 1.5)), row, "expected ECE raw in [0, 1], found ECE raw 1.5")
    _has(f(d, _set(by_n, bad, "ECE corrected", np.nan)), row, "expected ECE corrected in [0, 1]",
         "found ECE corrected nan")
    _has(f(d, _set(by_n, bad, "pi_test", 0.5)), row, "pi_test = 1 / (n_nonrel + 1)")
    _has(f(d, _set(by_n, bad, "ECE raw lo", 0.99)), row, "ECE raw lo <= ECE raw hi")
    one = _first(by_n, ranker="mc_dropout", corpus="chatterbot", sampler="bm25", n_nonrel=1)  # pi_test = pi_train = 1/2
    assert np.isclose(by_n.loc[one, "pi_test"], by_n.loc[one, "pi_train"]).all()
    _has(f(d, _set(by_n, one, "ECE corrected", float(by_n.loc[one, "ECE raw"].iloc[0]) + 0.05)),
         "ranker=mc_dropout, train_corpus=chitchat, corpus=chatterbot, sampler=bm25, n_nonrel=1",
         "ECE corrected = ECE raw where pi_test = pi_train")
    _has(f(d, by_n.drop(columns="pi_train")), "no column 'pi_train'")


def test_prior_summary_problems(t):
    d, ps, by_n = t.data, t.prior_sum, t.by_n
    f = checks.prior_summary_problems
    cell = _first(ps, ranker="ensemble", corpus="chatterbot", sampler="embedding")
    row = "ranker=ensemble, train_corpus=chitchat, corpus=chatterbot, sampler=embedding"
    _dropped(f(d, ps[~cell], by_n), "prior summary", row, len(ps))
    _has(f(d, _set(ps, cell, "removed", 0.123), by_n), row, "removed = 1 - ECE corrected / ECE raw")
    _has(f(d, _set(ps, cell, "pvalue", 1.2), by_n), row, "expected pvalue in [0, 1], found pvalue 1.2")
    _has(f(d, _set(ps, cell, "removed lo", 2.0), by_n), row, "removed lo <= removed hi")
    at_k = _first(by_n, ranker="ensemble", corpus="chatterbot", sampler="embedding", n_nonrel=d.k)
    moved = _set(by_n, at_k, "ECE raw", float(by_n.loc[at_k, "ECE raw"].iloc[0]) + 0.01)
    _has(f(d, ps, moved), row, "ECE raw on all candidates = prior ECE by negatives' at n = 9")
    moved = _set(by_n, at_k, "ECE corrected", float(by_n.loc[at_k, "ECE corrected"].iloc[0]) + 0.01)
    _has(f(d, ps, moved), row, "ECE corrected on all candidates")


# ------------------------------------------------------------------------------ 2 recalibration
def test_recalibration_problems(t):
    d, recal, ps = t.data, t.recal, t.prior_sum
    f = checks.recalibration_problems
    row = "ranker=mc_dropout, train_corpus=chitchat, corpus=chatterbot, sampler=random"
    platt = _first(recal, ranker="mc_dropout", corpus="chatterbot", sampler="random", method="platt")
    _dropped(f(d, recal[~platt], ps), "recalibration", f"{row}, method=platt", len(recal))
    _has(f(d, _set(recal, platt, "ECE", -0.1), ps), f"{row}, method=platt", "expected ECE in [0, 1]")
    _has(f(d, _set(recal, platt, "fitted_on", "test"), ps), f"{row}, method=platt", "fitted_on one of",
         "found fitted_on 'test'")
    _has(f(d, _set(recal, platt, "queries", Q - 1), ps), f"{row}, method=platt", "every test query evaluated")
    for method, col in (("none", "ECE raw"), ("prior", "ECE corrected")):
        m = _first(recal, ranker="mc_dropout", corpus="chatterbot", sampler="random", method=method)
        _has(f(d, _set(recal, m, "ECE", float(recal.loc[m, "ECE"].iloc[0]) + 0.01), ps), f"{row}, method={method}",
             f"ECE = the prior summary's {col}")


def test_recalibration_best_problems(t):
    best = t.best
    f = checks.recalibration_best_problems
    top = _first(best, setting="under shift", rank=1)
    _has(f(_set(best, top, "cells won", int(best.loc[top, "cells won"].iloc[0]) + 1)),
         "best recalibrator: under shift: expected the cells won to add up")
    _has(f(best[best["method"] != "beta"]), "expected the methods", "'beta'")
    _has(f(_set(best, best["setting"] == "in distribution", "rank", 2)),
         "in distribution: expected a method of rank 1, found the best rank 2")


# ------------------------------------------------------------------------------ 3 answer or abstain
def test_selective_problems(t):
    d, sel = t.data, t.sel
    f = checks.selective_problems
    row = _first(sel, ranker="ensemble", corpus="chitchat", sampler="embedding", confidence="margin")
    where = "ranker=ensemble, train_corpus=chitchat, corpus=chitchat, sampler=embedding, confidence=margin"
    _has(f(d, sel[~row]), "selective", f"0 rows for {where}")
    var = sel["confidence"] == "-top var"
    _has(f(d, sel[~(var & (sel["ranker"] == "mc_dropout")).to_numpy()]), "'-top var' rows exactly for the rankers",
         "found them for ['ensemble']")
    extra = sel[(sel["confidence"] == "margin") & (sel["ranker"] == "bert")].assign(confidence="-top var")
    _has(f(d, pd.concat([sel, extra], ignore_index=True)), "found them for ['bert', 'ensemble', 'mc_dropout']")
    _has(f(d, _set(sel, row, "E-AURC", -0.01)), where, "expected E-AURC >= 0")
    _has(f(d, _set(sel, row, "AUGRC", float(sel.loc[row, "AURC"].iloc[0]) + 0.01)), where, "AUGRC <= AURC")
    _has(f(d, _set(sel, row, "AURC", 1.2)), where, "AURC in [0, 1]")
    _has(f(d, _set(sel, row, "risk@80%", np.nan)), where, "expected risk@80% in [0, 1], found risk@80% nan")
    _has(f(d, _set(sel, row, "risk", 0.99)),
         "ranker=ensemble, train_corpus=chitchat, corpus=chitchat, sampler=embedding: expected one risk",
         "found 2 values")


def test_selective_interval_problems(t):
    sel = t.sel
    f = checks.selective_interval_problems
    row = _first(sel, ranker="bert", corpus="chatterbot", sampler="random", confidence="top prob")
    where = "ranker=bert, train_corpus=chitchat, corpus=chatterbot, sampler=random, confidence=top prob"
    _has(f(_set(sel, row, "AUGRC lo", 5.0)), "selective intervals", where, "AUGRC lo and AUGRC hi present, lo <= hi")
    _has(f(_set(sel, row, "risk@80% hi", np.nan)), where, "risk@80% lo and risk@80% hi present")
    assert f(_set(sel, row, "AURC", 2.0)) == []  # one point outside its interval: allowed
    outside = np.arange(len(sel)) % 2 == 0
    _has(f(_set(sel, outside, "AURC", 2.0)), "selective intervals: expected AURC inside its 95% interval in more "
         "than 90% of the rows")


# ------------------------------------------------------------------------------ 4 conformal
def test_conformal_problems(t):
    d, conf = t.data, t.conf
    f = checks.conformal_problems
    row = _first(conf, ranker="temperature", corpus="chitchat", sampler="bm25", score="APS", alpha=0.1)
    where = "ranker=temperature, train_corpus=chitchat, corpus=chitchat, sampler=bm25, score=APS, alpha=0.1"
    _dropped(f(d, conf[~row]), "conformal", where, len(conf))
    _has(f(d, _set(conf, row, "coverage", np.nan)), where, "a note saying why there is no coverage", "found note ''")
    _has(f(d, _set(conf, row, "coverage hi", 0.0)), where, "coverage lo <= coverage <= coverage hi")
    _has(f(d, _set(conf, row, "mean set size", K + 1)), where, f"expected mean set size in [0, {K}]")
    _has(f(d, _set(conf, row, "n_cal", 8)), where, "n_cal >= min_calibration_queries(alpha)", "found n_cal 8")
    assert f(d, _set(conf, conf["alpha"] == 0.1, "n_cal", 9)) == []  # 9 = 1 / 0.1 - 1: enough
    wide = _first(conf, ranker="temperature", corpus="chitchat", sampler="bm25", score="APS", alpha=0.2)
    low = float(conf.loc[wide, "coverage"].iloc[0]) - 0.01
    _has(f(d, _set(_set(conf, row, "coverage", low), row, "coverage lo", 0.0)),
         "ranker=temperature, train_corpus=chitchat, corpus=chitchat, sampler=bm25, score=APS: "
         "expected coverage at alpha 0.1 >= at alpha 0.2")
    _has(f(d, _set(conf, row, "mean set size", float(conf.loc[wide, "mean set size"].iloc[0]) - 0.5)),
         "score=APS: expected mean set size at alpha 0.1 >= at alpha 0.2")
    few = _set(_set(conf, conf["alpha"] == 0.1, "note", "6 calibration queries are too few for alpha=0.1"),
               conf["alpha"] == 0.1, "coverage", np.nan)
    _has(f(d, few), "expected coverage at alpha 0.1 and 0.2 to compare, found none at 0.1")
    _has(f(d, _set(conf, None, "note", "too few")), "expected rows with a coverage, found none")


# ------------------------------------------------------------------------------ 5-6 signals
def test_shift_detection_problems(t):
    d, shift = t.data, t.shift
    f = checks.shift_detection_problems
    row = _first(shift, ranker="bert", corpus="chatterbot", sampler="bm25", signal="entropy")
    where = "ranker=bert, train_corpus=chitchat, corpus=chatterbot, sampler=bm25, signal=entropy"
    _dropped(f(d, shift[~row]), "shift detection", where, len(shift))
    _has(f(d, _set(shift, row, "AUROC", 1.5)), where, "expected AUROC in [0, 1], found AUROC 1.5")
    _has(f(d, _set(shift, row, "shift", "in distribution")), where, "a shifted condition")
    _has(f(d, _set(shift, row, "signal", "top var")), "the variance signals", "found them for ['bert', 'ensemble'")
    _has(f(d, shift[~((shift["ranker"] == "ensemble") & shift["signal"].isin(listwise.VARIANCE_SIGNALS)).to_numpy()]),
         "found them for ['mc_dropout']")


def test_shift_interval_problems(t):
    shift = t.shift
    f = checks.shift_interval_problems
    assert shift["paired"].any() and not shift["paired"].all()  # both kinds occur in the fixture
    row = _first(shift, ranker="mc_dropout", corpus="chitchat", sampler="random", signal="top var")
    _has(f(_set(shift, row, "paired", False)), "shift detection intervals",
         "ranker=mc_dropout, train_corpus=chitchat, corpus=chitchat, sampler=random, signal=top var",
         "exactly when corpus = train_corpus", "found paired False")
    other = _first(shift, ranker="mc_dropout", corpus="chatterbot", sampler="random", signal="top var")
    _has(f(_set(shift, other, "paired", True)),
         "ranker=mc_dropout, train_corpus=chitchat, corpus=chatterbot, sampler=random, signal=top var")
    _has(f(_set(shift, np.arange(len(shift)) % 3 == 0, "AUROC hi", -1.0)), "expected AUROC inside its 95% interval")


def test_performance_prediction_problems(t):
    d, qpp = t.data, t.qpp
    f = checks.performance_prediction_problems
    row = _first(qpp, ranker="ensemble", corpus="chatterbot", sampler="random", signal="entropy")
    where = "ranker=ensemble, train_corpus=chitchat, corpus=chatterbot, sampler=random, signal=entropy"
    assert f(d, _set(qpp, row, "tau RR", np.nan)) == []  # NaN where a signal is constant
    _has(f(d, _set(qpp, row, "tau RR", 1.5)), where, "tau RR in [-1, 1]")
    _has(f(d, _set(qpp, row, "tau R@1", -1.01)), where, "tau R@1 in [-1, 1]")
    _has(f(d, _set(qpp, row, "p R@1", -0.1)), where, "p R@1 in [0, 1]")
    _has(f(d, _set(qpp, row, "p RR", 1.1)), where, "p RR in [0, 1]")
    bert = _first(qpp, ranker="bert", signal="entropy")
    _has(f(d, _set(qpp, bert, "signal", "mean var")), "the variance signals", "found them for ['bert'")


# ------------------------------------------------------------------------------ 7 listwise
def test_listwise_problems(t):
    d, lw, sel, ps = t.data, t.lw, t.sel, t.prior_sum
    f = checks.listwise_problems
    row = _first(lw, ranker="temperature", corpus="chatterbot", sampler="bm25")
    where = "ranker=temperature, train_corpus=chitchat, corpus=chatterbot, sampler=bm25"
    _dropped(f(d, lw[~row], sel, ps), "listwise", where, len(lw))
    _has(f(d, _set(lw, row, "top-label ECE", 1.1), sel, ps), where, "expected top-label ECE in [0, 1]",
         "found top-label ECE 1.1")
    _has(f(d, _set(lw, row, "pointwise ECE", np.nan), sel, ps), where, "expected pointwise ECE in [0, 1]",
         "found pointwise ECE nan")
    _has(f(d, _set(lw, row, "mean confidence", 0.05), sel, ps), where, "expected mean confidence in [0.1, 1]",
         "found mean confidence 0.05")
    top = _first(sel, ranker="temperature", corpus="chatterbot", sampler="bm25", confidence="top prob")
    _has(f(d, lw, _set(sel, top, "risk", 0.5), ps), where, "the selective risk of 'top prob' = 1 - R@1")
    cell = _first(ps, ranker="temperature", corpus="chatterbot", sampler="bm25")
    _has(f(d, lw, sel, _set(ps, cell, "ECE raw", 0.3)), where, "pointwise ECE = the prior summary's ECE raw")
    _has(f(d, lw, sel, ps[~cell]), f"expected a prior summary row for each of its {len(lw)} rows")


# ------------------------------------------------------------------------------ 8 none of the above
def _forest_06(nota_conf: pd.DataFrame) -> pd.DataFrame:
    """Notebook 06's Tables 4-5 as exported, with the E[R] F1 of the NOTA table's forest rows (and another input)."""
    rows = nota_conf.dropna(subset=["F1 forest"]).drop_duplicates(["train_corpus", "corpus", "sampler"])
    e_r = pd.DataFrame({"input": "E[R]", "train_corpus": rows["train_corpus"], "corpus": rows["corpus"],
                        "sampler": rows["sampler"], "f1_mean": rows["F1 forest"]})
    return pd.concat([e_r, e_r.assign(input="E[R] + var", f1_mean=0.123)], ignore_index=True)


def test_nota_conformal_problems(t):
    d, nc = t.data, t.nota_conf
    f = checks.nota_conformal_problems
    means = st.nota_means_ranker(d)
    row = _first(nc, ranker="ensemble", corpus="chitchat", sampler="bm25", view="softmax", alpha=0.2)
    where = "ranker=ensemble, train_corpus=chitchat, corpus=chitchat, sampler=bm25, view=softmax, alpha=0.2"
    _dropped(f(d, nc[~row]), "NOTA conformal", where, len(nc))
    _has(f(d, _set(nc, row, "NOTA queries", 0)), where, "NOTA queries > 0")
    _has(f(d, _set(nc, row, "F1", 1.2)), where, "expected F1 in [0, 1], found F1 1.2")
    _has(f(d, _set(nc, row, "false NOTA", 1.0 - float(nc.loc[row, "coverage"].iloc[0]) + 0.01)), where,
         "false NOTA <= 1 - coverage")
    _has(f(d, _set(nc, row, "F1 forest", 0.5)), where, f"F1 forest only for {means}", "found ranker 'ensemble'")
    _has(f(d, _set(nc, None, "note", "too few")), "expected rows with a coverage, found none")
    forest = _forest_06(nc)
    assert f(d, nc, forest) == []
    e_r = forest.index[forest["input"] == "E[R]"][0]
    shifted = forest.copy()
    shifted.loc[e_r, "f1_mean"] += 0.05
    c = forest.loc[e_r]
    _has(f(d, nc, shifted),
         f"ranker={means}, train_corpus={c['train_corpus']}, corpus={c['corpus']}, sampler={c['sampler']}",
         "F1 forest = notebook 06's E[R] f1_mean")
    _has(f(d, nc, forest.drop(index=e_r)), "notebook 06 F1 nan")
    _has(f(d, nc, forest.drop(columns="f1_mean")), "notebook 06 Tables 4-5: no column 'f1_mean'")


def test_nota_threshold_problems(t):
    d, nt = t.data, t.nota_thr
    f = checks.nota_threshold_problems
    fn = _first(nt, ranker="bert", corpus="chatterbot", sampler="bm25", risk="false NOTA")
    where = "ranker=bert, train_corpus=chitchat, corpus=chatterbot, sampler=bm25, risk=false NOTA"
    _dropped(f(d, nt[~fn]), "NOTA threshold", where, len(nt))
    _has(f(d, _set(nt, nt["risk"] == "wrong answer", "risk", "wrong")), "expected the risks", "'wrong'")
    wa = _first(nt, ranker="bert", corpus="chatterbot", sampler="bm25", risk="wrong answer")
    wa_where = "ranker=bert, train_corpus=chitchat, corpus=chatterbot, sampler=bm25, risk=wrong answer"
    never = _set(_set(_set(nt, wa, "threshold", math.inf), wa, "abstention", 1.0), wa, "achieved risk", np.nan)
    assert f(d, never) == []  # no threshold: always NOTA, no achieved risk, no calibration bound to check
    _has(f(d, _set(never, wa, "abstention", 0.5)), wa_where, "abstention 1 without a threshold")
    _has(f(d, _set(never, wa, "achieved risk", 0.2)), wa_where, "no achieved risk without a threshold")
    _has(f(d, _set(nt, fn, "cal UCB", float(nt.loc[fn, "target"].iloc[0]) + 0.01)), where, "cal UCB <= target")
    _has(f(d, _set(nt, fn, "certified", False)), where, "a certified false-NOTA threshold")
    _has(f(d, _set(nt, fn, "achieved risk", float(nt.loc[fn, "false NOTA"].iloc[0]) + 0.1)), where,
         "achieved risk = false NOTA")
    _has(f(d, _set(nt, fn, "abstention", 1.1)), where, "expected abstention in [0, 1], found abstention 1.1")
    _has(f(d, _set(nt, fn, "F1", np.nan)), where, "expected F1 in [0, 1], found F1 nan")


# ------------------------------------------------------------------------------ findings
def test_findings_problems(t):
    d, found = t.data, t.found
    f = checks.findings_problems
    _has(f(d, found[found["section"] != findings.FLAGGING]), "findings: expected the 8 sections",
         "missing ['5 flagging shift']")
    _has(f(d, _set(found, found["section"] == findings.LISTWISE, "section", "7 listwise")), "unknown ['7 listwise']")
    first = np.arange(len(found)) == 0
    where = f"section={found['section'].iloc[0]}, ranker={found['ranker'].iloc[0]}"
    _has(f(d, _set(found, first, "finding", "ECE is 0.1")), where, "a sentence longer than 20 characters")
    _has(f(d, _set(found, first, "finding", "The prior correction removes much of the ECE")), where,
         "a finding with a number")
    _has(f(d, _set(found, first, "cells", 0)), where, "cells >= 1")
    prior_rows = np.flatnonzero((found["section"] == findings.PRIOR_SHIFT).to_numpy())
    need = len(d.rankers) * len(d.train_corpora)
    _has(f(d, found.drop(index=found.index[prior_rows[need - 1:]])),
         f"expected at least {need} '1 prior shift' findings", f"found {need - 1}")


def test_the_practice_checks_do_not_import_torch():
    code = "import sys, calibrank.practice.checks; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
