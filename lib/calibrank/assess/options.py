"""The options of one assessment, every one checked before any work, in one place.

``calibrank assess`` (:mod:`calibrank.cli`), notebook 09 and :func:`calibrank.assess.run.run` build an
:class:`Options`; a bad option raises :class:`OptionError`, which names the option as the caller
spells it (``--valid-run`` on the command line, ``valid_run`` in Python) and what was expected.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import numbers
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .maps import MAPS
from .scored import AssessError, ScoreKind

__all__ = ["OptionError", "Options", "cli_name"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_POSITIONAL = {"run": "RUN", "qrels": "QRELS"}


class OptionError(AssessError):
    """A bad option: ``option`` (its Python name) and ``text`` (what was wrong and what was expected)."""

    def __init__(self, option: str, text: str) -> None:
        self.option, self.text = option, text
        super().__init__(f"{option}: {text}")


def cli_name(option: str) -> str:
    """How the command line spells an option (``valid_run`` -> ``--valid-run``; ``run`` -> ``RUN``)."""
    return _POSITIONAL.get(option, "--" + option.replace("_", "-"))


def _level(option: str, v: Any, *, low_closed: bool = False, high_closed: bool = False) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
        raise OptionError(option, f"expected a number between 0 and 1, got {v!r}")
    ok = (v >= 0 if low_closed else v > 0) and (v <= 1 if high_closed else v < 1)
    if not ok:
        lo, hi = ("[" if low_closed else "("), ("]" if high_closed else ")")
        raise OptionError(option, f"expected a number in {lo}0, 1{hi}, got {v!r}")
    return float(v)


def _int(option: str, v: Any, minimum: int) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < minimum:
        raise OptionError(option, f"expected a whole number >= {minimum}, got {v!r}")
    return int(v)


def _file(option: str, v: Any) -> str | None:
    if v is None:
        return None
    path = Path(v)
    if path.is_dir():
        raise OptionError(option, f"{v} is a folder; expected a file")
    if not path.is_file():
        raise OptionError(option, f"{v}: no such file")
    return str(v)


def _files(option: str, v: Any) -> tuple[str, ...]:
    items = [v] if isinstance(v, (str, Path)) else list(v or ())
    return tuple(_file(option, x) for x in items)


@dataclasses.dataclass(frozen=True)
class Options:
    r"""One assessment's inputs and settings, every one checked on construction.

    The command line, notebook 09 and the Python API build one, so a bad option is refused
    before any work, as one :class:`OptionError` naming it as the caller spells it. Exactly one
    input: ``run`` (TREC run files, several = samples of one ranker) with ``qrels``; ``table``
    (query, candidate, score, relevance); or ``checkpoint`` with ``queries``. The ``valid_*``
    inputs are what everything is fitted on (else a seeded half of the queries). Each option is
    described by ``calibrank assess --help``.

    Parameters
    ----------
    run, valid_run : sequence of str, default=()
        TREC run files (several: samples of one ranker).
    qrels, valid_qrels : str, default=None
        TREC qrels files judging the runs (or the tables).
    table, valid_table : str, default=None
        Score tables (CSV, TSV, Parquet, JSONL).
    checkpoint : str, default=None
        A local cross-encoder checkpoint folder, scored on ``queries`` / ``valid_queries``.
    queries, valid_queries : str, default=None
        JSONL queries with their candidates, for ``checkpoint``.
    passes : int, default=0
        MC Dropout passes of the checkpoint (0: one deterministic pass).
    score : {"score", "logit", "probability"}, default="score"
        What a raw score is.
    relevant_at : int, default=1
        The lowest grade that counts as relevant.
    precision, recall : float, default=None
        The certified cutoff's target (precision 0.9 when neither is given).
    confidence : float, default=0.9
        The probability with which the cutoff's guarantee holds.
    coverage, risk : float, default=None
        What the abstain rule is fitted for (coverage 0.8 when neither is given).
    alpha : float, default=0.1
        The shortlists' miscoverage.
    map : str, default="auto"
        The score map: ``auto`` or one of :data:`calibrank.assess.maps.MAPS`.
    seed : int, default=0
        Seeds the split, the folds and every resampling.
    n_resamples : int, default=1000
        Bootstrap resamples of every interval.
    name : str, default=None
        The report's name (default: the input's file name).
    out : str, default=None
        The report folder (default: ``assess-<name>``).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> tmp = tempfile.TemporaryDirectory()
    >>> table = pathlib.Path(tmp.name, "bm25.csv")
    >>> _ = table.write_text("qid,docid,score,label\nq1,d1,2.5,1\nq1,d2,0.3,0\n")
    >>> opts = Options(table=str(table), precision=0.8)
    >>> opts.name, opts.out, opts.confidence
    ('bm25', 'assess-bm25', 0.9)
    >>> Options(table=str(table), precision=1.5)
    Traceback (most recent call last):
    ...
    calibrank.assess.options.OptionError: precision: expected a number in (0, 1), got 1.5
    >>> tmp.cleanup()
    """

    run: Sequence[str] = ()
    qrels: str | None = None
    valid_run: Sequence[str] = ()
    valid_qrels: str | None = None
    table: str | None = None
    valid_table: str | None = None
    checkpoint: str | None = None
    queries: str | None = None
    valid_queries: str | None = None
    passes: int = 0
    score: str = "score"
    relevant_at: int = 1
    precision: float | None = None
    recall: float | None = None
    confidence: float = 0.9
    coverage: float | None = None
    risk: float | None = None
    alpha: float = 0.1
    map: str = "auto"
    seed: int = 0
    n_resamples: int = 1000
    name: str | None = None
    out: str | None = None

    def __post_init__(self) -> None:
        put = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 - a frozen dataclass checks itself
        try:
            put("score", ScoreKind(self.score).value)
        except ValueError:
            raise OptionError("score", f"expected one of {', '.join(k.value for k in ScoreKind)}, got "
                              f"{self.score!r}") from None
        put("passes", _int("passes", self.passes, 0))
        put("relevant_at", _int("relevant_at", self.relevant_at, 1))
        put("seed", _int("seed", self.seed, 0))
        put("n_resamples", _int("n_resamples", self.n_resamples, 2))
        if self.precision is not None and self.recall is not None:
            raise OptionError("recall", "give a target precision or a target recall, not both")
        put("precision", _level("precision", self.precision))
        put("recall", _level("recall", self.recall))
        put("confidence", _level("confidence", self.confidence))
        if self.coverage is not None and self.risk is not None:
            raise OptionError("risk", "give a coverage or a risk for the abstain rule, not both")
        put("coverage", _level("coverage", self.coverage, high_closed=True))
        put("risk", _level("risk", self.risk))
        put("alpha", _level("alpha", self.alpha))
        if self.map != "auto" and self.map not in MAPS:
            raise OptionError("map", f"expected auto or one of {', '.join(MAPS)}, got {self.map!r}")
        if self.map == "identity" and self.score == "score":
            raise OptionError("map", "identity reads the scores as probabilities, which a bare score is not; "
                              "expected auto, platt, isotonic or beta")
        if self.map == "temperature" and self.score == "score":
            raise OptionError("map", "temperature scales a logit, which a bare score is not; "
                              "expected auto, platt, isotonic or beta")
        self._check_inputs(put)
        self._check_name(put)

    def _check_inputs(self, put) -> None:
        put("run", _files("run", self.run))
        put("valid_run", _files("valid_run", self.valid_run))
        for option in ("qrels", "valid_qrels", "table", "valid_table", "queries", "valid_queries"):
            put(option, _file(option, getattr(self, option)))
        if self.checkpoint is not None:
            if not Path(self.checkpoint).is_dir():
                raise OptionError("checkpoint", f"{self.checkpoint}: no such folder (a cross-encoder checkpoint)")
            missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
            if missing:
                raise OptionError("checkpoint", f"needs {' and '.join(missing)}: pip install 'calibrank[checkpoint]'")
            put("checkpoint", str(self.checkpoint))
        given = [o for o in ("run", "table", "checkpoint") if getattr(self, o)]
        if len(given) != 1:
            raise OptionError(given[1] if len(given) > 1 else "run", "give exactly one input: a run with its qrels, "
                              f"a table, or a checkpoint with its queries; got {', '.join(given) or 'none'}")
        if self.run and not self.qrels:
            raise OptionError("qrels", "required with a run (the relevance judgements of its queries)")
        if self.checkpoint and not self.queries:
            raise OptionError("queries", "required with a checkpoint (the queries and candidates to score)")
        if self.valid_run and not self.run:
            raise OptionError("valid_run", "goes with a run; give the validation input of the same form")
        if self.valid_table and not self.table:
            raise OptionError("valid_table", "goes with a table; give the validation input of the same form")
        if self.valid_queries and not self.checkpoint:
            raise OptionError("valid_queries", "goes with a checkpoint")
        if self.valid_run and not self.valid_qrels:
            raise OptionError("valid_qrels", "required with a validation run")
        if self.valid_qrels and not (self.valid_run or self.valid_table or self.valid_queries):
            raise OptionError("valid_qrels", "given without a validation input (a validation run, table or queries)")

    def _check_name(self, put) -> None:
        first = (self.run or (self.table,) or (str(self.checkpoint).rstrip("/"),))[0]
        name = self.name or Path(Path(first).name.removesuffix(".gz")).stem
        if not _NAME.match(name):
            raise OptionError("name", f"expected letters, digits, '.', '_' or '-' (a folder name), got {name!r}")
        put("name", name)
        out = Path(self.out) if self.out is not None else Path(f"assess-{name}")
        if out.exists() and not out.is_dir():
            raise OptionError("out", f"{out} is a file; expected a folder to write the report into")
        parent = out.parent if str(out.parent) else Path(".")
        if parent.exists() and not parent.is_dir():
            raise OptionError("out", f"{parent} is not a folder")
        put("out", str(out))

    def inputs(self) -> dict[str, Any]:
        """The keywords of :func:`calibrank.assess.load.load`."""
        return {"run": list(self.run) or None, "qrels": self.qrels, "valid_run": list(self.valid_run) or None,
                "valid_qrels": self.valid_qrels, "table": self.table, "valid_table": self.valid_table,
                "checkpoint": self.checkpoint, "queries": self.queries, "valid_queries": self.valid_queries,
                "passes": self.passes, "score": self.score, "relevant_at": self.relevant_at, "seed": self.seed}

    def fitting(self) -> dict[str, Any]:
        """The keywords of :func:`calibrank.assess.engine.assess` beside the two inputs."""
        return {"seed": self.seed, "n_resamples": self.n_resamples, "alpha": self.alpha, "precision": self.precision,
                "recall": self.recall, "confidence": self.confidence, "coverage": self.coverage, "risk": self.risk,
                "method": self.map}

    def validation_files(self) -> list[str]:
        """The files everything is fitted on (hashed into the calibrator's provenance)."""
        files = list(self.valid_run) + [f for f in (self.valid_qrels, self.valid_table, self.valid_queries) if f]
        if not files:  # a seeded half of the input
            files = list(self.run) + [f for f in (self.qrels, self.table, self.queries) if f]
        return files
