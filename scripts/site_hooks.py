"""mkdocs hooks (mkdocs.yml's ``hooks:``): the pages and pictures of the documentation site
that are made when it is built, from the library itself, so that ``mkdocs build`` alone
makes the whole site and nothing in them is typed in.

- ``ops/``: the op reference, a page per op family (``graphdsl/ops/<family>.py``). Each op
  of ``gd.ops`` has its signature and docstring (mkdocstrings), the operand kinds it
  accepts (its ``OpDef``), what ``export`` gives for each dtype on the ``cpu`` and ``cuda``
  targets (the support matrix's data: ``support_results`` of ``scripts/gen_docs.py``, which
  exports every case of ``tests/onnx_cases.py`` against the measured kernel tables), the
  ONNX ops it lowers to, and how exactly onnxruntime's results equal the reference's (the
  op's rule in ``tests/test_onnx_matrix.py``).
- ``api/``: the API reference of graphdsl, graphdsl.nn, graphdsl.max, graphdsl.passes and
  exporters.onnx: an entry for every name of each module's ``__all__`` (mkdocstrings).
- ``max-differences.md``: each way graphdsl.max differs from max.graph and why, from the
  lists the oracle tests keep (``tests/test_graphdsl_max_oracle.py``).
- ``promotion.md`` and ``images/lattices/*.png``: the policies and their lattices
  (``Lattice.to_png``); each policy's page gets its picture too.
- ``benchmarks.md`` and ``images/benchmarks/*.png``: the ratio tables that
  ``benchmarks/run.py`` writes into ``benchmarks/README.md``, and the text-generation
  targets of ``benchmarks/results/generate.json`` (benchmarks/generate.py), drawn with
  matplotlib.

On every page, ``<!-- include: examples/FILE.py#PART -->`` becomes the code of PART (``model``:
between the file's ``# ---- model code`` markers; a name: that top-level class or function;
nothing: the whole file), marked as not run by the docs' test (``tests/test_examples.py``
runs the file), and ``<!-- extras -->`` the table of the package's extras.
"""

from __future__ import annotations

import ast
import collections
import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
import io
import json
import re
import sys
import tempfile
import types
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
PATHS = [str(ROOT / "scripts"), str(ROOT / "tests"), str(ROOT)]


def use_repo_paths() -> None:
    """gen_docs and site_griffe, onnx_cases, the library importable (again in each event:
    mkdocs restores sys.path once it has loaded the hook)."""
    sys.path[:0] = [p for p in PATHS if p not in sys.path]


use_repo_paths()

import graphdsl as gd  # noqa: E402
from graphdsl.opdef import OPS  # noqa: E402

# the modules of the API reference: module -> its page under api/
API_MODULES = {
    "graphdsl": "graphdsl",
    "graphdsl.nn": "nn",
    "graphdsl.max": "max",
    "graphdsl.passes": "passes",
    "exporters.onnx": "exporters-onnx",
}
# submodules documented on pages of their own, beside the API_MODULES
API_EXTRA = {
    "graphdsl.max.ops": "max-ops",
    "graphdsl.max.engine": "max-engine",
    "graphdsl.max.driver": "max-driver",
}
NOT_RUN = "<!-- not run: {} -->"


# ---------------------------------------------------------------------------- helpers


def md_table(header: list[str], rows: Iterable[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


_SAFE_CALLS = {
    "dict": dict,
    "frozenset": frozenset,
    "set": set,
    "list": list,
    "tuple": tuple,
    "sorted": sorted,
}


def module_constants(path: Path, seed: dict[str, Any] | None = None) -> dict[str, Any]:
    """The top-level assignments of ``path`` made of literals, earlier such assignments,
    the names in ``seed`` and a few builtin constructors, evaluated: the lists a test module
    keeps, read without importing it (and pytest). Others are left out."""
    ns: dict[str, Any] = dict(seed or {})
    for node in ast.parse(path.read_text()).body:
        target: ast.expr
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        else:
            continue
        if not isinstance(target, ast.Name) or any(
            isinstance(n, ast.Lambda) for n in ast.walk(value)
        ):
            continue
        code = compile(ast.Expression(value), str(path), "eval")
        try:
            ns[target.id] = eval(code, {"__builtins__": _SAFE_CALLS}, dict(ns))
        except Exception:  # calls something else, or uses a name from an import
            continue
    return ns


def object_path(module: str, name: str, obj: object) -> str:
    """The path mkdocstrings documents ``module.name`` under: the name itself, or the
    object's own module where a submodule of the same name hides it (``graphdsl.evaluate``,
    ``graphdsl.ops.cast``)."""
    if importlib.util.find_spec(f"{module}.{name}") is None:
        return f"{module}.{name}"
    module_of = getattr(obj, "__module__", module)
    return f"{module_of}.{getattr(obj, '__qualname__', name)}"


def directive(path: str, level: int, **options: object) -> str:
    """An mkdocstrings block for ``path`` with its heading at ``level``."""
    opts = {"show_root_heading": True, "heading_level": level, **options}
    lines = [f"::: {path}", "    options:"]
    lines += [f"      {k}: {json.dumps(v)}" for k, v in opts.items()]
    return "\n".join(lines) + "\n\n"


# ---------------------------------------------------------------------------- includes


_INCLUDE = re.compile(r"^<!-- include: (?P<path>[\w./-]+)(?:#(?P<part>\w+))? -->$", re.M)
_MODEL = re.compile(r"^# ---- model code: begin.*?\n(.*?)^# ---- model code: end", re.M | re.S)


def include(path: str, part: str | None) -> str:
    """The fenced code of ``part`` of the file ``path`` (relative to the repository)."""
    text = (ROOT / path).read_text()
    if part is None:
        code = text
    elif part == "model":
        m = _MODEL.search(text)
        if m is None:
            raise ValueError(f"{path} has no '# ---- model code: begin/end' markers")
        code = m.group(1)
    else:
        found = [
            n
            for n in ast.parse(text).body
            if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == part
        ]
        if not found:
            raise ValueError(f"{path} defines no top-level {part!r}")
        node = found[0]
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        code = "\n".join(text.splitlines()[start - 1 : node.end_lineno])
    title = path if part is None else f"{path} ({part})"
    return (
        NOT_RUN.format(f"included from {path}, which tests/test_examples.py runs") + "\n"
        f'```python title="{title}"\n{code.strip()}\n```'
    )


def expand_includes(markdown: str) -> str:
    return _INCLUDE.sub(lambda m: include(m["path"], m["part"]), markdown)


def extras_table() -> str:
    """pyproject.toml's extras and what each installs (from the installed metadata)."""
    extras: dict[str, list[str]] = collections.defaultdict(list)
    for req in importlib.metadata.requires("graphdsl") or []:
        m = re.search(r"""extra\s*==\s*["']([\w-]+)["']""", req)
        if m:
            extras[m.group(1)].append(req.split(";")[0].strip())
    rows = [[f"`{k}`", ", ".join(f"`{r}`" for r in v)] for k, v in sorted(extras.items())]
    return md_table(["extra", "installs"], rows)


# ---------------------------------------------------------------------------- op reference


# how onnxruntime's results compare with the reference, by tests/test_onnx_matrix.py's rule
# (integer and bool results: always bit for bit)
RESULT_RULES = {
    "bits": "bit for bit, zero signs included",
    "ulps": "within {ulps} ulps of the reference (a kernel of libm type)",
    "sum": "a sum in onnxruntime's order: within the order-of-accumulation bound of "
    "`tests/floats.py` (exact where the terms sum exactly; zero signs not compared)",
    "softmax": "within softmax's bound: Exp's ulps and the sum's order",
    "log_sum_exp": "within the bound of Exp's and Log's ulps and the sum's order",
    "moment": "within the bound of two sums in another order (`tests/norm_bounds.py`)",
    "gelu": "within gelu's bound: float32 Erf or Tanh against a float64 reference "
    "(`tests/norm_bounds.py`)",
    "norm": "within the norm's bound: float32 sums against a float64 reference "
    "(`tests/norm_bounds.py`)",
    "exact_sum": "exact (each sum has one nonzero term), zero signs aside",
    "draws": "random draws: dtype, shape and bounds are the reference's, the values onnxruntime's",
}
SYMBOLS = ("✓", "F", "W", "FW", "✗")
FAMILY_TITLES = {
    "elementwise": "Arithmetic",
    "logic": "Comparisons, logic and bits",
    "unary": "Math",
    "activation": "Activations and transcendental functions",
    "reduction": "Reductions",
    "selection": "Selection and scans",
    "ordering": "Ordering",
    "shape": "Shapes",
    "slicing": "Slices and ranges",
    "indexing": "Gathers and scatters",
    "scatter_reduce": "Scatter reductions",
    "dynamic": "Data-dependent shapes",
    "nn": "Matrix products and softmax",
    "norm": "Normalization",
    "layers": "Layers",
    "vision": "Convolutions",
    "pooling": "Pooling, padding and resizing",
    "image": "Image ops",
    "quant": "Quantization",
    "cast": "Casts",
    "control": "Control flow",
    "random": "Random numbers",
    "debug": "Debugging",
    "rotary": "Rotary embeddings",
}


class OpData:
    """The support matrix's results and the matrix test's rules, by op."""

    def __init__(self) -> None:
        use_repo_paths()
        import gen_docs
        import onnx_cases

        self.dtypes: list[gd.DType] = list(onnx_cases.DTYPES)
        self.cases, self.results = gen_docs.support_results(log=lambda s: None)
        self.exactness = {op: (a, b) for op, a, b in gen_docs.exactness_rows(self.cases)}
        seed = {k: v for k, v in vars(onnx_cases).items() if not k.startswith("__")}
        matrix = module_constants(ROOT / "tests" / "test_onnx_matrix.py", seed)
        self.rules: dict[str, str] = matrix["INEXACT_OPS"]
        self.ulps: dict[str, int] = matrix["KERNEL_ULPS"]
        catalogue = module_constants(ROOT / "tests" / "test_op_catalogue.py")
        self.composites: dict[str, set[str]] = catalogue["COMPOSITES"]
        self.aliases: dict[str, str] = catalogue["ALIASES"]
        self.helpers: set[str] = catalogue["HELPERS"]
        ops = sorted(OPS, key=len, reverse=True)
        self.by_op: dict[str, list[str]] = collections.defaultdict(list)
        for case in dict.fromkeys(c for c, _ in self.cases):  # a case belongs to the longest
            op = next(o for o in ops if case == o or case.startswith(f"{o}_"))  # op it names
            self.by_op[op].append(case)
        for rule in self.rules.values():
            if rule not in RESULT_RULES:
                raise ValueError(
                    f"tests/test_onnx_matrix.py has a rule {rule!r} the site "
                    "does not describe (RESULT_RULES in scripts/site_hooks.py)"
                )

    def cells(self, case: str, target: str) -> dict[gd.DType, tuple[str, str, Any]]:
        res = self.results[target]
        return {dt: res[case, dt] for dt in self.dtypes if (case, dt) in res}

    def rule(self, case: str, op: str) -> str:
        rule = self.rules.get(case, "bits")
        return RESULT_RULES[rule].format(ulps=self.ulps.get(op, "?"))


@functools.cache  # (once per process: `mkdocs serve` rebuilds without exporting it all again)
def op_data() -> OpData:
    return OpData()


def public_ops() -> dict[str, list[str]]:
    """family -> the public names of gd.ops it defines, in the registry's order."""
    fams: dict[str, list[str]] = collections.defaultdict(list)
    names = list(OPS) + sorted(set(gd.ops.__all__) - set(OPS))
    for name in names:
        fn = getattr(gd.ops, name)
        fams[fn.__module__.rsplit(".", 1)[-1]].append(name)
    order = list(FAMILY_TITLES)  # (a family without a title goes last, under its name)
    return dict(sorted(fams.items(), key=lambda kv: [*order, kv[0]].index(kv[0])))


def op_anchor(name: str) -> str:
    return object_path("graphdsl.ops", name, getattr(gd.ops, name))


def lowers_to(name: str, cases: list[str], data: OpData) -> str:
    """The ONNX operators of each case's export in float32 (or its first dtype), per target."""
    lines = []
    for case in cases:
        cpu, cuda = data.cells(case, "cpu"), data.cells(case, "cuda")
        dt = gd.float32 if gd.float32 in cpu else next(iter(cpu))
        ops = {
            t: ", ".join(f"`{o}`" + (f"×{k}" if k > 1 else "") for o, k in c[dt][2].items())
            or "none (the export fails)"
            for t, c in (("cpu", cpu), ("cuda", cuda))
        }
        where = (
            ops["cpu"]
            if ops["cpu"] == ops["cuda"]
            else (f"{ops['cpu']} (`cpu`); {ops['cuda']} (`cuda`)")
        )
        lines.append(f"`{case}` in {dt.name}: {where}")
    return (
        "**Lowers to** (ONNX compute nodes, casts left out; other dtypes in the table): "
        + "; ".join(lines)
        + ".\n\n"
    )


def _cell(cell: tuple[str, str, Any]) -> str:
    return f"{cell[0]} {cell[1]}"


def op_section(name: str, family: str, data: OpData) -> str:
    parts = [directive(op_anchor(name), 2, show_root_full_path=False)]
    opdef = OPS.get(name)
    if opdef is None:
        if name in data.composites:
            built = ", ".join(
                f"[`{o}`](#{op_anchor(o)})"
                if o in fam_ops(family)
                else f"[`{o}`]({op_family(o)}.md#{op_anchor(o)})"
                for o in sorted(data.composites[name])
            )
            parts.append(
                f"A composite: it builds {built} (no node, lowering or support-"
                "matrix row of its own; those ops' support applies).\n\n"
            )
        elif name in data.aliases:
            target = data.aliases[name]
            parts.append(
                f"Another name of [`{target}`](#{op_anchor(target)}) (the same function).\n\n"
            )
        else:
            parts.append("A helper: it builds no node of its own (see its description).\n\n")
        return "".join(parts)
    lowering = f"exporters/onnx/_lower/{family}.py"
    parts.append(
        f"**Operands:** {opdef.accepts}. **Defined in** `graphdsl/ops/{family}.py`, "
        f"**lowered in** `{lowering}`.\n\n"
    )
    cases = data.by_op.get(name, [])
    if not cases:
        parts.append("No case of the support matrix exports this op.\n\n")
        return "".join(parts)
    parts.append(lowers_to(name, cases, data))
    rules = {data.rule(c, name) for c in cases}
    if rules == {RESULT_RULES["bits"]}:
        parts.append(f"**Results on onnxruntime:** {rules.pop()}, in every dtype.\n\n")
    elif len(rules) == 1:
        parts.append(
            f"**Results on onnxruntime:** {rules.pop()}; integer and bool results bit for bit.\n\n"
        )
    else:
        parts.append(
            "**Results on onnxruntime** (integer and bool results bit for bit):\n\n"
            + "".join(f"- `{c}`: {data.rule(c, name)}\n" for c in cases)
            + "\n"
        )
    rows = []
    accepted: set[gd.DType] = set()
    for case in cases:
        cpu, cuda = data.cells(case, "cpu"), data.cells(case, "cuda")
        accepted |= set(cpu)
        groups: dict[tuple[str, str], list[str]] = {}
        for dt in cpu:
            groups.setdefault((_cell(cpu[dt]), _cell(cuda[dt])), []).append(dt.name)
        for (a, b), dts in groups.items():
            rows.append([f"`{case}`", ", ".join(dts), a, b])
    parts.append(md_table(["case", "dtypes", "`cpu`", "`cuda`"], rows))
    refused = [d.name for d in data.dtypes if d not in accepted]
    if refused:
        parts.append(
            f"\nNot accepted (building raises `OpTypeError` or `PromotionError`): "
            f"{', '.join(refused)}.\n"
        )
    costs = [(c, data.exactness[c]) for c in cases if c in data.exactness]
    if costs:
        parts.append(
            "\n`export(exact=False)` (float32, `cpu`): "
            + "; ".join(f"`{c}` {b} ONNX nodes instead of {a}" for c, (a, b) in costs)
            + " (casts left "
            "out; zero signs and NaN payloads may then differ from the reference).\n"
        )
    return "".join(parts) + "\n"


@functools.cache
def _families() -> dict[str, list[str]]:
    return public_ops()


def fam_ops(family: str) -> list[str]:
    return _families()[family]


def op_family(name: str) -> str:
    return next(f for f, names in _families().items() if name in names)


def op_pages() -> dict[str, str]:
    data = op_data()
    pages = {}
    legend = (
        "Cells: ✓ one ONNX compute node in the op's own dtype; F a formula of several nodes "
        "(exactness: numpy's semantics differ from the ONNX op's, or onnxruntime's kernel is "
        "wrong); W some nodes compute in a wider or reinterpreted dtype (no kernel for the "
        "dtype, narrow floats computing in float32, integer sums in int64); ✗ the export "
        "fails (`ExportError`). Each case is a one-op graph of `tests/onnx_cases.py`, exported "
        "with `export(g, target=...)` against the measured kernel tables "
        "(`exporters/onnx/kernels/*.json`); `tests/test_onnx_matrix.py` runs every `cpu` case "
        "on onnxruntime against `gd.evaluate`.\n\n"
    )
    index_rows = []
    for family, names in _families().items():
        title = FAMILY_TITLES.get(family, family)
        body = [
            f"# {title}\n\n",
            f"The ops of `graphdsl/ops/{family}.py`. In the tables, each case is a one-op "
            "graph of the support matrix, exported for each target: ✓ one ONNX compute node "
            "in the op's own dtype, F a formula of several, W some computing in a wider dtype, "
            "✗ the export fails ([the op reference](index.md) says more).\n\n",
        ]
        body += [op_section(n, family, data) for n in names]
        pages[f"ops/{family}.md"] = "".join(body)
        for n in names:
            cells = collections.Counter(
                data.cells(c, t)[dt][0]
                for c in data.by_op.get(n, [])
                for t in ("cpu",)
                for dt in data.cells(c, t)
            )
            cuda = collections.Counter(
                cell[0] for c in data.by_op.get(n, []) for cell in data.cells(c, "cuda").values()
            )
            opdef = OPS.get(n)
            kind = (
                opdef.accepts
                if opdef
                else (
                    "composite"
                    if n in data.composites
                    else "alias"
                    if n in data.aliases
                    else "helper"
                )
            )
            index_rows.append(
                [
                    f"[`{n}`]({family}.md#{op_anchor(n)})",
                    f"[{title}]({family}.md)",
                    kind,
                    _tally(cells),
                    _tally(cuda),
                ]
            )
    pages["ops/index.md"] = (
        "# Op reference\n\n"
        f"Every op of `graphdsl.ops` ({len(index_rows)} public names: {len(OPS)} ops of the "
        "registry, and the composites, aliases and helpers that build them), a page per "
        "family. Each entry has the op's signature, description and runnable example, the "
        "operand kinds it accepts, what `export` gives for each dtype on the `cpu` and `cuda` "
        "targets, the ONNX operators it lowers to, and how exactly onnxruntime's results "
        "equal the reference's (`gd.evaluate`). The columns below count (case, dtype) cells "
        "by outcome.\n\n"
        + legend
        + md_table(["op", "family", "operands", "`cpu`", "`cuda`"], index_rows)
    )
    return pages


def _tally(c: collections.Counter[str]) -> str:
    return ", ".join(f"{s} {c[s]}" for s in SYMBOLS if c[s]) or "-"


# ---------------------------------------------------------------------------- API reference


def _kind(obj: object) -> str:
    if isinstance(obj, types.ModuleType):
        return "Modules"
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return "Exceptions and warnings"
    if inspect.isclass(obj):
        return "Classes"
    if callable(obj) and not isinstance(obj, gd.DType):
        return "Functions"
    return "Data"


def api_page(module: str) -> str:
    mod = importlib.import_module(module)
    names: list[str] = list(mod.__all__)
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for n in names:
        groups[_kind(getattr(mod, n))].append(n)
    parts = [f"# `{module}`\n\n", directive(module, 2, show_root_heading=False, members=False)]
    parts.append(f"Public names: the {len(names)} of `{module}.__all__`.\n\n")
    for kind in ("Classes", "Functions", "Exceptions and warnings", "Data", "Modules"):
        if kind not in groups:
            continue
        parts.append(f"## {kind}\n\n")
        if kind == "Modules":
            for n in groups[kind]:
                sub = f"{module}.{n}"
                link = (
                    f"[`{sub}`]({API_MODULES[sub]}.md)"
                    if sub in API_MODULES
                    else "[the op reference](../ops/index.md)"
                    if sub == "graphdsl.ops"
                    else f"[`{sub}`]({API_EXTRA[sub]}.md)"
                )
                summary = (getattr(mod, n).__doc__ or "").strip().split("\n\n")[0]
                parts.append(f'<span id="{sub}"></span>`{sub}`: {summary} See {link}.\n\n')
            continue
        dtypes = [n for n in groups[kind] if isinstance(getattr(mod, n), gd.DType)]
        if dtypes:
            parts.append(dtype_table(module, dtypes))
        for n in groups[kind]:
            if n not in dtypes:
                parts.append(directive(object_path(module, n, getattr(mod, n)), 3))
    return "".join(parts)


def dtype_table(module: str, names: list[str]) -> str:
    """The dtype constants (``gd.float32``...): members of :class:`graphdsl.DType`."""
    rows = []
    for n in names:
        d: gd.DType = getattr(gd, n)
        alias = f" (the same as `{d.name}`)" if n != d.name else ""
        rows.append(
            [
                f'<span id="{module}.{n}"></span>`gd.{n}`{alias}',
                d.kind.value,
                str(d.bits),
                f"`{d.code}`",
                str(d.np),
                f"{d.min:g} .. {d.max:g}",
            ]
        )
    return (
        "The dtypes, members of [`DType`](#graphdsl.DType) (`gd.dtype(name)` and "
        "`gd.DType.NAME` give the same objects):\n\n"
        + md_table(["name", "kind", "bits", "code", "numpy storage", "range"], rows)
        + "\n"
    )


def api_pages() -> dict[str, str]:
    pages = {f"api/{page}.md": api_page(module) for module, page in API_MODULES.items()}
    for module, page in API_EXTRA.items():
        pages[f"api/{page}.md"] = f"# `{module}`\n\n" + directive(
            module, 2, show_root_heading=False, show_submodules=False
        )
    rows = [
        [
            f"[`{m}`]({p}.md)",
            (importlib.import_module(m).__doc__ or "").strip().split("\n\n")[0].replace("\n", " "),
        ]
        for m, p in {**API_MODULES, **API_EXTRA}.items()
    ]
    pages["api/index.md"] = (
        "# API reference\n\n"
        "Generated from the docstrings: an entry for every public name (each module's "
        "`__all__`), with its signature, its description and a runnable example (a doctest: "
        "the test suite runs every one). The ops of `graphdsl.ops` are in "
        "[the op reference](../ops/index.md).\n\n" + md_table(["module", "what it is"], rows)
    )
    return pages


# ---------------------------------------------------------------------------- MAX


def max_differences_page() -> str:
    oracle = ROOT / "tests" / "test_graphdsl_max_oracle.py"
    consts = module_constants(oracle)
    diffs: dict[str, tuple[Any, str]] = consts["DIFFERENCES"]
    messages: dict[str, str] = consts["MESSAGE_DIFFERENCES"]
    random_diffs: dict[str, str] = module_constants(ROOT / "tests" / "test_graphdsl_max_random.py")[
        "DIFFERENCES"
    ]
    data = ROOT / "tests" / "data"
    api_cases = len(json.loads((data / "max_graph_api.json").read_text())["cases"])
    random_cases = len(json.loads((data / "max_graph_random.json").read_text())["cases"])

    def gives(v: Any) -> str:
        if isinstance(v, str):
            return f"`{v}`"
        if v.get("value") == "tensor":
            shape = ", ".join(v["shape"])
            return f"a `{v['dtype']}` tensor of shape `[{shape}]` on `{v['device']}`"
        return f"a `{v['value']}` `[{', '.join(v.get('dims', []))}]`"

    def call(case: str) -> str:
        kind, rest = case.split(": ", 1)
        inputs, source = rest.split(" | ", 1)
        return f"`{source}` ({kind}; inputs `{inputs}`)"

    rows = [[call(k), gives(v), why] for k, (v, why) in diffs.items()]
    msg_rows = [[call(k), why] for k, why in messages.items()]
    random_text = (
        "".join(f"- `{k}`: {why}\n" for k, why in random_diffs.items())
        if random_diffs
        else "None: every one of them agrees.\n"
    )
    return (
        "# Where graphdsl.max differs from max.graph\n\n"
        "[graphdsl.max](max.md) runs MAX programs with only their imports changed. What runs "
        "unchanged is measured against the real `max` package (26.7), which is the oracle: "
        f"`tests/data/max_graph_api.json` records what max.graph did with {api_cases} calls "
        "(type objects, dims, dtypes, op results, the exceptions of bad calls) and "
        f"`tests/data/max_graph_random.json` {random_cases} randomly drawn op calls; the tests "
        "replay each on graphdsl.max, which must give MAX's result, or raise MAX's builtin "
        "exception class with MAX's words.\n\n"
        "This page is generated from the lists those tests keep "
        "(`DIFFERENCES` and `MESSAGE_DIFFERENCES` of `tests/test_graphdsl_max_oracle.py`, "
        "`DIFFERENCES` of `tests/test_graphdsl_max_random.py`): each case there must still "
        "differ, so a fixed one leaves the list, and the page, when it is fixed.\n\n"
        f"## Different results ({len(rows)} of {api_cases} recorded calls)\n\n"
        "What graphdsl.max gives where max.graph gives something else, and why.\n\n"
        + md_table(["call", "graphdsl.max gives", "why"], rows)
        + f"\n## The same exception, other words ({len(msg_rows)} calls)\n\n"
        "Refusals of MAX's exception class whose message does not carry MAX's words, and "
        "why.\n\n"
        + md_table(["call", "why"], msg_rows)
        + f"\n## Randomly drawn calls ({random_cases})\n\n"
        "Deliberate deviations on the randomly drawn calls: " + random_text
    )


# ---------------------------------------------------------------------------- policies


@functools.cache
def lattice_images() -> dict[str, bytes]:
    """images/lattices/NAME.png: each policy's lattice, drawn by ``Lattice.to_png`` (what
    ``python -m graphdsl lattice --policy NAME --format png`` draws)."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="graphdsl-site-") as tmp:
        for name in gd.policy_names():
            path = Path(tmp) / f"{name}.png"
            gd.policy(name).lattice.to_png(str(path))
            out[f"images/lattices/{name}.png"] = path.read_bytes()
    return out


def promotion_page() -> str:
    parts = [
        "# Promotion policies\n\n",
        "A policy decides the dtype of every operation on mixed dtypes: a lattice (the join "
        "of two dtypes is their least upper bound) and a rule for Python literals. Pick one "
        'per graph (`gd.Graph(..., policy="jax")`); every promotion table is generated from '
        "the lattice (`python -m graphdsl table --policy NAME`) and every picture below is "
        "drawn from it when the site is built (`python -m graphdsl lattice --policy NAME "
        "--format png -o FILE` draws the same). Coming from JAX or the Array API: "
        "[the policies that promote as they do](coming-from-jax.md).\n\n",
        md_table(
            ["policy", "description"],
            [[f"[`{n}`](policies/{n}.md)", gd.policy(n).description] for n in gd.policy_names()],
        ),
    ]
    for n in gd.policy_names():
        p = gd.policy(n)
        parts.append(
            f"\n## `{n}`\n\n{p.description[:1].upper()}{p.description[1:]}; "
            f"[its page](policies/{n}.md).\n\n"
            f"![The {n} policy's lattice](images/lattices/{n}.png)\n"
        )
    return "".join(parts)


def add_lattice_picture(markdown: str, name: str) -> str:
    """A policy page with its lattice's picture at the head of its Lattice section."""
    head = "\n## Lattice\n\n"
    if head not in markdown:
        raise ValueError(f"policies/{name}.md has no Lattice section")
    picture = f"![The {name} policy's lattice](../images/lattices/{name}.png)\n\n"
    return markdown.replace(head, head + picture, 1)


# ---------------------------------------------------------------------------- benchmarks


BENCH_README = ROOT / "benchmarks" / "README.md"
_SECTION = re.compile(r"<!-- (?P<name>\w+):start -->\n(?P<body>.*?)<!-- (?P=name):end -->", re.S)


def bench_sections() -> dict[str, str]:
    """The sections benchmarks/run.py writes into benchmarks/README.md, by marker name."""
    return {m["name"]: m["body"] for m in _SECTION.finditer(BENCH_README.read_text())}


def md_tables(text: str) -> dict[str, list[dict[str, str]]]:
    """The Markdown tables of ``text`` by the ``###`` heading above each: rows of cells by
    column name."""
    tables: dict[str, list[dict[str, str]]] = {}
    heading = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("### "):
            heading = lines[i][4:].strip()
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|-"):
            cols = [c.strip() for c in lines[i].strip("|").split("|")]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip() for c in lines[i].strip("|").split("|")]
                rows.append(dict(zip(cols, cells, strict=True)))
                i += 1
            tables[heading] = rows
            continue
        i += 1
    return tables


def _table(tables: dict[str, list[dict[str, str]]], prefix: str) -> list[dict[str, str]]:
    found = [rows for head, rows in tables.items() if head.startswith(prefix)]
    if not found:
        raise ValueError(f"benchmarks/README.md has no table under a heading {prefix!r}")
    return found[0]


def _number(cell: str) -> float | None:
    m = re.match(r"[\d.]+", cell)
    return float(m.group(0)) if m else None


def _bars(
    title: str,
    labels: list[str],
    series: dict[str, list[float | None]],
    *,
    log: bool,
    xlabel: str,
    lines: Iterable[float] = (),
) -> bytes:
    """Horizontal grouped bars: a group per label (top to bottom), a bar per series (a
    missing value, ``n/a`` in the table, leaves its bar out); dashed lines at ``lines``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = len(labels) * len(series)
    fig, ax = plt.subplots(figsize=(9.0, 1.6 + 0.09 * rows + 0.12 * len(labels)))
    height = 0.8 / len(series)
    for k, (name, values) in enumerate(series.items()):
        ys = [i + (k - (len(series) - 1) / 2) * height for i, v in enumerate(values) if v]
        ax.barh(ys, [v for v in values if v], height, label=name)
    for x in lines:
        ax.axvline(x, color="#555", linewidth=0.8, linestyle="--")
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_title(title, pad=30)
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def benchmark_images() -> dict[str, bytes]:
    sections = bench_sections()
    results, inference = md_tables(sections["results"]), md_tables(sections["inference"])
    ratios = _table(results, "Ratios")
    labels = [r["graph"] for r in ratios]
    cols = [c for c in ratios[0] if c != "graph"]
    build = _bars(
        "Build + export: ratios (same run)",
        labels,
        {c: [_number(r[c]) for r in ratios] for c in cols},
        log=True,
        xlabel="ratio (log scale)",
        lines=[1.0],
    )
    ort = _table(results, "onnxruntime run time")
    run_time = _bars(
        "onnxruntime run time: graphdsl's model / onnx.helper's",
        [r["graph"] for r in ort],
        {"ratio": [_number(r["ratio"]) for r in ort]},
        log=False,
        xlabel="ratio",
        lines=[1.0, 1.05],
    )
    inf = _table(inference, "Inference")
    wanted = [
        "run() / plain",
        "ours / hand",
        "ours / torch",
        "exact=False / hand",
        "exact=False / torch",
    ]
    inf_plot = _bars(
        "Inference: ms per call, as ratios",
        [r["model"] for r in inf],
        {c: [_number(r[c]) for r in inf] for c in wanted},
        log=False,
        xlabel="ratio",
        lines=[1.0, 1.05],
    )
    return {
        "images/benchmarks/build-ratios.png": build,
        "images/benchmarks/run-time-ratios.png": run_time,
        "images/benchmarks/inference-ratios.png": inf_plot,
        **generate_images(),
    }


GENERATE_JSON = ROOT / "benchmarks" / "results" / "generate.json"


def generate_images() -> dict[str, bytes]:
    """The text-generation targets (benchmarks/generate.py's own figures file): per
    setting, each graphdsl side's decode, prefill and peak-RSS ratio to its genai side."""
    data = json.loads(GENERATE_JSON.read_text(encoding="utf-8"))
    names = data["side_names"]
    labels = [f"batch {s['batch']}, {s['threads']} thread(s)" for s in data["settings"]]
    images = {}
    charts = (("decode", "decode tok/s: graphdsl / genai (>= 1.0)", [1.0]),
              ("prefill", "prefill ms: graphdsl / genai (<= 1.1)", [1.0, 1.1]),
              ("rss", "peak RSS: graphdsl / genai (<= 1.1)", [1.0, 1.1]))  # fmt: skip
    for what, title, lines in charts:
        series: dict[str, list[float | None]] = {}
        for k, setting in enumerate(data["settings"]):
            for t in setting["targets"]:
                if t["what"] == what:
                    key = f"{names.get(t['side'], t['side'])} / {names.get(t['against'])}"
                    series.setdefault(key, [None] * len(labels))[k] = float(t["ratio"])
        images[f"images/benchmarks/generate-{what}.png"] = _bars(
            title, labels, series, log=False, xlabel="ratio", lines=lines
        )
    return images


def benchmarks_page() -> str:
    sections = bench_sections()
    return (
        "# Benchmarks\n\n"
        "The figures below are drawn with matplotlib when the site is built, from the tables "
        "that `benchmarks/run.py` writes into `benchmarks/README.md` (between its "
        "`<!-- results:start -->` and `<!-- inference:start -->` markers); the tables follow "
        "them as the benchmark wrote them. `python benchmarks/run.py` (after "
        "`pip install -e '.[bench]'`) measures them again and rewrites both; "
        "`benchmarks/README.md` explains the method and the other benchmarks.\n\n"
        "## Building and exporting\n\n"
        "graphdsl's time is everything a user pays: building the graph, then `export` "
        "(canonicalize, lowering, `onnx.checker`); onnx.helper's models are written by hand "
        "with the casts already placed.\n\n"
        "![Build and export ratios](images/benchmarks/build-ratios.png)\n\n"
        "![onnxruntime run-time ratios](images/benchmarks/run-time-ratios.png)\n\n"
        + sections["results"].strip()
        + "\n## Inference\n\n"
        "Each example model through `run()`, a plain onnxruntime session, the same model "
        "written by hand with onnx.helper and `torch.onnx.export` of the same PyTorch module "
        "(dashed lines: 1.0 and the 1.05 target).\n\n"
        "![Inference ratios](images/benchmarks/inference-ratios.png)\n\n"
        + "\n"
        + sections["inference"].strip()
        + "\n\n## Text generation\n\n"
        "A Llama decoder with its KV cache (hidden 1024, 8 layers, 16 heads, 4 KV heads, "
        "vocab 32000, random weights), greedy, 128-token prompts and 128 new tokens, against "
        "onnxruntime-genai's model builder on the same checkpoint: each graphdsl side's ratio "
        "to its genai side, drawn from `benchmarks/results/generate.json`, the figures "
        "`python benchmarks/generate.py` writes (its tables are in "
        "`benchmarks/results/generate.txt`; dashed lines: 1.0 and the targets).\n\n"
        "![Decode ratios](images/benchmarks/generate-decode.png)\n\n"
        "![Prefill ratios](images/benchmarks/generate-prefill.png)\n\n"
        "![Peak RSS ratios](images/benchmarks/generate-rss.png)\n"
    )


# ---------------------------------------------------------------------------- the site


def generated_pages() -> dict[str, str]:
    """Every page the hooks make: path under docs/ -> Markdown."""
    pages = {
        "max-differences.md": max_differences_page(),
        "promotion.md": promotion_page(),
        "benchmarks.md": benchmarks_page(),
        **api_pages(),
        **op_pages(),
    }
    for path, text in pages.items():  # their examples are doctests, run by the test suite
        if "```python" in text:
            raise ValueError(f"{path}: a generated page has a ```python block, which no test runs")
    return pages


def generated_files() -> dict[str, bytes]:
    return {**lattice_images(), **benchmark_images()}


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """The nav's op reference gets a page per op family after ops/index.md."""
    use_repo_paths()
    for entry in _walk_nav(config.nav or []):
        if "ops/index.md" in entry:
            at = entry.index("ops/index.md") + 1
            entry[at:at] = [{FAMILY_TITLES.get(f, f): f"ops/{f}.md"} for f in _families()]
    return config


def _walk_nav(nav: list[Any]) -> Iterator[list[Any]]:
    yield nav
    for item in nav:
        if isinstance(item, dict):
            for value in item.values():
                if isinstance(value, list):
                    yield from _walk_nav(value)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    use_repo_paths()
    for path, text in generated_pages().items():
        files.append(File.generated(config, path, content=text))
    for path, data in generated_files().items():
        files.append(File.generated(config, path, content=data))
    return files


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    markdown = expand_includes(markdown)
    markdown = markdown.replace("<!-- extras -->", extras_table())
    m = re.fullmatch(r"policies/([\w-]+)\.md", page.file.src_uri)
    if m:
        markdown = add_lattice_picture(markdown, m.group(1))
    return markdown
