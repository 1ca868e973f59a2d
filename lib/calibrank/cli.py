"""The ``calibrank`` command: ``calibrank assess RUN [RUN ...] QRELS`` judges any ranker's scores.

Every option is checked before any work (:class:`calibrank.assess.options.Options`); a bad
option or input is one line naming the option or the file and line, and exit status 2, with
nothing written. The report folder holds ``index.html``, ``calibrator.json`` and ``tables/``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

from . import __version__
from .assess.calibrator import CalibratorError
from .assess.command import report
from .assess.options import OptionError, Options, cli_name
from .assess.scored import AssessError

__all__ = ["main"]

PROG = "calibrank"


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (no usage block before them)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _fraction(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def _assess_parser(sub) -> None:
    p = sub.add_parser("assess", help="judge a ranker's scores: calibration, a certified cutoff, when to abstain",
                       description="Judge a ranker's scores on test queries, with everything fitted on validation "
                                   "queries: ranking measures as trec_eval counts them, calibration and the best "
                                   "map, a cutoff in raw-score units certified by Learn-then-Test, an abstain rule, "
                                   "conformal shortlists. Writes index.html, calibrator.json and tables/.")
    p.add_argument("files", nargs="*", metavar="RUN [RUN ...] QRELS",
                   help="TREC run file(s) (several: samples of one ranker) and, last, their TREC qrels")
    g = p.add_argument_group("validation input (what everything is fitted on; default: a seeded half of the queries)")
    g.add_argument("--valid-run", action="append", default=[], metavar="RUN", help="a validation run (repeat for samples)")
    g.add_argument("--valid-qrels", metavar="QRELS", help="the qrels of the validation run")
    o = p.add_argument_group("other inputs")
    o.add_argument("--table", help="a score table (CSV, TSV or Parquet: query, candidate, score[, relevance])")
    o.add_argument("--valid-table", help="a validation score table")
    o.add_argument("--qrels", dest="table_qrels", metavar="QRELS", help="qrels for a table without a relevance column")
    o.add_argument("--checkpoint", help="a local cross-encoder checkpoint folder (needs calibrank[checkpoint])")
    o.add_argument("--queries", help="queries with candidates (JSONL) for --checkpoint")
    o.add_argument("--valid-queries", help="validation queries (JSONL) for --checkpoint")
    o.add_argument("--passes", type=_whole, default=0, help="MC Dropout passes of the checkpoint (0: deterministic)")
    s = p.add_argument_group("what the scores are")
    s.add_argument("--score", default="score", help="probability, logit or score (any scale; the default)")
    s.add_argument("--relevant-at", type=_whole, default=1, help="the lowest qrels grade that counts as relevant (1)")
    t = p.add_argument_group("what to certify")
    t.add_argument("--precision", type=_fraction, help="target precision of the kept candidates (default 0.9)")
    t.add_argument("--recall", type=_fraction, help="target recall instead of precision")
    t.add_argument("--confidence", type=_fraction, default=0.9, help="probability the guarantee holds (0.9)")
    t.add_argument("--coverage", type=_fraction, help="the abstain rule answers this share of queries (default 0.8)")
    t.add_argument("--risk", type=_fraction, help="or: the top-1 error among the answered stays below this")
    t.add_argument("--alpha", type=_fraction, default=0.1, help="miscoverage of the conformal shortlists (0.1)")
    t.add_argument("--map", default="auto", help="auto (held-out Brier), platt, isotonic, beta, temperature or identity")
    r = p.add_argument_group("the report")
    r.add_argument("--seed", type=_whole, default=0, help="seed of the split, the folds and every resampling (0)")
    r.add_argument("--n-resamples", type=_whole, default=1000, help="bootstrap resamples (1000)")
    r.add_argument("--name", help="the ranker's name on the page (default: the first input's file name)")
    r.add_argument("--out", help="the report folder (default: assess-NAME in this folder)")


def _options(args: argparse.Namespace, parser: argparse.ArgumentParser):
    files = list(args.files)
    if files and (args.table or args.checkpoint):
        parser.error(f"RUN QRELS: give run files or --table or --checkpoint, not both (got {' '.join(files)})")
    if len(files) == 1:
        parser.error(f"RUN QRELS: got one file ({files[0]}); expected the run file(s) and then the qrels")
    run, qrels = (files[:-1], files[-1]) if files else ([], args.table_qrels)
    if files and args.table_qrels:
        parser.error("--qrels: the qrels of a run come last after RUN; --qrels goes with --table")
    return Options(run=run, qrels=qrels, valid_run=args.valid_run, valid_qrels=args.valid_qrels, table=args.table,
                   valid_table=args.valid_table, checkpoint=args.checkpoint, queries=args.queries,
                   valid_queries=args.valid_queries, passes=args.passes, score=args.score,
                   relevant_at=args.relevant_at, precision=args.precision, recall=args.recall,
                   confidence=args.confidence, coverage=args.coverage, risk=args.risk, alpha=args.alpha, map=args.map,
                   seed=args.seed, n_resamples=args.n_resamples, name=args.name, out=args.out)


def _assess(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        options = _options(args, parser)
    except OptionError as exc:
        name = "RUN QRELS" if exc.text.startswith("give exactly one input") else cli_name(exc.option)
        if exc.option == "qrels" and (args.table or args.checkpoint):
            name = "--qrels"
        parser.error(f"{name}: {exc.text}")
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
