"""The practitioner's path: ``pip install`` of the core alone into a fresh venv, then ``calibrank assess`` from
another folder on runs written by a tool this project did not write (rank_bm25), and the calibrator applied in a
fresh interpreter of that venv reproducing the page's test numbers."""

from __future__ import annotations

import glob
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parent.parent
STUDY_STACK = (
    "torch",
    "transformers",
    "jupyterlab",
    "jupyter-client",
    "papermill",
    "snakemake",
    "nbconvert",
    "ipykernel",
    "seaborn",
    "sentence-transformers",
)


def _bm25_runs(folder: Path) -> dict[str, Path]:
    """chatterbot's English dialogues: each line's next line among 29 random lines of the corpus, ranked by
    rank_bm25's Okapi BM25 (a library this project does not own) and cut at a random depth of 15 to 30."""
    rank_bm25 = pytest.importorskip("rank_bm25")
    corpus = pytest.importorskip("chatterbot_corpus")
    import yaml

    pairs = []
    for path in sorted(glob.glob(os.path.join(os.path.dirname(corpus.__file__), "data", "english", "*.yml"))):
        for conv in yaml.safe_load(open(path, encoding="utf-8")).get("conversations", []):
            lines = [str(x) for x in conv]
            pairs += list(zip(lines, lines[1:]))
    pool = [b for _, b in pairs]
    rng = random.Random(0)
    rng.shuffle(pairs)
    out = {}
    for split, chosen in (("valid", pairs[:250]), ("test", pairs[250:550])):
        run, qrels = [], []
        for qi, (context, true) in enumerate(chosen):
            cands = [true] + rng.sample(pool, 29)
            scores = rank_bm25.BM25Okapi([c.lower().split() or ["_"] for c in cands]).get_scores(
                context.lower().split()
            )
            order = sorted(range(30), key=lambda j: -scores[j])[: rng.randint(15, 30)]
            run += [f"{split}{qi} Q0 {split}{qi}-{j} {r} {scores[j]:.6f} bm25" for r, j in enumerate(order, 1)]
            qrels.append(f"{split}{qi} 0 {split}{qi}-0 1")
        (folder / f"{split}.run").write_text("\n".join(run) + "\n", encoding="utf-8")
        (folder / f"{split}.qrels").write_text("\n".join(qrels) + "\n", encoding="utf-8")
        out[split], out[f"{split}_qrels"] = folder / f"{split}.run", folder / f"{split}.qrels"
    return out


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    """A venv with ``pip install <checkout>`` alone (no extras), as a practitioner installs it."""
    venv = tmp_path_factory.mktemp("core") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(REPO)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    return venv


def test_the_core_installs_without_the_study_stack(core):
    listed = subprocess.run(
        [str(core / "bin" / "python"), "-m", "pip", "list", "--format=json"], capture_output=True, text=True, check=True
    ).stdout
    names = {p["name"].lower() for p in json.loads(listed)}
    assert "calibrank" in names and "numpy" in names
    assert not names & set(STUDY_STACK), sorted(names & set(STUDY_STACK))


def test_calibrank_assess_from_another_folder_and_the_calibrator_in_a_fresh_interpreter(core, tmp_path):
    runs = _bm25_runs(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CALIBRANK_ROOT")}
    res = subprocess.run(
        [
            str(core / "bin" / "calibrank"),
            "assess",
            str(runs["test"]),
            str(runs["test_qrels"]),
            "--valid-run",
            str(runs["valid"]),
            "--valid-qrels",
            str(runs["valid_qrels"]),
            "--precision",
            "0.5",
            "--n-resamples",
            "100",
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    out = elsewhere / "assess-test"
    assert (out / "index.html").is_file() and (out / "calibrator.json").is_file()
    script = f"""
import json, sys
import numpy as np
from calibrank import Calibrator
from calibrank.assess.read.trec import read_runs
cal = Calibrator.load("calibrator.json")
run = read_runs({str(runs["test"])!r}, {str(runs["test_qrels"])!r})
s = np.where(run.mask, run.scores.mean(axis=0), 0.0)
answered = ~cal.abstain(s, run.mask)
top = np.where(run.mask, s, -np.inf)
wrong = ((top == top.max(axis=1, keepdims=True)) & run.mask & ~run.labels.astype(bool)).any(axis=1)
got = {{"coverage": float(answered.mean()), "risk": float(wrong[answered].mean())}}
if cal.cutoff.raw is not None:
    keep = cal.keep(s) & run.mask
    got["kept"] = int(keep.sum())
    got["precision"] = float((keep & run.labels.astype(bool)).sum() / keep.sum())
got["study"] = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers", "seaborn", "papermill"))
print(json.dumps(got))
"""
    fresh = subprocess.run(
        [str(core / "bin" / "python"), "-c", script], cwd=out, env=env, capture_output=True, text=True, check=True
    )
    got = json.loads(fresh.stdout)
    assert got["study"] == []
    rule = pd.read_csv(out / "tables" / "abstain_rule.csv").iloc[0]
    assert got["coverage"] == rule["coverage"] and got["risk"] == rule["risk"]
    threshold = pd.read_csv(out / "tables" / "threshold.csv").iloc[0]
    if threshold["certified"]:
        assert got["kept"] == threshold["test kept"] and got["precision"] == threshold["precision"]


def test_a_bad_input_in_the_core_is_one_line_and_writes_nothing(core, tmp_path):
    (tmp_path / "empty.qrels").write_text("", encoding="utf-8")
    (tmp_path / "r.run").write_text("q1 Q0 d1 1 2.0 x\n", encoding="utf-8")
    res = subprocess.run(
        [str(core / "bin" / "calibrank"), "assess", "r.run", "empty.qrels"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "empty.qrels: the file is empty" in res.stderr
    assert not (tmp_path / "assess-r").exists()
