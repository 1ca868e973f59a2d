"""The steps of ``make report`` as a schedule: which are pending, the work each holds, the rates recorded so far,
the estimate written before the run (``eta.json``) and the progress line printed after each step.

Torch-free, so that the line after each step costs an interpreter start and no more; the estimate itself
(measuring this machine's rates) is :mod:`calibrank.study.pipeline.eta`.
"""

import argparse
import dataclasses
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from calibrank.atomic import read_json, stable_hash
from calibrank.study.data.conditions import Condition, eval_conditions, ranker_conditions
from calibrank.study.data.querysets import query_set_specs
from calibrank.study.paths import project_root
from calibrank.study.pipeline import grid
from calibrank.study.pipeline.grid import run_models
from calibrank.study.settings import registry
from calibrank.study.settings.choices import SamplerName
from calibrank.study.settings.profiles import profile_sources

_SOLO = ("data", "negatives", "efficiency", "index")  # phases whose steps run alone
_KEYS = {"profile", "created", "started", "jobs", "cores", "seconds", "rates", "steps"}


@dataclasses.dataclass(frozen=True)
class Step:
    """A workflow step (:func:`calibrank.study.pipeline.grid.steps`): its first output, the models it trains, the ranker it predicts
    with; its estimated seconds, and whether it is pending (an output missing or older than an input or its code key,
    or an input made by a pending step: what snakemake runs)."""

    name: str
    phase: str
    output: str = ""
    trains: tuple[str, ...] = ()
    ranker: str | None = None
    seconds: float = 0.0
    pending: bool = True


def code_sources(cfg, notebooks: Path) -> str:
    """A hash of the path, size and mtime of every file the code keys are read from (the package's sources, the
    notebooks, the profile's params files) and of the step names: the keys are computed again when it changes."""
    package = Path(grid.__file__).resolve().parents[2]  # calibrank/: the core and the study
    files = [
        *sorted(package.rglob("*.py")),
        *sorted(Path(notebooks).resolve().glob("*.ipynb")),
        *(Path(p).resolve() for p in profile_sources(cfg.source or cfg.profile)),
    ]
    stats = [(str(p), st.st_size, st.st_mtime_ns) for p in files if (st := p.stat())]
    return stable_hash([stats, [s.name for s in grid.steps(cfg)]], 64)


def refresh_code(cfg, notebooks: str | os.PathLike | None = None) -> bool:
    """Bring the code key of every step up to date (``runs/<profile>/code/``, :mod:`calibrank.study.pipeline.codekeys`) when
    a file they are read from changed since they were written; True when the keys were computed. The keys are
    computed in a child interpreter (they import the rankers), so that a line or a dry run with nothing changed
    stays torch-free. ``notebooks`` defaults to ``notebooks/`` of the project root."""
    root = project_root()
    notebooks = Path(notebooks) if notebooks is not None else root / "notebooks"
    folder = root / grid.code_path(cfg.profile, grid.INDEX).parent
    names = [*(s.name for s in grid.steps(cfg)), grid.INDEX]
    stamp = folder / ".sources"
    if (
        stamp.exists()
        and stamp.read_text(encoding="utf-8") == code_sources(cfg, notebooks)
        and all((folder / f"{n}.key").exists() for n in names)
    ):
        return False
    subprocess.run(
        [sys.executable, "-m", "calibrank.study.pipeline.codekeys", cfg.profile, "--notebooks", str(notebooks)],
        check=True,
    )
    return True


def _older(outputs, inputs) -> bool:
    root = project_root()
    outs = [root / o for o in outputs]
    if not all(o.exists() for o in outs):
        return True
    newest = max((p.stat().st_mtime for p in (root / i for i in inputs if i) if p.exists()), default=0.0)
    return min(o.stat().st_mtime for o in outs) < newest


def steps(cfg) -> list[Step]:
    """The workflow's steps (:func:`calibrank.study.pipeline.grid.steps`) and the index page, each pending or not. The code
    keys are read as they are: :func:`refresh_code` brings them up to date first."""
    out, made = [], set()  # made: the outputs of pending steps (grid.steps lists a step after what it reads)
    stale = {name for name, _ in grid.stale_markers(cfg.profile)}  # forced to run again (pipeline.launch)
    for s in grid.steps(cfg):
        pending = (
            _older(s.outputs, (*s.inputs, s.code))
            or any(i in made for i in s.inputs)
            or (s.model is not None and s.model.name in stale)
        )
        made |= set(s.outputs) if pending else set()
        out.append(
            Step(
                s.name,
                s.kind,
                s.outputs[0],
                (s.model.name,) if s.model else (),
                registry.key(s.parameters["ranker"]).value if s.kind == "predict" else None,
                pending=pending,
            )
        )
    index = str(grid.index_files(cfg.profile)[1])  # the page's record: the index step's output
    tables = [f for name in grid.TABLES for f in grid.table_files(cfg.profile, name)]
    return out + [
        Step(
            "index",
            "index",
            index,
            pending=any(s.pending for s in out) or _older([index], [grid.code_path(cfg.profile, grid.INDEX), *tables]),
        )
    ]


def _reached(cfg, plan: dict, targets) -> set[str]:
    """The steps of ``plan`` that snakemake's ``targets`` ask for, with the steps they read: a step's name or one of
    its files, or a notebook's page; none, the index or anything else asks for every step."""
    made_by = {o: s.name for s in plan.values() for o in s.outputs}
    root, wanted = project_root(), set()
    for target in targets or ():
        t = Path(str(target))
        t = str(t.relative_to(root)) if t.is_absolute() and t.is_relative_to(root) else str(t)
        page = (
            t[: -len(".html")].split("/")[-1]
            if t.startswith(f"reports/{cfg.profile}/") and t.endswith(".html")
            else None
        )
        if t in plan or t in made_by or page in plan:
            wanted.add(t if t in plan else made_by.get(t, page))
        else:
            return set(plan)
    if not wanted:
        return set(plan)
    parents = {n: {made_by[i] for i in s.inputs if i in made_by} for n, s in plan.items()}
    todo = list(wanted)
    while todo:
        for parent in parents[todo.pop()] - wanted:
            wanted.add(parent)
            todo.append(parent)
    return wanted


def alone(cfg, targets=()) -> set[str]:
    """The steps snakemake will run for ``targets`` (pending, and asked for) that no other of them can run beside:
    each other one comes before or after it in the graph. Such a step takes every core; the others share them
    (``cores / jobs`` threads each), since they may run side by side. Decided from the plan, not from what happens to
    run at a moment, so that the same plan gives a step the same threads (and a trained model the same bits)."""
    plan = {s.name: s for s in grid.steps(cfg)}
    run = {s.name for s in steps(cfg) if s.pending and s.name in plan} & _reached(cfg, plan, targets)
    made_by = {o: s.name for s in plan.values() for o in s.outputs}
    before: dict[str, set[str]] = {}
    for name in plan:  # grid.steps lists a step after the steps it reads
        direct = {made_by[i] for i in plan[name].inputs if i in made_by}
        before[name] = direct.union(*(before[d] for d in direct))
    return {n for n in run if all(m in before[n] or n in before[m] for m in run - {n})}


def work(cfg, sizes: dict, trained=frozenset(), pools: dict | None = None) -> dict[str, dict[str, float]]:
    """Pairs per step: ``train``, training pairs x epochs of each model it trains unless ``trained`` (cached); ``infer``,
    validation pairs x validations, condition pairs x passes of its ranker (once per model). ``sizes``: examples.

    With ``pools`` (responses per corpus and split), ``encode``: the texts the negatives step puts through the
    bi-encoder, each embedding-sampled split's pool and contexts, and the zero-shot baseline's contexts and candidates
    (at most: its true responses and negatives, or its pool where that is smaller)."""
    t, k, models, scored, out = cfg.training, cfg.negatives.train_k, run_models(cfg), set(), {}
    for s in steps(cfg):
        w = out[s.name] = {"train": 0.0, "infer": 0.0}
        if s.phase == "negatives" and pools is not None:
            sampled = {(q.corpus, q.split) for q in query_set_specs(cfg) if q.sampler is SamplerName.embedding}
            fits = [
                Condition(tc.value, "valid", cfg.negatives.train.value, cfg.negatives.eval_k)
                for tc in cfg.rankers.train_corpora
            ]
            scored_sets = list({c.name: c for c in [*eval_conditions(cfg), *fits]}.values())  # the baselines' sets
            splits = {(c.corpus, c.split): 0 for c in scored_sets}
            for c in scored_sets:
                splits[(c.corpus, c.split)] += c.k
            # a split's candidates are drawn from its pool: at most the pool, or every true response and negative
            w["encode"] = float(
                sum(pools[c][split] + sizes[c][split] for c, split in sampled)
                + sum(
                    min(pools[c][split], sizes[c][split] * (1 + k)) + sizes[c][split]
                    for (c, split), k in splits.items()
                )
            )
        for n in (sizes[m.split("-")[1]] for m in s.trains if m not in trained):
            w["train"] += n["train"] * (1 + k) * t.epochs
            per_epoch = -(-n["train"] * (1 + k) // t.batch_size)  # validated every eval_every steps and at epoch ends
            every = t.eval_every or per_epoch * t.epochs + 1
            ends = {per_epoch * (e + 1) for e in range(t.epochs)} | set(range(every, per_epoch * t.epochs + 1, every))
            w["infer"] += len(ends) * n["valid"] * (1 + k)
        info = registry.info(s.ranker) if s.ranker else None
        passes = info.samples(cfg) // info.members(cfg) if info and info.family is registry.Family.stochastic else 1
        for model in models[s.name[len("03_train-") :]] if info else ():
            for c in ranker_conditions(cfg, s.ranker):
                if (model, c.name, passes) not in scored:
                    scored.add((model, c.name, passes))
                    w["infer"] += sizes[c.corpus][c.split] * (1 + c.k) * passes
    return out


def recorded(profile: str) -> dict[str, float]:
    """Median rates under ``runs/<profile>/``: ``train``, pairs/s of each ``train.json``; ``infer``, each shared
    scoring's pairs/s per condition pair (it scored the distinct pairs of all its conditions' pairs)."""
    runs = project_root() / "runs" / profile
    found = {
        "train": [read_json(p).get("train_pairs_per_second") for p in (runs / "models").glob("**/train.json")],
        "infer": [
            (i.get("pairs_per_second") or 0) * i.get("pairs", 0) / i.get("distinct_pairs", 1)
            for i in (read_json(p).get("shared_scoring") or {} for p in (runs / "predictions").glob("**/*.json"))
        ],
    }
    return {kind: statistics.median(x for x in v if x) for kind, v in found.items() if any(v)}


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
        raise ValueError(f"{path}: not an estimate written by calibrank.study.pipeline.eta ({exc})") from None


def clock(seconds: float, minutes: bool = False) -> str:
    if minutes:
        return f"{max(1, round(seconds / 60))} min" if seconds >= 30 else f"{round(seconds)} s"
    h, rest = divmod(max(0, int(round(seconds))), 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def times_path(profile: str) -> Path:
    """``runs/<profile>/progress.jsonl``: the wall time of every step as it finished, one JSON object a line
    (``run``: the start of the run it belonged to, ``step``, ``seconds``)."""
    return project_root() / "runs" / profile / "progress.jsonl"


def record_time(profile: str, step: str, seconds: float, run_start: float | None) -> None:
    """Append a step's wall time to :func:`times_path`: one ``write`` of one line to a file opened for appending, so
    that the lines of steps that finish side by side never mix."""
    path = times_path(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"run": run_start, "step": step, "seconds": round(float(seconds), 3)}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def run_times(profile: str, run_start: float) -> dict[str, float]:
    """``{step: wall seconds}`` of the steps of the run that started at ``run_start`` (:func:`record_time`)."""
    out = {}
    try:
        lines = times_path(profile).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return out
    for line in lines:
        try:
            rec = json.loads(line)
            if rec.get("run") is not None and abs(float(rec["run"]) - run_start) <= 1.0:
                out[str(rec["step"])] = float(rec["seconds"])
        except (ValueError, TypeError, AttributeError, KeyError):
            continue  # a line cut by a step that was killed while writing it
    return out


def pace(estimated: dict[str, float], taken: dict[str, float]) -> float | None:
    """How much longer than estimated the steps done so far took: their wall seconds over their estimated seconds
    (steps without an estimate left out); None before any step with an estimate is done."""
    done = [name for name in taken if estimated.get(name, 0.0) > 0]
    planned = sum(estimated[name] for name in done)
    return sum(taken[name] for name in done) / planned if planned > 0 else None


def _epoch(text: str, default: float) -> float:
    """An ISO time (``eta.json``'s ``created``) as seconds since the epoch; ``default`` when it is not one."""
    try:
        return datetime.datetime.fromisoformat(str(text)).timestamp()
    except ValueError:
        return default


def progress(profile: str, step: str, seconds: float | None, run_start: float | None) -> str:
    """``[12:03 elapsed] STEP done (4:10, estimate 3:50); ~14 min left (6 steps, at 1.1x the estimate)``, or
    ``STEP done (4:10)`` without an estimate of this run. What is left: the pending steps whose output is not newer than
    the run's start, their estimate scaled by this run's pace: on a machine busier than when the estimate was made,
    the first estimate alone says minutes where an hour is left.

    The pace is the wall time since the estimate was written (when snakemake started) over the estimate's wall time
    of the steps done, so that what no step's estimate counts (the HTML pages, waiting for a slot) is in it; before
    ``jobs`` steps are done, when steps half run would weigh on it, the steps' own wall time over their estimate
    (:func:`pace`)."""
    own, path = (f"{clock(seconds)}, " if seconds is not None else ""), eta_path(profile)
    est, data = read_eta(path) if run_start is not None and path.exists() else (None, None)
    if est is None or abs(float(data["started"]) - run_start) > 1.0:  # no estimate of this run
        return f"{step} done" + (f" ({own[:-2]})" if own else "")
    outs = {s.name: project_root() / s.output for s in est.pending}
    left = [
        s
        for s in est.pending
        if s.name != step and not (outs[s.name].exists() and outs[s.name].stat().st_mtime >= run_start)
    ]
    estimated, later = {s.name: s.seconds for s in est.steps}, Estimate(profile, est.jobs, tuple(left)).seconds
    if len(est.pending) - len(left) >= est.jobs and est.seconds - later > 0:
        ratio: float | None = (time.time() - _epoch(data["created"], run_start)) / (est.seconds - later)
    else:
        taken = {**run_times(profile, run_start), **({step: float(seconds)} if seconds is not None else {})}
        ratio = pace(estimated, {k: v for k, v in taken.items() if k in {s.name for s in est.pending}})
    remaining = later * (ratio if ratio is not None else 1.0)
    at = f", at {ratio:.1f}x the estimate" if ratio is not None else ""
    tail = f"~{clock(remaining, True)} left ({len(left)} steps{at})" if left else "nothing left"
    return (
        f"[{clock(time.time() - run_start)} elapsed] {step} done ({own}estimate "
        f"{clock(estimated.get(step, 0.0))}); {tail}"
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m calibrank.study.pipeline.schedule PROFILE STEP --seconds S``: the progress line; it never fails the step."""
    p = argparse.ArgumentParser(
        prog="python -m calibrank.study.pipeline.schedule", description="the progress line after a step"
    )
    p.add_argument("profile")
    p.add_argument("step")
    p.add_argument("--seconds", type=float, help="the step's wall time")
    a, start = p.parse_args(argv), os.environ.get("CALIBRANK_RUN_START")
    try:
        run_start = float(start) if start else None
        if a.seconds is not None:
            record_time(a.profile, a.step, a.seconds, run_start)
        print(progress(a.profile, a.step, a.seconds, run_start), flush=True)
    except Exception as exc:  # a progress line never fails the step
        print(f"{a.step} done (progress unavailable: {exc})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
