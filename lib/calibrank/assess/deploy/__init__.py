"""What is deployed: :mod:`.maps` (raw score to probability), :mod:`.certify` (a raw-score cutoff by
Learn-then-Test), :mod:`.calibrator` (the JSON object, numpy and scipy alone), :mod:`.fit` (fitting it
on validation queries) and :mod:`.watch` (the validation scores' fingerprint, the shift test and the
label-free estimate of the cutoff on new queries).
"""
