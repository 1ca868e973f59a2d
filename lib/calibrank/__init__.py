"""calibrank: can we trust a ranker's scores? Calibration, certified thresholds and abstention for any ranker,
and a reproducible study of BERT-style cross-encoder rankers for conversation response ranking.

``calibrank.Calibrator`` is what ``calibrank assess`` writes as ``calibrator.json``: it needs numpy
and scipy alone, so ``import calibrank`` stays light.
"""

__version__ = "0.1.0"

from .assess.calibrator import Calibrator  # noqa: E402 - the version first: the calibrator's provenance reads it

__all__ = ["Calibrator", "__version__"]
