#!/usr/bin/env python3
"""Run Modular MAX's own graph-API unit tests against ``graphdsl.max`` through an import shim.

MAX's Python graph tests (``max/tests/tests/graph`` of modular's repository, 26.x) import
``max.graph``, ``max.dtype``, ``max.driver``, ...  This script builds, in a temporary directory, a
package named ``max`` whose modules only re-export ``graphdsl.max`` names, puts it first on
``sys.path`` and runs pytest over a directory of those tests (default ``/tmp/max_graph_tests``;
the tests are third-party code and are not kept in this repository).

The shim adds no behaviour:

* ``max.graph`` -> ``graphdsl.max``, ``max.graph.ops`` -> ``graphdsl.max.ops`` (and
  ``max.graph.ops.<m>`` -> ``graphdsl.max.ops.<m>`` where that module exists),
  ``max.graph.<m>`` (``type``, ``dim``, ``value``, ``dtype_promotion``, ...) -> ``graphdsl.max.<m>``
  where it exists, else ``graphdsl.max`` (whose public names are flat), ``max.dtype`` ->
  ``graphdsl.max`` (``DType``), ``max.mlir`` and ``max._mlir_context`` -> ``graphdsl.max.mlir``
  (its placeholders: ``Context``, ``Location``, ``default_mlir_context``; graphdsl has no
  MLIR), ``max._core.dialects`` (and ``.kgen``, ``.builtin``) ->
  ``graphdsl.max._core_dialects`` (graphdsl's records of MAX's dimension attributes:
  ``kgen.ParamDeclRefAttr``, ``kgen.ParamOperatorAttr``, ``builtin.IntegerAttr``, ...; its
  other dialects are missing names), and any other ``max.<m>`` a test imports
  (``max.driver``, ``max.engine``, ``max.nn``, ...) -> ``graphdsl.max.<m>`` if such a module
  exists, else a module with nothing in it.
* A name a shim module cannot find in its graphdsl target fails as a missing attribute: the
  module's ``__getattr__`` hands out a placeholder class whose every use (call, attribute,
  subscript) raises ``AttributeError: graphdsl.max has no max.graph.KernelLibrary``.  The
  placeholder defers the failure from ``from max.graph import X`` to the first use of ``X``, so
  one missing name fails the tests that use it rather than every test of a file (MAX's
  ``conftest.py`` imports ``KernelLibrary``, ``_OpaqueType`` and ``max.mlir`` for its fixtures).
  ``--strict-names`` makes the import itself fail instead.

Tests out of scope (engine, MLIR internals/text, collectives, Mojo custom kernels, GGUF /
safetensors) are deselected by the rules in ``SCOPE_RULES``: by file path, by test name, or by
the test function's own source (plus the module-level helpers it calls directly).  The rules are
applied statically (AST), so they also count the tests of files that fail to import.

Each test runs with a time limit (``--timeout``, SIGALRM; a watchdog kills the run and resumes
after the stuck test if the alarm cannot interrupt it) in a pytest subprocess whose address
space is capped (``--memory-gb``, ``RLIMIT_AS``).  The report gives tests collected, passed,
failed, errored, skipped, excluded (per rule), the failure causes grouped by the first real
exception's type and message head, and every ``pytest.raises`` whose expectation graphdsl.max
did not meet (expected exception and ``match`` pattern, what was raised instead).

MAX's ``conftest.py`` builds its ``graph_builder`` fixture from an MLIR context and a
``KernelLibrary``; through the shim these are graphdsl.max's placeholders
(``graphdsl.max.mlir``), which hold nothing and which ``Graph`` accepts and ignores.
``--fixture-overrides`` (a diagnostic, not the measurement) runs a copy of the tests whose
``conftest.py`` has those three fixtures replaced by a plain ``Graph(name, ...)``, to show
what the tests behind them do.

Usage::

    .venv/bin/python scripts/run_max_graph_tests.py [TEST_DIR] [--json OUT] [-k EXPR]
        [--timeout 120] [--memory-gb 8] [--strict-names] [--show-all] [--keep DIR]
        [--report-only DIR] [--fixture-overrides]

A full run over the 26.x test set takes about 8 minutes on two shared cores.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TEST_DIR = Path("/tmp/max_graph_tests")


# --------------------------------------------------------------------------------------------
# Scope rules
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScopeRule:
    """One out-of-scope rule.

    ``kind`` is ``"file"`` (regex searched in the test file's path relative to the test
    directory), ``"name"`` (regex searched in the test function's name) or ``"source"`` (regex
    searched in the test function's body and in the bodies of the module-level functions it
    calls directly; signatures and decorators are not searched).
    """

    topic: str
    kind: str
    pattern: str


SCOPE_RULES: tuple[ScopeRule, ...] = (
    ScopeRule(
        "collectives",
        "file",
        r"(^|/)test_(allgather\w*|allreduce|broadcast|reducescatter|reduce_scatter\w*"
        r"|distributed\w*|device_chains_collectives|shard_and_stack|sharding_strategy"
        r"|ep_\w+)\.py$",
    ),
    ScopeRule("engine", "file", r"(^|/)test_(compile_init|tensor_lifecycle|uninit_check\w*)\.py$"),
    ScopeRule("engine", "file", r"(^|/)uninit_check/"),
    ScopeRule("custom-kernels", "file", r"(^|/)test_(custom\w*|w4a16\w*|has_shape_function)\.py$"),
    ScopeRule("gguf-safetensors", "file", r"gguf|safetensors|(^|/)testdata/"),
    ScopeRule("mlir", "name", r"mlir|^test_mo_"),
    ScopeRule("engine", "source", r"\bInferenceSession\b|\bsession\.(load|compile|init)\b"),
    ScopeRule("engine", "source", r"\.execute\(|\bmax\.experimental\b"),
    ScopeRule(
        "collectives",
        "source",
        r"\b(allreduce|allgather|reducescatter|bundled_allreduce|distributed_\w+)\b|\bSignals\(",
    ),
    ScopeRule(
        "custom-kernels",
        "source",
        r"\bops\.(custom|inplace_custom)\(|\bcustom_extensions\b|\b_kernel_library\b"
        r"|\bKernelLibrary\(",
    ),
    ScopeRule(
        "mlir",
        "source",
        r"_mlir_op\b|_mlir_value\b|\.to_mlir\(|\.from_mlir\b|\bmlir\.|\bkgen\.|\b_?rmo\.\w"
        r"|\bmo\.\w|\b_add_op(_generated)?\(|\b_graph_body\b"
        r"|\bstr\((graph|main_graph|subgraph|with_res)\)|\bprint\(graph\)"
        # (MLIR text read back: a graph op's inputParameters, kgen parameter declarations)
        r"|\binputParameters\b|#kgen<",
    ),
)


@dataclass
class StaticTest:
    """A test function found by reading a test file (no import)."""

    key: str  # "rel/path.py::Class::test_name" or "rel/path.py::test_name"
    file: str
    rule: str | None  # "topic (kind: pattern)" of the first matching rule, None if in scope


def _body_source(source: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    if not node.body:
        return ""
    lines = source.splitlines()
    start = node.body[0].lineno - 1
    if isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
        start = node.body[0].end_lineno or start  # skip the docstring
    return "\n".join(lines[start : node.end_lineno])


def _called_names(node: ast.AST) -> set[str]:
    return {
        sub.func.id
        for sub in ast.walk(node)
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name)
    }


def _match_rule(rel: str, name: str, text: str) -> str | None:
    for rule in SCOPE_RULES:
        subject = {"file": rel, "name": name, "source": text}[rule.kind]
        found = re.search(rule.pattern, subject)
        if found:
            return f"{rule.topic} ({rule.kind}: {found.group(0)!r})"
    return None


def _static_test(
    rel: str,
    source: str,
    helpers: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
    func: ast.FunctionDef | ast.AsyncFunctionDef,
    cls: str | None,
) -> StaticTest:
    text = _body_source(source, func)
    for called in sorted(_called_names(func)):
        if called in helpers:
            text += "\n" + _body_source(source, helpers[called])
    key = f"{rel}::{cls}::{func.name}" if cls else f"{rel}::{func.name}"
    return StaticTest(key, rel, _match_rule(rel, func.name, text))


def scan_tests(test_dir: Path) -> list[StaticTest]:
    """Every test function of every ``test_*.py`` under ``test_dir``, with its scope rule."""
    found: list[StaticTest] = []
    for path in sorted(test_dir.rglob("test_*.py")):
        rel = path.relative_to(test_dir).as_posix()
        source = path.read_text()
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        helpers = {
            node.name: node
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and not node.name.startswith("test")
        }
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name.startswith("test"):
                    found.append(_static_test(rel, source, helpers, node, None))
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                found.extend(
                    _static_test(rel, source, helpers, sub, node.name)
                    for sub in node.body
                    if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef)
                    and sub.name.startswith("test")
                )
    return found


# --------------------------------------------------------------------------------------------
# The shim package
# --------------------------------------------------------------------------------------------

BASE_MODULES = (
    "max",
    "max.dtype",
    "max.graph",
    "max.graph.ops",
    "max.graph.type",
    "max.graph.dim",
    "max.graph.value",
    "max.graph.dtype_promotion",
    "max.driver",
    "max.engine",
)

SUPPORT_SOURCE = '''\
"""Support for the generated ``max`` shim (run_max_graph_tests.py): name lookup only."""

from importlib import import_module
from importlib.util import find_spec


class _MissingMeta(type):
    """Metaclass of the placeholders for names graphdsl.max lacks: every use raises."""

    def _fail(cls, what):
        raise AttributeError(f"graphdsl.max has no {cls._shim_qualname}{what}")

    def __getattr__(cls, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        cls._fail(f" (asked for .{attr})")

    def __call__(cls, *args, **kwargs):
        cls._fail("")

    def __getitem__(cls, key):
        cls._fail(f" (asked for [{key!r}])")

    def __repr__(cls):
        return f"<missing {cls._shim_qualname}>"


def missing(qualname):
    """A placeholder class standing for ``qualname``; using it raises AttributeError."""
    return _MissingMeta(qualname.rsplit(".", 1)[-1], (), {"_shim_qualname": qualname})


def resolve_target(shim_name, candidates):
    """The first of ``candidates`` that exists as a module (None if none does)."""
    for candidate in candidates:
        try:
            if find_spec(candidate) is None:
                continue
        except ModuleNotFoundError:
            continue
        return import_module(candidate)
    return None


def lookup(module_globals, target, name, strict):
    """``module.name`` for a shim module: its shim submodule, else the target's attribute."""
    shim_name = module_globals["__name__"]
    if name.startswith("__"):
        raise AttributeError(f"module {shim_name!r} has no attribute {name!r}")
    if module_globals.get("__path__") is not None and find_spec(f"{shim_name}.{name}"):
        value = import_module(f"{shim_name}.{name}")
    elif target is not None and hasattr(target, name):
        value = getattr(target, name)
    elif strict:
        raise AttributeError(
            f"module {shim_name!r} has no attribute {name!r} (graphdsl.max has no "
            f"{shim_name}.{name})"
        )
    else:
        value = missing(f"{shim_name}.{name}")
    module_globals[name] = value
    return value
'''

MODULE_TEMPLATE = '''\
"""Generated shim module {name}: re-exports {candidates_text}."""

import _max_shim_support as _support

_TARGET = _support.resolve_target(__name__, {candidates!r})


def __getattr__(name):
    return _support.lookup(globals(), _TARGET, name, {strict!r})
'''


def scan_max_imports(test_dir: Path) -> set[str]:
    """Every ``max`` module path imported anywhere in the test directory's Python files."""
    modules: set[str] = set()
    for path in test_dir.rglob("*.py"):
        try:
            tree = ast.parse(path.read_text())
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update(
                    alias.name for alias in node.names if alias.name.split(".")[0] == "max"
                )
            elif (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.level == 0
                and node.module.split(".")[0] == "max"
            ):
                modules.add(node.module)
    return modules


def target_candidates(module: str) -> list[str]:
    """The graphdsl modules a shim module re-exports, most specific first."""
    parts = module.split(".")
    if module == "max":
        return []
    if module == "max.dtype":
        return ["graphdsl.max"]
    if module in ("max.mlir", "max._mlir_context"):
        return ["graphdsl.max.mlir"]  # placeholders: graphdsl has no MLIR
    if parts[:3] == ["max", "_core", "dialects"]:  # graphdsl's records of dim attributes
        return [".".join(["graphdsl", "max", "_core_dialects", *parts[3:]])]
    if parts[1] == "graph":
        rest = parts[2:]
        candidates = []
        for cut in range(len(rest), -1, -1):
            if all(not p.startswith("_") for p in rest[:cut]):
                candidates.append(".".join(["graphdsl", "max", *rest[:cut]]))
        return candidates
    return [".".join(["graphdsl", "max", *parts[1:]])]


def write_shim(root: Path, modules: set[str], strict: bool) -> list[str]:
    """Write the ``max`` shim package under ``root``; returns the module paths written."""
    wanted = set(BASE_MODULES) | modules
    for name in list(wanted):
        parts = name.split(".")
        wanted.update(".".join(parts[:i]) for i in range(1, len(parts)))
    root.mkdir(parents=True, exist_ok=True)
    (root / "_max_shim_support.py").write_text(SUPPORT_SOURCE)
    for name in sorted(wanted):
        directory = root.joinpath(*name.split("."))
        directory.mkdir(parents=True, exist_ok=True)
        candidates = target_candidates(name)
        text = " or ".join(candidates) + " (first that exists)" if candidates else "nothing"
        (directory / "__init__.py").write_text(
            MODULE_TEMPLATE.format(
                name=name, candidates=candidates, candidates_text=text, strict=strict
            )
        )
    return sorted(wanted)


# --------------------------------------------------------------------------------------------
# The pytest plugin (runs in the subprocess): records outcomes, deselects out-of-scope tests,
# limits each test's time, and records pytest.raises expectations that were not met.
# --------------------------------------------------------------------------------------------

PLUGIN_SOURCE = '''\
"""pytest plugin of run_max_graph_tests.py (recording only; see that script)."""

import builtins
import json
import os
import re
import signal
import threading
import time
import traceback

import pytest

_RESULTS = os.environ["MAXSHIM_RESULTS"]
_CURRENT = os.environ["MAXSHIM_CURRENT"]
_ROOT = os.environ["MAXSHIM_ROOT"]
_TIMEOUT = float(os.environ["MAXSHIM_TIMEOUT"])
with open(os.environ["MAXSHIM_SCOPE"]) as _f:
    _SCOPE = json.load(_f)
with open(os.environ["MAXSHIM_DONE"]) as _f:
    _DONE = set(json.load(_f))
_GROUP = getattr(builtins, "BaseExceptionGroup", ())
_STATE = {"nodeid": None, "started": 0.0, "results": {}}


class TestTimeout(BaseException):
    """Raised in a test that ran past its time limit."""


def _emit(record):
    with open(_RESULTS, "a") as f:
        f.write(json.dumps(record) + "\\n")


def _rel(path):
    return os.path.relpath(str(path), _ROOT).replace(os.sep, "/")


def _key(item):
    cls = getattr(item, "cls", None)
    name = getattr(item, "originalname", None) or item.name
    parts = [_rel(item.path)] + ([cls.__name__] if cls is not None else []) + [name]
    return "::".join(parts)


def _first_real(exc):
    for _ in range(10):
        if _GROUP and isinstance(exc, _GROUP) and exc.exceptions:
            exc = exc.exceptions[0]
        elif type(exc).__name__ == "CollectError" and exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            break
    return exc


def _origin(tb):
    frames = traceback.extract_tb(tb) if tb is not None else []
    for frame in reversed(frames):
        if "/_pytest/" in frame.filename or "/pluggy/" in frame.filename:
            continue
        return frame
    return None


def _describe(exc):
    exc = _first_real(exc)
    kind = type(exc).__name__
    lines = [line for line in str(exc).splitlines() if line.strip()]
    head = lines[0].strip() if lines else ""
    frame = _origin(exc.__traceback__)
    where = ""
    if frame is not None:
        where = f"{frame.filename}:{frame.lineno}"
        if kind == "AssertionError" and frame.filename.startswith(_ROOT):
            if not head.startswith("Regex pattern did not match"):
                head = "assert at " + _rel(frame.filename) + ": " + (frame.line or "")
    if isinstance(exc, TestTimeout):
        kind, head = "Timeout", f"test ran past {_TIMEOUT:g} s"
    return {"type": kind, "message": head[:300], "where": where}


def _on_alarm(signum, frame):
    raise TestTimeout(f"test ran past {_TIMEOUT:g} s")


def _watchdog():
    limit = 2 * _TIMEOUT + 60
    while True:
        time.sleep(5)
        nodeid, started = _STATE["nodeid"], _STATE["started"]
        if nodeid is not None and time.monotonic() - started > limit:
            os._exit(70)


_original_raises = pytest.raises


class _RaisesRecorder:
    def __init__(self, inner, expected, match):
        self._inner, self._expected, self._match = inner, expected, match

    def __enter__(self):
        return self._inner.__enter__()

    def __exit__(self, exc_type, exc, tb):
        try:
            suppressed = self._inner.__exit__(exc_type, exc, tb)
        except BaseException as failure:
            self._record(exc, failure)
            raise
        if not suppressed and exc is not None and not isinstance(exc, TestTimeout):
            self._record(exc, None)
        return suppressed

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def _record(self, got, failure):
        expected = self._expected
        names = [getattr(e, "__name__", repr(e)) for e in
                 (expected if isinstance(expected, tuple) else (expected,))]
        got_line = ""
        if got is not None:
            lines = [line for line in str(got).splitlines() if line.strip()]
            got_line = lines[0].strip() if lines else ""
        _emit({
            "event": "raises",
            "nodeid": _STATE["nodeid"],
            "expected": " | ".join(names),
            "match": None if self._match is None else str(getattr(self._match, "pattern",
                                                                  self._match)),
            "got_type": None if got is None else type(got).__name__,
            "got_message": got_line[:300],
            "got_full": None if got is None else str(got)[:2000],
            "failure": type(failure).__name__ if failure is not None else "propagated",
        })


def _raises(expected_exception=None, *args, **kwargs):
    inner = _original_raises(expected_exception, *args, **kwargs)
    if args or not hasattr(inner, "__exit__"):
        return inner
    return _RaisesRecorder(inner, expected_exception, kwargs.get("match"))


pytest.raises = _raises


def pytest_configure(config):
    if _TIMEOUT > 0:
        signal.signal(signal.SIGALRM, _on_alarm)
        threading.Thread(target=_watchdog, daemon=True).start()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    keep, drop = [], []
    for item in items:
        rule = _SCOPE.get(_key(item))
        if item.nodeid in _DONE:
            drop.append(item)
            continue
        _emit({"event": "collected", "nodeid": item.nodeid, "key": _key(item)})
        if rule is not None:
            _emit({"event": "result", "nodeid": item.nodeid, "key": _key(item),
                   "outcome": "excluded", "rule": rule})
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_exception_interact(node, call, report):
    if isinstance(node, pytest.Collector) and call.excinfo is not None:
        _emit({"event": "collection-error", "nodeid": node.nodeid,
               "file": _rel(node.path) if getattr(node, "path", None) else node.nodeid,
               "cause": _describe(call.excinfo.value)})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    state = _STATE["results"].setdefault(item.nodeid, {})
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(
            report.longrepr)
        state.setdefault("outcome", "skipped")
        state.setdefault("cause", {"type": "Skipped", "message": reason[:300], "where": ""})
    elif report.failed:
        kind = "failed" if report.when == "call" else "error"
        if state.get("outcome") not in ("failed", "error"):
            state["outcome"] = kind
            state["phase"] = report.when
            if call.excinfo is not None:
                state["cause"] = _describe(call.excinfo.value)
    elif report.when == "call":
        state.setdefault("outcome", "passed")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _STATE["nodeid"], _STATE["started"] = item.nodeid, time.monotonic()
    with open(_CURRENT, "w") as f:
        f.write(item.nodeid)
    if _TIMEOUT > 0:
        signal.setitimer(signal.ITIMER_REAL, _TIMEOUT)
    start = time.monotonic()
    try:
        yield
    finally:
        if _TIMEOUT > 0:
            signal.setitimer(signal.ITIMER_REAL, 0)
        state = _STATE["results"].pop(item.nodeid, {})
        _emit({"event": "result", "nodeid": item.nodeid, "key": _key(item),
               "outcome": state.get("outcome", "error"), "phase": state.get("phase"),
               "cause": state.get("cause"), "seconds": round(time.monotonic() - start, 3)})
        _STATE["nodeid"] = None
        with open(_CURRENT, "w") as f:
            f.write("")
'''

FIXTURE_OVERRIDES = """

# ---- Appended by run_max_graph_tests.py --fixture-overrides; not MAX's code. MAX's fixtures
# ---- build an MLIR context and a KernelLibrary; these hand the tests a plain Graph instead.


@pytest.fixture(scope="module")
def mlir_context():
    yield None


@pytest.fixture(scope="module")
def kernel_library():
    yield None


@pytest.fixture(scope="module")
def graph_builder(request):
    yield lambda *args, **kwargs: Graph(request.node.name, *args, **kwargs)
"""

PYTEST_INI = """\
[pytest]
addopts =
python_files = test_*.py
"""


# --------------------------------------------------------------------------------------------
# Running pytest
# --------------------------------------------------------------------------------------------


def _limit_memory(limit_bytes: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


def run_pytest(
    test_dir: Path,  # the directory pytest runs (a copy under --fixture-overrides)
    work: Path,
    shim_root: Path,
    scope: dict[str, str],
    args: argparse.Namespace,
) -> Path:
    """Run pytest (resuming after a crash or a hard timeout); returns the results file."""
    results = work / "results.jsonl"
    current = work / "current.txt"
    done_file = work / "done.json"
    (work / "scope.json").write_text(json.dumps(scope))
    (work / "maxshim_plugin.py").write_text(PLUGIN_SOURCE)
    (work / "pytest.ini").write_text(PYTEST_INI)
    run_dir = work / "cwd"
    run_dir.mkdir(exist_ok=True)
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": os.pathsep.join(
                [str(shim_root), str(work), str(test_dir), str(REPO_ROOT)]
                + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
            ),
            "MAXSHIM_RESULTS": str(results),
            "MAXSHIM_CURRENT": str(current),
            "MAXSHIM_ROOT": str(test_dir),
            "MAXSHIM_TIMEOUT": str(args.timeout),
            "MAXSHIM_SCOPE": str(work / "scope.json"),
            "MAXSHIM_DONE": str(done_file),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(test_dir),
        "-c",
        str(work / "pytest.ini"),
        "--rootdir",
        str(test_dir),
        "-p",
        "no:cacheprovider",
        "-p",
        "maxshim_plugin",
        "--continue-on-collection-errors",
        "--tb=no",
        "-q",
        "-o",
        "console_output_style=count",
    ]
    if args.k:
        cmd += ["-k", args.k]
    limit = int(args.memory_gb * 2**30)
    for attempt in range(args.max_restarts + 1):
        done = sorted({r["nodeid"] for r in load_records(results) if r.get("event") == "result"})
        done_file.write_text(json.dumps(done))
        current.write_text("")
        proc = subprocess.run(
            cmd,
            cwd=run_dir,
            env=env,
            preexec_fn=lambda: _limit_memory(limit),
            check=False,
        )
        stuck = current.read_text().strip()
        if proc.returncode in (0, 1, 5) and not stuck:
            break
        if not stuck:
            print(f"\npytest exited with status {proc.returncode}", file=sys.stderr)
            break
        cause = (
            {"type": "Timeout", "message": "hard timeout: killed by the watchdog", "where": ""}
            if proc.returncode == 70
            else {
                "type": "Crash",
                "message": f"pytest process died (status {proc.returncode})",
                "where": "",
            }
        )
        with results.open("a") as f:
            f.write(
                json.dumps({"event": "result", "nodeid": stuck, "outcome": "error", "cause": cause})
                + "\n"
            )
        print(f"\n[restart {attempt + 1}: {stuck} -> {cause['message']}]", file=sys.stderr)
    return results


def load_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut short by a crash
    return records


# --------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------


def _norm(text: str) -> str:
    text = re.sub(r"0x[0-9a-fA-F]+", "0x…", text)
    text = re.sub(r"\d{4,}", "N", text)
    return text[:160]


def cause_key(cause: dict[str, Any] | None) -> str:
    if not cause:
        return "(no exception recorded)"
    message = cause.get("message", "")
    if cause.get("type") == "AssertionError" and message.startswith("Regex pattern did not match"):
        return "AssertionError: pytest.raises(match=...) pattern did not match the message"
    return _norm(f"{cause.get('type')}: {message}")


@dataclass
class Summary:
    collected: int = 0
    excluded_collected: int = 0
    excluded: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    collection_errors: list[dict[str, Any]] = field(default_factory=list)
    causes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    raises: list[dict[str, Any]] = field(default_factory=list)
    tests: dict[str, dict[str, Any]] = field(default_factory=dict)


def keyword_selects(expression: str | None, key: str) -> bool:
    """Whether pytest's ``-k expression`` selects the test ``key`` (node names only)."""
    if not expression:
        return True
    parts = key.split("::")
    names = [*parts[0].split("/"), *parts[1:]]
    try:
        from _pytest.mark import KeywordMatcher
        from _pytest.mark.expression import Expression

        return Expression.compile(expression).evaluate(KeywordMatcher(frozenset(names)))
    except Exception:  # pytest's private API moved: fall back to a substring test
        return any(expression.lower() in name.lower() for name in names)


def summarize(
    records: list[dict[str, Any]], static: list[StaticTest], keyword: str | None
) -> Summary:
    summary = Summary()
    collected = {r["nodeid"] for r in records if r.get("event") == "collected"}
    summary.collected = len(collected)
    results: dict[str, dict[str, Any]] = {}
    for record in records:
        if record.get("event") == "result":
            results[record["nodeid"]] = record
    for nodeid, record in sorted(results.items()):
        outcome = record["outcome"]
        entry: dict[str, Any] = {"outcome": outcome}
        if outcome == "excluded":
            summary.excluded[record["rule"].split(" ")[0]] += 1
            summary.excluded_collected += 1
            entry["rule"] = record["rule"]
        else:
            summary.outcomes[outcome] += 1
            if record.get("cause"):
                entry["cause"] = cause_key(record["cause"])
                entry["where"] = record["cause"].get("where", "")
            if outcome in ("failed", "error"):
                summary.causes[cause_key(record.get("cause"))].append(nodeid)
        summary.tests[nodeid] = entry
    # Files that failed to import: count their test functions statically (parametrized
    # cases count once), in scope or excluded by the same rules.
    by_file: dict[str, list[StaticTest]] = defaultdict(list)
    for test in static:
        if keyword_selects(keyword, test.key):
            by_file[test.file].append(test)
    seen_files = set()
    for record in records:
        if record.get("event") != "collection-error" or record["file"] in seen_files:
            continue
        seen_files.add(record["file"])
        tests = by_file.get(record["file"], [])
        if not tests:
            continue
        in_scope = [t for t in tests if t.rule is None]
        for test in tests:
            if test.rule is not None:
                summary.excluded[test.rule.split(" ")[0]] += 1
                summary.tests[test.key] = {"outcome": "excluded", "rule": test.rule}
        key = "[collection] " + cause_key(record["cause"])
        for test in in_scope:
            summary.tests[test.key] = {"outcome": "error", "phase": "collection", "cause": key}
            summary.causes[key].append(test.key)
        summary.collection_errors.append(
            {
                "file": record["file"],
                "cause": cause_key(record["cause"]),
                "where": record["cause"].get("where", ""),
                "tests_in_scope": len(in_scope),
                "tests_excluded": len(tests) - len(in_scope),
            }
        )
    last_by_test: dict[tuple[str, str], dict[str, Any]] = {}
    examples: Counter[tuple[str, str]] = Counter()
    for record in records:
        if record.get("event") == "raises" and record.get("nodeid"):
            entry = summary.tests.get(record["nodeid"], {})
            if entry.get("outcome") in ("excluded", "passed"):
                continue
            test_and_expected = (record["nodeid"], record["expected"])
            last_by_test[test_and_expected] = record  # hypothesis replays the last example
            examples[test_and_expected] += 1
    for test_and_expected, record in last_by_test.items():
        record["examples"] = examples[test_and_expected]
    summary.raises = list(last_by_test.values())
    return summary


def print_report(summary: Summary, args: argparse.Namespace, test_dir: Path) -> None:
    errored_collection = sum(e["tests_in_scope"] for e in summary.collection_errors)
    excluded_total = sum(summary.excluded.values())
    ran = sum(summary.outcomes.values())
    not_run = summary.collected - summary.excluded_collected - ran
    in_scope = ran + errored_collection + max(not_run, 0)
    print()
    print(f"MAX graph tests in {test_dir} against graphdsl.max")
    if args.fixture_overrides:
        print(
            "  (DIAGNOSTIC: conftest fixtures mlir_context/kernel_library/graph_builder replaced)"
        )
    print(f"  collected test items:       {summary.collected}")
    print(f"  excluded as out of scope:   {excluded_total}")
    for topic, count in summary.excluded.most_common():
        print(f"      {topic:<22} {count}")
    print(f"  in scope:                   {in_scope}")
    print(f"    passed                    {summary.outcomes['passed']}")
    print(f"    failed                    {summary.outcomes['failed']}")
    print(f"    errored (setup/teardown)  {summary.outcomes['error']}")
    print(
        f"    errored (file import)     {errored_collection} "
        f"(test functions of {len(summary.collection_errors)} files; parametrized cases count once)"
    )
    print(f"    skipped                   {summary.outcomes['skipped']}")
    if not_run > 0:
        print(f"    not run (run cut short)   {not_run}")
    rules = "\n".join(f"      {r.topic:<17} {r.kind:<7} {r.pattern}" for r in SCOPE_RULES)
    print(f"  scope rules (first match wins):\n{rules}")
    if summary.collection_errors:
        print("\nFiles that failed to import:")
        for error in summary.collection_errors:
            print(
                f"  {error['file']}: {error['cause']} "
                f"[{error['tests_in_scope']} in scope, {error['tests_excluded']} excluded]"
            )
    print("\nFailure causes (first real exception: type and message head), most common first:")
    ranked = sorted(summary.causes.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    shown = ranked if args.show_all else ranked[:40]
    for cause, tests in shown:
        print(f"  {len(tests):4d}  {cause}")
        print(f"        e.g. {tests[0]}")
    if len(shown) < len(ranked):
        rest = sum(len(t) for _, t in ranked[len(shown) :])
        print(f"  ... {len(ranked) - len(shown)} more causes ({rest} tests); --show-all lists them")
    with_match = [r for r in summary.raises if r.get("match") is not None]
    print(
        f"\npytest.raises(..., match=...) expectations graphdsl.max did not meet "
        f"({len(with_match)}; {len(summary.raises) - len(with_match)} more without match= "
        "in --json):"
    )
    for record in sorted(with_match, key=lambda r: r["nodeid"]):
        kind = {
            "propagated": "other exception type",
            "AssertionError": "message does not match",
            "Failed": "nothing raised",
        }.get(record["failure"], record["failure"])
        got = (
            "nothing raised"
            if record["got_type"] is None
            else f"({kind}) {record['got_type']}: {record['got_message']}"
        )
        print(f"  {record['nodeid']}")
        print(f"      expected {record['expected']} matching {record['match']!r}")
        print(f"      got      {got[:200]}")


def write_json(
    args: argparse.Namespace, summary: Summary, test_dir: Path, modules: list[str]
) -> None:
    if not args.json:
        return
    args.json.write_text(
        json.dumps(
            {
                "test_dir": str(test_dir),
                "fixture_overrides": bool(args.fixture_overrides),
                "collected": summary.collected,
                "excluded": dict(summary.excluded),
                "outcomes": dict(summary.outcomes),
                "collection_errors": summary.collection_errors,
                "causes": dict(summary.causes),
                "raises": summary.raises,
                "tests": summary.tests,
                "scope_rules": [r.__dict__ for r in SCOPE_RULES],
                "shim_modules": modules,
            },
            indent=1,
            sort_keys=True,
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("test_dir", nargs="?", type=Path, default=DEFAULT_TEST_DIR)
    parser.add_argument("--json", type=Path, help="write per-test outcomes and causes here")
    parser.add_argument("-k", help="pytest -k expression, passed through")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per test")
    parser.add_argument("--memory-gb", type=float, default=8.0, help="address-space cap")
    parser.add_argument("--max-restarts", type=int, default=20)
    parser.add_argument(
        "--strict-names",
        action="store_true",
        help="a name graphdsl.max lacks fails at import (no deferred placeholder)",
    )
    parser.add_argument("--show-all", action="store_true", help="list every failure cause")
    parser.add_argument("--keep", type=Path, help="keep the shim, plugin and raw results here")
    parser.add_argument(
        "--report-only",
        type=Path,
        metavar="DIR",
        help="print the report of a run kept with --keep DIR (its results.jsonl); run nothing",
    )
    parser.add_argument(
        "--fixture-overrides",
        action="store_true",
        help="diagnostic, not the measurement: run a copy of the tests whose conftest.py has "
        "MAX's mlir_context / kernel_library / graph_builder fixtures replaced by a plain Graph",
    )
    args = parser.parse_args(argv)
    test_dir = args.test_dir.resolve()
    if not test_dir.is_dir():
        parser.error(f"no test directory {test_dir}")
    static = scan_tests(test_dir)
    scope = {t.key: t.rule for t in static if t.rule is not None}
    if args.report_only:
        records = load_records(args.report_only / "results.jsonl")
        summary = summarize(records, static, args.k)
        print_report(summary, args, test_dir)
        write_json(args, summary, test_dir, [])
        return 0
    with tempfile.TemporaryDirectory(prefix="max_graph_shim_") as tmp:
        work = args.keep.resolve() if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        (work / "results.jsonl").unlink(missing_ok=True)
        shim_root = work / "shim"
        modules = write_shim(shim_root, scan_max_imports(test_dir), args.strict_names)
        run_root = test_dir
        if args.fixture_overrides:
            run_root = work / "tests"
            shutil.rmtree(run_root, ignore_errors=True)
            shutil.copytree(test_dir, run_root)
            with (run_root / "conftest.py").open("a") as conftest:
                conftest.write(FIXTURE_OVERRIDES)
        started = time.monotonic()
        results = run_pytest(run_root, work, shim_root, scope, args)
        records = load_records(results)
        summary = summarize(records, static, args.k)
        print_report(summary, args, test_dir)
        print(f"\n{len(modules)} shim modules; {time.monotonic() - started:.0f} s")
        write_json(args, summary, test_dir, modules)
    return 0


if __name__ == "__main__":
    sys.exit(main())
