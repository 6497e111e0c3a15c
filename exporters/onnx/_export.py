"""``export``: pass pipeline, lowering, validation, saving."""

from __future__ import annotations

import functools
import gc
import json
import os
import re
import warnings
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Literal

import onnx
from onnx import ModelProto, helper

from exporters.onnx._builder import Builder, ExportError, V
from exporters.onnx._carried import CARRIED_KEY, CARRIER
from exporters.onnx._files import ExternalData, ModelFiles
from exporters.onnx._lower import LOWER, SymbolicDims
from exporters.onnx._lower._common import TYPED, WEIGHTS
from exporters.onnx._lower.control import DOMAIN, FUNCTIONS, NESTED, Functions, outer_names
from exporters.onnx._lower.nbits import NBITS_ACCURACY_LEVELS
from exporters.onnx._placement import CpuFallbackWarning, cpu_nodes
from exporters.onnx._targets import TARGETS, Target
from exporters.onnx._types import onnx_type
from exporters.onnx._weights import bind as bind_weights
from exporters.onnx._weights import lower_weight
from graphdsl.dtypes import DType, Kind
from graphdsl.graph import Graph, Symbol
from graphdsl.ops._define import check_computable
from graphdsl.passes import canonicalize, sink_transposes
from graphdsl.printing import value_names
from graphdsl.regions import walk
from graphdsl.types import OpTypeError
from graphdsl.verify import verify
from graphdsl.weights import Weights, declared_weights

__all__ = ["DATA_FOLDER", "EXTERNAL_DATA_THRESHOLD", "MIN_OPSET", "export"]

_COMPLEX = frozenset(d for d in DType if d.kind is Kind.complex)
MIN_OPSET = 18  # ReduceMax/ReduceMin take axes as an input, Bitwise* exist
_FLOAT8_OPSET = 19
IR_VERSION = 10  # onnxruntime 1.31 loads IR <= 10 models built with onnx 1.23
EXTERNAL_DATA_THRESHOLD = 1 << 30  # constants above 1 GiB in all go to external data
DATA_FOLDER = "graphdsl.data_folder"  # metadata of a returned model whose data is in a file
_FRESH_LIKE = re.compile(r".*_[0-9]+")  # the names Builder.fresh makes: f"{hint}_{count}"


@functools.cache  # reading package metadata costs more than exporting a small graph
def _producer_version() -> str:
    try:
        return version("graphdsl")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


def _check_opset(graph: Graph, opset: int) -> None:
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= newest:
        raise ExportError(
            f"export of graph {graph.name!r}: opset {opset} is not supported; use an opset "
            f"from {MIN_OPSET} to {newest} (onnxruntime 1.31 runs up to 26; default 21)"
        )
    if opset < _FLOAT8_OPSET:
        for node in graph.nodes:
            if node.dtype in (DType.float8_e4m3fn, DType.float8_e5m2, DType.float8_e4m3fnuz,
                              DType.float8_e5m2fnuz):  # fmt: skip
                what = (f"input {node.attrs['name']!r}" if node.op == "input"
                        else f"{node.op} at {node.loc}")  # fmt: skip
                raise ExportError(
                    f"export of graph {graph.name!r}: {what} has dtype "
                    f"{node.dtype.name}, which needs opset >= {_FLOAT8_OPSET} (asked for "
                    f"{opset}); export with opset={_FLOAT8_OPSET} or later"
                )


def _value_info(name: str, s: Symbol) -> onnx.ValueInfoProto:
    dims = [d if isinstance(d, str) else int(d) for d in s.shape]
    return helper.make_tensor_value_info(name, onnx_type(s.dtype), dims)


def export(
    graph: Graph,
    path: str | os.PathLike[str] | None = None,
    *,
    opset: int = 21,
    target: str = "cpu",
    check: bool | Literal["full"] = True,
    exact: bool = True,
    weights: Weights | str | os.PathLike[str] | Mapping[str, Any] | None = None,
    functions: bool = True,
    accuracy_level: int = 0,
) -> ModelProto:
    """Lower ``graph`` to an ONNX model that runs on onnxruntime's ``target`` provider.

    Runs the pass pipeline (:func:`graphdsl.passes.canonicalize`: implicit_cast, constant
    folding, CSE, DCE; then :func:`graphdsl.passes.sink_transposes`), lowers each op through
    the lowering table with the target's kernel legalizations, checks the model, and saves it
    to ``path`` when given (constants over 1 GiB in all go to an external data file beside
    it). Saving is atomic: both files are
    written under temporary names beside ``path``, checked, then renamed into place, so a
    failed or interrupted export leaves the files at ``path`` as they were. The graph is
    frozen: changing it afterwards raises :class:`~graphdsl.GraphError`.

    ``check`` picks what ``onnx.checker`` verifies:

    - ``True`` (default): the model's structure: every node against its operator's schema
      (inputs, outputs, attributes) and every value defined once, before its uses.
    - ``"full"``: also ONNX's strict type and shape inference over the whole model. This
      costs about 2.5 µs and, at a million nodes, 1.2 KB per node (more than the rest of
      the export); onnxruntime repeats that inference when it loads a model. The test
      suite checks every lowering this way.
    - ``False``: nothing; the model is the same.

    ``weights`` binds the graph's weights (:meth:`~graphdsl.Graph.weight`): a ``.npz`` or
    ``.safetensors`` path, :func:`~graphdsl.load_weights`, or a dict of arrays; missing,
    extra and mistyped ones raise :class:`~graphdsl.WeightError`. Each becomes an
    initializer of its name; with a ``path`` they all go to the external data file, copied
    one at a time straight from their files (exporters/onnx/_weights.py).

    ``functions`` (default True): each subgraph called with ``gd.ops.call`` becomes one
    ONNX local function, called at each call; ``False`` inlines its nodes at each call.

    ``exact`` (default True): the results equal ``graphdsl.evaluate`` bit for bit where the
    math is exact. ``exact=False`` leaves out the legalizations that only fix the sign of a
    zero or the payload of a NaN (onnxruntime's Where turning a picked -0.0 into +0.0, the
    order of -0.0 and +0.0 in max and min, the zero signs of ``%`` and ``//``, Relu's
    -0.0): results then equal the reference up to signed zeros and NaN payloads, with fewer
    nodes (docs/support-matrix.md lists what each legalization costs). It also takes
    onnxruntime's MaxPool as it is (a pooling window holding a NaN gives NaN or the largest
    of some of its other values, where the reference gives NaN), and on CUDA float16 and
    bfloat16 MatMuls in the half type, accumulating in float32 (docs/semantics.md, section
    "exact=False", states each difference and its bound). And a ``qmatmul`` of a constant
    4-bit weight blocked along K becomes onnxruntime's ``MatMulNBits`` (com.microsoft), the
    weight kept at 4 bits at run time, with ``accuracy_level`` (0 or 1: float32 arithmetic;
    4: x quantized to int8 per block, faster); exporters/onnx/_lower/nbits.py states the
    bound of each.

    >>> import graphdsl as gd
    >>> from exporters.onnx import export
    >>> g = gd.Graph("e", input_types={"x": gd.TensorType(gd.int16, (3,))})
    >>> g.output(g.inputs[0] * 1.5)
    >>> [n.op_type for n in export(g, check="full").graph.node]
    ['Cast', 'Mul']
    """
    if check not in (True, False, "full"):
        raise ExportError(f"check={check!r}: use True (structure), 'full' or False")
    # The pipeline allocates millions of short- and long-lived objects and frees nothing
    # cyclic: the collector's full passes made cost per node grow with graph size
    # (28 -> 49 us/node from 10k to 1M nodes); paused, it stays flat.
    files = None if path is None else ModelFiles(os.fspath(path))
    enabled = gc.isenabled()
    gc.disable()
    try:
        # a graphdsl.max Graph: the graphdsl graph underneath (whose inputs are symbols)
        core: Graph = getattr(graph, "core_graph", graph)
        if accuracy_level not in NBITS_ACCURACY_LEVELS:
            raise ExportError(
                f"accuracy_level={accuracy_level!r}: MatMulNBits' level is 0 or 1 (float32 "
                "arithmetic) or 4 (x quantized to int8), the levels whose bounds "
                "exporters/onnx/_lower/nbits.py states"
            )
        return _export(core, files, opset=opset, target=target, check=check, exact=exact,
                       accuracy_level=accuracy_level,
                       weights=weights, functions=functions)  # fmt: skip
    except BaseException:  # an ExportError, a full disk, Ctrl-C: the old files stay
        if files is not None:
            files.discard()
        raise
    finally:
        if enabled:
            gc.enable()


def _export(
    graph: Graph,
    files: ModelFiles | None,
    *,
    opset: int,
    target: str,
    check: bool | str,
    exact: bool = True,
    weights: Weights | str | os.PathLike[str] | Mapping[str, Any] | None = None,
    functions: bool = True,
    accuracy_level: int = 0,
) -> ModelProto:
    if target not in TARGETS:
        raise ExportError(f"unknown target {target!r}; use one of {sorted(TARGETS)}")
    tgt = TARGETS[target]
    _check_opset(graph, opset)
    if not graph.outputs:
        verify(graph, check_types=False)  # raises: the graph has no outputs
    try:  # max-graph's bool arithmetic: typed, as max.graph types it, never computed
        check_computable(graph)
    except OpTypeError as e:
        raise ExportError(str(e)) from None
    graph.freeze("exported to ONNX")
    try:
        lowered = canonicalize(graph)
    except KeyError:
        # a value used before it is defined, or taken from another graph: only a graph
        # corrupted by hand gets here (every node's types were checked when it was built)
        verify(graph, check_types=False)  # names the broken invariant
        raise
    sunk = sink_transposes(lowered)  # layout transposes cancelled across elementwise ops
    if sunk is not lowered:
        if lowered is not graph:
            lowered.release()
        lowered = sunk
    b = Builder(tgt, exact=exact, accuracy_level=accuracy_level)
    local = b.memo[FUNCTIONS] = Functions(opset, inline=not functions)
    declared = declared_weights(graph)
    bound = bind_weights(graph, declared, weights)
    b.memo[WEIGHTS] = bound  # (peepholes read weights' data: exporters/onnx/_lower/gqa.py)
    # ONNX names the graph takes (inputs, weights) that fresh() could make ('name_12'): it
    # makes another name instead (an empty set spares every fresh name the lookup)
    taken = (*declared, *(s.attrs["name"] for s in lowered.inputs))
    b.reserved = {nm for nm in taken if _FRESH_LIKE.fullmatch(nm)}
    total = 0  # bytes of constants (of the subgraphs too) and weights
    for n in (n for g in walk(lowered) for n in g.nodes):
        op = n.op
        if op == "constant":
            total += n.attrs["value"].nbytes
        elif op == "weight":
            total += n.dtype.np.itemsize * _count(n.shape)
    large = total >= EXTERNAL_DATA_THRESHOLD or (files is not None and bool(declared))
    if large:
        if files is None:
            raise ExportError(
                f"graph {graph.name!r} has {total / 2**30:.2f} GiB of constants and weights: "
                "pass a path "
                "(export(graph, 'model.onnx')) so that they go to an external data file "
                "beside it; protobuf cannot hold more than 2 GiB"
            )
        try:
            b.external = ExternalData(files.tmp_data)
        except OSError as e:
            raise ExportError(f"cannot write {files.data_path!r}: {e.strerror or e}") from e
    # the ONNX value of each node, by its position: canonicalize made the graph, so node ids
    # are positions (a list indexed by them beats a dict keyed by id() at a million nodes)
    env: list[V] = [_NONE] * len(lowered.nodes)
    sources: dict[str, tuple[str, int]] = {}
    for s in lowered.inputs:
        nm = s.attrs["name"]
        if s.dtype in _COMPLEX:
            raise ExportError(_no_complex(f"input {nm!r} has dtype {s.dtype.name}"))
        env[s.id] = V(nm, s.dtype)
        for axis, d in enumerate(s.shape):
            if isinstance(d, str):
                sources.setdefault(d, (nm, axis))
    dims = SymbolicDims(b, sources)
    for s in lowered.inputs:
        dims.seen(s.shape, s.attrs["name"])
    for node in lowered.nodes:
        op = node.op
        if op == "input":
            continue
        out = node.type.dtype
        if out in _COMPLEX:  # (operands are made by inputs or nodes checked before this)
            raise ExportError(_no_complex(f"{op} at {node.loc} gives {out.name}"))
        if op == "constant":
            env[node.id] = b.const(node.attrs["value"], out, "const")
            continue
        if op == "weight" and bound is not None:
            env[node.id] = lower_weight(b, node, bound)
            continue
        # operands are in the op's operand dtypes: canonicalize made every cast explicit,
        # and each value below was checked to have its symbol's dtype when it was made
        b.context = node  # formatted only if an error needs it
        v = LOWER[op](b, node, [env[i.id] for i in node.inputs], dims)
        if v.dtype is not out:
            raise ExportError(
                f"internal: the lowering of {op} {value_names(lowered)[id(node)]} gave "
                f"{v.dtype.name}, but the op's result is {out.name}"
            )
        env[node.id] = v
        dims.seen(node.type.shape, v.name)
    b.context = ""  # drop the reference to the last node (and through it, its graph)
    if b.bypassed or not b.exact:  # (exact=False leaves constants of left-out repairs)
        _drop_unused(b, [env[o.id].name for o in lowered.outputs])
    outputs = _name_outputs(b, lowered, env)
    model = b.model  # built in place (make_graph and make_model would copy every node)
    g = model.graph
    g.name = graph.name or "graph"  # (onnx's checker wants a name; graphdsl allows '')
    g.doc_string = f"graphdsl graph {graph.name!r} (policy {graph.policy.name!r})"
    g.input.extend(_value_info(s.attrs["name"], s) for s in lowered.inputs)
    g.output.extend(_value_info(nm, o) for nm, o in zip(outputs, lowered.outputs, strict=True))
    typed = b.memo.get(TYPED)
    if typed:  # values of contrib ops, where they are not the graph's outputs
        made = {o for n in b.nodes for o in n.output} - set(outputs)
        g.value_info.extend(_value_info(name, s) for name, s in typed if name in made)
    if lowered is not graph:
        lowered.release()  # not needed for checking and saving; free it before they run
    del lowered, env
    model.ir_version = IR_VERSION
    model.opset_import.append(helper.make_opsetid("", opset))
    if local.protos:  # the subgraphs' local functions
        model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
        model.functions.extend(local.protos)
    model.producer_name = "graphdsl"
    model.producer_version = _producer_version()
    model.doc_string = f"Exported by graphdsl from graph {graph.name!r} for target {target!r}."
    props = {"graphdsl.policy": graph.policy.name, "graphdsl.target": target,
             "graphdsl.exact": str(exact)}  # fmt: skip
    carried = _carried_io(g, graph)
    if carried:
        props[CARRIED_KEY] = carried
    helper.set_model_props(model, props)
    if b.external is not None:
        b.external.close(model)  # (the bytes no tensor reads dropped)
    _check_and_save(model, files, external=large, check=check)
    if tgt.fallback is not None:
        _warn_cpu_nodes(graph, model, tgt)
    if files is not None and large:
        # where the data file is, for run(model) from any working directory (the saved file
        # has no such entry: onnxruntime finds its data beside it)
        entry = model.metadata_props.add()
        entry.key, entry.value = DATA_FOLDER, os.path.dirname(os.path.abspath(files.path))
    return model


def _carried_io(g: onnx.GraphProto, graph: Graph) -> str:
    """JSON naming the model's inputs and outputs of carried dtypes ('' if none)."""
    ins = {s.attrs["name"]: s.dtype.name for s in graph.inputs if s.dtype in CARRIER}
    outs = {o.name: s.dtype.name for o, s in zip(g.output, graph.outputs, strict=True)
            if s.dtype in CARRIER}  # fmt: skip
    if not ins and not outs:
        return ""
    return json.dumps({"inputs": ins, "outputs": outs}, sort_keys=True)


def _warn_cpu_nodes(graph: Graph, model: ModelProto, tgt: Target) -> None:
    """A CpuFallbackWarning naming the nodes onnxruntime will run on the CPU provider."""
    try:
        found = cpu_nodes(model, tgt)
    except Exception:  # onnx's shape inference refusing a model onnxruntime can still run
        return
    if found:
        copies = sum(n.copies for n in found)
        warnings.warn(
            f"graph {graph.name!r} exported for {tgt.name!r}: {len(found)} node(s) run on "
            f"{tgt.fallback.provider if tgt.fallback else 'the CPU'} (no {tgt.provider} "
            f"kernel), {copies} tensor copies between the devices per run: "
            + "; ".join(str(n) for n in found[:8]) + ("; ..." if len(found) > 8 else "")
            + " (exporters.onnx.cpu_nodes(model) lists them)",
            CpuFallbackWarning,
            stacklevel=4,
        )


def _count(shape: tuple[int | str, ...]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


_NONE = V("", DType.bool)  # a placeholder: every node's value is set before it is read


def _drop_unused(b: Builder, outputs: list[str]) -> None:
    """Remove ONNX nodes whose results nothing uses (a lowering that folded two nodes into
    one, such as a pair of transposes, leaves the first behind when nothing else reads it)."""
    needed = set(outputs)
    keep = []
    for n in reversed(b.nodes):
        if any(o in needed for o in n.output):
            keep.append(n)
            needed.update(n.input)
            if n.attribute and n.op_type in ("If", "Loop"):  # and what their subgraphs read
                needed.update(outer_names([n]))
    if len(keep) != len(b.nodes):
        kept = [type(n)() for n in reversed(keep)]
        for new, old in zip(kept, reversed(keep), strict=True):
            new.CopyFrom(old)
        del b.nodes[:]
        b.nodes.extend(kept)
    if any(t.name not in needed for t in b.initializers):  # constants nothing reads now
        inits = [t for t in b.initializers if t.name in needed]
        copies = [type(t)() for t in inits]
        for new_t, old_t in zip(copies, inits, strict=True):
            new_t.CopyFrom(old_t)
        del b.initializers[:]
        b.initializers.extend(copies)


def _no_complex(what: str) -> str:
    return (
        f"{what}: complex dtypes cannot be exported to ONNX for onnxruntime (it cannot load "
        "complex tensors); keep complex values out of exported graphs"
    )


def _name_outputs(b: Builder, g: Graph, env: list[V]) -> list[str]:
    """Give outputs their names (g.output_names, else output0, output1...); rename
    producers, or add Identity."""
    nodes = b.nodes
    not_produced = {s.attrs["name"] for s in g.inputs} | {t.name for t in b.initializers}
    if NESTED in b.memo:  # a value a subgraph reads by name keeps it: an Identity names it
        not_produced |= outer_names(nodes)
    renamed: dict[str, str] = {}
    identities: list[tuple[str, str, DType]] = []
    names = list(g.output_names) or [f"output{k}" for k in range(len(g.outputs))]
    for o, name in zip(g.outputs, names, strict=True):
        v = env[o.id]
        if v.name in not_produced or v.name in renamed:  # an input, a constant, a repeat
            identities.append((v.name, name, v.dtype))
        else:
            renamed[v.name] = name
    if renamed:  # rename each value where it is made and where it is used: all after the
        todo = set(renamed)  # earliest of the nodes that make them
        at = len(nodes)
        while todo:
            at -= 1
            todo.difference_update(nodes[at].output)
        for node in nodes[at:]:
            for field in (node.input, node.output):
                for i, x in enumerate(field):
                    new = renamed.get(x)
                    if new is not None:
                        field[i] = new
    for src, name, dt in identities:
        b.node("Identity", [renamed.get(src, src)], dt)
        nodes[len(nodes) - 1].output[0] = name
    return names


def _check_and_save(
    model: ModelProto, files: ModelFiles | None, *, external: bool, check: bool | str
) -> None:
    full = check == "full"
    if files is None:
        if check:
            onnx.checker.check_model(model, full_check=full)
        return
    try:
        if external:  # the constants are in the temporary data file already: the checker
            onnx.save_model(model, files.tmp_model)  # reads them from beside the model
            if check:
                onnx.checker.check_model(files.tmp_model, full_check=full)
            files.relocate(model)
        elif check:
            onnx.checker.check_model(model, full_check=full)
        onnx.save_model(model, files.tmp_model)
        files.commit(with_data=external)
    except OSError as e:
        raise ExportError(f"cannot write the model to {files.path!r}: {e.strerror or e}") from e
