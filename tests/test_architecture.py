"""The shape of the package (docs/architecture.md): one-way data flow, no import cycles, a job
per package, small modules. Read from the source text (imports inside functions count too)."""

import ast
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "gpuplan"
MAX_TOP_LEVEL_MODULES = 5
MAX_MODULE_LINES = 420  # "no module over ~400 lines"

# (importer prefix, imported prefix) pairs that must never occur: faces do not import each other,
# core is pure, jobs never reach up into a face.
FORBIDDEN = [
    ("gpuplan.web", "gpuplan.commands"), ("gpuplan.web", "gpuplan.cli"),
    ("gpuplan.commands", "gpuplan.web"), ("gpuplan.cli", "gpuplan.web"),
    *[("gpuplan.core", other) for other in ("gpuplan.report", "gpuplan.planner", "gpuplan.jobs", "gpuplan.adapters",
                                            "gpuplan.catalog", "gpuplan.web", "gpuplan.commands", "gpuplan.cli",
                                            "gpuplan.profile", "gpuplan.calibrate", "gpuplan.schema")],
    *[("gpuplan.jobs", face) for face in ("gpuplan.commands", "gpuplan.cli", "gpuplan.web")],
    *[("gpuplan.planner", up) for up in ("gpuplan.jobs", "gpuplan.commands", "gpuplan.cli", "gpuplan.web")],
    *[("gpuplan.report", up) for up in ("gpuplan.jobs", "gpuplan.commands", "gpuplan.cli", "gpuplan.web")],
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                # `from pkg import submodule` depends on the submodule; `from mod import name` on mod
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@cache
def import_graph_once() -> dict[str, frozenset[str]]:
    """import_graph() built once a process (both tests below read it; ~1.9 s of CPU a build, parsing every
    module of src/gpuplan), frozen so neither test can change what the other reads."""
    return {name: frozenset(targets) for name, targets in import_graph().items()}


def test_no_import_cycles():
    assert cycles(import_graph_once()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_no_forbidden_layer_imports():
    bad = [(src, dst) for src, targets in import_graph_once().items() for dst in targets
           for a, b in FORBIDDEN if (src == a or src.startswith(a + ".")) and (dst == b or dst.startswith(b + "."))]
    assert bad == []


def test_few_modules_directly_under_the_package():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= MAX_TOP_LEVEL_MODULES, loose


@pytest.mark.parametrize("job", ["training", "budget", "memory", "plan", "inference", "validation", "measure"])
def test_each_job_is_a_package_with_its_schema(job):
    folder = PACKAGE / "jobs" / job
    assert (folder / "__init__.py").is_file() and (folder / "schema.py").is_file()


def test_no_module_is_over_about_400_lines():
    long = {str(p.relative_to(SRC)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}
