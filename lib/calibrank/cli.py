"""The ``calibrank`` command: ``calibrank assess RUN [RUN ...] QRELS`` judges any ranker's scores.

Every option is checked before any work (:class:`calibrank.assess.options.Options`); a bad
option or input is one line naming the option or the file and line, and exit status 2, with
nothing written. The report folder holds ``index.html``, ``calibrator.json`` and ``tables/``.
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
from calibrank.assess.options import Options, OptionError, cli_name, declared

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
    p = sub.add_parser("assess", help="judge a ranker's scores: calibration, a certified cutoff, when to abstain",
                       description="Judge a ranker's scores on test queries, with everything fitted on validation "
                                   "queries: ranking measures as trec_eval counts them, calibration and the best "
                                   "map, a cutoff in raw-score units certified by Learn-then-Test, an abstain rule, "
                                   "conformal shortlists. Writes index.html, calibrator.json and tables/.")
    p.add_argument("files", nargs="*", metavar="RUN [RUN ...] QRELS",
                   help="TREC run file(s) (several: samples of one ranker) and, last, their TREC qrels")
    groups: dict[str, Any] = {}
    for field in declared(Options):
        meta = field.metadata
        group = groups.get(meta["group"]) or groups.setdefault(meta["group"], p.add_argument_group(meta["group"]))
        flag = cli_name(field.name)
        kwargs: dict[str, Any] = {"dest": field.name, "default": None, "help": _help(field)}
        if meta["metavar"]:
            kwargs["metavar"] = meta["metavar"]
        elif meta["kind"] == "choice":
            kwargs["metavar"] = "{" + ",".join(meta["choices"]) + "}"
        if meta["kind"] == "files":
            kwargs.update(action="append")
        elif meta["kind"] in _TYPES:
            kwargs["type"] = _TYPES[meta["kind"]]
        group.add_argument(flag, **kwargs)
        if field.name == "table":  # a table's qrels share the run's option name
            group.add_argument("--qrels", dest="table_qrels", metavar="QRELS",
                               help="qrels for a table without a relevance column")


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = _Parser(prog=PROG, description="Can we trust a ranker's scores?")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _assess_parser(sub)
    args = parser.parse_args(argv)
    try:
        return _assess(args, sub.choices["assess"])
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; nothing was written", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
