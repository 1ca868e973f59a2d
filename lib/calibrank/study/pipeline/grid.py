"""The graph of runs behind a profile's report: every step, its files, and the command that trains one model.

:func:`steps` lists the jobs of ``make report`` in an order that runs: notebooks 01 and 02, one
training job per model (:func:`grid_models`, :func:`run_models`; rankers that share a model train
it once, :func:`calibrank.study.settings.registry.trained_model`), ``03_train`` per ranker x corpus x
seed, the analyses, and 07 last and alone. ``python -m calibrank.study.pipeline.grid steps PROFILE``
prints them for ``workflow/Snakefile``; a training job runs :mod:`calibrank.study.pipeline.train`.
Torch-free: the workflow reads it.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from calibrank.atomic import read_json, sha256_file
from calibrank.study.data import conditions
from calibrank.study.data.querysets import data_files, query_set_files, query_set_specs
from calibrank.study.paths import project_root
from calibrank.study.settings import registry
from calibrank.study.settings.checks import ConfigError
from calibrank.study.settings.choices import Corpus, RankerName
from calibrank.study.settings.config import load_config, parse_run_name, run_name, train_runs, training_seeds
from calibrank.study.settings.profiles import profile_sources
from calibrank.study.settings.schema import Config

__all__ = [
    "Step",
    "steps",
    "ANALYSES",
    "KINDS",
    "GridModel",
    "grid_models",
    "run_models",
    "model_for",
    "marker_path",
    "code_path",
    "INDEX",
    "TABLES",
    "index_files",
    "index_is_current",
    "loaded_model_problem",
    "stale_markers",
    "table_files",
    "reused_scores",
    "shared_runs",
    "main",
]


@dataclass(frozen=True)
class GridModel:
    """One trained model of the grid: the command that trains it, and the name of its done marker.

    ``ranker`` and ``member`` are what ``python -m calibrank.study.pipeline.train`` is called with
    (``bert`` for every model that ``bert`` shares; ``ensemble`` only for members 1..M-1).
    """

    name: str
    ranker: str
    corpus: str
    seed: int
    member: int | None = None

    def args(self, profile: str) -> list[str]:
        """Arguments of ``python -m calibrank.study.pipeline.train`` that train this model."""
        out = [profile, self.ranker, self.corpus, "--seed", str(self.seed)]
        return out + (["--member", str(self.member)] if self.member is not None else [])

    @property
    def data_parallel(self) -> bool:
        """The model trains data-parallel to the single-process update (a loss that is a mean over
        pairs): :attr:`calibrank.study.settings.registry.RankerInfo.data_parallel`."""
        return registry.info(self.ranker).data_parallel


def model_for(
    cfg: Config, ranker: str | RankerName, corpus: str | Corpus, seed: int | None = None, member: int | None = None
) -> GridModel:
    """The grid model that ``ranker`` trained on ``corpus`` with ``seed`` (ensemble: ``member``) loads.

    Raises ``ValueError`` naming the parameter for a ranker, corpus, seed or member the
    profile does not have.
    """
    try:
        key = registry.key(ranker)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None
    try:
        corp = Corpus(corpus)
    except ValueError:
        raise ValueError(
            f"corpus: unknown corpus {corpus!r}; known corpora: {', '.join(c.value for c in Corpus)}"
        ) from None
    if corp not in cfg.rankers.train_corpora:
        raise ValueError(
            f"corpus: {corp.value!r} is not among rankers.train_corpora of profile {cfg.profile!r} "
            f"({', '.join(c.value for c in cfg.rankers.train_corpora)})"
        )
    seeds = training_seeds(cfg)
    seed = seeds[0] if seed is None else int(seed)
    if seed not in seeds:
        raise ValueError(
            f"seed: {seed} is not a training seed of profile {cfg.profile!r} (rankers.seeds: {list(seeds)})"
        )
    if key is RankerName.ensemble:
        members = cfg.rankers.ensemble.members
        if member is None:
            raise ValueError(
                f"member: ensemble needs --member, the index of one of its {members} members (0..{members - 1})"
            )
        if not 0 <= member < members:
            raise ValueError(
                f"member: expected an index in 0..{members - 1} (rankers.ensemble.members = {members}), got {member}"
            )
        if member > 0:
            return GridModel(f"ensemble-{corp.value}-seed{seed}-member{member}", key.value, corp.value, seed, member)
    elif member is not None:
        raise ValueError(f"member: only the ensemble has members, ranker {registry.info(key).name!r} takes no --member")
    trained = registry.trained_model(key, member)  # its own model, or the one it shares (registry)
    return GridModel(f"{trained}-{corp.value}-seed{seed}", trained, corp.value, seed)


def _run_models(cfg: Config, ranker: RankerName | str, corpus: Corpus, seed: int) -> list[GridModel]:
    if ranker is RankerName.ensemble:
        return [model_for(cfg, ranker, corpus, seed, m) for m in range(cfg.rankers.ensemble.members)]
    return [model_for(cfg, ranker, corpus, seed)]


def run_models(cfg: Config) -> dict[str, list[str]]:
    """For every notebook-03 run of the profile (:func:`calibrank.study.settings.config.train_runs`), the grid models it loads."""
    out = {}
    for run in train_runs(cfg):
        ranker, corpus, seed = parse_run_name(run, cfg)
        out[run] = [m.name for m in _run_models(cfg, ranker, corpus, seed)]
    return out


def shared_runs(cfg: Config) -> dict[str, str]:
    """``{run: other run}`` for every notebook-03 run that loads a model another run of the profile
    trains (:func:`calibrank.study.settings.registry.trained_model`), e.g. ``mc_dropout-chitchat`` loads the model of
    ``bert-chitchat``."""
    out = {}
    names = {r.value for r in cfg.rankers.names}
    for run in train_runs(cfg):
        ranker, corpus, seed = parse_run_name(run, cfg)
        first = 0 if registry.info(ranker).first_member_shares else None
        owner = registry.trained_model(ranker, first)
        if owner != ranker.value and owner in names:
            out[run] = run_name(owner, corpus, seed, cfg)
    return out


def reused_scores(cfg: Config) -> dict[str, str]:
    """``{run: other run}`` for every run of :func:`shared_runs` that scores the shared model once per pair, as
    its owner does (temperature scaling; the ensemble's member 0), so that it reads the owner's cached logits:
    the graph runs it after the owner, and the scoring is done, and counted, once. MC Dropout samples
    dropout masks and scores on its own."""
    out = {}
    for run, owner in shared_runs(cfg).items():
        info = registry.info(parse_run_name(run, cfg)[0])
        if info.family is not registry.Family.stochastic or info.samples(cfg) == info.members(cfg):
            out[run] = owner
    return out


def grid_models(cfg: Config) -> list[GridModel]:
    """Every model the profile's notebook runs load, each once, in run order."""
    seen: dict[str, GridModel] = {}
    for run in train_runs(cfg):
        ranker, corpus, seed = parse_run_name(run, cfg)
        for m in _run_models(cfg, ranker, corpus, seed):
            seen.setdefault(m.name, m)
    return list(seen.values())


def marker_path(profile: str, name: str) -> Path:
    """``runs/<profile>/grid/<model>.json``: written when the model is trained (relative to the project root)."""
    return Path("runs") / profile / "grid" / f"{name}.json"


#: The index page's step (``python -m calibrank.study.pipeline.report``), after every page: its code has a key too.
INDEX = "index"


def code_path(profile: str, name: str) -> Path:
    """``runs/<profile>/code/<step>.key``: the key of the code the step reaches (:mod:`calibrank.study.pipeline.codekeys`),
    rewritten only when it changes: the step's code input in the workflow (relative to the project root)."""
    return Path("runs") / profile / "code" / f"{name}.key"


def index_files(profile: str) -> tuple[Path, Path]:
    """``reports/<profile>/index.html`` and ``index.json``, the record of the page the index step last wrote (its
    sha256): the record, not the page, is the step's output in the workflow, since snakemake removes the outputs of a
    step before it runs and after it fails, and a page that cannot be rebuilt is kept, marked stale
    (:mod:`calibrank.study.pipeline.report`). Relative to the project root."""
    folder = Path("reports") / profile
    return folder / "index.html", folder / "index.json"


def index_is_current(profile: str) -> bool:
    """Whether ``index.html`` is the page ``index.json`` records (its sha256); when not (the page was removed, edited,
    or marked stale by a rebuild that failed), the record is removed, so that the workflow builds the page again."""
    page, record = (project_root() / p for p in index_files(profile))
    try:
        current = read_json(record).get("sha256") == sha256_file(page)
    except (OSError, ValueError, AttributeError):
        current = False
    if not current:
        record.unlink(missing_ok=True)
    return current


#: The tables each analysis notebook exports (``export_tables(..., notebook=...)``), in its order: outputs of its
#: step, with the manifest that lists them, and inputs of the index, which reads them back. A table removed is made
#: again by its notebook; one changed after its notebook wrote it is newer than the page's record, so the next
#: ``make report`` rebuilds the index, which checks each table against its sha256 and refuses a damaged one.
TABLES = {
    "04_calibration": (
        "metrics_all",
        "intervals_all",
        "baselines_all",
        "baselines_intervals",
        "table1_bert",
        "table2_ece_change",
        "figure2_ece_by_negatives",
        "reliability",
        "paper2023_in_domain",
        "paper2023_shift",
        "claims_04_calibration",
    ),
    "05_risk_aware": ("figure3_b_sweep", "table3_risk_aware", "table3_risk_aware_target_b", "claims_05_risk_aware"),
    "06_nota": ("nota_tables_4_5", "claims_06_nota"),
    "07_efficiency": ("efficiency", "efficiency_measured", "claims_07_efficiency"),
    "08_beyond": (
        "prior_ece_by_negatives_08",
        "prior_summary_08",
        "recalibration_08",
        "recalibration_best_08",
        "selective_08",
        "conformal_08",
        "shift_detection_08",
        "performance_prediction_08",
        "listwise_08",
        "nota_conformal_08",
        "nota_threshold_08",
        "findings_08",
    ),
}


def table_files(profile: str, notebook: str) -> list[str]:
    """The CSV files of :data:`TABLES` a notebook writes, then its manifest (relative to the project root)."""
    folder = Path("reports") / profile / "tables"
    return [str(folder / f"{name}.csv") for name in TABLES.get(notebook, ())] + (
        [str(folder / f"{notebook}.json")] if notebook in TABLES else []
    )


def _marker_model(profile: str, name: str) -> tuple[Path, dict | None]:
    """The marker of a grid model and what it records (None when it is missing or unreadable)."""
    marker = project_root() / marker_path(profile, name)
    try:
        record = read_json(marker)
    except (OSError, ValueError):
        return marker, None
    return marker, record if isinstance(record, dict) and isinstance(record.get("model_dir"), str) else None


def _finished(folder: Path) -> bool:
    """Whether a model folder holds a finished model (as :func:`calibrank.study.model.training.is_trained` says,
    without torch): its weights and ``train.json``, which is written last."""
    return (folder / "model.safetensors").is_file() and (folder / "train.json").is_file()


def stale_markers(profile: str) -> list[tuple[str, Path]]:
    """``(model, its folder)`` for every grid model whose marker names a folder that holds no finished model any
    more: its training step must run again (``snakemake --forcerun``, :mod:`calibrank.study.pipeline.launch`), since
    neither a marker dated back nor a removed one makes snakemake run it for a target that is up to date (snakemake
    compares the checksums of unchanged inputs, and asks for a missing file only where a target needs it)."""
    out = []
    for marker in sorted((project_root() / "runs" / profile / "grid").glob("*.json")):
        _, record = _marker_model(profile, marker.stem)
        if record is not None and not _finished(folder := project_root() / record["model_dir"]):
            out.append((marker.stem, folder))
    return out


def loaded_model_problem(cfg: Config, step: Step) -> str | None:
    """Why a model ``step`` loads cannot be loaded as its training step wrote it, in one line that names the command
    that makes it again; None when every one can. A step that only loads models never trains one: without this check
    it would train a missing one itself, with its own threads, into the folder of the training step's."""
    runs: dict[str, str] = {}
    for run, models in run_models(
        cfg
    ).items():  # the first run that loads a model: its owner's (bert's, not MC Dropout's)
        for m in models:
            runs.setdefault(m, run)
    for name in step.loads:
        again = f"make nb-03_train-{runs[name]} PROFILE={cfg.profile}"
        marker, record = _marker_model(cfg.profile, name)
        if record is None:
            return (
                f"model {name} has no marker ({marker.relative_to(project_root())}): its training step has not run; "
                f"make it with `{again}`"
            )
        folder = project_root() / record["model_dir"]
        if not _finished(folder):
            return (
                f"model {name}: {record['model_dir']} holds no trained model (removed since it was trained); "
                f"make it again with `{again}`"
            )
        try:
            recorded = read_json(folder / "train.json").get("model_sha256")
            ok = isinstance(recorded, str) and sha256_file(folder / "model.safetensors") == recorded
        except (OSError, ValueError, AttributeError):
            ok = False
        if not ok:
            return (
                f"model {name}: {record['model_dir']}/model.safetensors is not the model its train.json records "
                f"(sha256); make it again with `rm -rf {shlex.quote(record['model_dir'])} && {again}`"
            )
    return None


#: The notebooks that read every 03 run's Predictions, in the order they are listed (07 comes after them).
ANALYSES = ("04_calibration", "05_risk_aware", "06_nota", "08_beyond")
#: The kinds of :class:`Step`, in the order the graph runs them: a cluster asks for resources by kind.
KINDS = ("data", "negatives", "train", "predict", "analysis", "efficiency")


@dataclass(frozen=True)
class Step:
    """One job of the graph of runs: a notebook run (papermill) or the training of one grid model.

    Paths are relative to the project root. ``inputs`` are the files the step reads that a step
    before it writes (and the profile's params files); ``outputs`` are what it writes, its executed
    notebook or done marker first. ``alone``: the step takes every core and nothing runs beside it.
    ``gpu``: a GPU speeds it up. ``kind`` groups steps that ask a cluster for the same resources.
    ``code``: the file holding the key of the code it runs (:func:`code_path`), an input of the step.
    ``loads``: the grid models a notebook step loads (and never trains: :func:`loaded_model_problem`).
    """

    name: str
    kind: str
    notebook: str | None
    parameters: dict[str, str | int]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    alone: bool
    threads: int
    gpu: bool
    model: GridModel | None = None
    code: str = ""
    loads: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {self.kind!r}")
        if (self.notebook is None) != (self.model is not None):
            raise ValueError(f"step {self.name!r}: a step runs a notebook or trains a model, exactly one of them")
        if not self.outputs:
            raise ValueError(f"step {self.name!r}: no outputs")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise ValueError(f"threads: expected a positive integer, got {self.threads!r}")


def _relative(path: Path) -> str:
    root = project_root()
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return str(path.resolve())


def steps(cfg: Config, *, threads: int = 1, cores: int = 1) -> list[Step]:
    """Every step of ``make report`` for ``cfg``, each after the steps it reads.

    ``threads``: threads of a step that runs side by side with others (cores / jobs side by side);
    a step that runs alone (01, 02, 07) takes ``max(threads, cores)``.
    """
    for key, value in (("threads", threads), ("cores", cores)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{key}: expected a positive integer, got {value!r}")
    solo = max(threads, cores)
    report = f"reports/{cfg.profile}"
    params = tuple(_relative(p) for p in profile_sources(cfg.source or cfg.profile))
    base = {"profile": cfg.profile}

    def notebook(
        name: str,
        kind: str,
        inputs: list[str],
        outputs: list[str] | None = None,
        alone: bool = False,
        gpu: bool = False,
        loads: tuple[str, ...] = (),
        **parameters,
    ) -> Step:
        return Step(
            name,
            kind,
            name.split("-")[0],
            {**base, **parameters},
            (*inputs, *params),
            (f"{report}/{name}.ipynb", *(outputs or []), *table_files(cfg.profile, name)),
            alone,
            solo if alone else threads,
            gpu,
            loads=loads,
        )

    # The files a step reads are its inputs: one removed makes the step that writes it run again, and one changed
    # (damaged) after it was written reruns the first step that reads it, which finds it and says so.
    sets = {
        (q.corpus, q.split, q.sampler.value, q.k): str(f) for q, f in zip(query_set_specs(cfg), query_set_files(cfg))
    }

    def query_sets(corpus: str, conds=()) -> list[str]:  # a training corpus's sets (train, valid) and conditions'
        train = [
            (corpus, split, cfg.negatives.train.value, k)
            for split, k in (("train", cfg.negatives.train_k), ("valid", cfg.negatives.eval_k))
        ]
        return list(dict.fromkeys(sets[key] for key in [*train, *((c.corpus, c.split, c.sampler, c.k) for c in conds)]))

    data = notebook("01_data", "data", [], [str(p) for p in data_files(cfg)], alone=True)
    negatives = notebook(
        "02_negatives",
        "negatives",
        [data.outputs[0], *data.outputs[1:-1]],
        [str(p) for p in query_set_files(cfg)],
        alone=True,
        gpu=True,
    )
    out = [data, negatives]
    for model in grid_models(cfg):
        out.append(
            Step(
                f"train-{model.name}",
                "train",
                None,
                {},
                (negatives.outputs[0], *query_sets(model.corpus), *params),
                (str(marker_path(cfg.profile, model.name)),),
                False,
                threads,
                True,
                model,
            )
        )
    runs, after = run_models(cfg), reused_scores(cfg)
    predict = []
    for run, models in runs.items():
        ranker, corpus, seed = parse_run_name(run, cfg)
        conds = conditions.ranker_conditions(cfg, ranker)
        files = [conditions.predictions_path(cfg, ranker, corpus, cond, seed) for cond in conds]
        first = [f"{report}/03_train-{after[run]}.ipynb"] if run in after else []
        predict.append(
            notebook(
                f"03_train-{run}",
                "predict",
                [
                    negatives.outputs[0],
                    *query_sets(corpus.value, conds),
                    *(str(marker_path(cfg.profile, m)) for m in models),
                    *first,
                ],
                [_relative(f) for p in files for f in (p, p.with_suffix(".json"))],
                gpu=True,
                loads=tuple(models),
                ranker=registry.info(ranker).name,
                train_corpus=corpus.value,
                seed=seed,
            )
        )
    out += predict
    made = [f for step in predict for f in step.outputs]
    out += [notebook(name, "analysis", made) for name in ANALYSES]
    # 07 times the main seed's rankers trained on the first training corpus, on every corpus's test sets
    timed = [run_name(r, cfg.rankers.train_corpora[0], training_seeds(cfg)[0], cfg) for r in cfg.rankers.names]
    out.append(
        notebook(
            "07_efficiency",
            "efficiency",
            [*(s.outputs[0] for s in out if s.notebook), *negatives.outputs[1:-1]],
            alone=True,
            gpu=True,
            loads=tuple(dict.fromkeys(m for r in timed for m in runs[r])),
        )
    )
    return [dataclasses.replace(s, code=str(code_path(cfg.profile, s.name))) for s in out]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m calibrank.study.pipeline.grid", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_steps = sub.add_parser(
        "steps",
        help="print every step of the profile's graph: name, notebook (- for a training "
        "job) and papermill parameters (-p KEY VALUE ...)",
    )
    p_steps.add_argument("profile", help="params/<profile>.yaml")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        cfg = load_config(args.profile)
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for step in steps(cfg):
        params = " ".join(f"-p {k} {v}" for k, v in step.parameters.items())
        print(step.name, step.notebook or "-", params)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
