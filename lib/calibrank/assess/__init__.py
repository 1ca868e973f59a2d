"""Any ranker's scores through the study's analyses, and what a practitioner deploys from them.

A TREC run with qrels, a score table, a local cross-encoder checkpoint, a DataFrame or ranx
objects become a :class:`~calibrank.assess.scored.ScoredRun`; a :class:`~calibrank.assess.calibrator.Calibrator`
is fitted on the validation queries and every section is judged on the test queries.

Inputs: :mod:`.scored` (the contract), :mod:`.inputs` (qrels and assembly), :mod:`.trec`,
:mod:`.tables`, :mod:`.checkpoint`, :mod:`.load`. What is deployed: :mod:`.maps` (raw score to
probability), :mod:`.certify` (a raw-score cutoff by Learn-then-Test), :mod:`.calibrator` (the JSON
object), :mod:`.fit` (fitting it). Sections: :mod:`.engine` calls :mod:`.ranking`,
:mod:`.reliability`, :mod:`.thresholds`, :mod:`.abstain`, :mod:`.shortlists`, :mod:`.risk_aware`,
:mod:`.headlines`; :mod:`.selfcheck` checks each table. The command: :mod:`.options` (every option
checked in one place), :mod:`.command` (options to report), :mod:`.page` and :mod:`.figures` (the
page from a template), :mod:`.numbers` (numbers for people), :mod:`.publish` (a folder written
whole), and :mod:`.__main__` (``python -m calibrank.assess``, as ``calibrank assess``).
"""
