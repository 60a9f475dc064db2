"""The packages import one way, and every module imports on its own.

(a) The static import graph of edge_hf, models, export and bench, read with ``ast``: every
``import`` and ``from ... import``, at module level, inside functions and under
``TYPE_CHECKING`` alike, relative ones resolved; importing ``a.b.c`` also runs ``a`` and ``a.b``,
which counts unless the importer is inside them. It must have no cycle; a package may import
only itself and those before it in ``LAYERS`` (edge_hf <- models <- export <- bench: models
never imports export); nothing may import an ``_``-prefixed name (a module or an attribute) of
another package; and every module of ours that is named must exist.

(b) Every module except the ``__main__`` ones (importing those runs a command) imports on its
own in a fresh interpreter. One interpreter per module costs about 100 s of wall time on the
2-core box (torch, timm and OpenVINO imported 120 times). So one fresh interpreter imports
those third-party packages (``HEAVY``) and none of ours (checked before anything else), then
forks a child per module, two at a time: each child starts with none of our modules loaded,
imports its one and reports the traceback if that fails, and where it was imported from.
As far as our code goes each child is a fresh interpreter; a fork costs milliseconds, and all
of it takes about 14 s. Without the [train] extra only edge_hf's modules are imported.

Both checks also run on small packages the test writes, with a cycle, an import against the
layers, a private import and a module that imports only after another: they can fail.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

from tests.conftest import ROOT

LAYERS = ("edge_hf", "models", "export", "bench")  # each may import those before it
HEAVY = ("numpy", "cv2", "onnxruntime", "openvino", "torch", "timm", "onnx", "nncf", "matplotlib")
TRAIN = ("torch", "timm", "onnx", "openvino", "nncf")  # the [train] extra


# ---- (a) the static graph ----------------------------------------------------------------------
def modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Module name -> file, for every ``.py`` file of ``packages`` under ``root``."""
    out = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imports(name: str, path: Path) -> list[tuple[str, str | None, int]]:
    """(module imported from, the name imported from it or None, line) of every import in the
    file, wherever it stands; relative imports resolved."""
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            source = ".".join([*base, *([node.module] if node.module else [])])
            out += [(source, a.name, node.lineno) for a in node.names]
    return out


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def graph(root: Path, packages: tuple[str, ...] = LAYERS):
    """(module -> {module it runs: (file, line)}, problems other than cycles)."""
    mods = modules(root, packages)
    edges: dict[str, dict[str, tuple[Path, int]]] = {m: {} for m in mods}
    problems = []
    for mod, path in mods.items():
        pkg = mod.split(".")[0]
        for source, attr, line in imports(mod, path):
            if source.split(".")[0] not in packages:
                continue  # the standard library, third parties, tests
            target = f"{source}.{attr}" if attr and f"{source}.{attr}" in mods else source
            where = f"{path.relative_to(root)}:{line}: {mod}"
            if target not in mods:
                problems.append(f"{where} imports {target}, which is no module here")
                continue
            other = target.split(".")[0]
            if other != pkg:
                allowed = packages[: packages.index(pkg) + 1]
                if other not in allowed:
                    only = ", ".join(allowed)
                    problems.append(f"{where} imports {target}: {pkg} may import only {only}")
                named = target.split(".") + ([attr] if attr and target == source else [])
                if any(map(private, named)):
                    problems.append(
                        f"{where} imports {'.'.join(named)}, a private name of {other}: make it "
                        "public where it belongs"
                    )
            parts = target.split(".")
            for i in range(1, len(parts) + 1):  # a.b.c runs a, a.b and a.b.c
                ran = ".".join(parts[:i])
                if ran in mods and ran != mod and not mod.startswith(ran + "."):
                    edges[mod].setdefault(ran, (path.relative_to(root), line))
    return edges, problems


def cycles(edges: dict[str, dict[str, tuple[Path, int]]]) -> list[str]:
    """One shortest cycle through each strongly connected part of the graph (Tarjan's), with
    the file and line of each import on it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    parts: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = {stack.pop()}
            while v not in part:
                part.add(stack.pop())
            if len(part) > 1:
                parts.append(part)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [_loop(edges, min(part), part) for part in parts]


def _loop(edges, start: str, part: set[str]) -> str:
    """The shortest way from ``start`` back to it inside ``part`` (breadth first), each import
    on it with its file and line."""
    before: dict[str, str] = {}
    frontier, last = [start], None
    while frontier and last is None:
        ahead = []
        for a in frontier:
            for b in sorted(edges[a]):
                if b == start and last is None:
                    last = a
                elif b in part and b not in before:
                    before[b] = a
                    ahead.append(b)
        frontier = ahead
    path = [last]
    while path[-1] != start:
        path.append(before[path[-1]])
    path = [*reversed(path), start]
    hops = [f"{b} ({edges[a][b][0]}:{edges[a][b][1]})" for a, b in pairwise(path)]
    return " -> ".join([start, *hops])


def test_the_packages_import_one_way_without_cycles():
    edges, problems = graph(ROOT)
    assert len(edges) > 100 and "models.evaluation.events" in edges["models.evaluate"]
    assert problems == []
    assert cycles(edges) == []


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_graph_check_finds_cycles_layers_and_private_names(tmp_path: Path):
    root = _write(
        tmp_path,
        {
            "edge_hf/__init__.py": "",
            "edge_hf/_plumbing.py": "X = 1\n",
            "edge_hf/runtime.py": "from edge_hf._plumbing import X\n",  # inside its package: fine
            "models/__init__.py": "",
            "models/a.py": "from models import b\n",
            "models/b.py": "def f():\n    from .a import f\n",  # a cycle, through a function
            "models/c.py": "from export.d import run\nfrom models.gone import y\n",
            "export/__init__.py": "",
            "export/d.py": "from edge_hf._plumbing import X\nfrom models.a import _helper\n",
        },
    )
    edges, problems = graph(root)
    assert cycles(edges) == ["models.a -> models.b (models/a.py:1) -> models.a (models/b.py:2)"]
    assert sorted(problems) == [
        "export/d.py:1: export.d imports edge_hf._plumbing.X, a private name of edge_hf: make it "
        "public where it belongs",
        "export/d.py:2: export.d imports models.a._helper, a private name of models: make it "
        "public where it belongs",
        "models/c.py:1: models.c imports export.d: models may import only edge_hf, models",
        "models/c.py:2: models.c imports models.gone, which is no module here",
    ]


# ---- (b) each module on its own ----------------------------------------------------------------
SERVER = r"""
import importlib, json, os, sys, time, traceback
from pathlib import Path

root, ours, heavy = Path(sys.argv[1]).resolve(), tuple(sys.argv[2].split(",")), sys.argv[3]
names = json.loads(sys.stdin.read())
t0 = time.perf_counter()
for lib in heavy.split(",") if heavy else ():
    importlib.import_module(lib)
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ours)
if loaded:
    sys.exit(f"the third-party imports loaded our modules {loaded}: the children would not "
             "start fresh")
preload = time.perf_counter() - t0
running, failed = {}, {}


def child(name, w):
    try:
        mod = importlib.import_module(name)
        where = Path(mod.__file__).resolve()
        if not where.is_relative_to(root):
            raise ImportError(f"{name} was imported from {where}, not from {root}")
        code = 0
    except BaseException:
        os.write(w, traceback.format_exc()[-3500:].encode())
        code = 1
    os._exit(code)


def poll():
    for pid, (name, r, t) in list(running.items()):
        done, status = os.waitpid(pid, os.WNOHANG)
        if not done and time.perf_counter() - t < 120:
            continue
        if not done:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            failed[name] = "did not finish importing in 120 s"
        elif status:
            failed[name] = os.read(r, 1 << 16).decode() or f"exit status {status}"
        os.close(r)
        del running[pid]


for name in names:
    while len(running) >= 2:
        poll()
        time.sleep(0.002)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        child(name, w)
    os.close(w)
    running[pid] = (name, r, time.perf_counter())
while running:
    poll()
    time.sleep(0.002)
print(json.dumps({"modules": len(names), "failed": failed, "preload_s": round(preload, 1),
                  "total_s": round(time.perf_counter() - t0, 1)}))
"""


def each_on_its_own(root: Path, names: list[str], ours: tuple[str, ...], heavy=()) -> dict:
    """Import each of ``names`` in its own child of a fresh interpreter (module docstring)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    r = subprocess.run(
        [sys.executable, "-c", SERVER, str(root), ",".join(ours), ",".join(heavy)],
        input=json.dumps(names),
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def test_every_module_imports_on_its_own():
    train = all(importlib.util.find_spec(m) for m in TRAIN)
    ours = LAYERS if train else ("edge_hf",)
    names = [m for m in modules(ROOT, ours) if m.split(".")[-1] != "__main__"]
    heavy = tuple(m for m in HEAVY if importlib.util.find_spec(m))
    result = each_on_its_own(ROOT, names, LAYERS, heavy)
    assert result["modules"] == len(names) > (100 if train else 40)
    assert result["failed"] == {}, "\n\n".join(f"{k}:\n{v}" for k, v in result["failed"].items())


def test_a_module_that_imports_only_after_another_is_found(tmp_path: Path):
    """``p.a`` imported first needs ``p.b``, which needs a name ``p.a`` has not defined yet:
    it fails on its own, while ``p.b`` imports (and so would ``p.a`` after it, in one
    interpreter). Each child must see only its own."""
    root = _write(
        tmp_path,
        {
            "p/__init__.py": "",
            "p/a.py": "import p.b\n\nX = 1\n",
            "p/b.py": "from p.a import X\n",
            "p/c.py": "raise ImportError('c is broken')\n",
        },
    )
    result = each_on_its_own(root, ["p.b", "p.a", "p.c"], ("p",))
    assert sorted(result["failed"]) == ["p.a", "p.c"]
    assert "cannot import name 'X'" in result["failed"]["p.a"]
    assert "c is broken" in result["failed"]["p.c"]
