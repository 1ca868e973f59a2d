"""``calibrank assess``: options checked before any work, one line and exit 2 for a bad input, a report
folder written whole or not at all, and a ``calibrator.json`` that reproduces the page's test numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibrank import cli
from calibrank.assess import command

REPO = Path(__file__).resolve().parent.parent
CALIBRANK = Path(sys.executable).with_name("calibrank")


def _write_run(path: Path, qrels: Path, queries: int, seed: int, prefix: str, k: int = 12) -> None:
    rng = np.random.default_rng(seed)
    run_lines, qrel_lines = [], []
    for i in range(queries):
        n = int(rng.integers(4, k + 1))
        for j in range(n):
            grade = int(rng.choice([0, 0, 0, 0, 1, 2]))
            run_lines.append(f"{prefix}{i}\tQ0 {prefix}{i}d{j} 0 {rng.normal() + 1.8 * grade:.6f} mine")
            qrel_lines.append(f"{prefix}{i} 0 {prefix}{i}d{j} {grade}")
    path.write_text("\n".join(run_lines) + "\n", encoding="utf-8")
    qrels.write_text("\n".join(qrel_lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    _write_run(d / "mine.trec", d / "test.qrels", 160, 1, "t")
    _write_run(d / "valid.trec", d / "valid.qrels", 140, 2, "v")
    return {
        "run": d / "mine.trec",
        "qrels": d / "test.qrels",
        "valid_run": d / "valid.trec",
        "valid_qrels": d / "valid.qrels",
    }


def _args(files, out, *extra) -> list[str]:
    return [
        "assess",
        str(files["run"]),
        str(files["qrels"]),
        "--valid-run",
        str(files["valid_run"]),
        "--valid-qrels",
        str(files["valid_qrels"]),
        "--out",
        str(out),
        "--n-resamples",
        "50",
        *extra,
    ]


def _fails(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "extra,expected",
    [
        (["--precision", "1.5"], "--precision: expected a number in (0, 1), got 1.5"),
        (["--precision", "high"], "--precision: expected a number in (0, 1), got 'high'"),
        (["--confidence", "0"], "--confidence: expected a number in (0, 1), got 0.0"),
        (["--score", "prob"], "--score: expected one of score, logit, probability, got 'prob'"),
        (["--map", "splines"], "--map: expected one of auto, identity, platt, isotonic, beta, temperature"),
        (["--map", "temperature"], "--map: temperature scales a logit"),
        (["--precision", "0.9", "--recall", "0.5"], "--recall: give a target precision or a target recall, not both"),
        (["--coverage", "0.8", "--risk", "0.1"], "--risk: give a coverage or a risk"),
        (["--relevant-at", "0"], "--relevant-at: expected a whole number >= 1, got 0"),
        (["--name", "a b"], "--name: expected letters, digits"),
        (["--valid-queries", "x"], "--valid-queries: x: no such file"),
    ],
)
def test_a_bad_option_is_one_line_naming_it_before_any_work(capsys, files, tmp_path, monkeypatch, extra, expected):
    monkeypatch.setattr(
        command, "load", lambda **_: pytest.fail("the inputs were read before the options were checked")
    )
    err = _fails(capsys, _args(files, tmp_path / "out", *extra))
    assert expected in err
    assert not (tmp_path / "out").exists()


def test_missing_inputs_are_named_as_the_command_line_spells_them(capsys, files, tmp_path):
    assert "RUN QRELS: got one file" in _fails(capsys, ["assess", str(files["run"])])
    assert f"RUN: {tmp_path / 'none.trec'}: no such file" in _fails(
        capsys, ["assess", str(tmp_path / "none.trec"), str(files["qrels"])]
    )
    err = _fails(capsys, ["assess", str(files["run"]), str(files["qrels"]), "--valid-run", str(files["valid_run"])])
    assert "--valid-qrels: required with a validation run" in err
    assert "RUN QRELS: give exactly one input" in _fails(capsys, ["assess"])


@pytest.mark.parametrize(
    "content,expected",
    [
        ("", "the file is empty"),
        ("q1 Q0 d1 1 3.2 mine\nq1 Q0 d2 2 x mine\n", "line 2: score 'x' is not a number"),
        ("q1 Q0 d1 1 3.2\n", "line 1: 5 whitespace-separated columns; expected 6"),
    ],
)
def test_a_bad_run_file_is_one_line_with_file_and_line_and_leaves_nothing(capsys, files, tmp_path, content, expected):
    bad = tmp_path / "bad.trec"
    bad.write_text(content, encoding="utf-8")
    out = tmp_path / "out"
    err = _fails(capsys, ["assess", str(bad), str(files["qrels"]), "--out", str(out)])
    assert str(bad) in err and expected in err
    assert not out.exists() and not list(tmp_path.glob(".tmp-*"))


def test_a_failed_rerun_keeps_the_previous_report_whole(capsys, files, tmp_path, monkeypatch):
    out = tmp_path / "report"
    assert cli.main(_args(files, out)) == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert {"index.html", "calibrator.json", "tables/threshold.csv"} <= {str(p) for p in before}

    def full_disk(self, path):
        raise OSError(28, "No space left on device", str(path))

    from calibrank.assess.deploy.calibrator import Calibrator

    monkeypatch.setattr(Calibrator, "save", full_disk)
    err = _fails(capsys, _args(files, out, "--seed", "3"))
    assert f"{out / 'calibrator.json'}: cannot be written (No space left on device)" in err
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith((".tmp-", ".old-"))]


def test_leftovers_of_a_killed_run_are_removed(files, tmp_path):
    out = tmp_path / "report"
    stale = tmp_path / f".tmp-{out.name}-999999"
    (stale / "tables").mkdir(parents=True)
    (stale / "index.html").write_text("half", encoding="utf-8")
    assert cli.main(_args(files, out)) == 0
    assert not stale.exists() and (out / "index.html").is_file()


def test_two_runs_into_one_folder_never_mix(files, tmp_path):
    out = tmp_path / "report"
    procs = [
        subprocess.Popen(
            [str(CALIBRANK), *_args(files, out, "--seed", str(seed))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in (1, 2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    seed = json.loads((out / "calibrator.json").read_text())["fitted_on"]["seed"]
    page = (out / "index.html").read_text(encoding="utf-8")
    assert f"seed {seed}" in page
    ranking = pd.read_csv(out / "tables" / "summary.csv")
    assert len(ranking) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith((".tmp-", ".old-"))]


def test_the_page_holds_findings_figures_and_no_absolute_path(files, tmp_path):
    out = tmp_path / "report"
    assert cli.main(_args(files, out, "--precision", "0.7")) == 0
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.index("Findings") < page.index("Figures") < page.index("Tables")
    assert page.count("data:image/png;base64,") == 3
    assert str(files["run"].parent) not in page and "/tmp/" not in page and str(Path.home()) not in page
    assert "e-0" not in page.split("<h2>Figures")[0]  # numbers for people
    assert "0.000 [0.000, 0.000]" not in page
    cal = json.loads((out / "calibrator.json").read_text())
    deployed = cal["map"]["method"]
    assert f"the {deployed} map" in page


def test_the_calibrator_reproduces_the_page_numbers_in_a_fresh_interpreter(files, tmp_path):
    out = tmp_path / "report"
    assert cli.main(_args(files, out, "--precision", "0.7")) == 0
    script = f"""
import json, sys
import numpy as np
from calibrank import Calibrator
from calibrank.assess.read.trec import read_runs
cal = Calibrator.load({str(out / "calibrator.json")!r})
run = read_runs({str(files["run"])!r}, {str(files["qrels"])!r})
s = np.where(run.mask, run.scores.mean(axis=0), 0.0)
y = run.labels.astype(bool) & run.mask
keep = cal.keep(s) & run.mask
answered = ~cal.abstain(s, run.mask)
top = np.where(run.mask, s, -np.inf)
first = top == top.max(axis=1, keepdims=True)
wrong = (first & run.mask & ~y).any(axis=1)
sets = cal.shortlist(s, run.mask)
hit = (sets & y).any(axis=1)[y.any(axis=1)]
print(json.dumps({{"kept": int(keep.sum()), "precision": float((keep & y).sum() / keep.sum()),
                  "recall": float((keep & y).sum() / y.sum()), "coverage": float(answered.mean()),
                  "risk": float(wrong[answered].mean()), "shortlist coverage": float(hit.mean()),
                  "set size": float(sets.sum(axis=1).mean()), "modules": sorted(m for m in sys.modules
                  if m.split('.')[0] in ('torch', 'transformers', 'papermill', 'snakemake', 'nbconvert'))}}))
"""
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path)
    got = json.loads(res.stdout)
    assert got["modules"] == []
    threshold = pd.read_csv(out / "tables" / "threshold.csv", float_precision="round_trip").iloc[0]
    assert threshold["certified"]
    assert got["kept"] == threshold["test kept"]
    assert got["precision"] == threshold["precision"] and got["recall"] == threshold["recall"]
    rule = pd.read_csv(out / "tables" / "abstain_rule.csv", float_precision="round_trip").iloc[0]
    assert got["coverage"] == rule["coverage"] and got["risk"] == rule["risk"]
    conformal = pd.read_csv(out / "tables" / "conformal.csv", float_precision="round_trip")
    row = conformal[conformal["deployed"]].iloc[0]
    assert got["shortlist coverage"] == row["coverage"] and got["set size"] == row["mean set size"]


def test_the_command_works_from_any_folder_and_python_m_says_the_same(files, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": ""}
    res = subprocess.run(
        [str(CALIBRANK), "assess", str(files["run"]), str(files["qrels"]), "--n-resamples", "30"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert (elsewhere / "assess-mine" / "index.html").is_file()
    assert "seeded half" in (elsewhere / "assess-mine" / "index.html").read_text(encoding="utf-8")
    bad = subprocess.run(
        [sys.executable, "-m", "calibrank.assess", str(files["run"])],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "RUN QRELS" in bad.stderr


def test_make_assess_calls_the_command_and_refuses_a_quote():
    dry = subprocess.run(
        [
            "make",
            "-n",
            "-C",
            str(REPO),
            "assess",
            "RUN=a.trec b.trec",
            "QRELS=q.txt",
            "SCORE=logit",
            "NAME=mine",
            "PRECISION=0.8",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert dry.returncode == 0, dry.stderr
    line = " ".join(dry.stdout.replace("\\\n", " ").split())
    assert "calibrank assess 'a.trec' 'b.trec' 'q.txt'" in line
    assert "--score 'logit'" in line and "--precision '0.8'" in line
    assert "--name 'mine' --out 'reports/assess/mine'" in line
    bad = subprocess.run(
        ["make", "-n", "-C", str(REPO), "assess", "RUN=x'; touch y; '", "QRELS=q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode != 0 and "RUN: a value holding a single quote is refused" in bad.stderr


def test_notebook_09_calls_the_same_functions_as_the_command(files, tmp_path):
    papermill = pytest.importorskip("papermill")
    out = tmp_path / "09.ipynb"
    papermill.execute_notebook(
        str(REPO / "notebooks" / "09_assess.ipynb"),
        str(out),
        progress_bar=False,
        parameters={
            "run": [str(files["run"])],
            "qrels": str(files["qrels"]),
            "valid_run": [str(files["valid_run"])],
            "valid_qrels": str(files["valid_qrels"]),
            "n_resamples": 50,
        },
        kernel_name="python3",
        cwd=str(tmp_path),
    )
    assert cli.main(_args(files, tmp_path / "report")) == 0
    import nbformat

    nb = nbformat.read(out, as_version=4)
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    findings = pd.read_csv(tmp_path / "report" / "tables" / "findings.csv")
    for sentence in findings["finding"]:
        assert sentence in printed
