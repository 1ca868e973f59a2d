"""calibrank: can we trust a ranker's scores? Calibration, certified thresholds and abstention for any ranker,
and a reproducible study of BERT-style cross-encoder rankers for conversation response ranking.

The core a practitioner installs:

- :func:`fit` (scores, relevance, query ids -> :class:`Calibrator`) and :func:`evaluate` (-> a
  :class:`~calibrank.assess.api.Report` whose ``save`` writes the page and ``calibrator.json``);
- :class:`Calibrator`, what ``calibrank assess`` writes as ``calibrator.json`` (numpy and scipy alone);
- the ``calibrank`` command (:mod:`calibrank.cli`).

Each name is loaded when first used, so ``import calibrank`` loads nothing beyond this module.
The study (:mod:`calibrank.study`) sits on this core; nothing here imports it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

#: public name -> the module that defines it
_LAZY = {
    "Calibrator": "calibrank.assess.deploy.calibrator",
    "fit": "calibrank.assess.api",
    "evaluate": "calibrank.assess.api",
    "Report": "calibrank.assess.api",
    "Settings": "calibrank.assess.options",
    "AssessError": "calibrank.assess.errors",
    "OptionError": "calibrank.assess.errors",
}

__all__ = ["AssessError", "Calibrator", "OptionError", "Report", "Settings", "__version__", "evaluate", "fit"]

if TYPE_CHECKING:
    from calibrank.assess.api import Report, evaluate, fit
    from calibrank.assess.deploy.calibrator import Calibrator
    from calibrank.assess.errors import AssessError, OptionError
    from calibrank.assess.options import Settings


def __getattr__(name: str) -> Any:
    """Load a public name on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'calibrank' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
