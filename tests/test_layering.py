"""The layers of docs/DESIGN.md, read off the source's imports (with `ast`, nothing imported): the package's layers by
role, none importing one above it (LAYERS); no import cycle in src/; the machinery (everything outside
algos/<name>/) reaches an algorithm only through the registry and never names one; an executor does not import the
traffic model it is checked against, nor a model its executor; tiling is a leaf; the comparison imports no engine;
Config and the engine import no algorithm. Imports inside functions count. Imports under `if TYPE_CHECKING:` are for
the type checker only: they are left out of `GRAPH` (what runs) and counted in `TYPED` (what mypy reads), and no
cycle is allowed in either."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from flashviz.algos import FOLDERS, REGISTRY
from flashviz.model import kernels

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "flashviz"
# The machinery's imports of an algorithm's folder: flashviz.attention (ops/) runs the kernels of algos/fa2_triton/ and
# algos/fa3/ through those folders' launchers, as each folder's own GPU launch (`gpu.py`) does.
FA2_LAUNCHER, FA3_LAUNCHER = "flashviz.algos.fa2_triton.launcher", "flashviz.algos.fa3.launcher"
DECLARED = {
    ("flashviz.ops.checks", FA2_LAUNCHER),  # CPU tensors need the launcher's kernels interpreted
    ("flashviz.ops.backends", FA3_LAUNCHER),  # whether fa3 can run here (unavailable)
    ("flashviz.ops.library", FA2_LAUNCHER),  # the operators' fa2 forward and backward
    ("flashviz.ops.library", FA3_LAUNCHER),  # the operators' fa3 forward
    ("flashviz.ops.fa3", FA3_LAUNCHER),  # fa3's own backward kernel (kernel="gluon")
    ("flashviz.ops.fa3", FA2_LAUNCHER),  # fa3's backward by FlashAttention-2's kernels (BACKWARD)
    ("flashviz.ops.ring", FA2_LAUNCHER),  # each ring step's forward and backward
    ("flashviz.ops.fa2", FA2_LAUNCHER),  # the ladder's fp32 rungs
    ("flashviz.ops.fa2", "flashviz.algos.fa2_triton.launch_tiles"),  # their tiles
}
# The package by role (docs/DESIGN.md "Layers"), lowest first: a module may import its own layer and those below.
# Front doors sit on top; the package itself (`flashviz`, for __version__) is imported by the server and the CLI.
LAYERS = [
    {"model"},  # plain values and leaves: config, tiling, units, precision, reference, inputs, kernel files
    # the memory model, recorder and block driver; the H200 and its recorded runs; Triton's runtime as the kernels'
    # launchers use it (tuning cache, parallel compile, the interpreter's fixes, TMA-ready tensors)
    {"engine", "hardware", "runtime"},
    {"algos"},  # the registry, the contract (base, picture, words, launch) and one folder per algorithm
    {"tracing"},  # a run into a Trace: build, assemble, codec, flops, hardware view, file schema
    {"reports", "gpu", "ops"},  # closed forms side by side; kernels on a GPU; flashviz.attention on torch
    {"yourkernel"},  # a user's Triton kernel traced
    {"integrations", "share"},  # transformers; the one-file page, widget, export, animation, trace files
    {"server", "api"},  # the FastAPI app and `flashviz serve`; flashviz.trace / flashviz.show
    {"cli"},  # the `flashviz` command
    {"ring_demo", "__main__"},  # `python -m flashviz.ring_demo` (the CLI's options), `python -m flashviz`
]
# Modules that may write an algorithm's name as a string: flashviz.attention's backends ("fa2", "fa3") are kernels
# of the public function, named in one module, not the viewer's algorithms.
# The table of launch fields names the default algorithm, the seed's example "fa2" (flashviz.algos.DEFAULT is it;
# each algorithm brings its own defaults for the other fields), and says in the help of --devices and --layout that
# they are `--algo ring`'s: it imports no registry to read them from.
# `flashviz compare --ring P` names its option and its JSON key "ring" (ring_model's document), as the ring algorithm
# is named: the one module that writes it says so (ring_cli.RING_KEY).
NAMING = {"flashviz.ops.backends", "flashviz.model.fields", "flashviz.cli.ring"}


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "viewer" not in p.relative_to(PACKAGE).parts}


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_nodes(tree: ast.AST, type_only: bool = False):
    """Every node but those under `if TYPE_CHECKING:` (with `type_only`, those too)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and is_type_checking(child) and not type_only:
                stack.extend(child.orelse)
            else:
                stack.append(child)


def imports(name: str, type_only: bool = False) -> set[str]:
    """The flashviz modules `name` imports at run time (`from pkg import sub` counts as pkg.sub when sub is one), and
    with `type_only` those it imports for the type checker too."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in runtime_nodes(ast.parse(path.read_text()), type_only):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in MODULES else base)
    return {m for m in found if m == "flashviz" or m.startswith("flashviz.")}


GRAPH = {name: imports(name) & set(MODULES) for name in MODULES}
TYPED = {name: imports(name, type_only=True) & set(MODULES) for name in MODULES}
REGISTRY_MODULE = "flashviz.algos"


def is_algorithm(name: str) -> bool:
    """A module of one algorithm's folder (flashviz.algos.<folder>...), not the registry or the contract's modules."""
    parts = name.split(".")
    return len(parts) >= 3 and parts[1] == "algos" and (PACKAGE / "algos" / parts[2]).is_dir()


def layer_of(name: str) -> int:
    """The rank of a module's layer in LAYERS (the package itself, `flashviz`, is on top)."""
    role = name.split(".")[1] if "." in name else None
    ranks = [k for k, roles in enumerate(LAYERS) if role in roles]
    assert role is None or ranks, f"{name} is in no layer of LAYERS: add its package there"
    return ranks[0] if ranks else len(LAYERS)


def test_every_module_is_in_a_layer_and_no_arrow_goes_up():
    """Each module's package is one of LAYERS, and no import (type-only ones included) reaches a higher layer, or a
    sibling package of its own layer; the package itself is allowed (its `__version__`)."""
    wrong = []
    for name, targets in TYPED.items():
        for target in targets - {"flashviz"}:
            mine, theirs = layer_of(name), layer_of(target)
            sideways = mine == theirs and name.split(".")[:2] != target.split(".")[:2]
            if theirs > mine or sideways:
                wrong.append(f"{name} -> {target}")
    assert wrong == []
    assert {layer_of(m) for m in MODULES} == set(range(len(LAYERS) + 1)), "every layer holds a module"


def test_the_package_itself_is_imported_for_its_version_only():
    """`__version__` is the one name taken from the package's __init__ (its public functions import lazily)."""
    found = []
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            base = ".".join([*anchor, *([node.module] if node.module else [])])
            if base == "flashviz":
                found += [a.name for a in node.names if f"flashviz.{a.name}" not in MODULES]
    assert set(found) <= {"__version__", "trace"}, found  # tests aside, `trace` only as the public function


def test_the_graph_is_read():
    """The reader sees the imports there are (a reader that saw none would pass every test below)."""
    assert "flashviz.model.config" in GRAPH["flashviz.tracing.build"]
    assert "flashviz.engine.recorder" in GRAPH["flashviz.algos.fa2.engine"]
    assert "flashviz.algos.fa2.engine" in GRAPH["flashviz.algos.fa2_backward.engine"]  # `from ..fa2 import engine`
    assert "flashviz.gpu.device" in GRAPH["flashviz.cli.gpu"]  # an import inside a function
    assert "flashviz.algos.fa3.launcher" in GRAPH["flashviz.algos.fa3.gpu"]  # `from . import launcher` in a function
    assert "flashviz.engine.recorder" not in GRAPH["flashviz.algos.base"]  # under TYPE_CHECKING only ...
    assert "flashviz.engine.recorder" in TYPED["flashviz.algos.base"]  # ... which TYPED counts


@pytest.mark.parametrize("graph", ["GRAPH", "TYPED"])
def test_no_import_cycle(graph):
    """No cycle among the imports that run, nor among those the type checker reads (TYPE_CHECKING ones too)."""
    edges = {"GRAPH": GRAPH, "TYPED": TYPED}[graph]
    order: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        order[node] = 1  # on the path
        path.append(node)
        for nxt in sorted(edges[node]):
            if order.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in order:
                visit(nxt)
        path.pop()
        order[node] = 2  # done

    for name in sorted(GRAPH):
        if name not in order:
            visit(name)


def test_the_machinery_reaches_algorithms_only_through_the_registry():
    """The registry imports each folder's ALGORITHM directly; everything else reaches an algorithm through it."""
    wrong = [
        (name, target)
        for name, targets in TYPED.items()
        if not is_algorithm(name) and name != REGISTRY_MODULE
        for target in targets
        if is_algorithm(target) and (name, target) not in DECLARED
    ]
    assert wrong == []


def test_the_machinery_names_no_algorithm():
    """No string in the machinery's code (docstrings aside) is an algorithm's name or folder: what differs between
    algorithms is data in their folders, not a branch on a name."""
    names = set(REGISTRY) | set(FOLDERS)
    found = []
    for name, path in MODULES.items():
        if is_algorithm(name) or name == "flashviz.algos" or name in NAMING:  # the registry names the folders
            continue
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        found += [
            f"{path.relative_to(SRC)}:{node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in names and id(node) not in docstrings
        ]
    assert found == []


def test_an_executor_and_its_traffic_model_do_not_import_each_other():
    """The engine's counters are checked against the closed forms: neither may be built from the other."""
    wrong = [
        (name, target)
        for name, targets in GRAPH.items()
        for target in targets
        if (name.endswith(".engine") and target.endswith(".traffic"))
        or (name.endswith(".traffic") and (target.endswith(".engine") or target.startswith("flashviz.engine")))
    ]
    assert wrong == []


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_engine_launches_through_the_one_block_driver(folder):
    """One shared block driver (issue 18): an engine's `execute` hands its Recorder to `run_launch`
    (flashviz.engine.recorder), which puts the inputs in HBM, poisons the outputs with NaN and runs the blocks under
    IEEE float32; no engine puts a tensor in HBM itself."""
    tree = ast.parse((PACKAGE / "algos" / folder / "engine.py").read_text())
    execute = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "execute")
    calls = {n.func.id for n in ast.walk(execute) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "run_launch" in calls, f"algos/{folder}/engine.py: execute() does not call run_launch"
    puts = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and n.attr == "put"
        and isinstance(n.value, ast.Attribute)
        and n.value.attr == "hbm"
    ]
    assert puts == [], f"algos/{folder}/engine.py puts tensors in HBM itself (lines {puts}): run_launch does"


def test_tiling_is_a_leaf_and_the_comparison_runs_no_engine_of_its_own():
    assert GRAPH["flashviz.model.tiling"] == set()
    for name in ("flashviz.reports.compare", "flashviz.reports.compare_api"):
        assert not {t for t in GRAPH[name] if t.startswith("flashviz.engine")}, name


def below(name: str, layer: set[str]) -> bool:
    return any(name == m or name.startswith(m + ".") for m in layer)


def test_config_and_the_engine_import_no_algorithm_and_no_registry():
    """Config is plain data and the engine mirrors a kernel: neither imports the registry, an algorithm's folder or
    the trace assembly, not even for the type checker (the Algorithm is resolved above them and passed down)."""
    lower = [m for m in MODULES if below(m, {"flashviz.model.config", "flashviz.engine", "flashviz.model.kernels"})]
    assert "flashviz.engine.recorder" in lower
    wrong = [
        (name, target)
        for name in lower
        for target in TYPED[name]
        if target.startswith("flashviz.algos") or target in ("flashviz.tracing.assemble", "flashviz.tracing.build")
    ]
    assert wrong == []


# The layers that may import the registry (`flashviz.algos`) and so look an algorithm up by name: the front doors (CLI,
# API, server, widget, export, GPU runner), the trace layer that builds a Trace, and the reports over every algorithm
# (compare, regimes, your-kernel's model beside fa2's). Nothing below them does (config, engine, kernels, picture,
# assembly, hardware, the GPU specs the folders declare, the algorithms' folders themselves).
MAY_IMPORT_THE_REGISTRY = {
    "flashviz.cli.main",
    "flashviz.cli.options",
    "flashviz.cli.share",
    "flashviz.api",
    "flashviz.share.launch_args",  # the API's and the widget's launch arguments, checked (the API's front door)
    "flashviz.share.widget",
    "flashviz.server",
    "flashviz.tracing.build",
    "flashviz.reports.compare",
    "flashviz.reports.compare_api",
    "flashviz.reports.regimes",
    "flashviz.yourkernel",
    "flashviz.gpu.check",
    "flashviz.cli.gpu",
    "flashviz.gpu.launch",
    "flashviz.gpu.profile",
    "flashviz.gpu.run",
    "flashviz.gpu.sanitize",
    "flashviz.gpu.sectors",
    "flashviz.gpu.profile_schema",  # a profile file's `algo` is one of the registry's (`flashviz serve --profile`)
    "flashviz.tracing.file_schema",  # a trace file's `algo` too (`flashviz view`, `export --trace`, `show(path)`)
}


def test_nothing_below_the_trace_layer_imports_the_registry():
    importers = sorted(name for name, targets in TYPED.items() if REGISTRY_MODULE in targets)
    assert importers, "the registry is imported somewhere"
    assert [name for name in importers if not below(name, MAY_IMPORT_THE_REGISTRY)] == []


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_registered_folder_has_its_parts(folder):
    """docs/adding-an-algorithm.md's list: the record, the kernel file, the executor, the words, the closed
    forms, the float64 expectation, the GPU launch spec, the picture."""
    record = next(a for a in REGISTRY.values() if a.package == f"flashviz.algos.{folder}")
    here = PACKAGE / "algos" / folder
    assert (
        here / record.kernel_file
    ).is_file() or record.kernel.lies_in is not None  # the ring's: flashviz/ops/ring.py
    assert Path(str(kernels.path(record.kernel))).is_file()
    for part in ("__init__", "engine", "words", "traffic", "expect", "gpu", "picture"):
        assert f"flashviz.algos.{folder}.{part}".removesuffix(".__init__") in MODULES, part
    engine, traffic, expect = record.engine, record.traffic, record.expect
    assert callable(engine.execute) and callable(engine.trace_blocks)
    assert all(callable(getattr(traffic, f)) for f in ("count", "sram_bytes", "steps"))
    assert callable(expect.expected) and set(record.outputs) <= set(expect.TOLERANCE)
    assert callable(traffic.rules)


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_registered_folder_declares_its_picture(folder):
    """The picture is data in the folder (docs/trace-schema.md): its kernels own every op of the kernel file, once;
    the picker picks blocks of its kernels; every buffer lives in declared kernels and every SRAM row names
    declared buffers; every op's moves land in declared buffers."""
    from flashviz.algos.picture import Buffer, Kernel, Op, Picker
    from flashviz.model import kernels

    record = next(a for a in REGISTRY.values() if a.package == f"flashviz.algos.{folder}")
    pic = record.picture
    assert all(isinstance(k, Kernel) for k in pic.KERNELS) and sum(k.main for k in pic.KERNELS) == 1
    ops = [op for k in pic.KERNELS for op in k.ops]
    assert sorted(ops) == sorted(kernels.regions(record.kernel)) == sorted(pic.OPS), "every region in one kernel"
    names = {k.name for k in pic.KERNELS}
    assert isinstance(pic.PICKER, Picker) and set(pic.PICKER.kernels) <= names
    assert all(isinstance(b, Buffer) and set(b.kernels) <= names for b in pic.BUFFERS.values())
    rows = [b for row in pic.SRAM_ROWS for b in row]
    assert sorted(rows) == sorted(pic.BUFFERS), "each buffer in one SRAM row"
    for op in pic.OPS.values():
        assert isinstance(op, Op)
        assert {b for m in op.moves.values() for b in m.buffers} <= set(pic.BUFFERS)
        assert set(op.notes) | set(op.notes_masked) <= set(pic.BUFFERS)
    assert callable(pic.picture)


def test_every_algorithm_folder_is_registered():
    """A folder of algos/ is registered, or holds only a kernel (no ALGORITHM yet), as fa3 did until issue 20."""
    folders = {p.parent.name for p in (PACKAGE / "algos").glob("*/__init__.py")}
    assert set(FOLDERS) <= folders
    for folder in folders - set(FOLDERS):
        here = PACKAGE / "algos" / folder
        files = {p.name for p in here.iterdir() if p.name != "__pycache__"}
        assert files == {"__init__.py", "kernel.py"}, f"algos/{folder} is not registered and holds {sorted(files)}"
        assert "ALGORITHM =" not in (here / "__init__.py").read_text(), f"algos/{folder} has a record: register it"


LOOKUPS = {"get", "resolve", "gpu_spec", "gpu_specs", "REGISTRY", "ALGOS", "ORDER"}  # the registry's ways to a name


def lookups(name: str) -> list[str]:
    """Where module `name` looks an algorithm up through the registry: a use of one of LOOKUPS imported from
    flashviz.algos (`from ..algos import get`), or an attribute of the registry module (`algos.get(...)`)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    local: set[str] = set()  # names bound to the registry's lookups in this module
    modules: set[str] = set()  # names bound to the registry module itself
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                if base == REGISTRY_MODULE and alias.name in LOOKUPS:
                    local.add(alias.asname or alias.name)
                elif base == "flashviz" and alias.name == "algos":
                    modules.add(alias.asname or alias.name)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in local and isinstance(node.ctx, ast.Load):
            found.append(f"{path.relative_to(SRC)}:{node.lineno}: {node.id}")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr in LOOKUPS
        ):
            found.append(f"{path.relative_to(SRC)}:{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_no_lookup_by_name_outside_the_registry_and_the_front_doors():
    """An algorithm is looked up by name only in the registry, at the front doors (CLI, API, server, widget, export,
    GPU runner), in the trace layer's `make_trace(cfg)` and in the reports over every algorithm; everything below is
    handed the Algorithm. The reader sees lookups where there are some (the CLI resolves `--algo`)."""
    where = {name: lookups(name) for name in MODULES if name != REGISTRY_MODULE}
    assert where["flashviz.cli.main"] and where["flashviz.tracing.build"]
    wrong = [line for name, found in where.items() if not below(name, MAY_IMPORT_THE_REGISTRY) for line in found]
    assert wrong == []
