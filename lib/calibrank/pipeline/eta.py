"""How long ``make report`` will take on this machine, said before it starts.

Each step's work is counted in pairs (:func:`calibrank.pipeline.schedule.work`) over the rates the study records about
itself under ``runs/<profile>/`` (``train.json``, each Predictions' sidecar), or, before any is recorded, rates measured
with the real loop (:func:`measure`). A step's fixed cost is its wall time in the last run, else the start
of an interpreter that imports the study. Steps whose outputs are newer than their inputs count zero.
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

from ..data.corpora import load_corpus
from ..data.schema import RankingQuery
from ..model.rankers import make_ranker
from ..model.training import score_pairs, train_model
from ..precision import use_bf16
from ..runs import project_root, read_json, write_json
from ..settings.config import ConfigError, RankerName, load_config
from .schedule import Estimate, clock, eta_path, recorded, steps, work
from .train import trained_models


def measure(cfg, *, threads: int, batches: int = 3) -> dict[str, float]:
    """This machine's rates from the real loop on ``batches`` batches of real training pairs: :func:`train_model` run
    twice and :func:`score_pairs` twice, the second of each timed (the first builds each batch shape's kernels)."""
    before, t = torch.get_num_threads(), cfg.training
    torch.set_num_threads(threads)
    try:
        with tempfile.TemporaryDirectory(prefix="calibrank-eta-") as tmp:
            ranker = make_ranker(RankerName.bert, training=t, models_dir=Path(tmp), seed=0, context_style=cfg.data.context_style)
            model, backbone = ranker._build(0)
            ex = load_corpus(cfg.rankers.train_corpora[0], cfg.data, cfg.seed).examples["train"][:batches * t.batch_size // 2]
            queries = [RankingQuery(e.eid, e.context, (e.response, ex[i - 1].response), (1, 0)) for i, e in enumerate(ex)]
            pairs = ranker._encode(backbone.tokenizer, queries, training=True)
            for run in ("warm", "timed"):
                result = train_model(model, ranker._loss, pairs, dataclasses.replace(t, epochs=1), Path(tmp) / run, seed=0,
                                     device=ranker.device)
                t0 = time.perf_counter()
                score_pairs(model, pairs, batch_size=t.eval_batch_size, precision=t.precision)
            return {"train": result.train_pairs_per_second, "infer": len(pairs) / (time.perf_counter() - t0)}
    finally:
        torch.set_num_threads(before)


def run(profile: str, *, jobs: int, cores: int, started: float) -> str:
    """Count the work, read or measure the rates, schedule; write ``eta.json`` atomically; return the line to print."""
    t0, cfg = time.perf_counter(), load_config(profile)
    durations = {nb.stem: float(d) for nb in (project_root() / "reports" / profile).glob("[0-9]*.ipynb")  # last run's
                 if isinstance(d := read_json(nb).get("metadata", {}).get("papermill", {}).get("duration"), (int, float))}
    summary = project_root() / "runs" / profile / "data" / "summary.json"
    if summary.exists():
        sizes = {c: e["examples"] for c, e in read_json(summary)["corpora"].items()}
    else:  # reading the corpora here is what notebook 01 does first
        sizes = {c.value: {s: len(v) for s, v in load_corpus(c, cfg.data, cfg.seed).examples.items()} for c in cfg.data.corpora}
    read_s = time.perf_counter() - t0
    rates, threads = recorded(profile), max(1, cores // max(1, jobs))
    source, rates = ("recorded", rates) if len(rates) == 2 else ("measured", {**measure(cfg, threads=threads), **rates})
    t0 = time.perf_counter()
    if not durations:  # a first run: a fresh interpreter importing the study, as each notebook's kernel does
        subprocess.run([sys.executable, "-c", "import calibrank.analysis.study"], check=True, capture_output=True)
    startup = min(durations.values()) if durations else time.perf_counter() - t0
    durations.setdefault("01_data", startup + read_s)
    pairs = work(cfg, sizes, trained_models(cfg))  # a step's seconds: its pairs over the rates, plus its fixed cost
    est = Estimate(profile, max(1, jobs), tuple(dataclasses.replace(
        s, seconds=sum(n / rates[kind] for kind, n in pairs[s.name].items())
        + (startup if s.phase == "train" else durations.get(s.name, startup))) for s in steps(cfg)))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # where a ranker trains (rankers.base)
    rates.update(threads=threads, device=device.type, bf16=use_bf16(cfg.training.precision, device), source=source, startup=startup)
    write_json(eta_path(profile), {
        "profile": profile, "created": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()), "started": float(started),
        "jobs": est.jobs, "cores": cores, "seconds": round(est.seconds, 1), "rates": rates,
        "steps": [dataclasses.asdict(s) for s in est.steps]})
    return (f"estimate: ~{clock(est.seconds, True)} on this machine ({cores} cores, {device.type}) for profile {profile}: "
            f"{len(est.pending)} of {len(est.steps)} steps to run, {est.jobs} side by side; rates {source} "
            f"({rates['train']:.1f} training, {rates['infer']:.0f} scoring pairs/s)")


def main(argv: list[str] | None = None) -> int:
    """``python -m calibrank.pipeline.eta PROFILE --jobs J --cores C --started T``."""
    p = argparse.ArgumentParser(prog="python -m calibrank.pipeline.eta", description=__doc__.split("\n\n")[0])
    p.add_argument("profile")
    for flag, kind, default, what in (("--jobs", int, 1, "notebooks side by side"), ("--cores", int, os.cpu_count() or 1,
                                      "cores of this machine"), ("--started", float, None, "start, seconds since the epoch")):
        p.add_argument(flag, type=kind, default=default, help=what)
    a = p.parse_args(argv)
    try:
        print(run(a.profile, jobs=a.jobs, cores=a.cores, started=time.time() if a.started is None else a.started),
              flush=True)
    except (ConfigError, OSError, ValueError) as exc:
        print(f"estimate: unavailable ({exc})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
