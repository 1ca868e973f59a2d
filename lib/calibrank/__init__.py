"""calibrank: calibration and uncertainty of neural cross-encoder rankers for conversation response ranking."""

__version__ = "0.1.0"
