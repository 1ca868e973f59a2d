"""The ranking table of a user's run equals trec_eval's counts (through ir_measures and pytrec_eval), query by query.

Runs are graded, tied, ragged: several queries with lists of different lengths, grades -1 to 3,
relevant documents the run did not retrieve, a query whose qrels hold no relevant document, a
query the qrels never mention, and scores drawn from a few values so that many candidates tie.
"""

from __future__ import annotations

import ir_measures
import numpy as np
import pandas as pd
import pytest
from ir_measures import AP, RR, P, R, nDCG

from calibrank.assess.read.score_tables import read_table
from calibrank.assess.read.trec import read_runs
from calibrank.assess.sections.ranking import per_query, ranking_table

KS = (1, 3, 5, 10)


def _ragged_run(seed: int) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """``(run, qrels)`` as ``{qid: {docid: score}}`` and ``{qid: {docid: grade}}``."""
    rng = np.random.default_rng(seed)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for i in range(30):
        q = f"q{i}"
        depth = int(rng.integers(1, 25))
        docs = rng.choice(300, size=depth, replace=False)
        # few distinct scores: ties everywhere; docids of unequal length ('d7' > 'd10' as strings)
        scores = rng.integers(0, 4, size=depth).astype(float) if i % 3 else np.round(rng.normal(size=depth), 1)
        run[q] = {f"d{d}": float(s) for d, s in zip(docs, scores)}
        if i == 29:
            continue  # the qrels never mention this query: trec_eval leaves it out
        judged = rng.random(depth) < 0.7
        grades = rng.choice([-1, 0, 1, 1, 2, 3], size=depth)
        if i == 4:
            grades = rng.choice([-1, 0], size=depth)  # judged, nothing relevant
        qrels[q] = {f"d{d}": int(g) for d, g, j in zip(docs, grades, judged) if j}
        if i != 4:
            for m in range(int(rng.integers(0, 4))):  # relevant, never retrieved, each at its own grade
                qrels[q][f"missing{m}"] = int(rng.integers(1, 4))
            qrels[q][f"neg{i}"] = -2
    qrels["q-not-in-run"] = {"d1": 2}
    return run, qrels


def _write(tmp_path, run, qrels):
    run_path, qrels_path = tmp_path / "ragged.run", tmp_path / "ragged.qrels"
    lines = []
    for q, docs in run.items():
        ranked = sorted(docs.items(), key=lambda kv: -kv[1])
        lines += [f"{q} Q0 {d} {r} {s!r} tag\n" for r, (d, s) in enumerate(ranked, 1)]
    run_path.write_text("".join(lines))
    qrels_path.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    return run_path, qrels_path


def _reference(run, qrels, relevant_at):
    """ir_measures' per-query values, by the table's measure names."""
    measures = {
        **{f"R@{k}": R(rel=relevant_at) @ k for k in KS},
        "P@1": P(rel=relevant_at) @ 1,
        "MRR": RR(rel=relevant_at),
        "nDCG@10": nDCG @ 10,
        "MAP": AP(rel=relevant_at),
    }
    by_measure = {m: name for name, m in measures.items()}
    out: dict[str, dict[str, float]] = {name: {} for name in measures}
    for m in ir_measures.iter_calc(list(measures.values()), qrels, run):
        out[by_measure[m.measure]][m.query_id] = m.value
    return out


def _assert_equal_per_query(scored, run, qrels, relevant_at):
    ref = _reference(run, qrels, relevant_at)
    ours = per_query(scored, KS)
    table = ranking_table(scored, ks=KS, n_resamples=50, seed=0)
    assert table["measure"].tolist() == list(ours) == list(ref)  # every measure the table shows is checked
    has_relevant = {q: any(g >= relevant_at for g in qrels[q].values()) for q in scored.qids}
    assert sorted(scored.qids) == sorted(q for q in run if q in qrels)
    for name, values in ours.items():
        for i, q in enumerate(scored.qids):
            if has_relevant[q]:
                assert values[i] == pytest.approx(ref[name][q], abs=1e-9), (name, q)
            else:
                assert np.isnan(values[i]), (name, q)  # no relevant document: left out of the table
        row = table.set_index("measure").loc[name]
        kept = [ref[name][q] for q in scored.qids if has_relevant[q]]
        assert row["value"] == pytest.approx(np.mean(kept), abs=1e-9), name
        assert row["queries"] == len(kept) and row["left out"] == len(scored.qids) - len(kept)


@pytest.mark.parametrize("relevant_at", [1, 2])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_trec_run_measures_equal_ir_measures_per_query(tmp_path, seed, relevant_at):
    run, qrels = _ragged_run(seed)
    scored = read_runs(*_write(tmp_path, run, qrels), relevant_at=relevant_at)
    assert scored.mask.sum(axis=1).min() < scored.mask.shape[1]  # ragged
    mean = scored.scores[0]
    assert any(len(set(mean[i][scored.mask[i]])) < scored.mask[i].sum() for i in range(len(scored.qids)))  # ties
    assert (scored.n_relevant > scored.labels.sum(axis=1)).any()  # relevant documents the run missed
    _assert_equal_per_query(scored, run, qrels, relevant_at)


@pytest.mark.parametrize("relevant_at", [1, 2])
def test_score_table_measures_equal_ir_measures_per_query(tmp_path, relevant_at):
    run, qrels = _ragged_run(5)
    _, qrels_path = _write(tmp_path, run, qrels)
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    table = tmp_path / "scores.csv"
    pd.DataFrame(rows, columns=["qid", "docid", "score"]).sample(frac=1.0, random_state=0).to_csv(table, index=False)
    scored = read_table(table, qrels=qrels_path, kind="score", relevant_at=relevant_at)
    _assert_equal_per_query(scored, run, qrels, relevant_at)


def test_ties_follow_trec_eval_the_greater_docid_first(tmp_path):
    """Three candidates of one score: trec_eval ranks c, b, a; whichever is relevant, the same order."""
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}, "r": {"d10": 0.5, "d9": 0.5, "d100": 0.5}}
    for q, rel in (("q", "a"), ("q", "b"), ("q", "c"), ("r", "d10"), ("r", "d9"), ("r", "d100")):
        qrels = {q: {rel: 1}}
        scored = read_runs(*_write(tmp_path, {q: run[q]}, qrels))
        expected = {"q": ["c", "b", "a"], "r": ["d9", "d100", "d10"]}[q].index(rel) + 1
        assert per_query(scored)["MRR"][0] == pytest.approx(1 / expected)
        ref = next(ir_measures.iter_calc([RR], qrels, {q: run[q]}))
        assert ref.value == pytest.approx(1 / expected)


def test_ndcg_ideal_holds_unretrieved_documents_at_their_own_grade(tmp_path):
    """A grade-3 document the run missed enters the ideal ranking as 3, not as the lowest relevant grade."""
    run = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    qrels = {"q": {"a": -1, "b": 1, "c": 2, "x": 3, "y": -2, "z": 1}}
    scored = read_runs(*_write(tmp_path, run, qrels))
    dcg = 1 / np.log2(3) + 2 / np.log2(4)
    idcg = 3 + 2 / np.log2(3) + 1 / np.log2(4) + 1 / np.log2(5)
    assert per_query(scored)["nDCG@10"][0] == pytest.approx(dcg / idcg, abs=1e-12)
    assert scored.grades[0].tolist() == [3, 2, 1, 1]
