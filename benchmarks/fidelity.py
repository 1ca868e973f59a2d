"""``fidelity``: the gate on training each context once, R10@1 of ``bert``, MC Dropout and the ensemble before and after.

Training with each distinct context encoded once per step (``training.encode_once``) changes the batches (whole
queries) and the dropout masks (the rows of a context share one), so it changes the trained weights. It is kept
only if, on ``laptop`` in fp32, every R10@1 cell of the results table for ``bert``, ``mc_dropout`` and
``ensemble`` (both training corpora x the eight test conditions) lies within the 95% interval of the cell the
table held before, made by the pair-row training (``PREVIOUS``: the README's table until a report of the current
code replaced it, a ``make report`` in fp32 on a 2-core AMD EPYC). That run's Predictions are not kept, so its interval is the normal approximation of a share
over the condition's test queries, ``p +- 1.96 sqrt(p (1 - p) / n)`` (its bootstrap intervals quoted in the README,
e.g. ``bert`` chitchat·mixed 0.325 [0.297, 0.353], agree within 0.0015); the new cells' own bootstrap intervals are
shown beside them.

    python -m benchmarks.fidelity laptop        # after `make report` (or the six 03 steps of the three rankers)
    python -m benchmarks.fidelity laptop --pair-rows    # the same, for models trained on pair rows

prints the table in Markdown and writes ``reports/bench/fidelity.json``.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path

RANKERS = ("bert", "mc_dropout", "ensemble")
CONDITIONS = tuple(
    (corpus, sampler) for corpus in ("chitchat", "chatterbot") for sampler in ("mixed", "random", "bm25", "embedding")
)
#: R10@1 of each (ranker, training corpus) over ``CONDITIONS``, as the README's results table held it before
#: training encoded each context once (pair rows, fp32).
PREVIOUS = {
    ("bert", "chitchat"): (0.325, 0.466, 0.301, 0.117, 0.689, 0.766, 0.707, 0.410),
    ("bert", "chatterbot"): (0.239, 0.482, 0.181, 0.068, 0.887, 0.910, 0.865, 0.793),
    ("mc_dropout", "chitchat"): (0.313, 0.460, 0.280, 0.117, 0.721, 0.775, 0.734, 0.437),
    ("mc_dropout", "chatterbot"): (0.229, 0.462, 0.170, 0.064, 0.878, 0.901, 0.874, 0.725),
    ("ensemble", "chitchat"): (0.338, 0.485, 0.302, 0.121, 0.730, 0.775, 0.725, 0.405),
    ("ensemble", "chatterbot"): (0.242, 0.479, 0.189, 0.062, 0.883, 0.905, 0.874, 0.797),
}
Z95 = 1.959964


def share_interval(p: float, n: int) -> tuple[float, float]:
    """The 95% normal-approximation interval of a share ``p`` over ``n`` queries."""
    half = Z95 * math.sqrt(p * (1.0 - p) / n)
    return p - half, p + half


def gate(profile: str = "laptop", *, n_resamples: int = 2000, encode_once: bool = True) -> list[dict]:
    """One row per cell: the previous R10@1 and its interval, the current R10@1 and its bootstrap interval, and
    whether the current value lies within the previous interval. ``encode_once``: the Predictions of models trained
    with each side once (the profile's setting overridden)."""
    from calibrank.study.analysis import uncertainty as unc
    from calibrank.study.analysis.load import load_study
    from calibrank.study.settings.config import load_config

    cfg = load_config(profile, {"rankers.names": list(RANKERS), "training.encode_once": encode_once})
    study = load_study(cfg)
    rows = []
    for (ranker, train_corpus), before in PREVIOUS.items():
        for (corpus, sampler), old in zip(CONDITIONS, before):
            cond = next(c for c in study.conditions if (c.corpus, c.split, c.sampler) == (corpus, "test", sampler))
            runs = study.runs(ranker, train_corpus, cond)
            est = unc.cell_estimates(runs, seed=cfg.seed, metrics=("R@1",), n_resamples=n_resamples)
            n = int(runs[0].labels.shape[0])
            lo, hi = share_interval(old, n)
            rows.append(
                {
                    "ranker": ranker,
                    "train_corpus": train_corpus,
                    "condition": f"{corpus}·{sampler}",
                    "queries": n,
                    "before": old,
                    "before_lo": lo,
                    "before_hi": hi,
                    "after": est["R@1"],
                    "after_lo": est["R@1 lo"],
                    "after_hi": est["R@1 hi"],
                    "within": bool(lo <= est["R@1"] <= hi),
                }
            )
    return rows


def markdown(rows: Sequence[dict]) -> str:
    """The gate's table: a row per ranker and training corpus, a column per condition, ``after (before) ✓/✗``."""
    head = ["ranker ← trained on", *(f"{c}·{s}" for c, s in CONDITIONS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for ranker, train_corpus in PREVIOUS:
        cells = [r for r in rows if r["ranker"] == ranker and r["train_corpus"] == train_corpus]
        text = [f"{r['after']:.3f} ({r['before']:.3f}) {'✓' if r['within'] else '✗'}" for r in cells]
        lines.append("| " + " | ".join([f"{ranker} ← {train_corpus}", *text]) + " |")
    inside = sum(r["within"] for r in rows)
    lines.append("")
    lines.append(f"{inside} of {len(rows)} cells within the previous cell's 95% interval.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fidelity", description=__doc__.splitlines()[0])
    parser.add_argument("profile", nargs="?", default="laptop")
    parser.add_argument("--out", type=Path, default=Path("reports/bench"))
    parser.add_argument("--pair-rows", action="store_true", help="models trained on pair rows (encode_once: false)")
    args = parser.parse_args(argv)
    rows = gate(args.profile, encode_once=not args.pair_rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fidelity.json").write_text(json.dumps({"profile": args.profile, "cells": rows}, indent=1))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
