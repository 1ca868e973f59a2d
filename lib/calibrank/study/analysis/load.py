"""Loading a profile's Predictions: :class:`Study` (every ranker x training corpus x condition x seed), and who the rankers are."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from calibrank.predictions import Predictions, PredictionsError
from calibrank.study.data.conditions import (
    Condition,
    eval_conditions,
    load_predictions,
    predictions_path,
    ranker_conditions,
    shift_kind,
)
from calibrank.study.data.querysets import MissingStepError
from calibrank.study.settings import registry
from calibrank.study.settings.config import load_config, training_seeds
from calibrank.study.settings.schema import Config
from calibrank.table_checks import raise_problems, rows_expected, rows_failing

BASELINE = "bert"
"""The deterministic ranker every other ranker is compared with."""

GP_RANKERS = registry.of_family(registry.Family.gp)
"""Rankers with a Gaussian-process output layer (the 2023 papers), from :mod:`calibrank.study.settings.registry`."""

CELL_KEYS = ("ranker", "train_corpus", "corpus", "sampler")
"""The columns that name one cell of a table: ranker x training corpus x test condition."""

DISPLAY_NAMES = {name: entry.display for name, entry in registry.RANKERS.items()}
"""Each ranker's name in the papers, from :mod:`calibrank.study.settings.registry` (as it was at import; :func:`display_name` reads it now)."""


def with_keys(df: pd.DataFrame, **keys: Any) -> pd.DataFrame:
    """``df`` with ``keys`` inserted as its first columns, in the order given (each value on every row)."""
    for name, value in reversed(list(keys.items())):
        df.insert(0, name, value)
    return df


def display_name(ranker: str) -> str:
    """A ranker's name in the papers (:mod:`calibrank.study.settings.registry`), else its own name."""
    entry = registry.RANKERS.get(ranker)
    return entry.display if entry is not None else ranker


# ------------------------------------------------------------------------------------ loading
@dataclasses.dataclass(eq=False)
class Study:
    """Every Predictions file of one profile, read on first use.

    ``paths[(ranker, train_corpus, condition name)]`` lists the files of that cell (one per
    seed); :meth:`runs` returns their Predictions sorted by seed, :meth:`get` one of them.
    """

    cfg: Config
    rankers: tuple[str, ...]
    train_corpora: tuple[str, ...]
    conditions: tuple[Condition, ...]
    paths: dict[tuple[str, str, str], list[Path]]
    _cache: dict[tuple[str, str, str], list[Predictions]] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def main_seed(self) -> int:
        """The first of the profile's training seeds: the run every single-seed analysis uses."""
        return training_seeds(self.cfg)[0]

    @property
    def train_sampler(self) -> str:
        return self.cfg.negatives.train.value

    @property
    def k(self) -> int:
        return self.cfg.negatives.eval_k

    @property
    def recall_label(self) -> str:
        """``R10@1`` for 1 + 9 candidates."""
        return f"R{self.k + 1}@1"

    def test_conditions(self, split: str = "test") -> list[Condition]:
        return [c for c in self.conditions if c.split == split]

    def condition(self, corpus: str, sampler: str, split: str = "test") -> Condition:
        for c in self.conditions:
            if (c.corpus, c.sampler, c.split) == (corpus, sampler, split):
                return c
        raise KeyError(f"no condition {corpus}-{split}-{sampler} in profile {self.cfg.profile!r}")

    def runs(self, ranker: str, train_corpus: str, condition: Condition) -> list[Predictions]:
        key = (ranker, train_corpus, condition.name)
        if key not in self.paths:
            raise KeyError(f"no Predictions for {key} in this study")
        if key not in self._cache:
            by_seed: dict[int, Predictions] = {}
            for path in self.paths[key]:
                pred = Predictions.load(path)
                by_seed[self._checked_seed(path, pred)] = pred
            ordered = [by_seed[s] for s in sorted(by_seed)]
            for other in ordered[1:]:
                ordered[0].check_aligned(other)
            self._cache[key] = ordered
        return self._cache[key]

    def _checked_seed(self, path: Path, pred: Predictions) -> int:
        """The training seed of a Predictions file: its name says it (``-seed<N>``, or the main
        seed), and its sidecar must say the same."""
        m = re.search(r"-seed(\d+)$", Path(path).stem)
        named = int(m.group(1)) if m else self.main_seed
        stored = pred.meta.get("seed")
        if stored is None or int(stored) != named:
            raise PredictionsError(
                f"{path}: its sidecar says seed {stored!r} but its name says seed {named}; "
                "rerun the 03 step that writes it"
            )
        return named

    @staticmethod
    def seed_of(pred: Predictions) -> int:
        """The training seed of Predictions read by :meth:`runs` (checked against the file name there)."""
        return int(pred.meta["seed"])

    def get(self, ranker: str, train_corpus: str, condition: Condition, seed: int | None = None) -> Predictions:
        """One seed's Predictions (the main training seed by default)."""
        runs = self.runs(ranker, train_corpus, condition)
        if seed is None:
            seed = self.main_seed
        for p in runs:
            if self.seed_of(p) == seed:
                return p
        raise KeyError(f"no seed {seed} for {ranker}/{train_corpus}/{condition.name}")

    def seeds(self, ranker: str, train_corpus: str, condition: Condition) -> list[int]:
        return [self.seed_of(p) for p in self.runs(ranker, train_corpus, condition)]

    def n_samples(self, ranker: str) -> int:
        """S of a ranker's Predictions (read from its first cell)."""
        return self.get(ranker, self.train_corpora[0], self.test_conditions()[0]).n_samples

    def stochastic_rankers(self) -> list[str]:
        """Rankers whose Predictions carry more than one sample (a predictive distribution)."""
        return [r for r in self.rankers if self.n_samples(r) > 1]

    def shift(self, condition: Condition, train_corpus: str) -> str:
        """``in distribution``, ``cross-domain``, ``cross-NS`` or ``cross-domain + cross-NS``
        (:func:`calibrank.study.data.conditions.shift_kind`, as notebook 03 names it)."""
        return shift_kind(condition, train_corpus, self.train_sampler)

    def cell_keys(self, train_corpus: str, condition: Condition) -> dict[str, str]:
        """The columns that name a test cell in every table: training corpus, test corpus, sampler, shift."""
        return {
            "train_corpus": train_corpus,
            "corpus": condition.corpus,
            "sampler": condition.sampler,
            "shift": self.shift(condition, train_corpus),
        }

    def expected_cells(self, split: str = "test", rankers: Iterable[str] | None = None) -> list[tuple[str, ...]]:
        """The :data:`CELL_KEYS` of every cell the profile predicts on ``split`` (validation: S > 1 only,
        :func:`calibrank.study.data.conditions.ranker_conditions`): the rows a table over cells must hold."""
        return [
            (r, tc, c.corpus, c.sampler)
            for r in (rankers if rankers is not None else self.rankers)
            for tc in self.train_corpora
            for c in ranker_conditions(self.cfg, r)
            if c.split == split
        ]

    def cells(self, split: str = "test", rankers: Iterable[str] | None = None):
        """``(ranker, train_corpus, condition)`` for every cell of ``split`` that has Predictions
        (validation cells exist for stochastic rankers only)."""
        for ranker in rankers if rankers is not None else self.rankers:
            for tc in self.train_corpora:
                for cond in self.test_conditions(split):
                    if (ranker, tc, cond.name) in self.paths:
                        yield ranker, tc, cond


def load_study(profile: str | Config) -> Study:
    """Find every Predictions file of the profile: every ranker x training corpus x condition.

    Raises :class:`~calibrank.study.data.querysets.MissingStepError` naming the first missing file and the
    make target that writes it (and how many others are missing). Files are read lazily.
    """
    cfg = profile if isinstance(profile, Config) else load_config(profile)
    rankers = tuple(r.value for r in cfg.rankers.names)
    corpora = tuple(c.value for c in cfg.rankers.train_corpora)
    conditions = tuple(eval_conditions(cfg))
    paths: dict[tuple[str, str, str], list[Path]] = {}
    missing: list[tuple[str, str, Condition, int]] = []
    for r in rankers:
        for tc in corpora:
            for cond in ranker_conditions(cfg, r):
                for seed in training_seeds(cfg):
                    path = predictions_path(cfg, r, tc, cond, seed)
                    if path.exists():
                        paths.setdefault((r, tc, cond.name), []).append(path)
                    else:
                        missing.append((r, tc, cond, seed))
    if missing:
        r, tc, cond, seed = missing[0]
        try:
            load_predictions(cfg, r, tc, cond, seed)  # raises the message that names the make target
        except MissingStepError as exc:
            more = f" ({len(missing) - 1} other Predictions file(s) are missing too)" if len(missing) > 1 else ""
            raise MissingStepError(f"{exc}{more}") from None
    return Study(cfg=cfg, rankers=rankers, train_corpora=corpora, conditions=conditions, paths=paths)


def overview(study: Study) -> pd.DataFrame:
    """One row per ranker: its name in the papers, samples per prediction (S), seeds, Predictions cells."""
    by_name = {c.name: c for c in study.conditions}
    rows = []
    for r in study.rankers:
        cells = [key for key in study.paths if key[0] == r]
        seeds = sorted({s for _, tc, c in cells for s in study.seeds(r, tc, by_name[c])})
        rows.append(
            {
                "ranker": r,
                "method": display_name(r),
                "S": study.n_samples(r),
                "seeds": ", ".join(map(str, seeds)),
                "Predictions files": sum(len(study.paths[k]) for k in cells),
            }
        )
    out = pd.DataFrame(rows)
    _check_overview(study, out)
    return out


def _check_overview(study: Study, table: pd.DataFrame) -> None:
    """One row per ranker of the profile; S >= 1, and S > 1 for the stochastic family (:mod:`calibrank.study.settings.registry`)."""
    name, keys = "rankers", ("ranker",)
    samples = pd.to_numeric(table["S"], errors="coerce")
    stochastic = table["ranker"].isin(registry.of_family(registry.Family.stochastic))
    raise_problems(
        rows_expected(name, table, keys, [(r,) for r in study.rankers])
        + rows_failing(name, table, samples >= 1, keys, "S >= 1", ["S"])
        + rows_failing(name, table, ~stochastic | (samples > 1), keys, "S > 1 for a stochastic ranker", ["S"])
    )
