"""How long ``make report`` will take on this machine, said before it starts.

A step takes its wall time in the last run. Without one, its work (:func:`calibrank.study.pipeline.schedule.work`: pairs
trained and scored, texts encoded) goes over the rates the study records about itself under ``runs/<profile>/``
(``train.json``, each Predictions' sidecar) or, before any is recorded, rates measured with the real loop
(:func:`measure`, :func:`measure_encoding`), plus a fixed cost: a kernel's start under papermill, an interpreter's
for a training job. Steps whose outputs are newer than their inputs and their code keys, after no pending step
(:func:`plan`), count zero. Not counted: the analyses' own work (bootstrap resamples, the Gibbs sampler), so a first
run's analysis notebooks are estimated at their start alone.
"""

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from calibrank.atomic import read_json, write_json
from calibrank.hardware import use_bf16
from calibrank.study.data.corpora import load_corpus
from calibrank.study.data.negatives import encode, load_embedding_model
from calibrank.study.data.querysets import load_examples
from calibrank.study.data.schema import RankingQuery
from calibrank.study.model.rankers import RankerRun, make_ranker
from calibrank.study.paths import project_root
from calibrank.study.pipeline.schedule import Estimate, Step, clock, eta_path, recorded, refresh_code, steps, work
from calibrank.study.pipeline.train import trained_models
from calibrank.study.settings.checks import ConfigError
from calibrank.study.settings.choices import RankerName
from calibrank.study.settings.config import load_config


def plan(cfg) -> list[Step]:
    """The steps of the workflow, each pending or not, as snakemake sees them: the code keys brought up to date
    first (:func:`calibrank.study.pipeline.schedule.refresh_code`, as the Snakefile does), then
    :func:`calibrank.study.pipeline.schedule.steps`."""
    refresh_code(cfg)
    return steps(cfg)


def measure(cfg, examples, *, threads: int, batches: int = 3) -> dict[str, float]:
    """This machine's rates from the real loop: ``bert`` fitted for an epoch on ``batches`` batches of pairs of ``examples``
    and scoring them, twice (the first builds each batch shape's kernels); the rates the second records about itself,
    and ``build``, the seconds of its fit outside the training loop (building the model, writing it)."""
    before, t = torch.get_num_threads(), dataclasses.replace(cfg.training, epochs=1, eval_every=None)
    torch.set_num_threads(threads)
    try:
        ex = examples[: batches * t.batch_size // 2]
        queries = [RankingQuery(e.eid, e.context, (e.response, ex[i - 1].response), (1, 0)) for i, e in enumerate(ex)]
        with tempfile.TemporaryDirectory(prefix="calibrank-eta-") as tmp:
            for seed in (0, 1):
                t0 = time.perf_counter()
                ranker = make_ranker(
                    RankerName.bert, RankerRun(t, Path(tmp), seed=seed, context_style=cfg.data.context_style)
                ).fit(queries)
                fitted = ranker.training_results()[0]
                build = time.perf_counter() - t0 - fitted.seconds  # the fit's wall time outside its loop
                scored = ranker.predict_many([queries, queries[:1]])[0].meta["shared_scoring"]
        return {"train": fitted.train_pairs_per_second, "infer": scored["pairs_per_second"], "build": build}
    finally:
        torch.set_num_threads(before)


def measure_encoding(cfg, examples, texts: int = 128) -> float:
    """Texts/s of the negatives' bi-encoder on the responses of ``examples``, most of what it encodes (after a warm-up
    call)."""
    emb, ex = cfg.negatives.embedding, examples[:texts]
    model, precision = load_embedding_model(emb.model), getattr(emb.precision, "value", emb.precision)
    encode(model, [e.response for e in ex[:8]], batch_size=emb.batch_size, precision=precision)
    t0 = time.perf_counter()
    encode(model, [e.response for e in ex], batch_size=emb.batch_size, precision=precision)
    return len(ex) / (time.perf_counter() - t0)


def _started(code: str) -> float:
    """Seconds a fresh kernel takes to run ``code`` under papermill, as each notebook step's does (0 if it fails)."""
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "cells": [
            {"cell_type": "code", "execution_count": None, "id": "start", "metadata": {}, "outputs": [], "source": code}
        ],
        "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
    }
    with tempfile.TemporaryDirectory(prefix="calibrank-eta-") as tmp:
        write_json(Path(tmp) / "in.ipynb", nb)
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "papermill", f"{tmp}/in.ipynb", f"{tmp}/out.ipynb", "--no-progress-bar"],
            capture_output=True,
            check=False,
        )
        return time.perf_counter() - t0 if done.returncode == 0 else 0.0


def run(profile: str, *, jobs: int, cores: int, started: float) -> str:
    """Count the work, read or measure the rates, schedule; write ``eta.json`` atomically; return the line to print.

    A step's seconds: its wall time in the last run where there was one; else its work over the rates plus a fixed
    cost, measured on a first run (a kernel importing the models under papermill; an interpreter for a training job).
    """
    t0, cfg = time.perf_counter(), load_config(profile)
    durations = {
        nb.stem: float(d)
        for nb in (project_root() / "reports" / profile).glob("[0-9]*.ipynb")  # last run's
        if isinstance(d := read_json(nb).get("metadata", {}).get("papermill", {}).get("duration"), (int, float))
    }
    summary = project_root() / "runs" / profile / "data" / "summary.json"
    if summary.exists():
        corpora = read_json(summary)["corpora"]
        sizes, pools = {c: e["examples"] for c, e in corpora.items()}, {c: e["pool"] for c, e in corpora.items()}
        train = {}
    else:  # reading the corpora here is what notebook 01 does first
        read = {c.value: load_corpus(c, cfg.data, cfg.seed) for c in cfg.data.corpora}
        sizes = {c: {s: len(v) for s, v in cs.examples.items()} for c, cs in read.items()}
        pools = {c: {s: len(v) for s, v in cs.pools.items()} for c, cs in read.items()}
        train = {c: cs.examples["train"] for c, cs in read.items()}
    read_s = time.perf_counter() - t0

    def examples(corpus) -> list:  # a corpus's training examples, read once (from notebook 01's files once it ran)
        c = getattr(corpus, "value", corpus)
        return train[c] if c in train else train.setdefault(c, load_examples(cfg, c, "train"))

    rates, threads = recorded(profile), max(1, cores // max(1, jobs))
    source, rates = (
        ("recorded", rates)
        if len(rates) == 2
        else ("measured", {**measure(cfg, examples(cfg.rankers.train_corpora[0]), threads=threads), **rates})
    )
    est = plan(cfg)
    if any(s.phase == "negatives" and s.pending and s.name not in durations for s in est):
        rates["encode"] = measure_encoding(cfg, examples(cfg.data.corpora[0]))
    if durations:
        startup = {"notebook": min(durations.values()), "train": min(durations.values())}
        rates["startup_from"] = "last run"
    else:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import calibrank.study.pipeline.train"], check=True, capture_output=True)
        startup = {"train": time.perf_counter() - t0 + rates.get("build", 0.0)}
        kernel = _started("import calibrank.study.model.experiment")
        startup["notebook"], rates["startup_from"] = (
            (kernel, "papermill") if kernel else (startup["train"], "interpreter")
        )
    durations.setdefault("01_data", startup["notebook"] + read_s)
    pairs = work(cfg, sizes, trained_models(cfg), pools if "encode" in rates else None)
    est = Estimate(
        profile,
        max(1, jobs),
        tuple(
            dataclasses.replace(
                s,
                seconds=durations[s.name]
                if s.name in durations
                else (
                    startup["train" if s.phase == "train" else "notebook"]
                    + sum(n / rates[kind] for kind, n in pairs[s.name].items() if n)
                ),
            )
            for s in est
        ),
    )
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # where a ranker trains (rankers.base)
    rates.update(
        threads=threads,
        device=device.type,
        bf16=use_bf16(cfg.training.precision, device),
        source=source,
        startup=startup["notebook"],
    )
    write_json(
        eta_path(profile),
        {
            "profile": profile,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
            "started": float(started),
            "jobs": est.jobs,
            "cores": cores,
            "seconds": round(est.seconds, 1),
            "rates": rates,
            "steps": [dataclasses.asdict(s) for s in est.steps],
        },
    )
    return (
        f"estimate: ~{clock(est.seconds, True)} on this machine ({cores} cores, {device.type}) for profile {profile}: "
        f"{len(est.pending)} of {len(est.steps)} steps to run, {est.jobs} side by side; rates {source} "
        f"({rates['train']:.1f} training, {rates['infer']:.0f} scoring pairs/s)"
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m calibrank.study.pipeline.eta PROFILE --jobs J --cores C --started T``."""
    p = argparse.ArgumentParser(prog="python -m calibrank.study.pipeline.eta", description=__doc__.split("\n\n")[0])
    p.add_argument("profile")
    for flag, kind, default, what in (
        ("--jobs", int, 1, "notebooks side by side"),
        ("--cores", int, os.cpu_count() or 1, "cores of this machine"),
        ("--started", float, None, "start, seconds since the epoch"),
    ):
        p.add_argument(flag, type=kind, default=default, help=what)
    a = p.parse_args(argv)
    try:
        print(
            run(a.profile, jobs=a.jobs, cores=a.cores, started=time.time() if a.started is None else a.started),
            flush=True,
        )
    except (ConfigError, OSError, ValueError, subprocess.CalledProcessError) as exc:
        print(f"estimate: unavailable ({exc})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
