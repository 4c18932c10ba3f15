"""The package's own imports form a DAG at module level, and no function reaches into a module
that imports its own (imports held together by function-level imports hide a cycle)."""

import ast
import pathlib

import tierfs

PKG = pathlib.Path(tierfs.__file__).parent


def _relative_imports(node):
    for n in ast.walk(node):
        if isinstance(n, ast.ImportFrom) and n.level == 1:
            yield from ([n.module.split(".")[0]] if n.module else [a.name for a in n.names])


def _graph():
    """module -> (modules imported at run time at module level, modules imported in functions)."""
    graph = {}
    for path in PKG.glob("*.py"):
        tree = ast.parse(path.read_text())
        top, inner = set(), set()
        for stmt in tree.body:
            if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
                continue  # annotations only
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner.update(_relative_imports(stmt))
            else:
                top.update(_relative_imports(stmt))
        graph[path.stem] = (top, inner)
    return graph


def _reaches(graph, start, goal):
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        if m == goal:
            return True
        if m not in seen and m in graph:
            seen.add(m)
            todo.extend(graph[m][0])
    return False


def test_module_level_imports_are_a_dag():
    graph = _graph()
    for m, (top, _) in graph.items():
        for d in top:
            assert not _reaches(graph, d, m), f"tierfs.{m} imports tierfs.{d}, which imports tierfs.{m} back"


def test_no_function_level_import_closes_a_cycle():
    graph = _graph()
    for m, (_, inner) in graph.items():
        for d in inner:
            assert not _reaches(graph, d, m), f"a function of tierfs.{m} imports tierfs.{d}, which imports tierfs.{m}"


def test_loader_does_not_know_the_distributed_module():
    """A loader asks its store's seed share (tierfs.seedshare), never which kind of store it has."""
    graph = _graph()
    assert not _reaches(graph, "loader", "distributed"), "tierfs.loader imports tierfs.distributed (at module level, or through a module it imports)"
    assert "distributed" not in graph["loader"][1], "a function of tierfs.loader imports tierfs.distributed"
