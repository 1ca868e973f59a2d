"""The query sets of a profile: examples per corpus and split, and ranking queries per sampler.

:func:`prepare_data` (notebook ``01_data``) reads, splits by dialogue and cuts each corpus into
examples under ``runs/<profile>/data/<corpus>/``. :func:`build_query_sets` (``02_negatives``)
gives the training split the training sampler with ``train_k`` negatives (1: the balanced set
the first paper trained on) and the other splits every evaluation sampler with ``eval_k`` (9),
under ``runs/<profile>/queries/<corpus>/`` with a ``manifest.json``; later notebooks read them
through :func:`load_query_set`. A file whose sha256 does not match its record is a
:class:`~calibrank.study.data.schema.DataError` naming the file and the step to rerun.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pyarrow as pa

from calibrank.atomic import stable_hash, write_json
from calibrank.study.data.corpora import load_corpus
from calibrank.study.data.io import read_examples, read_queries, read_table, write_examples, write_queries, write_table
from calibrank.study.data.negatives import cached_queries
from calibrank.study.data.schema import DataError, Example, RankingQuery
from calibrank.study.data.splits import SPLITS
from calibrank.study.data.stats import split_leaks
from calibrank.study.paths import project_root, run_dir
from calibrank.study.settings.choices import SamplerName
from calibrank.study.settings.schema import Config
from calibrank.table_checks import raise_problems

T = TypeVar("T")

__all__ = [
    "MissingStepError",
    "QuerySetSpec",
    "prepare_data",
    "load_examples",
    "load_pool",
    "load_pool_table",
    "query_set_specs",
    "query_set_path",
    "query_set_files",
    "data_files",
    "build_query_sets",
    "load_query_set",
    "load_query_sets",
    "split_leaks",
    "query_set_problems",
]


class MissingStepError(FileNotFoundError):
    """An input of this step was not made yet; the message names the file and the make target."""


def _data_dir(cfg: Config, corpus: str) -> Path:
    return run_dir(cfg.profile, "data", corpus)


def data_files(cfg: Config) -> list[Path]:
    """What :func:`prepare_data` (``01_data``) writes, relative to the project root: each corpus's examples
    and pool per split, then ``summary.json`` (the workflow's outputs of that step; nothing is created)."""
    base = Path("runs") / cfg.profile / "data"
    return [
        base / str(getattr(c, "value", c)) / f"{split}.{what}.parquet"
        for c in cfg.data.corpora
        for split in SPLITS
        for what in ("examples", "pool")
    ] + [base / "summary.json"]


def prepare_data(cfg: Config) -> dict:
    """Read, split and cut every corpus of the profile; write examples and pools; return a summary."""

    summary = {"profile": cfg.profile, "seed": cfg.seed, "corpora": {}}
    for corpus in cfg.data.corpora:
        t0 = time.perf_counter()
        cs = load_corpus(corpus, cfg.data, cfg.seed)
        out = _data_dir(cfg, cs.corpus)
        entry = {"dialogues": cs.n_dialogues, "examples": {}, "pool": {}, "data_version": {}}
        for split in SPLITS:
            write_examples(out / f"{split}.examples.parquet", cs.examples[split])
            write_table(
                out / f"{split}.pool.parquet",
                pa.table({"response": cs.pools[split], "dialogue_id": cs.pool_dialogues[split]}),
            )
            entry["examples"][split] = len(cs.examples[split])
            entry["pool"][split] = len(cs.pools[split])
            entry["data_version"][split] = stable_hash(
                [[e.eid, list(e.context), e.response] for e in cs.examples[split]] + [cs.pools[split]]
            )
        entry["seconds"] = round(time.perf_counter() - t0, 2)
        summary["corpora"][cs.corpus] = entry
    write_json(run_dir(cfg.profile, "data") / "summary.json", summary)
    return summary


def _need(path: Path, target: str) -> Path:
    if not path.exists():
        raise MissingStepError(f"{path} does not exist: run `{target}` first (or the notebook that makes it)")
    return path


def _input(read: Callable[[Path], T], path: Path, cfg: Config, step: str) -> T:
    """``read(path)`` of a file notebook ``step`` wrote; a :class:`DataError` (unreadable, or not the bytes
    recorded when it was written) gives a command that makes it again. ``make nb-STEP`` alone would find the
    step's page and notebook newer than their inputs and do nothing (snakemake does not rerun a step for a file
    it wrote unless that file is missing and asked for): the command removes the damaged file and the step's
    notebook and page, which ``make nb-STEP`` asks for, so the step runs."""
    try:
        return read(path)
    except DataError as exc:
        report = project_root() / "reports" / cfg.profile
        files = " ".join(shlex.quote(str(p)) for p in (path, report / f"{step}.ipynb", report / f"{step}.html"))
        raise DataError(f"{exc}; make it again with `rm -f {files} && make nb-{step} PROFILE={cfg.profile}`") from None


def load_examples(cfg: Config, corpus: str, split: str) -> list[Example]:
    path = _data_dir(cfg, str(getattr(corpus, "value", corpus))) / f"{split}.examples.parquet"
    target = f"make nb-01_data PROFILE={cfg.profile}"
    return _input(read_examples, _need(path, target), cfg, "01_data")


def load_pool(cfg: Config, corpus: str, split: str) -> list[str]:
    """The response texts a split's negatives are drawn from."""
    return load_pool_table(cfg, corpus, split)["response"]


def load_pool_table(cfg: Config, corpus: str, split: str) -> dict[str, list[str]]:
    """A split's response pool: ``response`` texts and the ``dialogue_id`` each comes from."""
    path = _data_dir(cfg, str(getattr(corpus, "value", corpus))) / f"{split}.pool.parquet"
    table = _input(read_table, _need(path, f"make nb-01_data PROFILE={cfg.profile}"), cfg, "01_data")
    if "dialogue_id" not in table.column_names:
        raise MissingStepError(
            f"{path} has no dialogue_id column (written by an older version): "
            f"rerun `make nb-01_data PROFILE={cfg.profile}`"
        )
    return {name: table.column(name).to_pylist() for name in ("response", "dialogue_id")}


@dataclass(frozen=True)
class QuerySetSpec:
    corpus: str
    split: str
    sampler: SamplerName
    k: int

    @property
    def name(self) -> str:
        return f"{self.corpus}/{self.split}-{self.sampler.value}-k{self.k}"


def query_set_specs(cfg: Config) -> list[QuerySetSpec]:
    """Every query set the profile asks for, in a stable order."""
    neg = cfg.negatives
    specs = []
    for corpus in cfg.data.corpora:
        specs.append(QuerySetSpec(corpus.value, "train", neg.train, neg.train_k))
        # Validation also gets the training sampler: early selection validates on it.
        valid_samplers = list(dict.fromkeys([*neg.eval, neg.train]))
        specs.extend(QuerySetSpec(corpus.value, "valid", s, neg.eval_k) for s in valid_samplers)
        specs.extend(QuerySetSpec(corpus.value, "test", s, neg.eval_k) for s in neg.eval)
    return specs


def _query_set_name(spec: QuerySetSpec) -> str:
    return f"{spec.split}-{spec.sampler.value}-k{spec.k}.parquet"


def query_set_path(cfg: Config, spec: QuerySetSpec) -> Path:
    return run_dir(cfg.profile, "queries", spec.corpus) / _query_set_name(spec)


def query_set_files(cfg: Config) -> list[Path]:
    """What :func:`build_query_sets` (``02_negatives``) writes, relative to the project root: every query set,
    then ``manifest.json`` (the workflow's outputs of that step; nothing is created)."""
    base = Path("runs") / cfg.profile / "queries"
    return [base / spec.corpus / _query_set_name(spec) for spec in query_set_specs(cfg)] + [base / "manifest.json"]


def build_query_sets(cfg: Config) -> dict:
    """Build (or read from the negatives cache) every query set of the profile; write a manifest."""

    manifest = {"profile": cfg.profile, "seed": cfg.seed, "query_sets": []}
    for spec in query_set_specs(cfg):
        t0 = time.perf_counter()
        pool = load_pool_table(cfg, spec.corpus, spec.split)
        queries = cached_queries(
            load_examples(cfg, spec.corpus, spec.split),
            corpus=spec.corpus,
            split=spec.split,
            sampler=spec.sampler.value,
            k=spec.k,
            seed=cfg.seed,
            pool=pool["response"],
            pool_dialogues=pool["dialogue_id"],
            params=cfg.negatives.params_for(spec.sampler),
        )
        raise_problems(query_set_problems(cfg, {spec.name: queries}))
        path = write_queries(query_set_path(cfg, spec), queries)
        manifest["query_sets"].append(
            {
                "name": spec.name,
                "corpus": spec.corpus,
                "split": spec.split,
                "sampler": spec.sampler.value,
                "k": spec.k,
                "queries": len(queries),
                "path": str(path.relative_to(run_dir(cfg.profile))),
                "seconds": round(time.perf_counter() - t0, 2),
            }
        )
    write_json(run_dir(cfg.profile, "queries") / "manifest.json", manifest)
    return manifest


def load_query_set(
    cfg: Config, corpus: str, split: str, sampler: str | SamplerName, k: int | None = None
) -> list[RankingQuery]:
    """A query set written by :func:`build_query_sets`; ``k`` defaults to the profile's k for the split."""
    neg = cfg.negatives
    k = k if k is not None else (neg.train_k if split == "train" else neg.eval_k)
    spec = QuerySetSpec(str(getattr(corpus, "value", corpus)), split, SamplerName(sampler), k)
    target = f"make nb-02_negatives PROFILE={cfg.profile}"
    return _input(read_queries, _need(query_set_path(cfg, spec), target), cfg, "02_negatives")


def load_query_sets(cfg: Config, split: str | None = None, corpus: str | None = None) -> dict[str, list[RankingQuery]]:
    """Every query set of the profile (optionally one split / corpus), keyed by :attr:`QuerySetSpec.name`."""
    out = {}
    for spec in query_set_specs(cfg):
        if (split is None or spec.split == split) and (
            corpus is None or spec.corpus == str(getattr(corpus, "value", corpus))
        ):
            out[spec.name] = load_query_set(cfg, spec.corpus, spec.split, spec.sampler, spec.k)
    return out


def query_set_problems(cfg: Config, query_sets: dict[str, list[RankingQuery]]) -> list[str]:
    """Query sets that break the contract: one relevant among k + 1 distinct candidates (empty when all is well)."""
    problems = []
    for name, queries in query_sets.items():
        k = cfg.negatives.train_k if "/train-" in name else cfg.negatives.eval_k
        for q in queries:
            if len(q.candidates) != k + 1 or sum(q.labels) != 1:
                problems.append(f"{name}: query {q.qid!r} has {len(q.candidates)} candidates, {sum(q.labels)} relevant")
            elif len(set(q.candidates)) != len(q.candidates):
                problems.append(f"{name}: query {q.qid!r} has duplicate candidates")
    return problems
