"""The package's shape: no import circles, and the engine imports nothing from the layers above it."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "src" / "specdec"


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module-level imports between specdec's modules (``if TYPE_CHECKING:`` ones included; imports
    inside functions are deliberate late imports and left out)."""
    modules = {
        ".".join(("specdec", *f.relative_to(root).with_suffix("").parts)).removesuffix(".__init__"): f
        for f in root.rglob("*.py")
    }
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, file in modules.items():
        for node in ast.parse(file.read_text()).body:
            for statement in node.body if isinstance(node, ast.If) else [node]:
                if isinstance(statement, ast.ImportFrom) and (statement.module or "").startswith("specdec"):
                    names = [statement.module, *(f"{statement.module}.{a.name}" for a in statement.names)]
                    graph[module] |= {n for n in names if n in modules and n != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_circles():
    assert cycles(import_graph(ROOT)) == []


def test_the_engine_imports_nothing_above_it():
    graph = import_graph(ROOT)
    up = {
        (m, t)
        for m, targets in graph.items()
        if m.startswith("specdec.engine")
        for t in targets
        if not t.startswith("specdec.engine") and t != "specdec.errors"
    }
    assert up == set()


def test_a_circle_is_found():  # negative control for the check itself
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
