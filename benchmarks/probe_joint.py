"""How many joint layers? ``bert`` trained at equal steps for each ``training.joint_layers`` and head.

``python -m benchmarks.probe_joint PROFILE --joint-layers 0 2 4 6 --heads segments pooler --seeds 13
[--ranker NAME] [--train-examples N] [--corpus C] [--device auto|cpu|cuda] [--models DIR] [--resamples R]
[--predictions DIR] --out DIR``

For every (joint layers, head, seed) the profile's ``bert`` (or ``--ranker``: any ranker that trains a
model of its own, e.g. ``sngp``, with its profile section) is trained on the profile's training
corpus (its first, unless ``--corpus``) with the profile's settings otherwise: the same data,
epochs, batch size and schedule, hence the same number of steps. Joint layers are realised by
attention masks over the same sequences (:func:`calibrank.study.model.backbone.encode`), so a step costs the
same for every setting and equal steps are equal training time up to noise; the seconds of each
training are in the table. ``null`` in ``--joint-layers`` is the papers' cross-encoder; ``L``
(the encoder's layer count) gives the same numbers through the layer-by-layer path.

Each trained model, and the untrained model it started from (stage ``start``: where fine-tuning
begins; with no joint layer and the ``segments`` head this is the zero-shot bi-encoder), is
scored on every test condition of the profile (each corpus x each evaluation sampler); the start is
scored with ``bert`` (``focal`` starts from the same model). A setting the profile's check refuses for
the ranker (e.g. SNGP's spectral norm on the pooler with another head) gets one row saying so. Beside
each R10@1 (95% percentile bootstrap over test queries, :mod:`calibrank.metrics.resample`) the
CSV holds the zero-shot bi-encoder rule's R10@1 on the same queries (:mod:`calibrank.study.data.baselines`)
with its interval, the paired difference with its interval and the one-sided permutation
p-value of "the ranker ranks better", and ``above_biencoder_interval``: the ranker's R10@1 above
the upper end of the bi-encoder's interval. With several seeds, rows with seed ``all`` resample
seeds too. A setting that cannot score (no joint layer with the ``pooler`` head: the score
would not depend on the response) gets one row saying so.

The query sets of the profile are read from ``runs/<profile>/queries/`` when notebook 02 made
them, else built as it builds them (the negatives cache under ``data/cache/`` is reused); the
trained models go to the profile's model cache (``runs/<profile>/models/<corpus>/``) unless
``--models``, keyed as the study keys them, so a setting the study also trains is trained once.
Device ``auto`` is CUDA when there is one; the profile's ``precision: auto`` then trains and
scores in bf16. Written under ``--out``: ``joint_layers.csv``, ``summary.md`` (in-distribution
and mean shifted R10@1 per setting) and ``run.json`` (arguments, machine, wall time). With
``--predictions DIR`` every Predictions file scored (start and trained, per setting, seed and test
condition) is saved there too, named ``<ranker>-<train corpus>-<joint>-<head>-seed<S>-<stage>-<test corpus>-<sampler>.npz``,
so that the study's metrics (:mod:`calibrank.metrics.resample`) can be computed on them.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from calibrank.atomic import atomic_path, write_json
from calibrank.hardware import use_bf16
from calibrank.metrics.resample import compare, features, interval
from calibrank.pairs import score_pairs
from calibrank.predictions import Predictions
from calibrank.study.analysis.efficiency import machine_info
from calibrank.study.data.baselines import BaselineName, baseline_predictions, baseline_scores
from calibrank.study.data.conditions import Condition, eval_conditions, shift_kind
from calibrank.study.data.conditions import models_dir as profile_models_dir
from calibrank.study.data.querysets import MissingStepError, build_query_sets, load_query_set, prepare_data
from calibrank.study.data.schema import RankingQuery
from calibrank.study.model.rankers import ranker_from_config
from calibrank.study.model.rankers.keys import queries_version
from calibrank.study.model.rankers.scoring import distinct_pairs, sigmoid
from calibrank.study.settings import registry
from calibrank.study.settings.checks import ConfigError
from calibrank.study.settings.choices import Pooling
from calibrank.study.settings.config import load_config
from calibrank.study.settings.schema import BACKBONE_LAYERS, Config, check_joint_layers

__all__ = ["COLUMNS", "probe", "query_sets", "settings", "summary", "main"]

#: The columns of ``joint_layers.csv``, in order.
COLUMNS = [
    "ranker",
    "joint_layers",
    "head",
    "seed",
    "stage",
    "corpus",
    "sampler",
    "shift",
    "queries",
    "R@1",
    "R@1 low",
    "R@1 high",
    "biencoder R@1",
    "biencoder low",
    "biencoder high",
    "diff",
    "diff low",
    "diff high",
    "p better",
    "above_biencoder_interval",
    "train_seconds",
    "steps",
    "best_step",
    "valid R@1",
    "device",
    "bf16",
    "note",
]


def settings(
    joint_layers: Sequence[int | None], heads: Sequence[str], backbone: str
) -> list[tuple[int | None, Pooling, str]]:
    """``(joint_layers, head, why not)`` for every combination; ``why not`` is empty for one that can run.

    A value out of range for a backbone of known depth is an error (:func:`calibrank.study.settings.config.check_joint_layers`).
    """
    out = []
    for j in joint_layers:
        for head in heads:
            pooling = Pooling(head)
            try:
                check_joint_layers(j, pooling=pooling, n_layers=BACKBONE_LAYERS.get(backbone), backbone=backbone)
                out.append((j, pooling, ""))
            except ConfigError as exc:
                if j is not None and j == 0 and pooling is Pooling.pooler:
                    out.append((j, pooling, f"not run: {exc}"))
                else:
                    raise ConfigError(f"--joint-layers: {exc}") from None
    return out


def query_sets(
    cfg: Config, corpus: str
) -> tuple[list[RankingQuery], list[RankingQuery], list[Condition], list[list[RankingQuery]], str]:
    """``(train, valid, test conditions, their queries, "reused" | "built")`` of the profile for training on ``corpus``."""
    conditions = eval_conditions(cfg, ("test",))
    sampler = cfg.negatives.train.value

    def read():
        return (
            load_query_set(cfg, corpus, "train", sampler),
            load_query_set(cfg, corpus, "valid", sampler),
            [load_query_set(cfg, c.corpus, c.split, c.sampler, c.k) for c in conditions],
        )

    try:
        train, valid, tests = read()
        how = "reused"
    except MissingStepError:
        try:
            build_query_sets(cfg)
        except MissingStepError:
            prepare_data(cfg)
            build_query_sets(cfg)
        train, valid, tests = read()
        how = "built"
    return train, valid, conditions, tests, how


def _subsample(queries: list[RankingQuery], n: int | None, seed: int) -> list[RankingQuery]:
    """``n`` of the training queries, drawn with ``seed`` and kept in their order (all when ``n`` is None or larger)."""
    if n is None or n >= len(queries):
        return queries
    keep = np.sort(np.random.default_rng(seed).choice(len(queries), size=n, replace=False))
    return [queries[i] for i in keep]


def _start_predictions(ranker, seed: int, tests: list[list[RankingQuery]]) -> list[Predictions]:
    """The untrained model training starts from (the ranker's own build with ``seed``) on each test set,
    each distinct pair scored once."""
    model, backbone = ranker._build(seed)
    model.to(ranker.device)
    union, index = distinct_pairs(tests)
    pairs = ranker._encode(backbone.tokenizer, union)
    logits = score_pairs(model, pairs, batch_size=ranker.training.eval_batch_size, precision=ranker.training.precision)[
        0
    ]
    out = []
    for queries, ix in zip(tests, index):
        probs = sigmoid(logits[ix])
        out.append(
            Predictions(
                qids=np.array([q.qid for q in queries]),
                labels=np.array([q.labels for q in queries], dtype=np.int8),
                probs=probs,
                samples=probs[None],
                meta={"ranker": "bert", "stage": "start", "data_hash": queries_version(queries)},
            )
        )
    return out


def _biencoder(cfg: Config, tests: list[list[RankingQuery]]) -> list[Predictions]:
    """The zero-shot bi-encoder rule on each test set (R@1 only: its scores unscaled)."""
    emb = cfg.negatives.embedding
    out = []
    for i, queries in enumerate(tests):
        scores = baseline_scores(
            BaselineName.biencoder,
            queries,
            seed=cfg.seed + i,
            model=emb.model,
            precision=getattr(emb.precision, "value", emb.precision),
            batch_size=emb.batch_size,
        )
        out.append(
            baseline_predictions(
                BaselineName.biencoder, queries, scores, (1.0, 0.0), meta={"data_hash": queries_version(queries)}
            )
        )
    return out


def _cells(preds: list[Predictions], bi: Predictions, n_resamples: int, seed: int) -> dict:
    a, b = features(preds, "R@1"), features([bi] * len(preds), "R@1")
    est, ref = interval(a, n_resamples=n_resamples, seed=seed), interval(b, n_resamples=n_resamples, seed=seed)
    diff = compare(a, b, alternative="greater", n_resamples=n_resamples, seed=seed)
    return {
        "queries": est.n_queries,
        "R@1": est.value,
        "R@1 low": est.low,
        "R@1 high": est.high,
        "biencoder R@1": ref.value,
        "biencoder low": ref.low,
        "biencoder high": ref.high,
        "diff": diff.value,
        "diff low": diff.low,
        "diff high": diff.high,
        "p better": diff.pvalue,
        "above_biencoder_interval": bool(est.value > ref.high),
    }


def probe(
    cfg: Config,
    joint_layers: Sequence[int | None],
    heads: Sequence[str],
    seeds: Sequence[int],
    *,
    corpus: str | None = None,
    train_examples: int | None = None,
    device: str | torch.device | None = None,
    models: str | Path | None = None,
    n_resamples: int = 2000,
    predictions: str | Path | None = None,
    ranker: str = "bert",
    log=print,
) -> pd.DataFrame:
    """The table of :data:`COLUMNS`: one row per setting x seed x stage x test condition (see the module docstring).

    ``ranker``: ``bert`` or another ranker that trains one model of its own (others are refused before any work);
    ``predictions``: a folder to save every scored Predictions file in.
    """
    corpus = str(getattr(corpus, "value", corpus) or cfg.rankers.train_corpora[0].value)
    try:
        name = registry.info(ranker).name
    except KeyError as exc:
        raise ConfigError(f"--{exc.args[0]}") from None
    if registry.info(name).shares is not None or registry.info(name).members(cfg) > 1:
        raise ConfigError(
            f"--ranker: {name!r} trains no single model of its own (it shares or ensembles models); "
            f"probe bert or a ranker with a model of its own"
        )
    device = (
        torch.device(device) if device is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    )
    plan = []
    for j, pooling, why_not in settings(joint_layers, heads, cfg.training.backbone):
        if not why_not:  # the profile's own check, for this ranker with this head
            trial = dataclasses.replace(
                cfg,
                training=dataclasses.replace(cfg.training, joint_layers=j, pooling=pooling),
                rankers=dataclasses.replace(cfg.rankers, names=(registry.key(name),)),
            )
            try:
                trial.check()
            except ConfigError as exc:
                why_not = f"not run: {exc}"
        plan.append((j, pooling, why_not))
    train, valid, conditions, tests, how = query_sets(cfg, corpus)
    train = _subsample(train, train_examples, cfg.seed)
    log(
        f"query sets {how}; {len(train)} training queries of {corpus}, {len(conditions)} test conditions, device {device}"
    )
    bi = _biencoder(cfg, tests)
    folder = Path(models) if models is not None else profile_models_dir(cfg, corpus)
    bf16 = use_bf16(cfg.training.precision, device)
    rows = []
    for j, pooling, why_not in plan:
        label = {
            "ranker": name,
            "joint_layers": "null" if j is None else j,
            "head": pooling.value,
            "device": device.type,
            "bf16": bf16,
        }
        if why_not:
            rows.append({**label, "note": why_not})
            continue
        setting = dataclasses.replace(cfg, training=dataclasses.replace(cfg.training, joint_layers=j, pooling=pooling))
        per_seed: dict[str, list[list[Predictions]]] = (
            {"start": [], "trained": []} if name == "bert" else {"trained": []}
        )
        fits = []
        for seed in seeds:
            model = ranker_from_config(setting, name, folder, device=device, seed=seed)
            if "start" in per_seed:
                per_seed["start"].append(_start_predictions(model, seed, tests))
            t0 = time.perf_counter()
            model.fit(train, valid)
            result = model.training_results()[0]
            per_seed["trained"].append(model.predict_many(tests))
            if predictions is not None:
                for stage in per_seed:
                    for cond, pred in zip(conditions, per_seed[stage][-1]):
                        pred.save(
                            Path(predictions) / f"{name}-{corpus}-{label['joint_layers']}-{pooling.value}-seed{seed}-"
                            f"{stage}-{cond.corpus}-{cond.sampler}.npz"
                        )
            fit = {
                "train_seconds": round(result.seconds, 1),
                "steps": result.steps,
                "best_step": result.best_step,
                "valid R@1": result.best_metric,
            }
            fits.append(fit)
            log(
                f"{name} joint_layers={label['joint_layers']} head={pooling.value} seed={seed}: {result.steps} steps, "
                f"{result.seconds:.0f} s of training ({time.perf_counter() - t0:.0f} s here)"
            )
        runs = [(str(s), [i]) for i, s in enumerate(seeds)] + (
            [("all", list(range(len(seeds))))] if len(seeds) > 1 else []
        )
        for seed_label, which in runs:
            for stage, preds in per_seed.items():
                fit = fits[which[0]] if len(which) == 1 and stage == "trained" else {}
                for c, cond in enumerate(conditions):
                    cells = _cells([preds[w][c] for w in which], bi[c], n_resamples, cfg.seed)
                    rows.append(
                        {
                            **label,
                            "seed": seed_label,
                            "stage": stage,
                            "corpus": cond.corpus,
                            "sampler": cond.sampler,
                            "shift": shift_kind(cond, corpus, cfg.negatives.train.value),
                            **cells,
                            **fit,
                            "note": "",
                        }
                    )
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(table: pd.DataFrame) -> str:
    """Markdown: per setting and stage, R10@1 in distribution with its interval, the mean over the shifted
    conditions, and the bi-encoder's in-distribution R10@1 with its interval."""
    done = table[table["stage"].notna()]
    lines = [
        "| ranker | joint_layers | head | seed | stage | in distribution R@1 [95%] | bi-encoder [95%] | above bi-encoder | "
        "shifted R@1 (mean) | bi-encoder shifted | train s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (name, j, head, seed, stage), g in done.groupby(
        ["ranker", "joint_layers", "head", "seed", "stage"], sort=False
    ):
        ind = g[g["shift"] == "in distribution"]
        shifted = g[g["shift"] != "in distribution"]
        r = ind.iloc[0] if len(ind) else None
        cell = "-" if r is None else f"{r['R@1']:.3f} [{r['R@1 low']:.3f}, {r['R@1 high']:.3f}]"
        ref = "-" if r is None else f"{r['biencoder R@1']:.3f} [{r['biencoder low']:.3f}, {r['biencoder high']:.3f}]"
        above = "-" if r is None else ("yes" if r["above_biencoder_interval"] else "no")
        secs = g["train_seconds"].dropna()
        lines.append(
            f"| {name} | {j} | {head} | {seed} | {stage} | {cell} | {ref} | {above} | {shifted['R@1'].mean():.3f} | "
            f"{shifted['biencoder R@1'].mean():.3f} | {'' if secs.empty else f'{secs.iloc[0]:.0f}'} |"
        )
    for _, r in table[table["stage"].isna()].iterrows():
        lines.append(f"| {r['ranker']} | {r['joint_layers']} | {r['head']} | | | {r['note']} | | | | | |")
    return "\n".join(lines) + "\n"


def _joint_value(text: str) -> int | None:
    if text.lower() in ("null", "none", "all"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0 or null, got {text!r}") from None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.probe_joint", description=__doc__.split("\n")[0])
    p.add_argument("profile")
    p.add_argument(
        "--joint-layers",
        nargs="+",
        type=_joint_value,
        required=True,
        help="values of training.joint_layers (integers, or null for every layer joint)",
    )
    p.add_argument("--heads", nargs="+", choices=[m.value for m in Pooling], default=["segments", "pooler"])
    p.add_argument("--ranker", default="bert", help="the ranker to train (bert, or one with a model of its own)")
    p.add_argument("--seeds", nargs="+", type=int, default=None, help="training seeds (default: the profile's)")
    p.add_argument("--train-examples", type=int, default=None, help="train on this many training queries (seeded draw)")
    p.add_argument("--corpus", default=None, help="training corpus (default: the profile's first)")
    p.add_argument("--device", default="auto", help="auto (CUDA when there is one), cpu, cuda or cuda:N")
    p.add_argument("--models", default=None, help="model cache folder (default: the profile's)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap and permutation resamples")
    p.add_argument("--predictions", default=None, help="also save every scored Predictions file in this folder")
    p.add_argument("--out", required=True, help="folder for joint_layers.csv, summary.md and run.json")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    t0 = time.perf_counter()
    try:
        cfg = load_config(args.profile)
        if args.train_examples is not None and args.train_examples < 1:
            raise ConfigError(f"--train-examples: expected a positive integer, got {args.train_examples}")
        if args.corpus is not None and args.corpus not in [c.value for c in cfg.data.corpora]:
            raise ConfigError(f"--corpus: {args.corpus!r} is not among data.corpora of {cfg.source}")
        seeds = args.seeds or list(cfg.rankers.seeds or (cfg.seed,))
        device = None if args.device == "auto" else args.device
        table = probe(
            cfg,
            args.joint_layers,
            args.heads,
            seeds,
            corpus=args.corpus,
            train_examples=args.train_examples,
            device=device,
            models=args.models,
            n_resamples=args.resamples,
            predictions=args.predictions,
            ranker=args.ranker,
        )
    except (ConfigError, MissingStepError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / "joint_layers.csv") as tmp:
        table.to_csv(tmp, index=False, float_format="%.4f")
    text = summary(table)
    with atomic_path(out / "summary.md") as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
    write_json(
        out / "run.json",
        {
            "argv": sys.argv[1:] if argv is None else list(argv),
            "profile": cfg.profile,
            "seeds": seeds,
            "wall_seconds": round(time.perf_counter() - t0, 1),
            "machine": machine_info(),
        },
    )
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
