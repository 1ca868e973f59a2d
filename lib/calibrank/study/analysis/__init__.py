"""The study's analyses (notebooks 04-08): every table, figure and verdict, from Predictions only.

The statistics themselves are the core's (:mod:`calibrank.metrics`, :mod:`calibrank.methods`); here they
become the study's tables, one row per ranker and condition.

One module per question, none importing torch (a test checks it):

- :mod:`.load`: :class:`~.load.Study`, a profile's Predictions (ranker x training corpus x
  condition x seed), the seed of each file checked against its name;
- :mod:`.calibration` (notebook 04): metrics per cell with intervals, Penha & Hauff Tables
  1-2 and Figure 2, reliability diagrams, the 2023 papers' layouts, bert's spread over training
  seeds read from the ensemble's members;
- :mod:`.risk_aware` (05): Figure 3 and Table 3 of the risk-aware score mean - b var - 2b sum cov
  (computed by the core's :mod:`calibrank.methods.rerank`);
- :mod:`.nota` and :mod:`.nota_tables` (06): the none-of-the-above forest; Tables 4-5;
- :mod:`.efficiency` (07): parameters and time per query of every ranker, in one run;
- ``practice/`` (08): what to do with the probabilities (:mod:`calibrank.study.analysis.practice`);
- :mod:`.papers`: the papers' own numbers, and ours beside them;
- :mod:`.verdicts`: one row per claim and method with its verdict and power;
- :mod:`.exports`: CSV tables and TREC run files;
- :mod:`.uncertainty`: intervals, paired tests, Holm and the marks of every table;
- :mod:`.subsets`: candidate subsets of Predictions (the balanced set, Figure 2's nested sets);
- :mod:`.explore` (04, 08, 09): the explorer: a view per function (reliability with each bucket's
  interval, score histograms, metrics with intervals, two rankers side by side) of the cell a reader
  picks, and the widgets that pick it and redraw;
- :mod:`.plots` and :mod:`.plots_practice`: the figures, drawn from the tables in one style;
- :mod:`.study`: what the notebooks call, in one import.

Every table checks itself where it is built: a broken invariant is a
:class:`calibrank.table_checks.TableError` naming the table, the row and what was expected.
"""
