"""The sections of an assessment, each a table judged on the test queries: :mod:`.ranking`,
:mod:`.reliability`, :mod:`.thresholds`, :mod:`.abstain`, :mod:`.shortlists`, :mod:`.reranking`,
:mod:`.headlines` (one finding per section) and :mod:`.selfcheck` (each table checks itself).
"""
