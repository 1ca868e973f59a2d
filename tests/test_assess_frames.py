"""Runs and qrels as the ecosystem holds them: ir_measures' DataFrames and ranx's Run and Qrels, read as the files are."""

from __future__ import annotations

import subprocess
import sys

import ir_measures
import numpy as np
import pandas as pd
import pytest

from calibrank.assess.read.load import load
from calibrank.assess.read.score_tables import as_qrels, from_dataframe, qrels_from_dataframe
from calibrank.assess.read.scored import AssessError
from calibrank.assess.read.trec import read_qrels, read_runs
from conftest import FIXTURES, REPO

HERE = FIXTURES / "assess"
RUN, QRELS = HERE / "run.txt", HERE / "qrels.txt"


def _run_frame() -> pd.DataFrame:
    return pd.DataFrame(ir_measures.read_trec_run(str(RUN)))  # query_id, doc_id, score


def _qrels_frame() -> pd.DataFrame:
    return pd.DataFrame(ir_measures.read_trec_qrels(str(QRELS)))  # query_id, doc_id, relevance, iteration


def _as_dicts(scored):
    """Per query: {docid: (score, grade, judged)}, whatever the order of the candidates; and n_relevant, grades."""
    out = {}
    for i, q in enumerate(scored.qids.tolist()):
        m = scored.mask[i]
        out[q] = (
            {
                d: (s, r, j)
                for d, s, r, j in zip(
                    scored.docids[i][m].tolist(),
                    scored.scores[0, i][m].tolist(),
                    scored.relevance[i][m].tolist(),
                    scored.judged[i][m].tolist(),
                )
            },
            int(scored.n_relevant[i]),
            scored.grades[i][scored.grades[i] > 0].tolist(),
        )
    return out


@pytest.mark.parametrize("relevant_at", [1, 2])
def test_ir_measures_frames_read_as_the_files(relevant_at):
    ref = read_runs(RUN, QRELS, relevant_at=relevant_at)
    scored = from_dataframe(_run_frame(), qrels=_qrels_frame(), kind="score", relevant_at=relevant_at, name="run")
    assert _as_dicts(scored) == _as_dicts(ref)
    assert scored.qids.tolist() == ref.qids.tolist() and scored.ties == "trec_eval"
    a = load(run=_run_frame(), qrels=_qrels_frame(), relevant_at=relevant_at, seed=3)
    b = load(run=RUN, qrels=QRELS, relevant_at=relevant_at, seed=3)
    assert _as_dicts(a.test) == _as_dicts(b.test) and _as_dicts(a.valid) == _as_dicts(b.valid)
    assert a.test.meta["dropped_qids"] == ["q9"]


def test_one_frame_with_relevance_judges_itself():
    run, qrels = _run_frame(), _qrels_frame()
    both = run.merge(qrels[["query_id", "doc_id", "relevance"]], on=["query_id", "doc_id"], how="left")
    scored = load(run=both, valid_run=both).test
    ref = read_runs(RUN, qrels_from_dataframe(qrels[qrels.doc_id.isin(run.doc_id) & qrels.query_id.isin(run.query_id)]))
    # the frame's own judgments hold only the retrieved documents: the same as qrels cut to them
    assert _as_dicts(scored) == _as_dicts(ref)
    assert load(table=both, valid_table=both).test.n_relevant.tolist() == scored.n_relevant.tolist()


def test_ranx_run_and_qrels_read_as_the_files():
    ranx = pytest.importorskip("ranx")
    run, qrels = {}, {}
    for r in _run_frame().itertuples():
        run.setdefault(r.query_id, {})[r.doc_id] = r.score
    for r in _qrels_frame().itertuples():
        qrels.setdefault(r.query_id, {})[r.doc_id] = r.relevance
    scored = load(run=ranx.Run(run, name="bm25"), qrels=ranx.Qrels(qrels), valid_run=ranx.Run(run)).test
    assert _as_dicts(scored) == _as_dicts(read_runs(RUN, QRELS))
    assert scored.meta["ranker"] == "bm25"
    assert _as_dicts(load(run=RUN, qrels=qrels, valid_run=RUN).test) == _as_dicts(read_runs(RUN, QRELS))  # a dict


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and "np." not in text
    return text


@pytest.mark.parametrize(
    "edit, what",
    [
        (
            lambda df: pd.concat([df, df.iloc[[0]]]),
            r"run row 0 \(run\.iloc\[0\]\) and run row 11 \(run\.iloc\[11\]\): "
            r"\(qid 'q1', docid 'd1'\) appears twice",
        ),
        (
            lambda df: df.assign(score=df.score.where(df.index != 2, np.inf)),
            r"run row 2 \(run\.iloc\[2\]\): score inf is not a finite",
        ),
        (
            lambda df: df.assign(score=df.score.where(df.index != 2, np.nan)),
            r"run row 2 \(run\.iloc\[2\]\): score is missing",
        ),
        (
            lambda df: df.drop(columns="doc_id"),
            r"^run: no 'docid' column; expected qid, docid, score \(or ir_measures' query_id",
        ),
        (lambda df: df.assign(rank=1), r"^run: unknown column 'rank'"),
        (lambda df: df.assign(qid=df.query_id), r"^run: columns 'query_id' and 'qid' both name the qid"),
        (lambda df: df.assign(query_id=None), r"run row 0 \(run\.iloc\[0\]\): qid is missing"),
    ],
)
def test_bad_run_frames_are_named_by_row(edit, what):
    with pytest.raises(AssessError, match=what) as exc:
        load(run=edit(_run_frame()), qrels=_qrels_frame())
    _one_line(exc)


@pytest.mark.parametrize(
    "edit, what",
    [
        (
            lambda df: pd.concat([df, df.iloc[[0]]]),
            r"qrels row 0 \(qrels\.iloc\[0\]\) and qrels row 7 \(qrels\.iloc\[7\]\): "
            r"\(qid 'q1', docid 'd1'\) is judged twice",
        ),
        (
            lambda df: df.drop(columns="relevance"),
            r"^qrels: no 'relevance' column; expected query_id, doc_id, relevance",
        ),
        (
            lambda df: df.assign(relevance=df.relevance.astype(float).where(df.index != 1, 1.5)),
            r"qrels row 1 \(qrels\.iloc\[1\]\): relevance 1\.5 is not an integer grade",
        ),
        (
            lambda df: df.assign(relevance=df.relevance.astype(float).where(df.index != 1, np.nan)),
            r"qrels row 1 \(qrels\.iloc\[1\]\): relevance is missing",
        ),
        (lambda df: df.iloc[:0], r"^qrels: no rows"),
        (lambda df: df.assign(extra=1), r"^qrels: unknown column 'extra'"),
    ],
)
def test_bad_qrels_frames_are_named_by_row(edit, what):
    with pytest.raises(AssessError, match=what) as exc:
        load(run=_run_frame(), qrels=edit(_qrels_frame()))
    _one_line(exc)


def test_frames_that_cannot_be_read_say_why():
    with pytest.raises(AssessError, match=r"^qrels: a TREC run needs qrels"):
        load(run=_run_frame())
    judged = _run_frame().merge(
        _qrels_frame()[["query_id", "doc_id", "relevance"]], on=["query_id", "doc_id"], how="left"
    )
    with pytest.raises(AssessError, match=r"^valid_qrels: a TREC valid_run needs qrels \(valid_qrels or qrels\)"):
        load(run=judged, valid_run=RUN)  # the frame judges itself; the TREC file cannot
    with pytest.raises(AssessError, match=r"^run: several DataFrames or ranx Runs; expected one"):
        load(run=[_run_frame(), _run_frame()], qrels=QRELS)
    with pytest.raises(
        AssessError, match=r"^run: expected a file, a list of files, a DataFrame or a ranx Run, got int$"
    ):
        load(run=3, qrels=QRELS)
    with pytest.raises(AssessError, match=r"^qrels: expected a qrels file, a DataFrame"):
        load(run=RUN, qrels=3)
    with pytest.raises(AssessError, match=r"^qrels\['q1'\]\['d1'\]: grade 'yes'; expected an integer grade"):
        as_qrels({"q1": {"d1": "yes"}})
    with pytest.raises(AssessError, match=r"has a label column and qrels were given too"):
        load(run=_run_frame().assign(relevance=1), qrels=_qrels_frame())
    assert as_qrels(str(QRELS)).to_dict() == read_qrels(QRELS).to_dict()


def test_reading_frames_imports_no_ranx():
    code = (
        "import sys, pandas as pd, ir_measures\n"
        "from calibrank.assess.read.load import load\n"
        f"run = pd.DataFrame(ir_measures.read_trec_run({str(RUN)!r}))\n"
        f"qrels = pd.DataFrame(ir_measures.read_trec_qrels({str(QRELS)!r}))\n"
        "load(run=run, qrels=qrels)\n"
        "assert 'ranx' not in sys.modules, 'ranx imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
