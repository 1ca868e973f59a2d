"""How long ``make report`` will take on this machine, said before it starts, and how far along it is.

Each step's work is counted in pairs (:func:`work`) over the rates the study records about itself under
``runs/<profile>/`` (``train.json``, each Predictions' sidecar), or, before any is recorded, rates measured
with the real loop (:func:`measure`). A step's fixed cost is its wall time in the last run, else the start
of an interpreter that imports the study. Steps whose outputs are newer than their inputs count zero.
"""

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from ..data.conditions import ranker_conditions
from ..data.corpora import load_corpus
from ..data.schema import RankingQuery
from ..model.rankers import make_ranker
from ..model.training import score_pairs, train_model
from ..precision import use_bf16
from ..runs import project_root, read_json, write_json
from ..settings import registry
from ..settings.config import ConfigError, RankerName, load_config
from . import grid
from .grid import run_models
from .train import trained_models

_SOLO = ("data", "negatives", "efficiency", "index")  # phases whose steps run alone
_KEYS = {"profile", "created", "started", "jobs", "cores", "seconds", "rates", "steps"}


@dataclasses.dataclass(frozen=True)
class Step:
    """A workflow step (:func:`calibrank.pipeline.grid.steps`): its first output, the models it trains, the ranker it predicts
    with; its estimated seconds, and whether it is pending (an output missing or older than an input)."""

    name: str
    phase: str
    output: str = ""
    trains: tuple[str, ...] = ()
    ranker: str | None = None
    seconds: float = 0.0
    pending: bool = True


def _older(step: grid.Step) -> bool:
    root = project_root()
    outs = [root / o for o in step.outputs]
    if not all(o.exists() for o in outs):
        return True
    newest = max((p.stat().st_mtime for p in (root / i for i in step.inputs) if p.exists()), default=0.0)
    return min(o.stat().st_mtime for o in outs) < newest


def _steps(cfg) -> list[Step]:
    """The workflow's steps (:func:`calibrank.pipeline.grid.steps`) and the index page, each pending or not."""
    out = [Step(s.name, s.kind, s.outputs[0], (s.model.name,) if s.model else (),
                registry.key(s.parameters["ranker"]).value if s.kind == "predict" else None, pending=_older(s))
           for s in grid.steps(cfg)]
    index = f"reports/{cfg.profile}/index.html"
    return out + [Step("index", "index", index, pending=any(s.pending for s in out) or not (project_root() / index).exists())]


def work(cfg, sizes: dict, trained=frozenset()) -> dict[str, dict[str, float]]:
    """Pairs per step: ``train``, training pairs x epochs of each model it trains unless ``trained`` (cached); ``infer``,
    validation pairs x validations, condition pairs x passes of its ranker (once per model). ``sizes``: examples."""
    t, k, models, scored, out = cfg.training, cfg.negatives.train_k, run_models(cfg), set(), {}
    for s in _steps(cfg):
        w = out[s.name] = {"train": 0.0, "infer": 0.0}
        for n in (sizes[m.split("-")[1]] for m in s.trains if m not in trained):
            w["train"] += n["train"] * (1 + k) * t.epochs
            per_epoch = -(-n["train"] * (1 + k) // t.batch_size)  # validated every eval_every steps and at epoch ends
            every = t.eval_every or per_epoch * t.epochs + 1
            ends = {per_epoch * (e + 1) for e in range(t.epochs)} | set(range(every, per_epoch * t.epochs + 1, every))
            w["infer"] += len(ends) * n["valid"] * (1 + k)
        info = registry.info(s.ranker) if s.ranker else None
        passes = info.samples(cfg) // info.members(cfg) if info and info.family is registry.Family.stochastic else 1
        for model in models[s.name[len("03_train-"):]] if info else ():
            for c in ranker_conditions(cfg, s.ranker):
                if (model, c.name, passes) not in scored:
                    scored.add((model, c.name, passes))
                    w["infer"] += sizes[c.corpus][c.split] * (1 + c.k) * passes
    return out


def recorded(profile: str) -> dict[str, float]:
    """Median rates under ``runs/<profile>/``: ``train``, pairs/s of each ``train.json``; ``infer``, each shared
    scoring's pairs/s per condition pair (it scored the distinct pairs of all its conditions' pairs)."""
    runs = project_root() / "runs" / profile
    found = {"train": [read_json(p).get("train_pairs_per_second") for p in (runs / "models").glob("**/train.json")],
             "infer": [(i.get("pairs_per_second") or 0) * i.get("pairs", 0) / i.get("distinct_pairs", 1) for i in
                       (read_json(p).get("shared_scoring") or {} for p in (runs / "predictions").glob("**/*.json"))]}
    return {kind: statistics.median(x for x in v if x) for kind, v in found.items() if any(v)}


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


@dataclasses.dataclass(frozen=True)
class Estimate:
    profile: str
    jobs: int
    steps: tuple[Step, ...]

    @property
    def pending(self) -> list[Step]:
        return [s for s in self.steps if s.pending]

    @property
    def seconds(self) -> float:
        """Wall seconds of the pending steps: phases in turn, a parallel one its longest step or summed time / jobs."""
        total = 0.0
        for phase in dict.fromkeys(s.phase for s in self.pending):
            own = [s.seconds for s in self.pending if s.phase == phase]
            total += sum(own) if phase in _SOLO or self.jobs <= 1 else max(max(own), sum(own) / self.jobs)
        return total


def eta_path(profile: str) -> Path:
    return project_root() / "reports" / profile / "eta.json"


def read_eta(path) -> tuple[Estimate, dict]:
    """The estimate in an ``eta.json`` and its fields; a ``ValueError`` naming the file when it is not one."""
    try:
        if set(data := read_json(path)) != _KEYS:
            raise ValueError(f"expected the keys {sorted(_KEYS)}, got {sorted(data)}")
        steps = tuple(Step(**{**s, "trains": tuple(s["trains"])}) for s in data["steps"])
        return Estimate(str(data["profile"]), int(data["jobs"]), steps), data
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{path}: not an estimate written by calibrank.pipeline.eta ({exc})") from None


def _clock(seconds: float, minutes: bool = False) -> str:
    if minutes:
        return f"{max(1, round(seconds / 60))} min" if seconds >= 30 else f"{round(seconds)} s"
    h, rest = divmod(max(0, int(round(seconds))), 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def progress(profile: str, step: str, seconds: float | None, run_start: float | None) -> str:
    """``[12:03 elapsed] STEP done (4:10, estimate 3:50); ~14 min left (6 steps)``, or ``STEP done (4:10)`` without an
    estimate of this run. What is left: the pending steps whose output is not newer than the run's start."""
    own, path = (f"{_clock(seconds)}, " if seconds is not None else ""), eta_path(profile)
    est, data = read_eta(path) if run_start is not None and path.exists() else (None, None)
    if est is None or abs(float(data["started"]) - run_start) > 1.0:  # no estimate of this run
        return f"{step} done" + (f" ({own[:-2]})" if own else "")
    outs = {s.name: project_root() / s.output for s in est.pending}
    left = [s for s in est.pending if s.name != step and not (outs[s.name].exists()
                                                              and outs[s.name].stat().st_mtime >= run_start)]
    tail = f"~{_clock(Estimate(profile, est.jobs, tuple(left)).seconds, True)} left ({len(left)} steps)" if left else "nothing left"
    return (f"[{_clock(time.time() - run_start)} elapsed] {step} done ({own}estimate "
            f"{_clock({s.name: s.seconds for s in est.steps}.get(step, 0.0))}); {tail}")


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
        + (startup if s.phase == "train" else durations.get(s.name, startup))) for s in _steps(cfg)))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # where a ranker trains (rankers.base)
    rates.update(threads=threads, device=device.type, bf16=use_bf16(cfg.training.precision, device), source=source, startup=startup)
    write_json(eta_path(profile), {
        "profile": profile, "created": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()), "started": float(started),
        "jobs": est.jobs, "cores": cores, "seconds": round(est.seconds, 1), "rates": rates,
        "steps": [dataclasses.asdict(s) for s in est.steps]})
    return (f"estimate: ~{_clock(est.seconds, True)} on this machine ({cores} cores, {device.type}) for profile {profile}: "
            f"{len(est.pending)} of {len(est.steps)} steps to run, {est.jobs} side by side; rates {source} "
            f"({rates['train']:.1f} training, {rates['infer']:.0f} scoring pairs/s)")


def main(argv: list[str] | None = None) -> int:
    """``python -m calibrank.pipeline.eta PROFILE --jobs J --cores C --started T``; ``... progress PROFILE STEP --seconds S``."""
    args = sys.argv[1:] if argv is None else list(argv)
    p = argparse.ArgumentParser(prog="python -m calibrank.pipeline.eta", description=__doc__.split("\n\n")[0])
    p.add_argument("profile")
    if args[:1] == ["progress"]:
        p.add_argument("step")
        p.add_argument("--seconds", type=float, help="the step's wall time")
        a, start = p.parse_args(args[1:]), os.environ.get("CALIBRANK_RUN_START")
        try:
            print(progress(a.profile, a.step, a.seconds, float(start) if start else None), flush=True)
        except Exception as exc:  # a progress line never fails the step
            print(f"{a.step} done (progress unavailable: {exc})", flush=True)
        return 0
    for flag, kind, default, what in (("--jobs", int, 1, "notebooks side by side"), ("--cores", int, os.cpu_count() or 1,
                                      "cores of this machine"), ("--started", float, None, "start, seconds since the epoch")):
        p.add_argument(flag, type=kind, default=default, help=what)
    a = p.parse_args(args)
    try:
        print(run(a.profile, jobs=a.jobs, cores=a.cores, started=time.time() if a.started is None else a.started),
              flush=True)
    except (ConfigError, OSError, ValueError) as exc:
        print(f"estimate: unavailable ({exc})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
