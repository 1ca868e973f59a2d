"""Your ranker's scores through the study's analyses.

A user's TREC run(s) with qrels, a table of scores, a local Hugging Face cross-encoder
checkpoint or a DataFrame becomes a :class:`~calibrank.assess.scored.ScoredRun` (the scores as
given, lists as they come), then :class:`~calibrank.predictions.Predictions`, and goes through
the same analysis functions as the study's own rankers.

Inputs: :mod:`.scored` (the ``ScoredRun`` contract and ``AssessError``), :mod:`.inputs` (qrels and
the vectorised assembly shared by the readers), :mod:`.trec` (TREC runs and qrels),
:mod:`.tables` (CSV / TSV / Parquet / JSONL tables and DataFrames), :mod:`.checkpoint` (a local
Hugging Face cross-encoder scored, deterministically or with MC Dropout) and :mod:`.load` (one
call from the command line's options to fit and judge inputs).

The engine (:mod:`.engine`, whose :func:`~calibrank.assess.engine.assess` calls one module per section):
:mod:`.ranking`, :mod:`.calibration`, :mod:`.thresholds`, :mod:`.abstain`, :mod:`.conformal`,
:mod:`.uncertainty`, :mod:`.findings`; :mod:`.selfcheck` (every table checks itself),
:mod:`.figures` (drawn from the tables) and ``python -m calibrank.assess`` (:mod:`.__main__`), which runs notebook
09_assess into ``reports/assess/<name>/``.
"""
