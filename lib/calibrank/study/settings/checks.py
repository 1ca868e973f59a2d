"""The rules a setting obeys, and the error that names it: one set for the profile and the layers alike.

A layer checks its arguments with these rules where it is built, and the profile's sections
(:mod:`calibrank.study.settings.config`) check their keys with the same ones, so a params file and a keyword
argument are refused with the same words. Every error is a :class:`ConfigError` (a ``ValueError``)
that starts with the key it is about. Standard library only: the config loads it without torch.
"""

from __future__ import annotations

import difflib
import enum
import math
import numbers
from typing import Any

from calibrank.study.settings.choices import MATERN_NU, FocalGamma
from calibrank.study.settings.choices import names as choice_names

__all__ = [
    "ConfigError",
    "check_choice",
    "check_count",
    "check_dropout",
    "check_focal_gamma",
    "check_matern_nu",
    "check_momentum",
    "check_non_negative",
    "check_positive",
    "close_match",
    "error",
    "is_int",
    "is_number",
    "within",
]


class ConfigError(ValueError):
    """A setting is invalid (in a params file, an override, or the keyword arguments of what it configures);
    the message names the file and line where there is one, the key and what was expected. ``key`` is the
    dotted key the message starts with (``rankers.seeds[1]``), if any."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def error(key: str, msg: str) -> ConfigError:
    """``key: msg``, with ``key`` recorded on the error."""
    return ConfigError(f"{key}: {msg}", key=key)


def close_match(value: Any, options: list[str]) -> str:
    """`` (did you mean 'x'?)`` for the option closest to ``value``, or nothing."""
    close = difflib.get_close_matches(str(value), options, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def is_number(value: Any) -> bool:
    """A finite real number that is not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def is_int(value: Any) -> bool:
    """An integer that is not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_positive(key: str, value: Any) -> float:
    """``value`` as a float if it is a finite number > 0, else a :class:`ConfigError` naming ``key``."""
    if not (is_number(value) and value > 0):
        raise error(key, f"expected a positive number, got {value}")
    return float(value)


def check_non_negative(key: str, value: Any) -> float:
    """``value`` as a float if it is a finite number >= 0, else a :class:`ConfigError` naming ``key``."""
    if not (is_number(value) and value >= 0):
        raise error(key, f"expected a number >= 0, got {value}")
    return float(value)


def check_count(key: str, value: Any, minimum: int = 1, what: str = "", maximum: int | None = None) -> int:
    """``value`` as an int if it is an integer in ``minimum..maximum`` (no upper bound when ``maximum`` is None);
    ``what`` names the unit counted in the message."""
    if not (is_int(value) and value >= minimum):
        expected = (
            "a positive integer" if minimum == 1 and not what else f"at least {minimum}{' ' + what if what else ''}"
        )
        raise error(key, f"expected {expected}, got {value}")
    if maximum is not None and value > maximum:
        raise error(
            key,
            f"expected at most {maximum}{' ' + what if what else ''} (a bound no run of the study "
            f"comes near), got {value}",
        )
    return int(value)


def check_dropout(key: str, value: Any) -> float:
    """A dropout probability in [0, 1)."""
    if not (is_number(value) and 0.0 <= value < 1.0):
        raise error(key, f"expected a probability in [0, 1), got {value}")
    return float(value)


def check_momentum(key: str, value: Any) -> float | None:
    """``None`` (an exact sum) or a moving-average momentum in the open interval (0, 1) (GPF-BERT eq. 5)."""
    if value is None:
        return None
    if not (is_number(value) and 0.0 < value < 1.0):
        raise error(key, f"expected null (exact sum) or a number in (0, 1), got {value}")
    return float(value)


def check_choice(key: str, value: Any, choice: type[enum.Enum]) -> Any:
    """The member of the :mod:`calibrank.study.settings.choices` enum ``choice`` that ``value`` names (a member or its value)."""
    try:
        return choice(value)
    except ValueError:
        hint = close_match(value, [m.value for m in choice])
        raise error(key, f"expected one of {choice_names(choice)}, got {value!r}{hint}") from None


def check_focal_gamma(key: str, gamma: Any) -> float | str:
    """A focal-loss gamma (GPF-BERT eq. 6): a number >= 0 as a float, or a :class:`FocalGamma` name as a string."""
    if isinstance(gamma, str):
        try:
            return FocalGamma(gamma).value
        except ValueError:
            hint = close_match(gamma, [m.value for m in FocalGamma])
            raise error(
                key, f"expected a number >= 0 or one of {choice_names(FocalGamma)}, got {gamma!r}{hint}"
            ) from None
    if not (is_number(gamma) and gamma >= 0):
        raise error(key, f"a focal-loss gamma must be >= 0 (or one of {choice_names(FocalGamma)}), got {gamma!r}")
    return float(gamma)


def check_matern_nu(key: str, nu: Any) -> float:
    """A Matérn smoothness with a closed form (:data:`calibrank.study.settings.choices.MATERN_NU`)."""
    if nu not in MATERN_NU:
        raise error(key, f"expected one of {', '.join(f'{v:g}' for v in MATERN_NU)} (Matérn smoothness), got {nu}")
    return float(nu)


def within(prefix: str, exc: ConfigError) -> ConfigError:
    """``exc`` raised inside the section ``prefix``: its message and key start with the section's."""
    return ConfigError(f"{prefix}.{exc}", key=f"{prefix}.{exc.key}" if exc.key else prefix)
