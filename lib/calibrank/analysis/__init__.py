"""The analysis layer's building blocks that carry uncertainty: torch-free, computed from Predictions.

- :mod:`.subsets`: candidate subsets of Predictions (the balanced 1:1 set, Figure 2's nested sets);
- :mod:`.uncertainty`: every cell of a table as a value with its 95% interval, paired comparisons
  of two rankers with one-sided p-values, Holm across a table's cells and the marks that say
  what a significant change means;
- :mod:`.verdicts`: the papers' claims, one row per claim and per method, each with the
  paper's effect, ours with its interval, and one of four verdicts.

:mod:`calibrank.study` builds the papers' tables on these.
"""
