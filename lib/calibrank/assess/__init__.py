"""Your ranker's scores through the study's analyses.

A TREC run with qrels, a score table, a local cross-encoder checkpoint or a DataFrame becomes
a :class:`~calibrank.assess.scored.ScoredRun`, then :class:`~calibrank.predictions.Predictions`,
and goes through the study's own analysis functions.

Inputs: :mod:`.scored` (the contract), :mod:`.inputs` (qrels and assembly), :mod:`.trec`,
:mod:`.tables`, :mod:`.checkpoint`, :mod:`.load`. Engine: :mod:`.engine` calls one module per
section, :mod:`.ranking`, :mod:`.calibration`, :mod:`.thresholds`, :mod:`.abstain`,
:mod:`.conformal`, :mod:`.uncertainty`, :mod:`.findings`; :mod:`.selfcheck`, :mod:`.figures`,
and :mod:`.__main__` (``python -m calibrank.assess``, notebook 09_assess).
"""
