"""How a module call builds graph nodes: frames, weights by name, blocks as subgraphs.

Calling a module with Symbols runs its ``forward`` in a *frame*: the graph being built and
the names of the modules of the tree it belongs to. The first module called (the *root*)
names every module of its tree by its attribute path (``h.0.attn``), and a parameter read in
``forward`` is ``g.weight(path + "." + name)``: the names of PyTorch's ``state_dict``.

A *block* (a module with submodules that is not a container, or one whose ``subgraph`` is
True) called from the root's graph is traced once into a subgraph (``g.subgraph``) whose
inputs are its arguments and the parameters it reads, and each call of it, or of any module
with the same structure (class, attributes, parameters, submodules) on arguments of the same
types, is one ``gd.ops.call`` of that subgraph with its own weights passed by name: the
export has one ONNX function per distinct block, called at each use. Inside a block being
traced, modules run inline (a block is one function, not a nest of them).
"""

from __future__ import annotations

import inspect
import re
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from graphdsl.dtypes import DType
from graphdsl.graph import Graph, GraphError, Symbol, building
from graphdsl.nn._parameter import Parameter
from graphdsl.ops import call
from graphdsl.types import TensorType

__all__ = ["Parameter", "Traceable", "call_module", "call_root", "current_value",
           "structure_key"]


class Traceable(Protocol):
    """What tracing asks of a module: its forward, its tree and its parameter declarations.
    :class:`graphdsl.nn.Module` has this shape; tracing needs nothing else of it, so this
    module imports nothing of the one that calls it."""

    def forward(self, *args: Any, **kwargs: Any) -> Any: ...

    def is_block(self) -> bool: ...

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Traceable]]: ...

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]: ...

    @property
    def _parameters(self) -> Mapping[str, Parameter]: ...

    @property
    def _modules(self) -> Mapping[str, Traceable]: ...


@dataclass
class _Frame:
    """One module tree being called in one graph."""

    graph: Graph
    names: dict[int, str]  # id(module) -> its path in the tree ('' for the frame's root)
    read: Callable[[Traceable, str, Parameter], Symbol]  # a parameter as a value of ``graph``
    top: bool  # the graph is the root's (blocks become subgraphs), not a block's


_FRAMES: list[_Frame] = []


class _Traced(NamedTuple):
    """A block traced into a subgraph: the subgraph, its parameter inputs (path in the
    block, input name, declaration) and where its outputs go in what forward returned."""

    graph: Graph
    params: list[tuple[str, str, Parameter]]
    arg_names: list[str]
    structure: tuple[int | None, ...] | None  # None: one Symbol; else a tuple's positions


# the blocks traced for each graph being built, by structure and argument types
_TRACED: weakref.WeakKeyDictionary[Graph, dict[Any, _Traced]] = weakref.WeakKeyDictionary()


def join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def current_value(module: Traceable, name: str, spec: Parameter) -> Any:
    """Parameter ``name`` of ``module`` as a value of the graph being built (inside a
    ``forward`` called with Symbols), else its declaration."""
    if not _FRAMES:
        return spec
    frame = _FRAMES[-1]
    if id(module) not in frame.names:
        return spec
    return frame.read(module, name, spec)


@contextmanager
def _frame(frame: _Frame) -> Iterator[_Frame]:
    _FRAMES.append(frame)
    try:
        yield frame
    finally:
        _FRAMES.pop()


def call_module(module: Traceable, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``module(*args, **kwargs)``: its forward in the current frame, as the root of a new
    one, or as a call of its block's subgraph."""
    if not _FRAMES:
        return _call_root(module, args, kwargs)
    frame = _FRAMES[-1]
    if id(module) not in frame.names:
        raise GraphError(
            f"{type(module).__name__} is called inside a forward but is not a submodule of "
            "the module tree being called; assign it as an attribute (self.name = module) in "
            "__init__, so that its weights have names"
        )
    if frame.top and module.is_block():
        return _call_block(frame, module, args, kwargs)
    return module.forward(*args, **kwargs)


def _call_root(module: Traceable, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return call_root(module, module.forward, args, kwargs)


def call_root(module: Traceable, fn: Callable[..., Any], args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:  # fmt: skip
    """``fn(*args, **kwargs)`` in a new root frame of ``module``'s tree (Module.call)."""
    g = building([*args, *kwargs.values()], type(module).__name__)
    tree = dict(module.named_modules())
    names = {id(m): path for path, m in tree.items()}

    def read(owner: Traceable, name: str, spec: Parameter) -> Symbol:
        return g.weight(join(names[id(owner)], name), spec.dtype, spec.shape)

    frame = _Frame(g, names, read, top=g.parent is None)
    with _frame(frame):
        return fn(*args, **kwargs)


# ---------------------------------------------------------------------------- blocks


def structure_key(module: Traceable) -> Any:
    """What decides a module's graph: its class, attributes, parameters and submodules
    (recursively). Modules with equal keys trace to the same subgraph."""
    own = tuple((k, _hashable(v)) for k, v in sorted(vars(module).items())
                if not k.startswith("_"))  # fmt: skip
    params = tuple(module._parameters.items())
    children = tuple((name, structure_key(m)) for name, m in module._modules.items())
    return (type(module).__module__, type(module).__qualname__, own, params, children)


def _hashable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str, complex, DType)):
        return v
    if isinstance(v, (tuple, list)):
        return (type(v).__name__, tuple(_hashable(x) for x in v))
    if isinstance(v, Mapping):
        return ("map", tuple((str(k), _hashable(x)) for k, x in v.items()))
    if isinstance(v, np.ndarray):
        return ("array", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, np.generic):
        return ("scalar", v.dtype.str, v.item())
    return ("object", id(v))  # (a function, a class: the same object gives the same graph)


def _input_type(v: Symbol) -> TensorType:
    return TensorType(v.dtype, v.shape)  # (an ambiguous literal takes its default dtype)


_NOT_IDENT = re.compile(r"[^0-9A-Za-z_]")


def _ident(name: str, taken: set[str]) -> str:
    """``name`` as a graph input name: dots made underscores, unique among ``taken``."""
    base = _NOT_IDENT.sub("_", name)
    if not base or base[0].isdigit():
        base = "w_" + base
    out, k = base, 1
    while out in taken:
        k += 1
        out = f"{base}_{k}"
    taken.add(out)
    return out


def _arg_names(module: Traceable, n: int) -> list[str]:
    """Names for ``n`` positional Symbol arguments: forward's parameter names where they are
    plain positional ones, else x0, x1..."""
    try:
        params = [p.name for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]  # fmt: skip
    except (TypeError, ValueError):
        params = []
    return [params[k] if k < len(params) else f"x{k}" for k in range(n)]


def _call_block(frame: _Frame, module: Traceable, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:  # fmt: skip
    g = frame.graph
    symbols = [(f"arg{k}", a) for k, a in enumerate(args) if isinstance(a, Symbol)]
    symbols += [(k, v) for k, v in kwargs.items() if isinstance(v, Symbol)]
    fixed: tuple[tuple[str, object, Any], ...] = tuple(
        ("arg", k, _hashable(a)) for k, a in enumerate(args) if not isinstance(a, Symbol))
    fixed += tuple(("kw", k, _hashable(v)) for k, v in sorted(kwargs.items())
                   if not isinstance(v, Symbol))  # fmt: skip
    types = tuple((k, _input_type(s)) for k, s in symbols)
    key = (structure_key(module), types, fixed)
    cache = _TRACED.setdefault(g, {})
    traced = cache.get(key)
    if traced is None:
        traced = cache[key] = _trace_block(g, module, args, kwargs)
    path = frame.names[id(module)]
    weights = {name: g.weight(join(path, rel), spec.dtype, spec.shape)
               for rel, name, spec in traced.params}  # fmt: skip
    values = {**dict(zip(traced.arg_names, (s for _, s in symbols), strict=True)), **weights}
    outs = call(traced.graph, **values)
    results = outs if isinstance(outs, list) else [outs]
    if traced.structure is None:
        return results[0]
    return tuple(None if k is None else results[k] for k in traced.structure)


def _trace_block(g: Graph, module: Traceable, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> _Traced:  # fmt: skip
    """``module``'s forward traced into a subgraph of ``g``, with an input for each Symbol
    argument and each parameter it reads (traced twice where it leaves some unread)."""
    tree = dict(module.named_modules())
    specs = [(rel, spec) for rel, spec in module.named_parameters() if spec.in_graph]
    positional = [k for k, a in enumerate(args) if isinstance(a, Symbol)]
    taken: set[str] = set()
    arg_names = [_ident(n, taken) for n in _arg_names(module, len(args))]
    names = [arg_names[k] for k in positional]
    names += [_ident(k, taken) for k, v in kwargs.items() if isinstance(v, Symbol)]
    param_names = {rel: _ident(rel, taken) for rel, _ in specs}
    wanted = [rel for rel, _ in specs]
    for _ in range(2):
        kept = [(rel, spec) for rel, spec in specs if rel in wanted]
        types = {n: _input_type(a) for n, a in zip(names, _symbol_args(args, kwargs), strict=True)}
        types.update({param_names[rel]: TensorType(spec.dtype, spec.shape) for rel, spec in kept})
        sub = g.subgraph(type(module).__name__, types)
        inputs = dict(zip(types, sub.inputs, strict=True))
        paths = {id(m): path for path, m in tree.items()}
        read_names: set[str] = set()

        def read(owner: Traceable, name: str, spec: Parameter, sub: Graph = sub,
                 inputs: dict[str, Symbol] = inputs, paths: dict[int, str] = paths,
                 read_names: set[str] = read_names) -> Symbol:  # fmt: skip
            rel = join(paths[id(owner)], name)
            hit = inputs.get(param_names.get(rel, ""))
            if hit is None:
                raise GraphError(f"internal: parameter {rel!r} of block "
                                 f"{type(module).__name__} has no input")  # fmt: skip
            read_names.add(rel)
            return hit

        it = iter(sub.inputs)
        new_args = tuple(next(it) if isinstance(a, Symbol) else a for a in args)
        new_kwargs = {k: next(it) if isinstance(v, Symbol) else v for k, v in kwargs.items()}
        frame = _Frame(sub, paths, read, top=False)
        with _frame(frame), sub:
            out = module.forward(*new_args, **new_kwargs)
        structure, results = _flatten(out, type(module).__name__)
        sub.output(*results)
        if set(wanted) == read_names:
            params = [(rel, param_names[rel], spec) for rel, spec in kept]
            return _Traced(sub, params, names, structure)
        wanted = [rel for rel in wanted if rel in read_names]
    raise GraphError(f"internal: block {type(module).__name__} reads other parameters when "
                     "traced again")  # fmt: skip


def _symbol_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Symbol]:
    return [a for a in (*args, *kwargs.values()) if isinstance(a, Symbol)]


def _flatten(out: Any, what: str) -> tuple[tuple[int | None, ...] | None, list[Symbol]]:
    """A forward's result as the subgraph's outputs: a Symbol, or a tuple or list of Symbols
    and Nones (a None stays a None at each call)."""
    if isinstance(out, Symbol):
        return None, [out]
    if isinstance(out, (tuple, list)) and all(o is None or isinstance(o, Symbol) for o in out):
        results = [o for o in out if o is not None]
        if results:
            positions: list[int | None] = []
            k = 0
            for o in out:
                positions.append(None if o is None else k)
                k += o is not None
            return tuple(positions), results
    raise GraphError(
        f"{what}.forward returned {type(out).__name__}: a block (traced into a subgraph) "
        "returns a Symbol, or a tuple of Symbols (and Nones); set subgraph = False on the "
        "module to run it inline instead"
    )
