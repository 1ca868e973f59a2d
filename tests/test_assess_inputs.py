"""Reading a user's runs, qrels and score tables: equal to ir_measures' readers, every bad input named by file and line."""

from __future__ import annotations

import dataclasses
import gzip
import json
import warnings

import ir_measures
import numpy as np
import pandas as pd
import pytest

from benchmarks.__main__ import SECTIONS, main
from benchmarks.assess_io import bench_assess_io, make_synthetic_run
from calibrank.assess.read import rows as inputs
from calibrank.assess.read.load import load
from calibrank.assess.read.rows import Qrels
from calibrank.assess.read.score_tables import from_dataframe, read_table
from calibrank.assess.read.scored import AssessError, ScoreKind
from calibrank.assess.read.trec import read_qrels, read_runs
from conftest import FIXTURES

HERE = FIXTURES / "assess"
RUN, RUN2, QRELS, CSV = HERE / "run.txt", HERE / "run_sample2.txt", HERE / "qrels.txt", HERE / "scores.csv"


def _oracle(run_path, qrels_path):
    """ir_measures' reading: {qid: {docid: score}} and {qid: {docid: grade}}."""
    run, qrels = {}, {}
    for d in ir_measures.read_trec_run(str(run_path)):
        run.setdefault(d.query_id, {})[d.doc_id] = d.score
    for q in ir_measures.read_trec_qrels(str(qrels_path)):
        qrels.setdefault(q.query_id, {})[q.doc_id] = q.relevance
    return run, qrels


def _assert_matches_oracle(scored, run, qrels, relevant_at=1, sample=0):
    kept = [q for q in run if q in qrels]
    if sample == 0:
        assert scored.qids.tolist() == kept  # order of first appearance; queries without qrels left out
    assert sorted(scored.qids.tolist()) == sorted(kept)
    assert scored.meta["dropped_queries"] == len(run) - len(kept)
    for i, q in enumerate(scored.qids.tolist()):
        m = scored.mask[i]
        assert m.sum() == len(run[q]) and m[: m.sum()].all()  # candidates first, then padding
        got = dict(zip(scored.docids[i][m].tolist(), scored.scores[sample, i][m].tolist()))
        assert got == run[q]
        rel = dict(zip(scored.docids[i][m].tolist(), scored.relevance[i][m].tolist()))
        judged = dict(zip(scored.docids[i][m].tolist(), scored.judged[i][m].tolist()))
        for d in run[q]:
            assert rel[d] == qrels[q].get(d, 0) and judged[d] == (d in qrels[q])
        assert scored.n_relevant[i] == sum(g >= relevant_at for g in qrels[q].values())
        assert (scored.docids[i][~m] == "").all() and (scored.scores[:, i][:, ~m] == 0).all()


# --------------------------------------------------------------------------- TREC runs and qrels


def test_read_qrels_equals_ir_measures():
    qrels = read_qrels(QRELS)
    expected = [(q.query_id, q.doc_id, q.relevance) for q in ir_measures.read_trec_qrels(str(QRELS))]
    assert list(zip(qrels.qids.tolist(), qrels.docids.tolist(), qrels.relevance.tolist())) == expected
    assert qrels.to_dict()["q1"] == {"d1": 2, "d3": 0, "d6": 1}


@pytest.mark.parametrize("relevant_at", [1, 2])
def test_read_runs_equals_ir_measures(relevant_at):
    """Mixed tabs and spaces, runs of blanks, a blank line, scientific notation, ragged lists, graded qrels."""
    scored = read_runs(RUN, QRELS, relevant_at=relevant_at)
    run, qrels = _oracle(RUN, QRELS)
    _assert_matches_oracle(scored, run, qrels, relevant_at)
    assert scored.kind is ScoreKind.score and scored.n_samples == 1
    assert scored.meta["dropped_qids"] == ["q9"] and scored.meta["qrels_queries_not_in_run"] == 1  # q4
    assert scored.scores.shape == (1, 3, 4) and scored.mask.sum(axis=1).tolist() == [4, 2, 3]
    # q3 judges only a non-relevant candidate: kept, with no relevant candidate (none of the above)
    assert scored.answerable.tolist() == [True, relevant_at == 1, False]
    assert scored.labels[0].tolist() == [1, 0, 0, 0]  # d1 has grade 2


def test_samples_are_aligned_by_docid():
    scored = read_runs([RUN, RUN2], QRELS)
    assert scored.n_samples == 2
    run1, qrels = _oracle(RUN, QRELS)
    run2, _ = _oracle(RUN2, QRELS)
    _assert_matches_oracle(scored, run1, qrels, sample=0)
    _assert_matches_oracle(scored, run2, qrels, sample=1)  # other order in the file, same slots here
    assert scored.meta["files"] == [str(RUN), str(RUN2)]


def test_samples_with_different_pairs_name_both_files_and_a_pair(tmp_path):
    other = tmp_path / "other.run"
    other.write_text(RUN2.read_text().replace("q3 Q0 d7 3", "q3 Q0 d70 3"))
    with pytest.raises(
        AssessError, match=r"run\.txt and .*other\.run are samples.*\(qid 'q3', docid 'd7'\) is in .*run\.txt, line 8"
    ):
        read_runs([RUN, other], QRELS)
    shorter = tmp_path / "shorter.run"
    shorter.write_text("".join(RUN2.read_text().splitlines(keepends=True)[:-1]))
    with pytest.raises(
        AssessError, match=r"\(qid 'q9', docid 'd1'\) is in .*run\.txt, line 11 but not in .*shorter\.run"
    ):
        read_runs([RUN, shorter], QRELS)


def test_pairs_match_on_the_whole_strings(tmp_path):
    """Docids that share long prefixes, the same docid in every query, a qid that is another's prefix."""
    stem = "x" * 40
    run_lines, qrels_lines = [], []
    for q in ("q", "q1", "q10"):
        for j, tail in enumerate(("a", "b", "ab", "ba", "")):
            run_lines.append(f"{q} Q0 {stem}{tail} {j + 1} {5 - j} t\n")
        run_lines.append(f"{q} Q0 shared 9 0.5 t\n")
        qrels_lines += [f"{q} 0 {stem}ab 2\n", f"{q} 0 shared {len(q)}\n", f"{q} 0 {stem}abc 1\n"]
    run, qrels = _write(tmp_path, "p.run", "".join(run_lines)), _write(tmp_path, "p.qrels", "".join(qrels_lines))
    scored = read_runs(run, qrels)
    _assert_matches_oracle(scored, *_oracle(run, qrels))
    assert scored.relevance[:, -1].tolist() == [1, 2, 3]


def test_first_duplicate_is_the_first_repeat_in_row_order():
    q = np.array([0, 1, 0, 1, 0, 1])
    d = np.array(["a", "b", "c", "c", "a", "b"])
    assert inputs.first_duplicate(q, d) == (0, 4)
    assert inputs.first_duplicate(q[:4], d[:4]) is None
    assert inputs.first_duplicate(np.array([2, 2, 1, 1, 2]), np.array(["z", "y", "y", "y", "z"])) == (2, 3)


def test_crlf_lines_read_the_same(tmp_path):
    crlf = tmp_path / "crlf.run"
    crlf.write_bytes(RUN.read_bytes().replace(b"\n", b"\r\n"))
    _assert_same(read_runs(crlf, QRELS), read_runs(RUN, QRELS))


def test_gzip_and_qrels_object(tmp_path):
    gz = tmp_path / "run.txt.gz"
    gz.write_bytes(gzip.compress(RUN.read_bytes()))
    a, b = read_runs(gz, read_qrels(QRELS)), read_runs(RUN, QRELS)
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.docids, b.docids)
    assert a.meta["ranker"] == "run"


def test_non_ascii_ids(tmp_path):
    run, qrels = tmp_path / "u.run", tmp_path / "u.qrels"
    run.write_text("q\u00e9 Q0 d\u00f61 1 0.5 x\nq\u00e9 Q0 plain 2 0.25 x\n", encoding="utf-8")
    qrels.write_text("q\u00e9 0 d\u00f61 1\n", encoding="utf-8")
    scored = read_runs(run, qrels)
    assert scored.qids.tolist() == ["q\u00e9"] and scored.docids[0].tolist() == ["d\u00f61", "plain"]
    assert scored.relevance[0].tolist() == [1, 0] and scored.judged[0].tolist() == [True, False]


def test_synthetic_run_equals_ir_measures(tmp_path):
    run_path, qrels_path = make_synthetic_run(tmp_path, n_queries=30, depth=12, seed=4)
    again = make_synthetic_run(tmp_path / "again", n_queries=30, depth=12, seed=4)
    assert run_path.read_bytes() == again[0].read_bytes() and qrels_path.read_bytes() == again[1].read_bytes()
    scored = read_runs(run_path, qrels_path)
    run, qrels = _oracle(run_path, qrels_path)
    _assert_matches_oracle(scored, run, qrels)
    assert scored.mask.all() and scored.scores.shape == (1, 30, 12)
    # every query judges one document the run missed: it counts in recall's denominator
    assert (scored.n_relevant == (scored.labels.sum(axis=1) + 1)).all()


# --------------------------------------------------------------------------- bad input


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


GOOD = "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.25 t\n"


@pytest.mark.parametrize(
    "text, line, what",
    [
        (GOOD + "q1 Q0 d3 3 0.1\n", "line 3", r"5 whitespace-separated columns; expected 6"),
        (GOOD + "\nq1 Q0 d3 3 0.1 t extra\n", "line 4", r"7 whitespace-separated columns; expected 6"),
        (GOOD + "q1 Q0 d3 3 high t\n", "line 3", r"score 'high' is not a number"),
        (GOOD + "q1 Q0 d3 3 nan t\n", "line 3", r"score nan is not a finite number"),
        ("q1 Q0 d3 1 -inf t\n" + GOOD, "line 1", r"score -inf is not a finite number"),
        (GOOD + "q2 Q0 d1 1 0.5 t\nq1 Q0 d1 3 0.1 t\n", "lines 1 and 4", r"\(qid 'q1', docid 'd1'\) appears twice"),
        (" q1 Q0 d1 1 0.5\n", "line 1", r"5 whitespace-separated columns; expected 6"),
        (GOOD + "q1 Q0 d3 3 0.1 \n", "line 3", r"5 whitespace-separated columns; expected 6"),
        ("q1  d3 3 0.1 t\n" + GOOD, "line 1", r"5 whitespace-separated columns; expected 6"),
    ],
)
def test_malformed_run_lines_are_named(tmp_path, text, line, what):
    run = _write(tmp_path, "bad.run", text)
    with pytest.raises(AssessError, match=rf"bad\.run, {line}: {what}"):
        read_runs(run, _write(tmp_path, "q.qrels", "q1 0 d1 1\nq2 0 d1 1\n"))


def test_probability_outside_unit_interval_is_named(tmp_path):
    run = _write(tmp_path, "p.run", GOOD + "q2 Q0 d3 1 1.5 t\n")
    qrels = _write(tmp_path, "q.qrels", "q1 0 d1 1\n")
    with pytest.raises(
        AssessError,
        match=r"p\.run, line 3: score 1\.5 lies outside \[0, 1\], which score kind "
        r"'probability' expects; use score kind 'logit' \(sigmoid of the score\) or 'score'",
    ):
        read_runs(run, qrels, kind="probability")
    assert read_runs(run, qrels, kind="logit").kind is ScoreKind.logit


def test_unknown_kind_and_relevant_at(tmp_path):
    with pytest.raises(AssessError, match=r"kind: expected one of score, logit, probability, got 'prob'"):
        read_runs(RUN, QRELS, kind="prob")
    with pytest.raises(AssessError, match=r"relevant_at: expected a whole number >= 1"):
        read_runs(RUN, QRELS, relevant_at=0)


def test_run_sharing_no_qid_with_qrels(tmp_path):
    qrels = _write(tmp_path, "other.qrels", "301 0 d1 1\n")
    with pytest.raises(
        AssessError, match=r"run\.txt shares no qid with .*other\.qrels.*\['q1', 'q2', 'q3'\].*\['301'\]"
    ):
        read_runs(RUN, qrels)


def test_ranks_that_disagree_with_scores_warn(tmp_path):
    run = _write(tmp_path, "r.run", "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.75 t\nq1 Q0 d3 3 0.1 t\n")
    qrels = _write(tmp_path, "q.qrels", "q1 0 d1 1\n")
    with pytest.warns(
        UserWarning,
        match=r"r\.run: ranks disagree with the scores' order in 1 place \(first: .*line 1.*line 2.*the scores decide",
    ):
        scored = read_runs(run, qrels)
    assert scored.scores[0, 0].tolist() == [0.5, 0.75, 0.1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_runs(RUN, QRELS)  # ranks agree: no warning


@pytest.mark.parametrize(
    "text, what",
    [
        ("q1 0 d1 1\nq1 0 d2\n", r"line 2: 3 whitespace-separated columns; expected 4"),
        ("q1 0 d1 1\nq1 0 d2 1.5\n", r"line 2: relevance '1\.5' is not an integer grade"),
        ("q1 0 d1 1\nq2 0 d1 0\n\nq1 0 d1 2\n", r", lines 1 and 4: \(qid 'q1', docid 'd1'\) is judged twice"),
        ("\n\n", r": the file is empty; expected lines 'qid iter docid relevance'"),
        ("", r": the file is empty; expected lines 'qid iter docid relevance'"),
    ],
)
def test_malformed_qrels_are_named(tmp_path, text, what):
    with pytest.raises(AssessError, match=rf"bad\.qrels.*{what}"):
        read_qrels(_write(tmp_path, "bad.qrels", text))


@pytest.mark.parametrize("name, data", [("e.run", b""), ("blank.run", b"\n  \n\t\n"), ("e.run.gz", gzip.compress(b""))])
def test_an_empty_run_file_is_called_empty(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(AssessError, match=rf"{name}: the file is empty; expected lines 'qid Q0 docid rank score tag'$"):
        read_runs(path, QRELS)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("e.csv", "a header line naming the columns"),
        ("e.tsv", "a header line"),
        ("e.parquet", "a Parquet table"),
        ("e.jsonl", "one JSON object per line"),
    ],
)
def test_an_empty_table_is_called_empty(tmp_path, name, expected):
    path = _write(tmp_path, name, "" if name.endswith("parquet") else "\n\n")
    with pytest.raises(AssessError, match=rf"{name}: the file is empty; expected {expected}"):
        read_table(path, kind="score", qrels=QRELS)


def test_messages_show_plain_values_not_numpy_reprs(tmp_path):
    with pytest.raises(AssessError, match=r"relevant_at: expected a whole number >= 1, got 0$"):
        read_runs(RUN, QRELS, relevant_at=np.int64(0))
    with pytest.raises(AssessError, match=r"seed: expected a whole number >= 0, got -1$"):
        load(run=RUN, qrels=QRELS, seed=np.int64(-1))
    with pytest.raises(AssessError, match=r"kind: expected one of score, logit, probability, got 'prob'$"):
        read_runs(RUN, QRELS, kind=np.str_("prob"))
    notes = "\n".join(load(run=RUN, qrels=QRELS, valid_run=RUN).notes)
    assert "(e.g. 'q1')" in notes and "np." not in notes


def test_score_kinds_named_in_the_run_checks():
    scored = read_runs(RUN, QRELS)
    with pytest.raises(AssessError, match=r"score kind 'score' has no probabilities as given"):
        scored.probabilities()
    with pytest.raises(
        AssessError,
        match=r"scores lie outside \[0, 1\] \(first: 2\.5\), which score kind 'probability' "
        r"expects; use score kind 'logit'",
    ):
        dataclasses.replace(scored, kind="probability")
    logits = dataclasses.replace(scored, kind="logit", scores=scored.scores * 400)  # +-4000: no overflow
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        probs = logits.probabilities()
    np.testing.assert_allclose(
        probs[:, scored.mask],
        1 / (1 + np.exp(-np.clip(logits.scores[:, scored.mask], -700, 700))),
        rtol=1e-12,
        atol=1e-300,
    )
    assert ((probs == 0) | (probs == 1))[:, scored.mask].any() and (probs[:, ~scored.mask] == 0).all()


def test_missing_file_is_named(tmp_path):
    with pytest.raises(AssessError, match=r"nope\.run: cannot be read"):
        read_runs(tmp_path / "nope.run", QRELS)


# --------------------------------------------------------------------------- tables and DataFrames


def _frame():
    run, _ = _oracle(RUN, QRELS)
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    return pd.DataFrame(rows, columns=["qid", "docid", "score"])


def _assert_same(a, b):
    for name in ("qids", "docids", "mask", "scores", "relevance", "judged", "n_relevant"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.kind is b.kind and a.relevant_at == b.relevant_at


def test_table_formats_dataframe_and_run_agree(tmp_path):
    df = _frame()
    paths = {
        "csv": tmp_path / "s.csv",
        "tsv": tmp_path / "s.tsv",
        "parquet": tmp_path / "s.parquet",
        "jsonl": tmp_path / "s.jsonl",
    }
    df.to_csv(paths["csv"], index=False)
    df.to_csv(paths["tsv"], index=False, sep="\t")
    df.to_parquet(paths["parquet"], index=False)
    paths["jsonl"].write_text("".join(json.dumps(r) + "\n" for r in df.to_dict("records")))
    reference = read_runs(RUN, QRELS)
    for path in paths.values():
        _assert_same(read_table(path, qrels=QRELS, kind="score"), reference)
    _assert_same(from_dataframe(df, kind="score", qrels=QRELS), reference)


def test_label_column_judges_rows_and_empty_labels_are_unjudged():
    scored = read_table(CSV, kind="probability")
    assert scored.qids.tolist() == ["q1", "q2", "q3"]
    assert scored.relevance[0].tolist() == [2, 0, 0] and scored.judged[0].tolist() == [True, False, True]
    assert scored.n_relevant.tolist() == [1, 1, 0]
    frame = pd.read_csv(CSV, dtype={"qid": str, "docid": str})
    _assert_same(from_dataframe(frame, kind="probability"), scored)


def test_sample_column_gives_aligned_samples(tmp_path):
    df = _frame()
    second = df.sample(frac=1.0, random_state=0).assign(score=lambda d: d.score * 2 + 1)
    both = pd.concat([df.assign(sample=0), second.assign(sample=1)])
    scored = from_dataframe(both, kind="score", qrels=QRELS)
    assert scored.n_samples == 2
    np.testing.assert_allclose(scored.scores[1][scored.mask], scored.scores[0][scored.mask] * 2 + 1)
    with pytest.raises(
        AssessError, match=r"dataframe \(sample 0\) and dataframe \(sample 1\) are samples of one ranker"
    ):
        from_dataframe(pd.concat([df.assign(sample=0), second.iloc[1:].assign(sample=1)]), kind="score", qrels=QRELS)


@pytest.mark.parametrize(
    "text, what",
    [
        ("qid,docid,score,label\nq1,d1,0.5,1\nq1,d2,,0\n", r"bad\.csv, line 3: score is missing"),
        ("qid,docid,score,label\nq1,d1,0.5,1\n\nq1,d2,x,0\n", r"bad\.csv, line 4: score 'x' is not a number"),
        ("qid,docid,score,label\nq1,d1,0.5,1\nq1,d2,0.1\n", r"bad\.csv, line 3: 3 fields; expected 4"),
        (
            "qid,docid,score,label\nq1,d1,0.5,1\nq1,d2,0.1,0.5\n",
            r"bad\.csv, line 3: label 0\.5 is not an integer grade",
        ),
        (
            "qid,docid,score,label\nq1,d1,0.5,1\nq1,d1,0.1,0\n",
            r"bad\.csv, lines 2 and 3: \(qid 'q1', docid 'd1'\) appears twice",
        ),
        ("qid,docid,score,lable\nq1,d1,0.5,1\n", r"bad\.csv: unknown column 'lable'"),
        ("qid,docid,score\nq1,d1,0.5\n", r"bad\.csv: no label column and no qrels"),
        ("qid,docid,score,label\nq1,d1,1.5,1\n", r"bad\.csv, line 2: score 1\.5 lies outside \[0, 1\]"),
    ],
)
def test_malformed_tables_are_named(tmp_path, text, what):
    with pytest.raises(AssessError, match=what):
        read_table(_write(tmp_path, "bad.csv", text), kind="probability")


def test_table_with_labels_and_qrels_is_refused():
    with pytest.raises(AssessError, match=r"has a label column and qrels were given too"):
        read_table(CSV, qrels=QRELS, kind="score")


def test_bad_jsonl_line_is_named(tmp_path):
    path = _write(
        tmp_path, "bad.jsonl", '{"qid": "q1", "docid": "d1", "score": 0.5, "label": 1}\n{"qid": "q1", "docid"\n'
    )
    with pytest.raises(AssessError, match=r"bad\.jsonl, line 2: not JSON"):
        read_table(path, kind="score")


def test_qrels_object_checks_itself():
    with pytest.raises(AssessError, match=r"mine: \(qid 'a', docid 'x'\) is judged twice"):
        Qrels(["a", "b", "a"], ["x", "x", "x"], [1, 0, 1], source="mine")


# --------------------------------------------------------------------------- load


def test_load_splits_queries_by_seed(tmp_path):
    run_path, qrels_path = make_synthetic_run(tmp_path, n_queries=41, depth=40, seed=1)
    a = load(run=run_path, qrels=qrels_path, seed=5)
    b = load(run=run_path, qrels=qrels_path, seed=5)
    c = load(run=run_path, qrels=qrels_path, seed=6)
    assert a.valid.qids.tolist() == b.valid.qids.tolist() and a.test.qids.tolist() == b.test.qids.tolist()
    assert set(a.valid.qids) != set(c.valid.qids)
    assert not set(a.valid.qids) & set(a.test.qids)
    assert sorted(set(a.valid.qids) | set(a.test.qids)) == sorted(read_runs(run_path, qrels_path).qids)
    assert (len(a.valid.qids), len(a.test.qids)) == (20, 21)
    assert any(n.startswith("No validation run was given") and "seed 5" in n for n in a.notes)
    assert a.test.judged_fraction < 0.5 and any("biased low" in n for n in a.notes)  # 1.5 + 5 judged of 40
    assert a.test.meta["split"]["half"] == "judge" and a.valid.meta["split"]["half"] == "fit"


def test_load_with_validation_input_and_notes():
    inputs = load(run=RUN, qrels=QRELS, valid_run=[RUN, RUN2], relevant_at=2)
    assert inputs.valid.n_samples == 2 and inputs.test.n_samples == 1
    text = "\n".join(inputs.notes)
    assert "1 of the 4 queries of" in text and "'q9'" in text  # dropped: no qrels entry
    assert "queries are in both the validation and the test input" in text
    assert "have no relevant candidate" in text and "at least 2" in text
    assert "Below half" not in text


@pytest.mark.parametrize(
    "kwargs, what",
    [
        (dict(run=RUN, qrels=QRELS, score="probs"), r"score: expected one of score, logit, probability"),
        (dict(run=RUN, qrels=QRELS, relevant_at=0), r"relevant_at: expected a whole number >= 1"),
        (dict(run=RUN, qrels=QRELS, seed=-1), r"seed: expected a whole number >= 0"),
        (
            dict(run=RUN, qrels=QRELS, table=CSV),
            r"run, table, checkpoint: expected exactly one of them, got run and table",
        ),
        (dict(), r"got none"),
        (dict(run=RUN), r"qrels: a TREC run needs qrels"),
        (dict(table=CSV, valid_run=RUN), r"valid_run: goes with run="),
        (
            dict(table=[CSV, CSV]),
            r"^table: expected one table file \(its samples in a 'sample' column\) or a DataFrame, got a list$",
        ),
        (dict(table=CSV, valid_table=(CSV,)), r"^valid_table: expected one table file .* got a tuple$"),
        (dict(table=CSV, valid_qrels=QRELS), r"valid_qrels: given without a validation input"),
        (dict(checkpoint="model"), r"queries: a checkpoint needs the queries"),
        (dict(run=RUN, qrels=QRELS, passes=-1), r"passes: expected a whole number >= 0"),
    ],
)
def test_load_checks_its_parameters(kwargs, what):
    with pytest.raises(AssessError, match=what):
        load(**kwargs)


def test_load_hands_a_checkpoint_to_the_scorer(monkeypatch):
    pytest.importorskip("torch", reason="the checkpoint extra is not installed")
    calls = []

    def fake(path, queries, *, passes=0, **kw):
        calls.append((path, queries, passes, kw))
        return read_table(CSV, kind="logit", relevant_at=kw["relevant_at"])

    monkeypatch.setattr("calibrank.assess.read.checkpoint.score_checkpoint", fake)
    inputs = load(
        checkpoint="model", queries="test.jsonl", valid_queries="valid.jsonl", passes=3, score="logit", relevant_at=2
    )
    assert calls == [("model", "test.jsonl", 3, {"relevant_at": 2}), ("model", "valid.jsonl", 3, {"relevant_at": 2})]
    assert inputs.test.relevant_at == 2 and inputs.test.kind is ScoreKind.logit


# --------------------------------------------------------------------------- benchmark


def test_bench_assess_io_tiny(tmp_path):
    """The reading jobs run in their subprocesses and agree on what they read; no timing is checked."""
    res = bench_assess_io(12, 8, seed=2, jobs=("calibrank", "ir_measures"), work_dir=tmp_path)
    assert res["lines"] == 96 and res["ranx"] == {"skipped": True}
    ours, ref = res["calibrank"], res["ir_measures"]
    assert "error" not in ours and "error" not in ref, (ours, ref)
    assert ours["candidates"] == ref["candidates"] == 96 and ours["queries"] == 12
    assert ours["lines_per_s"] > 0 and ours["peak_mb"] >= ours["baseline_mb"] > 0
    assert [t["figure"] for t in res["targets"]][:2] == ["read_runs lines/s (M)", "read_runs peak memory (GB)"]
    json.dumps(res)


@pytest.mark.slow
def test_bench_main_runs_assess_io_with_ranx(tmp_path):
    """``python -m benchmarks`` runs the section; ranx's metrics come out (numba compiles them: minutes when busy)."""
    skip = [x for name in SECTIONS if name != "assess_io" for x in ("--skip", name)]
    assert main(["--out", str(tmp_path), *skip, "--assess-queries", "12", "--assess-depth", "8", "--seed", "2"]) == 0
    res = json.loads((tmp_path / "bench.json").read_text())["assess_io"]
    rx = res["ranx"]
    assert "error" not in rx, rx
    assert set(rx["metrics"]) == {"recall@1", "mrr", "ndcg@10"} and rx["metrics_agree"]
    assert all(0 <= v <= 1 for v in rx["metrics"].values())
    assert "read_runs lines/s (M)" in (tmp_path / "bench.md").read_text()


def test_the_note_tells_unretrieved_relevant_documents_from_queries_without_any(tmp_path):
    run, qrels = tmp_path / "n.run", tmp_path / "n.qrels"
    run.write_text("a Q0 d1 1 3.0 t\na Q0 d2 2 2.0 t\nb Q0 d1 1 3.0 t\nb Q0 d2 2 2.0 t\nc Q0 d1 1 1.0 t\n")
    # a: relevant retrieved; b: relevant in the qrels, not retrieved; c: judged, nothing relevant
    qrels.write_text("a 0 d1 1\nb 0 d9 1\nb 0 d1 0\nc 0 d1 0\n")
    text = "\n".join(load(run=run, qrels=qrels, valid_run=run).notes)
    assert "2 of the 3 test queries have no relevant candidate in their list" in text
    assert "1 of them have a relevant document in the qrels that the run did not retrieve" in text
    assert "1 have no relevant document in the qrels at all: the ranking metrics leave them out." in text
