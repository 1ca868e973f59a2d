"""The analysis layer: every table, figure and verdict of notebooks 04-07, from Predictions only.

One module per question, none importing torch (a test checks it):

- :mod:`.load`: :class:`~.load.Study`, a profile's Predictions (ranker x training corpus x
  condition x seed), the seed of each file checked against its name;
- :mod:`.calibration` (notebook 04): metrics per cell with intervals, Penha & Hauff Tables
  1-2 and Figure 2, reliability diagrams, the 2023 papers' layouts;
- :mod:`.risk_aware` (05): Figure 3 and Table 3, risk-aware re-ranking;
- :mod:`.nota_tables` (06): Tables 4-5, none-of-the-above prediction;
- :mod:`.papers`: the papers' own numbers, and ours beside them;
- :mod:`.verdicts`: one row per claim and method with one of four verdicts;
- :mod:`.exports`: CSV tables and TREC run files;
- :mod:`.uncertainty`: intervals, paired tests, Holm and the marks of every table;
- :mod:`.subsets`: candidate subsets of Predictions (the balanced set, Figure 2's nested sets).

Every table checks itself where it is built: a broken invariant is a
:class:`calibrank.table_checks.TableError` naming the table, the row and what was expected.

:mod:`calibrank.study` re-exports what the notebooks call. The analyses beyond the papers
(notebook 08) are :mod:`calibrank.practice`.
"""
