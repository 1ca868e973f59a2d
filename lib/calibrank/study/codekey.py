"""The code a cached result depends on: a hash of the definitions its computation can reach.

A change to the code that trains a model retrains exactly the models whose training reaches it.
:func:`code_hash` walks the source of the roots' package (and calibrank's, which a class written
outside it reaches through what it extends) with :mod:`ast` from root objects, following
top-level names, the root class's members and the classes it names (not names used only in
``raise``); each definition enters without docstrings, so comments and layout change no key.
:func:`package_versions` covers dependencies. ``opaque`` modules (:mod:`calibrank.study.model.losses`)
and definitions (``"calibrank.study.model.rankers:ranker_class"``) are not followed from other modules: code
reached only through run-time values must be given as a root. Inside an opaque module a root
follows what it reads (the focal loss its constants), so a module constant enters only the keys
of the code that reads it. :func:`source_module` makes a script (a notebook's code) a root.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import inspect
import sys
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from calibrank.atomic import stable_hash

__all__ = ["code_hash", "package_versions", "forget", "source_module"]


@dataclass
class _Module:
    """One parsed module: its top-level definitions by name, its imports, its classes by qualified name."""

    name: str
    defs: dict[str, list[ast.stmt]]
    effects: list[ast.stmt]
    imports: dict[str, tuple[str, str | None]]  # local name -> (module, attribute or None for the module itself)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)


_PARSED: dict[str, _Module | None] = {}
_SOURCES: dict[str, str] = {}  # module name -> source text given by source_module


def forget() -> None:
    """Drop the parsed modules, the sources given and the computed hashes (the next :func:`code_hash` reads the source again)."""
    _PARSED.clear()
    _SOURCES.clear()
    _cached_hash.cache_clear()


def source_module(package: str, name: str, text: str) -> str:
    """Register ``text`` (a script, a notebook's code cells) as module ``package.name`` and return that name,
    a root for :func:`code_hash` that reaches what the script uses. Lines of IPython magics are left out."""
    module = f"{package}.{name}"
    text = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in text.splitlines())
    if _SOURCES.get(module) != text:
        _SOURCES[module] = text
        _PARSED.pop(module, None)
        _cached_hash.cache_clear()
    return module


def _strip_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]


def _bound_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    names: list[str] = []
    for target in targets:
        names.extend(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _is_main_guard(stmt: ast.stmt) -> bool:
    test = stmt.test if isinstance(stmt, ast.If) else None
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"


def _source_of(name: str) -> Path | None:
    """The source file of module ``name`` of an imported package, found on disk (nothing is imported)."""
    top, *parts = name.split(".")
    package = sys.modules.get(top)
    init = getattr(package, "__file__", None)
    if not init:
        return None
    if Path(init).name != "__init__.py":  # a module on its own (a ranker written outside any package)
        return Path(init) if not parts and Path(init).suffix == ".py" else None
    base = Path(init).parent.joinpath(*parts)
    for candidate in (base / "__init__.py", base.with_name(base.name + ".py") if parts else None):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def _parse(name: str) -> _Module | None:
    """The parsed module ``name`` (None when it has no Python source)."""
    if name in _PARSED:
        return _PARSED[name]
    path = _source_of(name) if name not in _SOURCES else Path(f"<{name}>")
    if path is None:
        _PARSED[name] = None
        return None
    text = _SOURCES[name] if name in _SOURCES else path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=str(path))
    _strip_docstrings(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    imports: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(tree):  # imports inside functions too: they bind names the function uses
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    imports[alias.asname] = (alias.name, None)
                else:
                    top = alias.name.split(".")[0]
                    imports[top] = (top, None)
        elif isinstance(node, ast.ImportFrom):
            base = (
                importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                if node.level
                else node.module or ""
            )
            for alias in node.names:
                if alias.name != "*":
                    imports[alias.asname or alias.name] = (base, alias.name)
    defs: dict[str, list[ast.stmt]] = {}
    effects: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue
        names = _bound_names(stmt)
        if _is_main_guard(stmt):
            continue  # runs only as a script
        if names:
            for n in names:
                defs.setdefault(n, []).append(stmt)
        elif not isinstance(stmt, ast.Pass):
            effects.append(stmt)
    classes: dict[str, ast.ClassDef] = {}

    def collect(body: Iterable[ast.stmt], prefix: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                classes[prefix + stmt.name] = stmt
                collect(stmt.body, prefix + stmt.name + ".")

    collect(tree.body, "")
    parsed = _Module(name, defs, effects, imports, classes)
    _PARSED[name] = parsed
    return parsed


class _Refs(ast.NodeVisitor):
    """The references of a statement: dotted name chains, ``self.x`` / ``cls.x`` and ``super().x``; annotations skipped."""

    def __init__(self) -> None:
        self.chains: list[list[str]] = []
        self.members: list[str] = []
        self.supers: list[str] = []

    def visit_arg(self, node: ast.arg) -> None:  # the annotation is not run
        return None

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        self.visit(node.args)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Raise(self, node: ast.Raise) -> None:  # an error makes no result: its message is not followed
        return None

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_Name(self, node: ast.Name) -> None:
        self.chains.append([node.id])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        parts = [node.attr]
        value = node.value
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        parts.reverse()
        if isinstance(value, ast.Name):
            if value.id in ("self", "cls"):
                self.members.append(parts[0])
            else:
                self.chains.append([value.id, *parts])
            return
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
            self.supers.append(parts[0])
        self.visit(value)


def _refs(stmt: ast.AST) -> _Refs:
    refs = _Refs()
    refs.visit(stmt)
    return refs


def _in_package(module: str, package: str | tuple[str, ...]) -> bool:
    """Whether ``module`` is ``package`` or inside it (any of several packages)."""
    packages = (package,) if isinstance(package, str) else package
    return any(module == p or module.startswith(p + ".") for p in packages)


def _is_module(name: str, package: str | tuple[str, ...]) -> bool:
    return _in_package(name, package) and _parse(name) is not None


class _Walk:
    """One walk from a set of roots: the definitions reached, each with its syntax tree dumped."""

    def __init__(self, package: str | tuple[str, ...], opaque: frozenset[str]) -> None:
        self.package = package
        self.opaque = opaque  # module names, and "module:name" for one definition
        self.entries: list[tuple[str, str]] = []
        self.seen: set[tuple] = set()
        self.touched: set[str] = set()  # modules with a reached definition

    # ---------------------------------------------------------------- resolution
    def _resolve(self, module: str, chain: list[str]) -> tuple[str, str] | str | None:
        """``(module, name)`` of the definition a name chain used in ``module`` names, a module name, or None."""
        mod = _parse(module)
        if mod is None:
            return None
        head, rest = chain[0], chain[1:]
        if head in mod.defs:
            return (module, head)
        if head not in mod.imports:
            return None
        target, attr = mod.imports[head]
        if not _in_package(target, self.package):
            return None  # torch, numpy, ...: their versions are keyed instead
        current: str | tuple[str, str] | None = target if attr is None else self._attribute(target, attr)
        for part in rest:
            if not isinstance(current, str):
                break
            current = self._attribute(current, part)
        return current

    def _attribute(self, module: str, attr: str, depth: int = 0) -> tuple[str, str] | str | None:
        """What ``module.attr`` is: a submodule, a definition of the package (through re-exports), or None."""
        if not _in_package(module, self.package) or depth > 20:
            return None
        sub = f"{module}.{attr}"
        if _is_module(sub, self.package):
            return sub
        mod = _parse(module)
        if mod is None:
            return None
        if attr in mod.defs:
            return (module, attr)
        if attr in mod.imports:
            target, inner = mod.imports[attr]
            return (
                target
                if inner is None and _is_module(target, self.package)
                else (self._attribute(target, inner, depth + 1) if inner is not None else None)
            )
        return None

    # ---------------------------------------------------------------- visiting
    def _add(self, label: str, stmt: ast.AST) -> None:
        self.entries.append((label, ast.dump(stmt, annotate_fields=True, include_attributes=False)))

    def _closed(self, module: str, name: str | None, by: str) -> bool:
        """An opaque module (or definition) is not followed from another module: only a root, or code of
        the module itself, reaches into it."""
        if by == module:
            return False
        return module in self.opaque or (name is not None and f"{module}:{name}" in self.opaque)

    def _follow(self, module: str, stmt: ast.AST, *, cls: type | None = None, owner: type | None = None) -> None:
        refs = _refs(stmt)
        for chain in refs.chains:
            found = self._resolve(module, chain)
            if isinstance(found, tuple):
                if not self._closed(*found, by=module):
                    self.definition(*found)
            elif isinstance(found, str):
                if not self._closed(found, None, by=module):
                    self.whole_module(found)
        if cls is not None:
            for name in refs.members:
                self.member(cls, name)
            for name in refs.supers:
                self.member(cls, name, after=owner)

    def definition(self, module: str, name: str) -> None:
        key = ("def", module, name)
        if key in self.seen or not _in_package(module, self.package):
            return
        self.seen.add(key)
        mod = _parse(module)
        if mod is None:
            return
        stmts = mod.defs.get(name, [])
        self.touched.add(module)
        for i, stmt in enumerate(stmts):
            self._add(f"{module}:{name}#{i}", stmt)
            self._follow(module, stmt)

    def whole_module(self, module: str) -> None:
        mod = _parse(module) if _in_package(module, self.package) else None
        if mod is None or ("module", module) in self.seen:
            return
        self.seen.add(("module", module))
        for name in sorted(mod.defs):
            self.definition(module, name)
        for i in range(len(mod.effects)):
            self._effect(mod, i)

    def _effect(self, mod: _Module, index: int) -> None:
        if ("effect", mod.name, index) in self.seen:
            return
        self.seen.add(("effect", mod.name, index))
        stmt = mod.effects[index]
        self._add(f"{mod.name}:<effect {index}>", stmt)
        self._follow(mod.name, stmt)

    def effects(self) -> None:
        """Add the top-level statements that bind no name and use a reached definition of their
        module (a registration loop calling a reached function), until no more are added."""
        while True:
            added = False
            for module in sorted(self.touched):
                mod = _parse(module)
                if mod is None:
                    continue
                for i, stmt in enumerate(mod.effects):
                    if ("effect", module, i) in self.seen:
                        continue
                    uses = {self._resolve(module, chain) for chain in _refs(stmt).chains}
                    if any(isinstance(u, tuple) and ("def", *u) in self.seen for u in uses):
                        self._effect(mod, i)
                        added = True
            if not added:
                return

    def member(self, cls: type, name: str, after: type | None = None) -> None:
        """``name`` as an instance of ``cls`` finds it (after ``after`` in the MRO, for ``super()``)."""
        mro = list(cls.__mro__)
        if after is not None and after in mro:
            mro = mro[mro.index(after) + 1 :]
        owner = next((k for k in mro if name in vars(k)), None)
        if owner is None or not _in_package(owner.__module__, self.package):
            return
        key = ("member", cls, owner, name)
        if key in self.seen:
            return
        self.seen.add(key)
        mod = _parse(owner.__module__)
        node = mod.classes.get(owner.__qualname__) if mod is not None else None
        if node is None:
            return
        self.touched.add(owner.__module__)
        for i, stmt in enumerate(s for s in node.body if name in _bound_names(s)):
            # Labelled by what finds it, not by the class that holds it: rankers whose training
            # reaches the same code (a subclass that only adds prediction) get the same hash.
            where = "self" if after is None else f"{owner.__module__}:{owner.__qualname__}"
            self._add(f"{where}.{name}#{i}", stmt)
            self._follow(owner.__module__, stmt, cls=cls, owner=owner)

    def root(self, obj: Any) -> None:
        obj = _root_key(obj)
        if isinstance(obj, str):  # "module" or "module:name", by name (nothing is imported)
            module, _, name = obj.partition(":")
            self.definition(module, name) if name else self.whole_module(module)
            return
        if isinstance(obj, tuple):
            self.member(*obj)
            return
        if isinstance(obj, types.ModuleType):
            self.whole_module(obj.__name__)
            return
        module, qualname = obj.__module__, obj.__qualname__.split(".<locals>")[0]
        head, _, rest = qualname.partition(".")
        if not rest:
            self.definition(module, head)
            return
        holder: Any = sys.modules.get(module)
        for part in qualname.split(".")[:-1]:
            holder = getattr(holder, part, None)
        if inspect.isclass(holder):
            self.member(holder, qualname.split(".")[-1])
        else:
            self.definition(module, head)


def _root_key(obj: Any) -> Any:
    """A hashable stand-in for a root: a bound method as ``(class, name)``; a partial as its function."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    if inspect.ismethod(obj):
        owner = obj.__self__ if inspect.isclass(obj.__self__) else type(obj.__self__)
        return (owner, obj.__func__.__name__)
    return obj


def code_hash(*roots: Any, opaque: Iterable[types.ModuleType | str] = (), length: int = 16) -> str:
    """A hash of the code ``roots`` reach within their package and calibrank (module docstring), ``length`` hex digits.

    Roots: functions, classes, modules, bound methods, :func:`functools.partial` objects,
    ``(cls, "name")``, or by name ``"module"`` / ``"module:name"`` (:func:`source_module`). ``opaque``
    modules and ``"module:name"`` definitions are not followed from other modules.
    """
    if not roots:
        raise ValueError("code_hash: give at least one root")
    names = frozenset(m if isinstance(m, str) else m.__name__ for m in opaque)
    return _cached_hash(tuple(_root_key(r) for r in roots), names, length)


@functools.lru_cache(maxsize=256)
def _cached_hash(roots: tuple, opaque: frozenset[str], length: int) -> str:
    first = roots[0][0] if isinstance(roots[0], tuple) else roots[0]
    module = (
        first if isinstance(first, str) else first.__name__ if isinstance(first, types.ModuleType) else first.__module__
    )
    # The roots' package, and calibrank's code a class of another package reaches (a ranker that extends a calibrank one)
    walk = _Walk(tuple(dict.fromkeys([module.split(".")[0], __name__.split(".")[0]])), opaque)
    for root in roots:
        walk.root(root)
    walk.effects()
    return stable_hash(sorted(walk.entries), length)


def package_versions(names: Iterable[str]) -> dict[str, str | None]:
    """The installed version of each distribution (None when it is not installed): part of a model key."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out
