"""The ``calibrank`` command: ``calibrank assess RUN [RUN ...] QRELS`` judges any ranker's scores, and
``calibrank watch RUN [RUN ...] --calibrator calibrator.json`` watches the deployed calibrator on new, unjudged queries.

Every option is checked before any work (:class:`calibrank.assess.options.Options`,
:class:`~calibrank.assess.options.WatchOptions`); a bad option or input is one line naming the option or the
file and line, and exit status 2, with nothing written. The report folder holds ``index.html``,
``calibrator.json`` and ``tables/``. ``watch`` prints its findings (and writes them as JSON with ``--out``)
and exits 1 when the new queries' scores are unlike the validation ones (the guarantee does not apply to
them), 0 when they are alike.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from calibrank import __version__
from calibrank.assess.errors import AssessError
from calibrank.assess.options import OptionError, Options, WatchOptions, cli_name, declared

__all__ = ["main"]

PROG = "calibrank"


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (no usage block before them)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _number(text: str) -> float | str:
    """A number, or the text as typed for the option's own check to refuse with the Python API's words."""
    try:
        return float(text)
    except ValueError:
        return text


def _whole(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


_TYPES = {"level": _number, "whole": _whole}


def _help(field: dataclasses.Field) -> str:
    """The option's help from its declaration, with its choices and default."""
    text = field.metadata["help"]
    if field.default not in (None, ()):
        text += f" (default {field.default})"
    return text


def _assess_parser(sub: Any) -> None:
    p = sub.add_parser(
        "assess",
        help="judge a ranker's scores: calibration, a certified cutoff, when to abstain",
        description="Judge a ranker's scores on test queries, with everything fitted on validation "
        "queries: ranking measures as trec_eval counts them, calibration and the best "
        "map, a cutoff in raw-score units certified by Learn-then-Test, an abstain rule, "
        "conformal shortlists. Writes index.html, calibrator.json and tables/.",
    )
    p.add_argument(
        "files",
        nargs="*",
        metavar="RUN [RUN ...] QRELS",
        help="TREC run file(s) (several: samples of one ranker) and, last, their TREC qrels",
    )
    groups: dict[str, Any] = {}
    for field in declared(Options):
        group = _add_declared(p, groups, field)
        if field.name == "table":  # a table's qrels share the run's option name
            group.add_argument(
                "--qrels", dest="table_qrels", metavar="QRELS", help="qrels for a table without a relevance column"
            )


def _add_declared(p: argparse.ArgumentParser, groups: dict[str, Any], field: dataclasses.Field) -> Any:
    """The declared option ``field`` as an argument of ``p``, in its group's section; the group."""
    meta = field.metadata
    group = groups.get(meta["group"]) or groups.setdefault(meta["group"], p.add_argument_group(meta["group"]))
    kwargs: dict[str, Any] = {"dest": field.name, "default": None, "help": _help(field)}
    if meta["metavar"]:
        kwargs["metavar"] = meta["metavar"]
    elif meta["kind"] == "choice":
        kwargs["metavar"] = "{" + ",".join(meta["choices"]) + "}"
    if meta["kind"] == "files":
        kwargs.update(action="append")
    elif meta["kind"] in _TYPES:
        kwargs["type"] = _TYPES[meta["kind"]]
    group.add_argument(cli_name(field.name), **kwargs)
    return group


def _watch_parser(sub: Any) -> None:
    p = sub.add_parser(
        "watch",
        help="watch a deployed calibrator on new, unjudged queries: shift, expected precision",
        description="Watch the calibrator that calibrank assess wrote on a run of new queries, with no "
        "qrels: are their scores like the validation ones (a two-sample test per query "
        "summary at a stated false-alarm rate), and what precision and kept share does "
        "the certified cutoff have there (expected from the calibrated probabilities, "
        "with an interval)? Exit status 1 when the scores are unlike the validation ones: "
        "the guarantee does not apply to these queries; 0 when alike; 2 for a bad input.",
    )
    p.add_argument(
        "files",
        nargs="*",
        metavar="RUN",
        help="TREC run file(s) of new queries, without qrels (several: samples of one ranker)",
    )
    groups: dict[str, Any] = {}
    for field in declared(WatchOptions):
        _add_declared(p, groups, field)


def _options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Options:
    files = list(args.files)
    if files and (args.table or args.checkpoint):
        parser.error(f"RUN QRELS: give run files or --table or --checkpoint, not both (got {' '.join(files)})")
    if len(files) == 1:
        parser.error(f"RUN QRELS: got one file ({files[0]}); expected the run file(s) and then the qrels")
    if files and args.table_qrels:
        parser.error("--qrels: the qrels of a run come last after RUN; --qrels goes with --table")
    given = {f.name: getattr(args, f.name) for f in declared(Options) if getattr(args, f.name) is not None}
    run, qrels = (files[:-1], files[-1]) if files else ([], args.table_qrels)
    return Options(run=run, qrels=qrels, **given)


def _assess(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        options = _options(args, parser)
    except OptionError as exc:
        name = "RUN QRELS" if exc.text.startswith("give exactly one input") else cli_name(exc.option)
        if exc.option == "qrels" and (args.table or args.checkpoint):
            name = "--qrels"
        parser.error(f"{name}: {exc.text}")
    # the assessment's stack (numpy, scipy, pandas, matplotlib, pyarrow) is loaded only once the options hold
    from calibrank.assess.command import report
    from calibrank.assess.deploy.calibrator import CalibratorError

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            index = report(options)
        except (AssessError, CalibratorError) as exc:
            parser.error(str(exc))  # the one line of a failed run: its warnings are not shown
        except OSError as exc:
            where = exc.filename or options.out
            parser.error(f"{where}: cannot be written ({exc.strerror or exc}); expected a writable folder with room")
    for w in caught:
        if issubclass(w.category, UserWarning):
            print(f"{parser.prog}: warning: {w.message}", file=sys.stderr)
    print(f"{parser.prog}: {index}")
    return 0


def _watch(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    given = {f.name: getattr(args, f.name) for f in declared(WatchOptions) if getattr(args, f.name) is not None}
    try:
        options = WatchOptions(run=list(args.files), **given)
    except OptionError as exc:
        parser.error(f"{cli_name(exc.option)}: {exc.text}")
    assert options.calibrator is not None  # WatchOptions refuses to be built without one
    # numpy and scipy (and arrow, to read the run) only once the options hold
    import dataclasses as dc
    import json

    import numpy as np

    from calibrank.assess.deploy.calibrator import NO_FINGERPRINT, Calibrator, CalibratorError
    from calibrank.assess.read.trec import read_unjudged_runs
    from calibrank.atomic import atomic_path

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            cal = Calibrator.load(options.calibrator)
            if cal.fingerprint is None:  # said before the run is read
                parser.error(f"{options.calibrator}: {NO_FINGERPRINT}")
            run = read_unjudged_runs(options.run, kind=cal.map.kind)
            scores = np.where(run.mask, run.scores.mean(axis=0), 0.0)
            found = cal.watch(scores, run.mask, **dc.asdict(options.settings()))
        except (AssessError, CalibratorError) as exc:
            parser.error(str(exc))
    for w in caught:
        if issubclass(w.category, UserWarning):
            print(f"{PROG}: warning: {w.message}", file=sys.stderr)
    fitted = cal.fitted_on.get("samples")
    if fitted is not None and fitted != run.n_samples:
        print(
            f"{PROG}: warning: the calibrator read the mean of {fitted} sample(s) per candidate, this run gives "
            f"{run.n_samples}; a mean of another number of samples spreads otherwise",
            file=sys.stderr,
        )
    if options.out is not None:
        record = {"run": [str(f) for f in options.run], "calibrator": str(options.calibrator), **found.to_dict()}
        try:
            with atomic_path(options.out) as tmp:
                tmp.write_text(json.dumps(record, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        except OSError as exc:
            parser.error(
                f"{exc.filename or options.out}: cannot be written ({exc.strerror or exc}); expected a writable file"
            )
    print(f"{PROG}: watch of {run.source} with {options.calibrator}")
    for line in found.lines():
        print(f"{PROG}: {line}")
    return 1 if found.flagged else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(prog=PROG, description="Can we trust a ranker's scores?")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _assess_parser(sub)
    _watch_parser(sub)
    args = parser.parse_args(argv)
    try:
        if args.command == "watch":
            return _watch(args, sub.choices["watch"])
        return _assess(args, sub.choices["assess"])
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing was written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
