"""Train one model of a profile's grid (or find it in the cache) and write its done marker: a training job.

    python -m calibrank.study.pipeline.train PROFILE RANKER CORPUS [--seed N] [--member M]

trains the model as notebook 03 would and writes ``runs/<profile>/grid/<model>.json``. Under
``torchrun`` it trains data-parallel (:mod:`calibrank.study.model.training`); the GP rankers, whose loss
depends on whole batches, are refused. This is the only step that trains a model: a notebook step that finds one
missing fails (:func:`calibrank.study.pipeline.grid.loaded_model_problem`).

The model cache's key (:func:`calibrank.study.model.rankers.keys.model_key`) leaves out the threads a model trains
with and the device (the CPU, or which GPU): a model trained with other threads is reused as it is, though training
it again with other threads would give other bits (floating-point sums in another order). The marker and the line
this job prints say which threads made the model in the cache, and whether this job trained it or found it there.
A damaged or missing input (a query set) is one line naming it and the command that makes it again, exit status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch
import torch.distributed as dist

from calibrank.atomic import read_json, write_json
from calibrank.study.data import conditions
from calibrank.study.data.querysets import MissingStepError
from calibrank.study.data.schema import DataError
from calibrank.study.model import experiment
from calibrank.study.model.rankers import ranker_from_config
from calibrank.study.model.training import is_trained, setup_distributed
from calibrank.study.paths import project_root, run_dir
from calibrank.study.pipeline.grid import GridModel, grid_models, marker_path, model_for
from calibrank.study.settings.checks import ConfigError
from calibrank.study.settings.choices import RankerName
from calibrank.study.settings.config import load_config
from calibrank.study.settings.schema import Config

__all__ = ["NOT_IN_KEY", "main", "model_dir", "train", "trained_models"]

#: What changes a trained model's bits but not its cache key, as the marker records it.
NOT_IN_KEY = "threads, device: a model trained with other threads or on another device is reused as it is"


def model_dir(cfg: Config, model: GridModel) -> Path:
    """The model-cache folder ``model`` trains into (:meth:`calibrank.study.model.rankers.base.Ranker.model_dirs`);
    needs the training corpus's query sets (notebook 02), builds and trains nothing."""
    ranker = ranker_from_config(cfg, model.ranker, conditions.models_dir(cfg, model.corpus), seed=model.seed)
    return ranker.model_dirs(*conditions.training_queries(cfg, model.corpus))[model.member or 0]


def trained_models(cfg: Config) -> set[str]:
    """The grid models whose folder already holds a finished model (a run would load, not train,
    them); empty while the query sets they are keyed by do not exist yet."""
    try:
        return {m.name for m in grid_models(cfg) if is_trained(model_dir(cfg, m))}
    except MissingStepError:
        return set()


def _launched_data_parallel() -> bool:
    try:
        world = int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        raise ValueError(f"WORLD_SIZE={os.environ['WORLD_SIZE']!r}: expected an integer (set by torchrun)") from None
    return world > 1 or (dist.is_available() and dist.is_initialized())


def train(cfg: Config, model: GridModel) -> Path:
    """Train ``model`` (or load it from the cache) and write its done marker; return the marker's path.

    Under ``torchrun`` every process trains (data parallel) and process 0 writes the marker.
    """
    multi = _launched_data_parallel()
    if multi and not model.data_parallel:
        raise ValueError(
            f"ranker: {model.ranker!r} cannot train data-parallel (its training depends on whole batches, "
            f"not on a mean over pairs); train it in one process, without torchrun"
        )
    started_group = multi and not dist.is_initialized()
    rank, world, device = setup_distributed(None) if multi else (0, 1, None)
    try:
        cached = is_trained(model_dir(cfg, model))  # found in the cache, or trained by this job
        t0 = time.perf_counter()
        if model.member is not None:
            ensemble = ranker_from_config(
                cfg, RankerName.ensemble, conditions.models_dir(cfg, model.corpus), device=device, seed=model.seed
            )
            trained = ensemble.fit_member(model.member, *conditions.training_queries(cfg, model.corpus))
        else:
            trained = experiment.train_ranker(cfg, model.ranker, model.corpus, device=device, seed=model.seed).trained
        seconds = time.perf_counter() - t0
        dest = project_root() / marker_path(cfg.profile, model.name)
        if rank == 0:
            folder = Path(trained.workdir).resolve()
            try:
                shown = str(folder.relative_to(project_root()))
            except ValueError:
                shown = str(folder)
            run_dir(cfg.profile, "grid")
            write_json(
                dest,
                {
                    **asdict(model),
                    "profile": cfg.profile,
                    "model_dir": shown,
                    "steps": trained.result.steps,
                    "best_step": trained.result.best_step,
                    "resumed_from": trained.result.resumed_from,
                    "train_seconds": round(trained.result.seconds, 3),
                    "job_seconds": round(seconds, 3),
                    "processes": world,
                    "device": str(next(trained.model.parameters()).device),
                    "threads": trained.result.threads,
                    "from_cache": cached,
                    "not_in_key": NOT_IN_KEY,
                },
            )
        return dest
    finally:
        if started_group and dist.is_initialized():
            dist.destroy_process_group()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m calibrank.study.pipeline.train", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("profile", help="params/<profile>.yaml")
    parser.add_argument("ranker", help="a ranker of the profile (mc_dropout and temperature train the bert model)")
    parser.add_argument("corpus", help="a training corpus of the profile (rankers.train_corpora)")
    parser.add_argument("--seed", type=int, default=None, help="a training seed of the profile (default: the main one)")
    parser.add_argument(
        "--member", type=int, default=None, help="ensemble only: the member index (0 is the bert model)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        cfg = load_config(args.profile)
        model = model_for(cfg, args.ranker, args.corpus, args.seed, args.member)
        if _launched_data_parallel() and not model.data_parallel:
            raise ValueError(
                f"ranker: {model.ranker!r} cannot train data-parallel (its training depends on whole "
                f"batches, not on a mean over pairs); train it in one process, without torchrun"
            )
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        dest = train(cfg, model)  # errors of training itself keep their traceback
    except (DataError, MissingStepError) as exc:  # an input damaged or missing: its message names the file and a fix
        print(f"error: train-{model.name}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    if int(os.environ.get("RANK", "0")) == 0:
        record = read_json(dest)
        how = "found in the model cache, trained" if record["from_cache"] else "trained"
        print(
            f"{model.name}: {how} with {record['threads']} threads on {record['device']} (this job: "
            f"{torch.get_num_threads()}; the model key leaves threads and the device out) -> {dest}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
