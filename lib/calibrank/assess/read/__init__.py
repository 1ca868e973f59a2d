"""What a user has, read into a :class:`~calibrank.assess.read.scored.ScoredRun`.

:mod:`.scored` (the contract), :mod:`.rows` (qrels, and rows checked and assembled into arrays),
:mod:`.trec` (TREC runs and qrels), :mod:`.score_tables` (CSV, TSV, Parquet, JSON Lines, DataFrames,
ranx), :mod:`.checkpoint` (a local cross-encoder checkpoint, the ``checkpoint`` extra) and
:mod:`.load` (validation and test inputs from any of them).
"""
