"""Your ranker's scores through the study's analyses.

A user's TREC run(s) with qrels, a table of scores, a local Hugging Face cross-encoder
checkpoint or a DataFrame becomes a :class:`~calibrank.assess.scored.ScoredRun` (the scores as
given, lists as they come), then :class:`~calibrank.predictions.Predictions`, and goes through
the same analysis functions as the study's own rankers.

The engine (:func:`calibrank.assess.engine.assess`, one module per section):
:mod:`.ranking`, :mod:`.calibration`, :mod:`.thresholds`, :mod:`.abstain`, :mod:`.conformal`,
:mod:`.uncertainty`, :mod:`.findings`; :mod:`.selfcheck` (every table checks itself),
:mod:`.figures` (drawn from the tables) and ``python -m calibrank.assess``, which runs notebook
09_assess into ``reports/assess/<name>/``.
"""
