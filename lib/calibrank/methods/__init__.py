"""The statistics a practitioner deploys, on plain arrays and :class:`~calibrank.predictions.Predictions`.

Shared by ``calibrank assess`` and the study's notebook 08 (which builds its tables from them in
:mod:`calibrank.study.analysis.practice`); nothing here reads a profile or a corpus:

- :mod:`.recalibrate`: prior correction, Platt, isotonic, beta and temperature maps of probabilities;
- :mod:`.prior`: the training/test prior shift and its correction by Bayes' rule;
- :mod:`.selective`: answer or abstain (risk-coverage, AURC, E-AURC, AUGRC) with bootstrap intervals;
- :mod:`.conformal`: split-conformal shortlists (LAC, APS);
- :mod:`.listwise`: the candidate distribution of a query and its uncertainty signals;
- :mod:`.proportions`: exact binomial tests and Clopper-Pearson bounds;
- :mod:`.intervals`: bootstrap intervals over queries (scipy);
- :mod:`.rerank`: risk-aware re-ranking mean - b*var - 2b*sum(cov) (Penha & Hauff 2021, eq. 4).
"""
