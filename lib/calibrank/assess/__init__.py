"""Any ranker's scores through the study's analyses, and what a practitioner deploys from them.

A TREC run with qrels, a score table, a local cross-encoder checkpoint, a DataFrame or ranx
objects become a :class:`~calibrank.assess.read.scored.ScoredRun`; a
:class:`~calibrank.assess.deploy.calibrator.Calibrator` is fitted on the validation queries and every
section is judged on the test queries.

Grouped by concern: :mod:`.read` (inputs), :mod:`.deploy` (what is deployed and its fitting),
:mod:`.sections` (the tables of a report), :mod:`.page` (the page and the report folder). Beside them:
:mod:`.errors` (the user's mistakes), :mod:`.options` (every option, declared and checked once), :mod:`.numbers`
(numbers rounded for people, one way everywhere), :mod:`.engine` (inputs to sections), :mod:`.api`
(``calibrank.fit`` and ``calibrank.evaluate``),
:mod:`.command` (options to a written report) and :mod:`.__main__` (``python -m calibrank.assess``).
"""
