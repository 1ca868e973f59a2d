"""Beyond the papers: what a practitioner needs from a ranker's probabilities (notebook 08).

The tables of notebook 08; each module builds them from the core's statistics of the same concern
(:mod:`calibrank.methods`: recalibration maps, the prior correction, selective risk, conformal sets,
the candidate distribution, binomial bounds, bootstrap intervals).

Computed from the Predictions of notebook 03 only (no model is run). One concern per module:

- :mod:`.prior`: the training/test prior shift and its Bayes correction (Saerens et al. 2002);
- :mod:`.fitdata`: where post-hoc methods are fitted (validation, else a seeded half of test);
- :mod:`.recalibrate`: Platt, isotonic, beta, temperature and prior recalibration, fitted once
  and applied in distribution and under shift;
- :mod:`.selective`: answer or abstain: risk-coverage curves, AURC, E-AURC, AUGRC, with
  bootstrap intervals over queries;
- :mod:`.conformal`: split-conformal shortlists of candidates (LAC, APS) and their coverage
  under shift;
- :mod:`.listwise`: the candidate distribution ``softmax(logit(p))``, query-level
  uncertainty signals, listwise (top-label) calibration;
- :mod:`.signals`: uncertainty for flagging shifted queries (AUROC, with its bootstrap
  interval) and for query performance prediction (Kendall's tau);
- :mod:`.nota_sets`: "none of the above" from an empty conformal set, and from a threshold on
  the top probability certified by Learn then Test, beside notebook 06's random forest;
- :mod:`.findings`: one sentence per finding, computed from the tables;
- :mod:`.cells`: the rows of every table (a ranker x test condition cell) and which rows a study implies.

Every table checks itself where it is built: a row that breaks an invariant raises
:class:`calibrank.table_checks.TableError` naming the table, the row and what was expected.

Nothing here imports torch.
"""
