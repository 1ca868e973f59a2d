"""Profiles: ``params/<profile>.yaml`` read into typed, validated, frozen dataclasses.

A mistyped key silently falling back to a default is how experiments go wrong, so an unknown key,
a wrong type or a value out of range is a :class:`ConfigError` naming file, line, key and what was
expected. :mod:`calibrank.study.settings.profiles` reads the files, :mod:`calibrank.study.settings.schema`
holds the sections; this module builds one from the other, as :func:`build_section` does for a
ranker's keyword arguments. Notebooks take only the profile name and call :func:`load_config`.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import sys
import types
import typing
from collections.abc import Mapping
from typing import Any

import pandas as pd

from calibrank.study.settings import registry
from calibrank.study.settings.checks import (
    ConfigError,
    close_match,
    error,
    within,
)
from calibrank.study.settings.choices import (
    Corpus,
    RankerName,
)
from calibrank.study.settings.profiles import (
    EXTENDS,
    Lines,
    check_no_empty_section,
    key_path,
    lines_within,
    locate,
    merge,
    profile_sources,
    read_profile,
    set_dotted,
)
from calibrank.study.settings.schema import (
    Config,
    plain,
)

__all__ = [
    "build_section",
    "load_config",
    "section_table",
    "train_runs",
    "training_seeds",
    "run_name",
    "parse_run_name",
]


def _choices(choice: type[enum.Enum]) -> list[str]:
    """The accepted values of an enum-typed option; for rankers, every registered ranker
    (:mod:`calibrank.study.settings.registry`), so a ranker registered outside this package is a valid name."""
    return list(registry.RANKERS) if choice is RankerName else [m.value for m in choice]


def _hint(value: Any, choice: type[enum.Enum]) -> str:
    """`` (did you mean 'x'?)`` for the member of ``choice`` closest to ``value``, or nothing."""
    return close_match(value, _choices(choice))


# ----------------------------------------------------------------------------- validation


def _describe(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if a is type(None) else _describe(a) for a in typing.get_args(tp))
    if origin is tuple:
        return f"a list of {_describe(typing.get_args(tp)[0])}"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "one of " + ", ".join(repr(v) for v in _choices(tp))
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(tp, str(tp))


def _coerce(tp: Any, value: Any, key: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        for a in args:
            if a is type(None):
                continue
            try:
                return _coerce(a, value, key)
            except ConfigError:
                continue
        hints = [
            _hint(value, a) for a in args if isinstance(value, str) and isinstance(a, type) and issubclass(a, enum.Enum)
        ]
        raise error(key, f"expected {_describe(tp)}, got {value!r}{next((h for h in hints if h), '')}")
    if origin is tuple:
        (inner, _ellipsis) = typing.get_args(tp)
        if not isinstance(value, (list, tuple)):
            raise error(key, f"expected {_describe(tp)}, got {value!r}")
        return tuple(_coerce(inner, v, f"{key}[{i}]") for i, v in enumerate(value))
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, key)
    if tp is RankerName and isinstance(value, str) and value in registry.RANKERS:
        return registry.key(value)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise error(key, f"expected {_describe(tp)}, got {value!r}{_hint(value, tp)}") from None
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(float(value)):
                raise error(key, f"expected a finite number, got {value!r}")
            return float(value)
    elif tp is str:
        if isinstance(value, str):
            return value
    else:  # pragma: no cover - a field type this validator does not know is a programming error
        raise TypeError(f"config field {key} has unsupported type {tp}")
    raise error(key, f"expected {_describe(tp)}, got {value!r}")


def _build(cls: type, raw: Any, prefix: str) -> Any:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise error(prefix or "<top level>", f"expected a mapping, got {raw!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.name != "source"}
    kwargs = {}
    for k, v in raw.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if k not in fields:
            raise error(key, f"unknown key{close_match(k, list(fields))}; known keys here: {', '.join(fields)}")
        kwargs[k] = _coerce(hints[k], v, key)
    obj = cls(**kwargs)
    check = getattr(obj, "check", None)
    if check is not None:
        try:
            check()
        except ConfigError as exc:
            raise (within(prefix, exc) if prefix else exc) from None
    return obj


def build_section(cls: type, values: Mapping[str, Any], *, where: str = "") -> Any:
    """The config section ``cls`` from keyword ``values``, as a params file would give them.

    The section's defaults fill what ``values`` leaves out, and the values are coerced and
    checked as in :func:`load_config` (so a ranker's keyword arguments and its params section
    have one set of defaults and one set of checks). A :class:`ConfigError` starts with ``where``
    (e.g. the ranker's name) and names the key.
    """
    try:
        return _build(cls, dict(values), "")
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}" if where else str(exc), key=exc.key) from None


def _check_given_seeds(raw: dict[str, Any], lines: Lines, path) -> None:
    """``rankers.seeds: []`` is refused where it was written: left out, the key means the profile seed alone
    (:func:`training_seeds`), but an empty list given on purpose would run that seed silently."""
    rankers = raw.get("rankers")
    seeds = rankers.get("seeds") if isinstance(rankers, dict) else None
    if isinstance(seeds, list) and not seeds:
        main = raw.get("seed", 0)
        raise locate(
            error(
                "rankers.seeds",
                f"expected at least one training seed, got []; list them (e.g. [{main}]), "
                f"or leave the key out to train with the profile's seed ({main}) alone",
            ),
            lines,
            path,
        )


def load_config(profile: str | os.PathLike, overrides: dict[str, Any] | None = None) -> Config:
    """Read and validate a profile; ``overrides`` maps dotted keys (``"data.max_dialogues"``) to values.

    A profile with ``extends: <other>`` starts from the other profile's keys (:data:`EXTENDS`). Every error
    names the file and line of the key it is about (the parent's, for a key the profile inherits).
    """
    sources = profile_sources(profile)
    path = sources[0]
    raw: dict[str, Any] = {}
    lines: Lines = {}
    for src in reversed(sources):
        own, own_lines = read_profile(src)
        parent = own.pop(EXTENDS, None)
        if parent is not None:
            check_no_empty_section(own, Config, own_lines, parent)
        if src != path:
            own.pop("profile", None)  # the name is not inherited
        raw = merge(raw, own, lines, own_lines)
    for dotted, value in (overrides or {}).items():
        set_dotted(raw, dotted, value)
        for p in lines_within(lines, key_path(dotted)):
            del lines[p]
        lines[key_path(dotted)] = None
    if "profile" not in raw:
        raise ConfigError(f"{path}: profile: missing required key (the profile's name)")
    _check_given_seeds(raw, lines, path)
    try:
        cfg = _build(Config, raw, "")
    except ConfigError as exc:
        raise locate(exc, lines, path) from None
    if cfg.profile != path.stem:
        # runs/<profile>/ and reports/<profile>/ are named after it: a copied file that kept
        # another profile's name would overwrite that profile's results.
        raise locate(error("profile", f"{cfg.profile!r} must match the file name {path.stem!r}"), lines, path)
    return dataclasses.replace(cfg, source=str(path))


def training_seeds(cfg: Config) -> tuple[int, ...]:
    """The training seeds of the profile: ``rankers.seeds``, or the profile seed alone; the first is the main run."""
    return cfg.rankers.seeds or (cfg.seed,)


def run_name(ranker: str | RankerName, corpus: str | Corpus, seed: int, cfg: Config) -> str:
    """``<ranker>-<corpus>`` for the main seed, ``<ranker>-<corpus>-seed<N>`` for the others."""
    base = f"{registry.info(ranker).name}-{Corpus(corpus).value}"
    return base if seed == training_seeds(cfg)[0] else f"{base}-seed{seed}"


def parse_run_name(name: str, cfg: Config) -> tuple[RankerName | str, Corpus, int]:
    """The inverse of :func:`run_name`; a clear error for a run the profile does not list."""
    if name not in train_runs(cfg):
        raise ConfigError(
            f"{cfg.source or cfg.profile}: {name!r} is not a run of the profile (expected one of: "
            f"{', '.join(train_runs(cfg))})"
        )
    parts = name.split("-")
    seed = int(parts[2][len("seed") :]) if len(parts) == 3 else training_seeds(cfg)[0]
    return registry.key(parts[0]), Corpus(parts[1]), seed


def train_runs(cfg: Config) -> list[str]:
    """The runs of notebook 03 the profile asks for: ranker x training corpus x seed (names use no '-')."""
    return [
        run_name(r, c, s, cfg)
        for s in training_seeds(cfg)
        for c in cfg.rankers.train_corpora
        for r in cfg.rankers.names
    ]


def main(argv: list[str] | None = None) -> int:
    """``python -m calibrank.study.settings.config check PROFILE``: read and check a profile; a bad one is one line on
    stderr naming its file, line and key (``make report`` runs it before anything else)."""

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "check":
        print("usage: python -m calibrank.study.settings.config check PROFILE", file=sys.stderr)
        return 2
    try:
        cfg = load_config(args[1])
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{cfg.source}: ok")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def section_table(section: Any):
    """A config section as a two-column table (dotted key, value), for notebooks."""

    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        else:
            flat[prefix] = ", ".join(map(str, value)) if isinstance(value, list) else value

    walk("", plain(dataclasses.asdict(section)))
    return pd.DataFrame({"key": list(flat), "value": [str(v) for v in flat.values()]})
