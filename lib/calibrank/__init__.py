"""calibrank: can we trust a ranker's scores? Calibration, certified thresholds and abstention for any ranker,
and a reproducible study of BERT-style cross-encoder rankers for conversation response ranking.

``calibrank.Calibrator`` (what ``calibrank assess`` writes as ``calibrator.json``) is imported on
first use, so ``import calibrank`` stays light.
"""

__version__ = "0.1.0"

__all__ = ["Calibrator", "__version__"]


def __getattr__(name: str):
    if name == "Calibrator":
        from .assess.calibrator import Calibrator

        return Calibrator
    raise AttributeError(f"module 'calibrank' has no attribute {name!r}")
