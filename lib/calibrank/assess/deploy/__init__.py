"""What is deployed: :mod:`.maps` (raw score to probability), :mod:`.certify` (a raw-score cutoff by
Learn-then-Test), :mod:`.calibrator` (the JSON object, numpy and scipy alone) and :mod:`.fit` (fitting it
on validation queries).
"""
