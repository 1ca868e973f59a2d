"""Every option of an assessment, declared once with its default, type, range and help, and checked once.

:class:`Settings` holds what is fitted and how it is judged (the keywords of :func:`calibrank.fit` and
:func:`calibrank.evaluate`); :class:`Options` adds the inputs and the report folder of ``calibrank assess``.
The command line builds its arguments from these declarations (:func:`declared`), so a default, a range
or a help text is written here alone. A bad value raises :class:`OptionError` where the object is built,
before any work, naming the option as the caller spells it (``--valid-run`` on the command line,
``valid_run`` in Python). Standard library only: ``calibrank --help`` reads this module and nothing heavier.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.util
import math
import numbers
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from calibrank.assess.errors import OptionError

__all__ = [
    "MAPS",
    "OptionError",
    "Options",
    "SCORE_KINDS",
    "Settings",
    "WatchOptions",
    "WatchSettings",
    "check_option",
    "check_out",
    "cli_name",
    "declared",
    "resolve",
    "settings_from",
]

#: What a raw score is: any scale, a logit (sigmoid gives a probability) or a probability.
SCORE_KINDS = ("score", "logit", "probability")
#: The maps from a raw score to a probability (:mod:`calibrank.assess.deploy.maps`).
MAPS = ("identity", "platt", "isotonic", "beta", "temperature")

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_POSITIONAL = {"run": "RUN", "qrels": "QRELS"}
#: Pseudo-filesystems a report can never be written into.
_PSEUDO = ("/proc", "/sys", "/dev")


def cli_name(option: str) -> str:
    """How the command line spells an option (``valid_run`` -> ``--valid-run``; ``run`` -> ``RUN``)."""
    return _POSITIONAL.get(option, "--" + option.replace("_", "-"))


# --------------------------------------------------------------------------- declarations


def _option(
    default: Any,
    kind: str,
    help: str,
    group: str,
    *,
    low: float | None = None,
    high: float | None = None,
    closed: str = "",
    choices: Sequence[str] = (),
    metavar: str | None = None,
    cli: bool = True,
) -> Any:
    """A dataclass field with its check: ``kind`` is ``level`` (a number in (low, high), ``closed`` naming the
    closed ends ``"low"``, ``"high"``), ``whole`` (an integer >= ``low``), ``choice``, ``file``, ``files`` or ``text``."""
    meta = {
        "kind": kind,
        "help": help,
        "group": group,
        "low": low,
        "high": high,
        "closed": closed,
        "choices": tuple(choices),
        "metavar": metavar,
        "cli": cli,
    }
    return dataclasses.field(default=default, metadata=meta)


_FIT, _ABSTAIN, _REPORT, _SCORES = "what to certify", "when to abstain", "the report", "what the scores are"
_IN, _VALID, _OTHER = (
    "input",
    "validation input (what everything is fitted on; default: a seeded half of the queries)",
    "other inputs",
)


def _check(option: str, value: Any, meta: Mapping[str, Any]) -> Any:
    """``value`` checked against its declaration; the value as stored (a float, an int, a str, a tuple)."""
    kind = meta["kind"]
    if type(value).__module__ == "numpy" and hasattr(value, "item"):  # a numpy scalar, worded as Python's
        value = value.item()
    if value is None and kind in ("level", "file", "text"):
        return None
    if kind == "level":
        low, high = meta["low"] if meta["low"] is not None else 0.0, meta["high"] if meta["high"] is not None else 1.0
        lo_ok = (lambda v: v >= low) if "low" in meta["closed"] else (lambda v: v > low)
        hi_ok = (lambda v: v <= high) if "high" in meta["closed"] else (lambda v: v < high)
        span = f"{'[' if 'low' in meta['closed'] else '('}{low:g}, {high:g}{']' if 'high' in meta['closed'] else ')'}"
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise OptionError(option, f"expected a number in {span}, got {value!r}")
        if not (lo_ok(value) and hi_ok(value)):
            raise OptionError(option, f"expected a number in {span}, got {value!r}")
        return float(value)
    if kind == "whole":
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < meta["low"]:
            raise OptionError(option, f"expected a whole number >= {meta['low']:g}, got {value!r}")
        return int(value)
    if kind == "choice":
        if not isinstance(value, str) or value not in meta["choices"]:
            raise OptionError(option, f"expected one of {', '.join(meta['choices'])}, got {value!r}")
        return value
    if kind == "text":
        if not isinstance(value, str):
            raise OptionError(option, f"expected text, got {value!r}")
        return value
    if kind == "file":
        return _file(option, value)
    if kind == "files":
        return _files(option, value)
    raise AssertionError(f"{option}: unknown kind {kind!r}")  # a declaration error, not a user's


def _file(option: str, v: Any) -> str | None:
    return None if v is None else _path(option, v)


def _path(option: str, v: Any) -> str:
    if not isinstance(v, (str, os.PathLike)):
        raise OptionError(option, f"expected a path, got {type(v).__name__}")
    path = Path(v)
    if path.is_dir():
        raise OptionError(option, f"{v} is a folder; expected a file")
    if not path.is_file():
        raise OptionError(option, f"{v}: no such file")
    return str(v)


def _files(option: str, v: Any) -> tuple[str, ...]:
    items = [v] if isinstance(v, (str, os.PathLike)) else list(v or ())
    files = tuple(_path(option, x) for x in items)
    seen: dict[tuple[int, int], str] = {}
    for f in files:
        st = os.stat(f)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            raise OptionError(
                option, f"{f} is given twice (also as {seen[key]}); each file is one sample, so expected distinct files"
            )
        seen[key] = f
    return files


@dataclasses.dataclass(frozen=True)
class Settings:
    """What is fitted on the validation queries and how the test queries are judged, checked on construction.

    The keywords of :func:`calibrank.fit` and :func:`calibrank.evaluate`, and the command's options of the
    same names; every default is the one written here.

    Parameters
    ----------
    score : {"score", "logit", "probability"}, default="score"
        What a raw score is.
    relevant_at : int, default=1
        The lowest grade that counts as relevant.
    precision, recall : float, default=None
        The certified cutoff's target (precision 0.9 when neither is given).
    recall_over : {"qrels", "retrieved"}, default="qrels"
        What recall counts: every relevant document of the qrels, retrieved or not (as trec_eval), or only the
        relevant candidates the run retrieved.
    confidence : float, default=0.9
        The probability with which the cutoff's guarantee holds.
    coverage, risk : float, default=None
        What the abstain rule is fitted for (coverage 0.8 when neither is given).
    alpha : float, default=0.1
        The shortlists' miscoverage.
    map : str, default="auto"
        The score map: ``auto`` (lowest held-out Brier) or one of :data:`MAPS`.
    level : float, default=0.95
        The confidence of every interval on the page.
    seed : int, default=0
        Seeds the split, the folds and every resampling.
    n_resamples : int, default=1000
        Bootstrap resamples of every interval.

    Examples
    --------
    >>> Settings(precision=0.8).confidence
    0.9
    >>> Settings(precision=0.8, recall=0.5)
    Traceback (most recent call last):
    ...
    calibrank.assess.errors.OptionError: recall: give a target precision or a target recall, not both
    """

    score: str = _option("score", "choice", "what a raw score is (score: any scale)", _SCORES, choices=SCORE_KINDS)
    relevant_at: int = _option(1, "whole", "the lowest qrels grade that counts as relevant", _SCORES, low=1)
    precision: float | None = _option(None, "level", "target precision of the kept candidates (default 0.9)", _FIT)
    recall: float | None = _option(None, "level", "target recall instead of precision", _FIT)
    recall_over: str = _option(
        "qrels",
        "choice",
        "what recall counts: every relevant document of the qrels (qrels, as "
        "trec_eval) or the relevant candidates the run retrieved (retrieved)",
        _FIT,
        choices=("qrels", "retrieved"),
    )
    confidence: float = _option(0.9, "level", "probability that the guarantee holds", _FIT)
    coverage: float | None = _option(
        None, "level", "the abstain rule answers this share of queries (default 0.8)", _ABSTAIN, closed="high"
    )
    risk: float | None = _option(None, "level", "or: the top-1 error among the answered stays below this", _ABSTAIN)
    alpha: float = _option(0.1, "level", "miscoverage of the conformal shortlists", _FIT)
    map: str = _option(
        "auto", "choice", "the map to probabilities (auto: the lowest held-out Brier)", _FIT, choices=("auto", *MAPS)
    )
    level: float = _option(0.95, "level", "confidence of every interval on the page", _REPORT)
    seed: int = _option(0, "whole", "seed of the split, the folds and every resampling", _REPORT, low=0)
    n_resamples: int = _option(1000, "whole", "bootstrap resamples", _REPORT, low=2)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(Settings):
            object.__setattr__(self, f.name, _check(f.name, getattr(self, f.name), f.metadata))
        if self.precision is not None and self.recall is not None:
            raise OptionError("recall", "give a target precision or a target recall, not both")
        if self.coverage is not None and self.risk is not None:
            raise OptionError("risk", "give a coverage or a risk for the abstain rule, not both")
        if self.map in ("identity", "temperature") and self.score == "score":
            what = "reads the scores as probabilities" if self.map == "identity" else "scales a logit"
            raise OptionError(
                "map", f"{self.map} {what}, which a bare score is not; expected auto, platt, isotonic or beta"
            )

    def settings(self) -> Settings:
        """These settings alone (an :class:`Options` less its inputs)."""
        return Settings(**{f.name: getattr(self, f.name) for f in dataclasses.fields(Settings)})


def settings_from(given: Mapping[str, Any], where: str = "calibrank", cls: type = Settings) -> Any:
    """:class:`Settings` (or ``cls``) from keywords, an unknown or mistyped one refused with the names it could have
    meant."""
    known = [f.name for f in dataclasses.fields(cls)]
    for name in given:
        if name not in known:
            near = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise OptionError(name, f"not an option of {where}{hint}; expected one of {', '.join(known)}")
    return cls(**given)


def resolve(settings: Settings | None, given: Mapping[str, Any], where: str) -> Settings:
    """The one :class:`Settings` of a call that takes either a ``settings`` object or the settings as keywords."""
    if settings is None:
        return settings_from(given, where)
    if not isinstance(settings, Settings):
        raise TypeError(f"{where}: settings must be a calibrank.assess.options.Settings, got {type(settings).__name__}")
    if given:
        raise OptionError(next(iter(given)), f"given beside settings=; give the settings one way ({where})")
    return settings


@dataclasses.dataclass(frozen=True)
class Options(Settings):
    r"""One ``calibrank assess``: its inputs, the report folder and its :class:`Settings`, checked on construction.

    Exactly one input: ``run`` (TREC run files, several = samples of one ranker) with ``qrels``; ``table``
    (query, candidate, score, relevance); or ``checkpoint`` with ``queries``. The ``valid_*`` inputs are what
    everything is fitted on (else a seeded half of the queries). ``out`` is checked here too: a folder that
    can be written, not under a file, not on a pseudo-filesystem.

    Parameters
    ----------
    run, valid_run : sequence of str, default=()
        TREC run files (several: samples of one ranker; a file given twice is refused).
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
    name : str, default=None
        The report's name (default: the input's file name).
    out : str, default=None
        The report folder (default: ``assess-<name>``).
    **settings
        The :class:`Settings`.

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
    calibrank.assess.errors.OptionError: precision: expected a number in (0, 1), got 1.5
    >>> tmp.cleanup()
    """

    run: Sequence[str] = _option((), "files", "TREC run file(s)", _IN, cli=False)
    qrels: str | None = _option(None, "file", "the qrels of the runs", _IN, cli=False)
    valid_run: Sequence[str] = _option((), "files", "a validation run (repeat for samples)", _VALID, metavar="RUN")
    valid_qrels: str | None = _option(None, "file", "the qrels of the validation run", _VALID, metavar="QRELS")
    table: str | None = _option(
        None, "file", "a score table (CSV, TSV or Parquet: query, candidate, score[, relevance])", _OTHER
    )
    valid_table: str | None = _option(None, "file", "a validation score table", _OTHER)
    checkpoint: str | None = _option(
        None, "text", "a local cross-encoder checkpoint folder (needs calibrank[checkpoint])", _OTHER
    )
    queries: str | None = _option(None, "file", "queries with candidates (JSONL) for --checkpoint", _OTHER)
    valid_queries: str | None = _option(None, "file", "validation queries (JSONL) for --checkpoint", _OTHER)
    passes: int = _option(0, "whole", "MC Dropout passes of the checkpoint (0: deterministic)", _OTHER, low=0)
    name: str | None = _option(
        None, "text", "the ranker's name on the page (default: the first input's file name)", _REPORT
    )
    out: str | None = _option(None, "text", "the report folder (default: assess-NAME in this folder)", _REPORT)

    def __post_init__(self) -> None:
        super().__post_init__()
        for f in dataclasses.fields(Options):
            if f.name not in Settings.__dataclass_fields__:
                object.__setattr__(self, f.name, _check(f.name, getattr(self, f.name), f.metadata))
        self._check_inputs()
        self._check_name()

    def _check_inputs(self) -> None:
        if self.checkpoint is not None:
            if not Path(self.checkpoint).is_dir():
                raise OptionError("checkpoint", f"{self.checkpoint}: no such folder (a cross-encoder checkpoint)")
            missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
            if missing:
                raise OptionError("checkpoint", f"needs {' and '.join(missing)}: pip install 'calibrank[checkpoint]'")
        given = [o for o in ("run", "table", "checkpoint") if getattr(self, o)]
        if len(given) != 1:
            raise OptionError(
                given[1] if len(given) > 1 else "run",
                "give exactly one input: a run with its qrels, "
                f"a table, or a checkpoint with its queries; got {', '.join(given) or 'none'}",
            )
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
        shared = {os.path.realpath(f) for f in self.run} & {os.path.realpath(f) for f in self.valid_run}
        if shared:
            raise OptionError("valid_run", f"{sorted(shared)[0]} is also a test run; expected other queries to fit on")

    def _check_name(self) -> None:
        first = (self.run or (self.table,) or (str(self.checkpoint).rstrip("/"),))[0]
        name = self.name or Path(Path(str(first)).name.removesuffix(".gz")).stem
        if not _NAME.match(name):
            raise OptionError("name", f"expected letters, digits, '.', '_' or '-' (a folder name), got {name!r}")
        object.__setattr__(self, "name", name)
        out = Path(self.out) if self.out is not None else Path(f"assess-{name}")
        object.__setattr__(self, "out", str(check_out(out)))

    def inputs(self) -> dict[str, Any]:
        """The keywords of :func:`calibrank.assess.read.load.load`."""
        return {
            "run": list(self.run) or None,
            "qrels": self.qrels,
            "valid_run": list(self.valid_run) or None,
            "valid_qrels": self.valid_qrels,
            "table": self.table,
            "valid_table": self.valid_table,
            "checkpoint": self.checkpoint,
            "queries": self.queries,
            "valid_queries": self.valid_queries,
            "passes": self.passes,
            "score": self.score,
            "relevant_at": self.relevant_at,
            "seed": self.seed,
        }

    def input_files(self) -> list[str]:
        """Every file and folder the assessment reads."""
        return [
            p
            for p in (
                *self.run,
                *self.valid_run,
                self.qrels,
                self.valid_qrels,
                self.table,
                self.valid_table,
                self.checkpoint,
                self.queries,
                self.valid_queries,
            )
            if p
        ]

    def validation_files(self) -> list[str]:
        """The files everything is fitted on (hashed into the calibrator's provenance)."""
        files = list(self.valid_run) + [f for f in (self.valid_qrels, self.valid_table, self.valid_queries) if f]
        if not files:  # a seeded half of the input
            files = list(self.run) + [f for f in (self.qrels, self.table, self.queries) if f]
        return files


# --------------------------------------------------------------------------- calibrank watch

_DEPLOYED, _WATCH = "the deployed calibrator", "the watch"


def _same(name: str, help: str | None = None) -> Any:
    """:class:`Settings`' declaration of ``name`` (its default, kind and range) for another command that takes it,
    with its own ``help`` if given."""
    f = Settings.__dataclass_fields__[name]
    return dataclasses.field(default=f.default, metadata={**f.metadata, **({"help": help} if help else {})})


@dataclasses.dataclass(frozen=True)
class WatchSettings:
    """How a deployed calibrator watches new, unjudged queries, checked on construction.

    The keywords of :meth:`calibrank.Calibrator.watch` and the options of ``calibrank watch`` of the same
    names; ``level``, ``n_resamples`` and ``seed`` are :class:`Settings`' declarations.

    Parameters
    ----------
    false_alarm : float, default=0.05
        The shift test flags queries drawn as the validation ones were at most about this often.
    level : float, default=0.95
        The confidence of the estimate's intervals.
    n_resamples : int, default=1000
        Bootstrap resamples of the queries.
    seed : int, default=0
        Seeds the resampling.

    Examples
    --------
    >>> WatchSettings(false_alarm=0.01).level
    0.95
    >>> WatchSettings(false_alarm=0)
    Traceback (most recent call last):
    ...
    calibrank.assess.errors.OptionError: false_alarm: expected a number in (0, 1), got 0
    """

    false_alarm: float = _option(
        0.05, "level", "the shift test flags queries like the validation ones at most about this often", _WATCH
    )
    level: float = _same("level", "confidence of the estimate's intervals")
    n_resamples: int = _same("n_resamples")
    seed: int = _same("seed", "seed of the resampling")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(WatchSettings):
            object.__setattr__(self, f.name, _check(f.name, getattr(self, f.name), f.metadata))

    def settings(self) -> WatchSettings:
        """These settings alone (a :class:`WatchOptions` less its inputs)."""
        return WatchSettings(**{f.name: getattr(self, f.name) for f in dataclasses.fields(WatchSettings)})


@dataclasses.dataclass(frozen=True)
class WatchOptions(WatchSettings):
    """One ``calibrank watch``: the new run, the calibrator that watches it, where the findings go, and its
    :class:`WatchSettings`, checked on construction (``out`` too: a file that can be written).

    Parameters
    ----------
    run : sequence of str
        TREC run file(s) of new queries, no qrels (several: samples of one ranker, read as their mean).
    calibrator : str
        The ``calibrator.json`` that ``calibrank assess`` wrote.
    out : str, default=None
        Also write the findings as JSON to this file.
    **settings
        The :class:`WatchSettings`.

    Examples
    --------
    >>> WatchOptions(run=["missing.trec"], calibrator="calibrator.json")
    Traceback (most recent call last):
    ...
    calibrank.assess.errors.OptionError: run: missing.trec: no such file
    """

    run: Sequence[str] = _option((), "files", "TREC run file(s) of new queries, without qrels", _IN, cli=False)
    calibrator: str | None = _option(
        None, "file", "the calibrator.json that calibrank assess wrote", _DEPLOYED, metavar="JSON"
    )
    out: str | None = _option(None, "text", "also write the findings as JSON to this file", _WATCH, metavar="FILE")

    def __post_init__(self) -> None:
        super().__post_init__()
        for f in dataclasses.fields(WatchOptions):
            if f.name not in WatchSettings.__dataclass_fields__:
                object.__setattr__(self, f.name, _check(f.name, getattr(self, f.name), f.metadata))
        if not self.run:
            raise OptionError(
                "run", "expected one or more TREC run files of new queries (several: samples of one ranker)"
            )
        if self.calibrator is None:
            raise OptionError("calibrator", "required: the calibrator.json that calibrank assess wrote")
        if self.out is not None:
            out = Path(self.out)
            if out.is_dir():
                raise OptionError("out", f"{self.out} is a folder; expected a file to write the findings into")
            check_out(out.parent if str(out.parent) else Path("."), "out")


def check_out(out: str | os.PathLike, option: str = "out") -> Path:
    """``out`` as a report folder that can be written: not a file, not under a file, not on a pseudo-filesystem,
    and its nearest existing folder writable (a probe file is made there and removed). Nothing else is written."""
    out = Path(out)
    resolved = Path(os.path.abspath(out))
    if any(resolved == Path(p) or Path(p) in resolved.parents for p in _PSEUDO):
        raise OptionError(option, f"{out} is on a system pseudo-filesystem; expected a folder on disk")
    if out.exists() and not out.is_dir():
        raise OptionError(option, f"{out} is a file; expected a folder to write the report into")
    existing = resolved
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OptionError(option, f"{existing} is a file, so {out} cannot be made; expected a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".calibrank-probe-", dir=existing)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OptionError(
            option, f"{existing} cannot be written ({exc.strerror or exc}); expected a writable folder"
        ) from None
    return out


def check_option(name: str, value: Any, spelt: str | None = None) -> Any:
    """One option's ``value`` checked against its declaration, for a function that takes it alone (``spelt``: the
    name that function gives it, in the message)."""
    return _check(spelt or name, value, Options.__dataclass_fields__[name].metadata)


_GROUPS = (_DEPLOYED, _WATCH, _VALID, _OTHER, _SCORES, _FIT, _ABSTAIN, _REPORT)


def declared(cls: type[Settings] | type[WatchSettings] = Options) -> list[dataclasses.Field]:
    """The declared options of ``cls`` that the command line offers, inputs first, then by group as declared."""
    fields = [f for f in dataclasses.fields(cls) if f.metadata.get("cli", True)]
    return sorted(fields, key=lambda f: _GROUPS.index(f.metadata["group"]))
