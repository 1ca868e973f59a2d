"""``python -m calibrank.assess`` and ``make assess``: options checked before anything runs, the report's index."""

from __future__ import annotations

import subprocess
from pathlib import Path

import markupsafe
import numpy as np
import pandas as pd
import pytest

from calibrank.assess import __main__ as cli
from calibrank.assess.engine import assess
from calibrank.assess.scored import ScoredRun

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def files(tmp_path):
    run = tmp_path / "bm25.trec"
    run.write_text("q1 Q0 d1 1 3.2 bm25\nq1 Q0 d2 2 1.1 bm25\n", encoding="utf-8")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n", encoding="utf-8")
    return run, qrels


def _error(capsys, argv) -> str:
    parser_exit = pytest.raises(SystemExit)
    with parser_exit:
        cli.main(argv)
    return capsys.readouterr().err


def test_a_missing_file_is_named_with_its_option(capsys, files, tmp_path):
    run, qrels = files
    err = _error(capsys, ["--run", str(tmp_path / "nope.trec"), "--qrels", str(qrels)])
    assert "--run:" in err and "nope.trec: no such file" in err
    err = _error(capsys, ["--run", str(run), "--qrels", str(tmp_path / "q.missing")])
    assert "--qrels:" in err and "no such file" in err


@pytest.mark.parametrize("extra,expected", [
    ([], "--qrels: required with --run"),
    (["--qrels", "{qrels}", "--table", "{run}"], "give exactly one input"),
    (["--qrels", "{qrels}", "--valid-run", "{run}"], "--valid-qrels: required with --valid-run"),
    (["--qrels", "{qrels}", "--score", "probabilty"], "--score: invalid choice"),
    (["--qrels", "{qrels}", "--relevant-at", "0"], "--relevant-at: expected an integer >= 1"),
    (["--qrels", "{qrels}", "--seed", "-1"], "--seed: expected a non-negative integer"),
    (["--qrels", "{qrels}", "--name", "../x"], "--name: expected letters"),
])
def test_options_are_checked_before_the_notebook_runs(capsys, files, monkeypatch, extra, expected):
    run, qrels = files
    monkeypatch.setattr(cli, "_execute", lambda *a: pytest.fail("the notebook must not run"))
    argv = ["--run", str(run)] + [a.format(run=run, qrels=qrels) for a in extra]
    assert expected in _error(capsys, argv)


def test_the_name_defaults_to_the_run_file_stem(files):
    run, qrels = files
    parser = cli.argparse.ArgumentParser()
    args = cli.argparse.Namespace(run=[str(run)], qrels=str(qrels), valid_run=[], valid_qrels=None, table=None,
                                  valid_table=None, checkpoint=None, queries=None, valid_queries=None, passes=0,
                                  score="logit", relevant_at=1, seed=0, n_resamples=1000, name=None)
    params = cli.check_options(parser, args)
    assert params["name"] == "bm25" and params["run"] == [str(run.resolve())] and params["score"] == "logit"


def _tiny(prefix: str, seed: int) -> ScoredRun:
    rng = np.random.default_rng(seed)
    q, k = 60, 8
    rel = (rng.random((q, k)) < 0.2).astype(int)
    scores = rng.normal(size=(1, q, k)) + 2 * rel
    mask = np.ones((q, k), bool)
    return ScoredRun(np.array([f"{prefix}{i}" for i in range(q)]), np.full((q, k), "d"), mask, scores, rel, mask,
                     rel.sum(axis=1), kind="logit", source=f"{prefix}.trec")


def test_the_index_lists_the_findings_the_notebook_and_every_table(tmp_path):
    result = assess(_tiny("t", 1), _tiny("v", 2), n_resamples=50)
    result.save(tmp_path / "tables")
    (tmp_path / "09_assess.html").write_text("<html></html>", encoding="utf-8")
    page = cli.write_index(tmp_path, "bm25<run>").read_text(encoding="utf-8")
    assert "bm25&lt;run&gt;" in page and "<run>" not in page  # escaped
    for sentence in result.findings["finding"]:
        assert str(markupsafe.escape(sentence)) in page
    assert 'href="09_assess.html"' in page and 'src="09_assess.html"' in page
    for name in result.tables():
        assert f'href="tables/{name}.csv"' in page
    assert not list(tmp_path.glob(".tmp-*"))


def test_make_assess_passes_each_run_and_refuses_a_quote():
    dry = subprocess.run(["make", "-n", "-C", str(REPO), "assess", "RUN=a.trec b.trec", "QRELS=q.txt", "SCORE=logit",
                          "NAME=mine"], capture_output=True, text=True, check=False)
    assert dry.returncode == 0, dry.stderr
    assert "-m calibrank.assess --run 'a.trec' --run 'b.trec' --qrels 'q.txt'" in dry.stdout
    assert "--score 'logit'" in dry.stdout and "--name 'mine'" in dry.stdout
    bad = subprocess.run(["make", "-n", "-C", str(REPO), "assess", "RUN=x'; touch y; '", "QRELS=q"],
                         capture_output=True, text=True, check=False)
    assert bad.returncode != 0 and "RUN: a value holding a single quote is refused" in bad.stderr


def test_the_command_runs_the_notebook_into_the_report_folder(tmp_root, tmp_path):
    rng = np.random.default_rng(0)
    runs, qrels = [], []
    for i in range(80):
        for j in range(6):
            grade = int(rng.random() < 0.25)
            runs.append(f"q{i} Q0 q{i}d{j} {j + 1} {rng.normal() + 2 * grade:.6f} mine")
            qrels.append(f"q{i} 0 q{i}d{j} {grade}")
    (tmp_path / "mine.trec").write_text("\n".join(runs) + "\n", encoding="utf-8")
    (tmp_path / "qrels.txt").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    (tmp_root / "notebooks").mkdir()
    (tmp_root / "notebooks" / cli.NOTEBOOK).write_bytes((REPO / "notebooks" / cli.NOTEBOOK).read_bytes())
    assert cli.main(["--run", str(tmp_path / "mine.trec"), "--qrels", str(tmp_path / "qrels.txt"),
                     "--n-resamples", "50"]) == 0
    out = tmp_root / "reports" / "assess" / "mine"
    for path in ("09_assess.ipynb", "09_assess.html", "index.html", "tables/ranking.csv", "tables/findings.csv"):
        assert (out / path).is_file(), path
    assert pd.read_csv(out / "tables" / "ranking.csv")["value"].notna().all()
