"""Reading params files: YAML 1.2 as written, every key with its file and line, and ``extends:``.

A profile means the same to every reader: plain scalars are read by YAML 1.2's core schema, and one that
YAML 1.1 reads otherwise (``010`` is 8 there, ``3:20`` is 200, ``yes`` is true) or an integer not written in
decimal is refused; a key given twice is refused. Every key and list item keeps the file and line that gave
it, so that an error about a value names where it was written (the parent's file, for a key a profile
inherits). What the keys mean is the schema's concern (:mod:`calibrank.study.settings.schema`).
"""

from __future__ import annotations

import dataclasses
import os
import re
import typing
from pathlib import Path
from typing import Any

import yaml

from calibrank.study.paths import project_root
from calibrank.study.settings.checks import ConfigError

__all__ = [
    "EXTENDS",
    "Lines",
    "check_no_empty_section",
    "dotted",
    "key_path",
    "lines_within",
    "locate",
    "merge",
    "profile_path",
    "profile_sources",
    "read_profile",
    "set_dotted",
]

_TAG = "tag:yaml.org,2002:"
_INT, _FLOAT, _BOOL = _TAG + "int", _TAG + "float", _TAG + "bool"
_NUMBER_TAGS = (_INT, _FLOAT, _BOOL)
#: YAML 1.1's reading of a plain scalar (PyYAML's own resolver), the one another tool may give a profile.
_YAML_1_1 = yaml.resolver.Resolver()
_DECIMAL_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")

Lines = dict[tuple, "tuple[Path, int] | None"]
"""Where each key and list item of a profile was given: (file, line) by its path of keys and indices
(``("rankers", "seeds", 1)``); None for an override."""


class _ProfileLoader(yaml.SafeLoader):
    """PyYAML's safe loader reading plain scalars by YAML 1.2's core schema (no dates); :func:`_scalar`
    refuses a scalar that YAML 1.1 reads otherwise (``010``, ``3:20``, ``yes``).
    """

    yaml_implicit_resolvers = {
        first: [
            (tag, rx) for tag, rx in resolvers if tag not in (_INT, _FLOAT, _BOOL, _TAG + "timestamp", _TAG + "value")
        ]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


_ProfileLoader.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_ProfileLoader.add_implicit_resolver(
    _INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
_ProfileLoader.add_implicit_resolver(
    _FLOAT,
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+.0123456789"),
)


def dotted(path: tuple) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" if i else str(p) for i, p in enumerate(path))


def key_path(key: str) -> tuple:
    """The inverse of :func:`dotted`: ``"rankers.seeds[1]"`` -> ``("rankers", "seeds", 1)``."""
    return tuple(int(p[1:-1]) if p.startswith("[") else p for p in re.findall(r"\[\d+\]|[^.\[]+", key))


def _show(value: Any) -> str:
    """A value as a profile writes it."""
    return ("true" if value else "false") if isinstance(value, bool) else repr(value)


def _scalar(loader: _ProfileLoader, node: yaml.ScalarNode, where: str) -> Any:
    """The value of a scalar by YAML 1.2; a plain scalar that YAML 1.1 reads as another number or boolean
    (``010``: octal 8; ``3:20``: 200 in base 60; ``1_000``; ``yes``), or an integer not written in decimal
    (``08``, ``0o10``, ``0x10``), is a :class:`ConfigError`: write the number in decimal, or quote the text."""
    text = node.value
    if node.style is not None:  # quoted or a block scalar: a string as written
        return loader.construct_object(node)
    if node.tag == _INT:  # the core schema's forms; PyYAML's constructor would read 010 as octal
        ours: Any = int(text, 10) if re.fullmatch(r"[-+]?[0-9]+", text) else int(text, 0)
    else:
        ours = loader.construct_object(node)
    tag11 = _YAML_1_1.resolve(yaml.ScalarNode, text, (True, False))
    theirs = loader.yaml_constructors[tag11](loader, yaml.ScalarNode(tag11, text)) if tag11 in _NUMBER_TAGS else text
    read_alike = tag11 == node.tag and repr(theirs) == repr(ours)
    not_decimal = node.tag == _INT and not _DECIMAL_INT.fullmatch(text)
    if not not_decimal and (read_alike or tag11 not in _NUMBER_TAGS):  # 1e-3: a string to YAML 1.1, never a number
        return ours
    why = (
        "is not written in decimal"
        if read_alike
        else f"is ambiguous (YAML 1.1 reads {_show(theirs)}, YAML 1.2 reads {_show(ours)})"
    )
    number = theirs if isinstance(ours, str) else ours
    raise ConfigError(f"{where}: {text} {why}: write {_show(number)} or '{text}'")


def _value(
    loader: _ProfileLoader, node: yaml.Node, path: tuple, file: Path, lines: Lines, open_nodes: tuple = ()
) -> Any:
    """The value of ``node`` (at ``path`` in the profile), recording in ``lines`` the line of every key and list
    item below it. A key given twice in one mapping is an error naming both lines: YAML would keep the last, so
    a second ``training:`` block would silently drop the first one's keys."""
    line = node.start_mark.line + 1
    if id(node) in open_nodes:
        raise ConfigError(f"{file}:line {line}: {dotted(path) or 'the profile'}: an alias that contains itself")
    open_nodes = (*open_nodes, id(node))
    if isinstance(node, yaml.ScalarNode):
        return _scalar(loader, node, f"{file}:line {line}: {dotted(path) or 'the profile'}")
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            lines[(*path, i)] = (file, item.start_mark.line + 1)
            items.append(_value(loader, item, (*path, i), file, lines, open_nodes))
        return items
    if not isinstance(node, yaml.MappingNode):  # pragma: no cover - the composer makes no other node
        raise TypeError(f"unexpected YAML node {node!r}")
    loader.flatten_mapping(node)  # `<<: *anchor` merge keys
    out: dict[Any, Any] = {}
    seen: dict[Any, int] = {}
    for key_node, value_node in node.value:
        key_line = key_node.start_mark.line + 1
        if not isinstance(key_node, yaml.ScalarNode):
            raise ConfigError(f"{file}:line {key_line}: a key must be a name, got a {key_node.id}")
        key = _scalar(loader, key_node, f"{file}:line {key_line}: {dotted(path) or 'the profile'}")
        if key in seen:
            raise ConfigError(
                f"{file}:line {key_line}: duplicate key {key!r} (first given at line {seen[key]}); "
                f"give each key once (YAML would silently keep the last)"
            )
        seen[key] = key_line
        lines[(*path, key)] = (file, key_line)
        out[key] = _value(loader, value_node, (*path, key), file, lines, open_nodes)
    return out


def _yaml_error(path: Path, exc: yaml.YAMLError) -> str:
    """A YAML syntax error as one line: the file, line and column where the parser stopped, what it expected, and
    where the construct it was reading started (PyYAML's own message spans several lines and quotes the text)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
    context, start = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    where = f"{path}:line {mark.line + 1}:column {mark.column + 1}" if mark is not None else str(path)
    since = (
        f" ({context} that starts at line {start.line + 1}, column {start.column + 1})"
        if context and start is not None and (start.line, start.column) != (mark.line, mark.column)
        else ""
    )
    return f"{where}: not valid YAML: {problem}{since}"


def read_profile(path: Path) -> tuple[dict[str, Any], Lines]:
    """One params file as a mapping, strictly parsed (YAML 1.2 scalars, no key twice), and the line of each key;
    errors name the file and line."""
    if not path.exists():
        known = sorted(p.stem for p in (project_root() / "params").glob("*.yaml"))
        raise ConfigError(f"{path}: no such params file; known profiles: {', '.join(known) or 'none'}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    loader = _ProfileLoader(text)
    lines: Lines = {}
    try:
        node = loader.get_single_node()
        raw = {} if node is None else _value(loader, node, (), path, lines)
    except yaml.YAMLError as exc:
        raise ConfigError(_yaml_error(path, exc)) from None
    finally:
        loader.dispose()
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}:line {node.start_mark.line + 1}: expected a mapping of keys at the top level")
    return raw, lines


EXTENDS = "extends"
"""A profile may start from another one: ``extends: laptop`` takes every key of ``params/laptop.yaml`` and the
file's own keys replace them: a non-empty mapping merges key by key, ``{}`` resets a section to the defaults,
anything else is replaced whole. A section left empty (``training:`` with every line below it commented out,
or ``null``) is an error rather than a silent reset: say ``training: {}`` to reset, or remove the key to
inherit. A variant says only what differs."""


def lines_within(lines: Lines, path: tuple) -> list[tuple]:
    """The recorded paths at or below ``path``."""
    return [p for p in lines if p[: len(path)] == path]


def merge(
    base: dict[str, Any], own: dict[str, Any], lines: Lines, own_lines: Lines, prefix: tuple = ()
) -> dict[str, Any]:
    """``own`` over ``base`` (:data:`EXTENDS`); ``lines`` (``base``'s) then hold where each merged key was given."""
    out = dict(base)
    for key, value in own.items():
        path = (*prefix, key)
        if isinstance(value, dict) and value and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value, lines, own_lines, path)
            lines[path] = own_lines[path]
        else:
            out[key] = value
            for p in lines_within(lines, path):
                del lines[p]
            lines.update((p, own_lines[p]) for p in lines_within(own_lines, path))
    return out


def check_no_empty_section(raw: dict[str, Any], cls: type, lines: Lines, parent: str, prefix: tuple = ()) -> None:
    """In a profile that extends ``parent``, a section (a mapping of the schema) given empty is an error: it would
    silently replace the inherited section by the defaults (:data:`EXTENDS`)."""
    hints = typing.get_type_hints(cls)
    for key, value in raw.items():
        section = hints.get(key) if isinstance(key, str) else None
        if not dataclasses.is_dataclass(section):
            continue  # not a section, or an unknown key (reported with the schema's keys when the profile is built)
        path = (*prefix, key)
        if value is None:
            file, line = lines[path]
            raise ConfigError(
                f"{file}:line {line}: {dotted(path)}: `{key}:` is empty: say `{key}: {{}}` to reset it "
                f"to the defaults, or remove the key to inherit it from {parent}",
                key=dotted(path),
            )
        if isinstance(value, dict):
            check_no_empty_section(value, section, lines, parent, path)


def locate(exc: ConfigError, lines: Lines, profile: Path) -> ConfigError:
    """``exc`` prefixed with the file and line that gave its key (or the innermost section given around it)."""
    path = key_path(exc.key) if exc.key else ()
    for n in range(len(path), 0, -1):
        if path[:n] in lines:
            where = lines[path[:n]]
            text = f"{profile}: override {exc}" if where is None else f"{where[0]}:line {where[1]}: {exc}"
            return ConfigError(text, key=exc.key)
    return ConfigError(f"{profile}: {exc}", key=exc.key)


def profile_sources(profile: str | os.PathLike) -> list[Path]:
    """The params files a profile reads, itself first, then what it extends (in order)."""
    chain: list[Path] = []
    path = profile_path(profile)
    while True:
        chain.append(path)
        raw, lines = read_profile(path)
        parent = raw.get(EXTENDS)
        if parent is None:
            return chain
        where = f"{path}:line {lines[(EXTENDS,)][1]}: {EXTENDS}"
        if not isinstance(parent, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", parent):
            raise ConfigError(f"{where}: expected the name of another profile (e.g. laptop); got {parent!r}")
        path = profile_path(parent)
        if path in chain:
            first = f"{chain[0]}:line {read_profile(chain[0])[1][(EXTENDS,)][1]}: {EXTENDS}"
            raise ConfigError(
                f"{first}: the profiles extend each other in a circle ({' -> '.join(p.stem for p in [*chain, path])})"
            )
        if not path.exists():
            try:
                read_profile(path)
            except ConfigError as exc:
                raise ConfigError(f"{where}: {exc}") from None


def profile_path(profile: str | os.PathLike) -> Path:
    """``params/<profile>.yaml`` under the project root, or the given path if it names a YAML file."""
    text = str(profile)
    if text.endswith((".yaml", ".yml")) or os.sep in text:
        return Path(text).resolve()
    return project_root() / "params" / f"{text}.yaml"


def set_dotted(raw: dict, key: str, value: Any) -> None:
    """``raw`` with the dotted ``key`` (``"data.max_dialogues"``) set to ``value`` (an override)."""
    parts = key.split(".")
    node = raw
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {key!r}: {p!r} is not a section")
    node[parts[-1]] = value
