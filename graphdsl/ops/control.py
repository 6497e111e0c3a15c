"""Control flow: ``cond`` and ``while_loop`` (MAX's names), whose result types are lattice
joins and least fixed points; and ``call``, of a subgraph (``g.subgraph``) called many times.

A branch or loop body is a Python function of Symbols, traced into a graph nested in the
node (:class:`~graphdsl.regions.Region`); the values of the graphs around it that it uses
become its inputs (MAX's branches read them the same way).

- ``cond(pred, then_fn, else_fn)``: each result's type is the join of the branches' types
  under the graph's policy, ambiguity included (an ``int16`` branch and a ``float32`` one
  give ``float32``; a literal branch yields to a known one). The ``implicit_cast`` pass
  casts inside the branch that needs it.
- ``while_loop(initial_values, predicate, body)``: the carried types are the least fixed
  point of the body over the lattice: start from the initial types, join each with what
  the body returns for them, trace again, until nothing changes (``int32`` that the body
  adds ``0.5`` to becomes the policy's float). The loop is typed (and exported) with those
  types from the first iteration: the initial values convert on entry.

Where no join exists the error names the branch or loop variable, both types and the
policy. Predicates are bool scalars. Several results are several nodes of one op, sharing
their ``regions`` (``index`` tells them apart).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphdsl._source import user_location
from graphdsl.dtypes import DType
from graphdsl.graph import Graph, GraphError, building
from graphdsl.literals import LiteralError, literal_fix
from graphdsl.ops._define import Operand, Symbol, define
from graphdsl.ops._nested import (
    RESULTS,
    Results,
    broadcast,
    in_dtypes,
    position,
    run_graph,
    run_region,
    trace,
    union,
)
from graphdsl.policies import Policy, PromotionError
from graphdsl.regions import Region, regions_of
from graphdsl.shapes import (
    Dim,
    ShapeError,
    broadcast_shapes,
    derived_dim,
    dim_repr,
    dim_terms,
    format_shape,
    sum_dims,
)
from graphdsl.types import OpTypeError, TensorType

__all__ = ["call", "cond", "while_loop"]

# more carried-type refinements than a lattice of finite height allows: a policy bug
MAX_STEPS = 64


# ---------------------------------------------------------------------------- cond


def cond(
    pred: Symbol, then_fn: Callable[[], Results], else_fn: Callable[[], Results]
) -> Symbol | list[Symbol]:
    """``then_fn()`` where the bool scalar ``pred`` holds, else ``else_fn()`` (MAX's
    ``cond``; ONNX's ``If``). Each branch is traced once; the values around it that it uses
    are read from there. A branch returns a value or a sequence of them (as many as the
    other; shapes broadcast): one value gives a Symbol, a sequence a list.

    Each result's type is the join of the branches' types under the graph's policy: an
    ``int16`` branch and a ``float32`` branch give ``float32`` (the ``implicit_cast`` pass
    casts inside the ``int16`` branch); a literal yields to a known type.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("cond", input_types={"p": gd.bool, "n": gd.int16, "x": gd.float32})
    >>> p, n, x = g.inputs
    >>> z = gd.ops.cond(p, lambda: n * 2, lambda: x + 0.5)
    >>> z.type
    TensorType(float32[])
    >>> g.output(z)
    >>> gd.evaluate(g, [np.array(True), np.array(3, np.int16), np.array(1.0, np.float32)])
    [array(6., dtype=float32)]
    """
    loc = user_location()
    if not isinstance(pred, Symbol):
        raise OpTypeError(
            f"cond (at {loc}): the predicate {pred!r} is known now; call the branch you want "
            "(then_fn() if pred else else_fn()): cond chooses at run time"
        )
    _check_predicate(pred.type, "cond: the predicate")
    g = pred.graph.innermost()
    (t, touts), (e, eouts) = trace(g, "then", then_fn, ()), trace(g, "else", else_fn, ())
    if len(touts) != len(eouts):
        raise OpTypeError(
            f"cond (at {loc}): the then branch returns {len(touts)} values and the else "
            f"branch {len(eouts)}; return as many from each"
        )
    p = g.policy
    joined = []
    for k, (a, b) in enumerate(zip(touts, eouts, strict=True)):
        try:
            shape = broadcast_shapes(a.shape, b.shape)
        except ShapeError:
            raise ShapeError(
                f"cond (at {loc}): result {k} is {a.type} in the then branch and {b.type} in "
                "the else branch; their shapes do not broadcast (reshape or broadcast_to in "
                "a branch)"
            ) from None
        j = _join(p, a.type, b.type, f"cond (at {loc}): result {k}", "the then branch",
                  "the else branch")  # fmt: skip
        for role, v in (("then", a), ("else", b)):
            _check_fit(v, j.dtype, f"cond (at {loc}): the {role} branch's result {k}", p)
        joined.append(j.dtype)
        touts[k], eouts[k] = broadcast(touts[k], shape), broadcast(eouts[k], shape)
    t.output(*touts)
    e.output(*eouts)
    captured = union([t.captures, e.captures])
    regions = (
        Region("then", t, tuple(1 + position(captured, c) for c in t.captures), tuple(joined)),
        Region("else", e, tuple(1 + position(captured, c) for c in e.captures), tuple(joined)),
    )
    outs = [g._apply("cond", (pred, *captured), {"regions": regions, "index": k})
            for k in range(len(touts))]  # fmt: skip
    return outs[0] if len(outs) == 1 else outs


def _cond_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    _check_predicate(types[0], "the predicate")
    then, other = regions_of(attrs)
    for r in (then, other):
        _check_args(r, types)
    k = attrs["index"]
    a, b = then.graph.outputs[k].type, other.graph.outputs[k].type
    j = _join(p, a, b, f"result {k}", "the then branch", "the else branch")
    if a.shape != b.shape:
        raise ShapeError(f"result {k} is {a} in the then branch and {b} in the else branch")
    return tuple(t.dtype for t in types), TensorType(j.dtype, a.shape, j.ambiguous)


def _cond_all(attrs: dict[str, Any], args: list[np.ndarray], dims: dict[str, int]) -> list[Any]:
    then, other = regions_of(attrs)
    r = then if bool(np.asarray(args[0])) else other
    return in_dtypes(run_region(r, args, dims), r.results)


def _cond_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    return np.asarray(_cond_all(attrs, args, attrs.get("_bound", {}))[attrs["index"]])


define(cond, _cond_rule, _cond_impl, "bool scalar predicate; branches of any dtypes")
RESULTS["cond"] = _cond_all


# ---------------------------------------------------------------------------- while_loop


def while_loop(
    initial_values: Results,
    predicate: Callable[..., Operand],
    body: Callable[..., Results],
) -> Symbol | list[Symbol]:
    """``while predicate(*v): v = body(*v)`` from ``v = initial_values`` (MAX's
    ``while_loop``; ONNX's ``Loop``). ``predicate`` returns a bool scalar; ``body`` returns
    as many values as there are loop variables (a loop variable keeps its shape). One
    initial value gives a Symbol, a sequence a list. The functions read the values around
    them as they like.

    The carried types are the least fixed point of the body over the policy's lattice:
    from the initial types, each loop variable's type becomes the join of it and the type
    the body returns for it, and the body is traced again until no type changes. An
    ``int32`` counter that the body adds ``0.5`` to is carried as the policy's float from
    the first iteration.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("loop", input_types={"n": gd.int32})
    >>> n, = g.inputs
    >>> i, x = gd.ops.while_loop([0, n], lambda i, x: i < 3, lambda i, x: (i + 1, x + 0.5))
    >>> i.type, x.type
    (TensorType(int32?[]), TensorType(float32?[]))
    >>> g.output(i, x)
    >>> gd.evaluate(g, [np.array(1, np.int32)])
    [array(3, dtype=int32), array(2.5, dtype=float32)]
    """
    loc = user_location()
    single = not isinstance(initial_values, (list, tuple))
    values: list[object] = [initial_values] if single else list(initial_values)  # type: ignore[arg-type]
    if not values:
        raise OpTypeError(f"while_loop (at {loc}): give at least one initial value")
    g = building(values, "while_loop")
    inits = [v if isinstance(v, Symbol) and v.graph is g else g._operand(v, "while_loop", loc)
             for v in values]  # fmt: skip
    p = g.policy
    types = [s.type for s in inits]
    seen = [list(types)]
    for _ in range(MAX_STEPS):
        body_graph, outs = trace(g, "body", body, types)
        if len(outs) != len(types):
            raise OpTypeError(
                f"while_loop (at {loc}): the body returns {len(outs)} values for "
                f"{len(types)} loop variables; return one value per loop variable"
            )
        new = []
        for k, (t, o) in enumerate(zip(types, outs, strict=True)):
            if o.shape != t.shape and _broadcast_or_none(t.shape, o.shape) != t.shape:
                raise ShapeError(
                    f"while_loop (at {loc}): loop variable {k} is {t} but the body returns "
                    f"{o.type}; a loop variable keeps its shape {format_shape(t.shape)}"
                )
            j = _join(p, t, o.type, f"while_loop (at {loc}): loop variable {k}",
                      "its type so far", "the body's result")  # fmt: skip
            new.append(TensorType(j.dtype, t.shape, j.ambiguous))
        if new == types:
            break
        types = new
        seen.append(list(types))
    else:
        steps = " -> ".join("(" + ", ".join(str(t) for t in ts) + ")" for ts in seen)
        raise OpTypeError(
            f"while_loop (at {loc}): the carried types did not settle in {MAX_STEPS} steps "
            f"under policy {p.name!r}: {steps}; cast the loop variables in the body"
        )
    for k, (t, o) in enumerate(zip(types, outs, strict=True)):
        _check_fit(o, t.dtype, f"while_loop (at {loc}): the body's result {k}", p)
        outs[k] = broadcast(o, t.shape)
    body_graph.output(*outs)
    pred_graph, pred_out = trace(g, "predicate", predicate, types)
    if len(pred_out) != 1:
        raise OpTypeError(
            f"while_loop (at {loc}): the predicate returns {len(pred_out)} values; it must "
            "return one bool scalar"
        )
    _check_predicate(pred_out[0].type, f"while_loop (at {loc}): the predicate returns a value")
    pred_graph.output(pred_out[0])
    n = len(types)
    captured = union([pred_graph.captures, body_graph.captures])
    carried = tuple(t.dtype for t in types)
    pred_args = (*range(n), *(n + position(captured, c) for c in pred_graph.captures))
    body_args = (*range(n), *(n + position(captured, c) for c in body_graph.captures))
    regions = (
        Region("predicate", pred_graph, pred_args, (DType.bool,)),
        Region("body", body_graph, body_args, carried),
    )
    outs = [g._apply("while_loop", (*inits, *captured), {"regions": regions, "index": k})
            for k in range(n)]  # fmt: skip
    return outs[0] if single else outs


def _broadcast_or_none(a: tuple[int | str, ...], b: tuple[int | str, ...]) -> Any:
    try:
        return broadcast_shapes(a, b)
    except ShapeError:
        return None


def _while_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    pred, body = regions_of(attrs)
    n = len(body.results)
    carried = [s.type for s in body.graph.inputs[:n]]
    for k, (t, c) in enumerate(zip(types, carried, strict=False)):
        j = _join(p, t, c, f"loop variable {k}", "its initial value", "its carried type")
        if j.dtype is not c.dtype or t.shape != c.shape:
            raise OpTypeError(
                f"loop variable {k}: the initial value {t} does not convert to the carried "
                f"type {c} (their join is {j})"
            )
    seen = [*carried, *types[n:]]
    for r in (pred, body):
        _check_args(r, seen)
    for k, (c, o) in enumerate(zip(carried, body.graph.outputs, strict=True)):
        j = _join(p, c, o.type, f"loop variable {k}", "its carried type", "the body's result")
        if j.dtype is not c.dtype or (j.ambiguous and not c.ambiguous) or o.shape != c.shape:
            raise OpTypeError(
                f"loop variable {k}: the carried type {c} is not a fixed point: the body "
                f"returns {o.type} for it (their join is {j})"
            )
    _check_predicate(pred.graph.outputs[0].type, "the predicate returns a value")
    in_dtypes = (*(c.dtype for c in carried), *(t.dtype for t in types[n:]))
    return in_dtypes, carried[attrs["index"]]


def _while_all(attrs: dict[str, Any], args: list[np.ndarray], dims: dict[str, int]) -> list[Any]:
    pred, body = regions_of(attrs)
    n = len(body.results)
    values = in_dtypes(args[:n], body.results)
    rest = list(args[n:])
    while bool(np.asarray(run_region(pred, [*values, *rest], dims)[0])):
        values = in_dtypes(run_region(body, [*values, *rest], dims), body.results)
    return values


def _while_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    return np.asarray(_while_all(attrs, args, attrs.get("_bound", {}))[attrs["index"]])


define(while_loop, _while_rule, _while_impl, "any loop variables; bool scalar predicate")
RESULTS["while_loop"] = _while_all


# ---------------------------------------------------------------------------- call


def call(graph: Graph, *args: Operand, **kwargs: Operand) -> Symbol | list[Symbol]:
    """Call subgraph ``graph`` (:meth:`Graph.subgraph <graphdsl.Graph.subgraph>`) on ``args``
    (MAX's ``ops.call``); one output gives a Symbol, several a list. Arguments may also be
    given by the names of the subgraph's inputs (``call(block, x, w_q=wq, w_k=wk)``), after
    the positional ones; each input takes exactly one. Each argument converts
    to its parameter's type as an op's operand does (explicit casts at the call site, in
    the ``implicit_cast`` pass): its dtype must promote to the parameter's under the
    graph's policy, its shape equal the parameter's, whose symbolic dimensions bind to the
    argument's (the results' shapes follow). The subgraph is typed once, frozen at its
    first call; the exporter makes it one ONNX local function.

    >>> import numpy as np, graphdsl as gd
    >>> g = gd.Graph("g", input_types={"x": gd.TensorType(gd.int8, ("b", 2))})
    >>> sub = g.subgraph("double", {"v": gd.TensorType(gd.int32, ("n", 2))})
    >>> sub.output(sub.inputs[0] * 2)
    >>> y = gd.ops.call(sub, g.inputs[0])
    >>> y.type
    TensorType(int32[b, 2])
    >>> g.output(y)
    >>> gd.evaluate(g, [np.array([[100, -7]], np.int8)])
    [array([[200, -14]], dtype=int32)]
    >>> gd.ops.call(sub, v=g.inputs[0]).type  # by the input's name
    TensorType(int32[b, 2])
    """
    loc = user_location()
    if not isinstance(graph, Graph):
        raise OpTypeError(f"call (at {loc}): {graph!r} is not a Graph; call g.subgraph(...)")
    if kwargs:
        args = _by_name(graph, args, kwargs, loc)
    if not graph.outputs and not graph._output_called:
        raise GraphError(
            f"call (at {loc}): subgraph {graph.name!r} has no outputs; call "
            f"{graph.name}.output(...) before calling it"
        )
    if graph.parent is not None:
        raise GraphError(f"call (at {loc}): {graph.name!r} is a branch or loop body, not a "
                         "subgraph; make one with g.subgraph(name, input_types)")  # fmt: skip
    weights = [n.attrs["name"] for n in graph.nodes if n.op == "weight"]
    if weights:
        raise GraphError(
            f"call (at {loc}): subgraph {graph.name!r} declares weights "
            f"{', '.join(map(repr, weights))}; declare them on the calling graph and pass them "
            "as arguments (each call its own)"
        )
    if len(args) != len(graph.inputs):
        raise OpTypeError(
            f"call (at {loc}): subgraph {graph.name!r} takes {len(graph.inputs)} arguments "
            f"({', '.join(graph.input_names)}), given {len(args)}"
        )
    g = building(args, "call")
    if g is graph:
        raise GraphError(f"call (at {loc}): subgraph {graph.name!r} cannot call itself")
    if not graph.outputs:  # output() of nothing: a pure graph's call computes nothing
        graph.freeze("called by gd.ops.call")
        return []
    results = tuple(o.dtype for o in graph.outputs)  # (a literal output: its default dtype)
    regions = (Region("call", graph, tuple(range(len(args))), results),)
    outs = [g._apply("call", args, {"regions": regions, "index": k})
            for k in range(len(results))]  # fmt: skip
    graph.freeze("called by gd.ops.call")  # its type is decided: a change would make calls stale
    return outs[0] if len(outs) == 1 else outs


def _by_name(
    graph: Graph, args: tuple[Operand, ...], kwargs: dict[str, Operand], loc: object
) -> tuple[Operand, ...]:
    """``args`` then ``kwargs`` as the subgraph's arguments in its inputs' order; an error
    naming the unknown, repeated and missing names."""
    names = graph.input_names
    unknown = [k for k in kwargs if k not in names]
    twice = [k for k in kwargs if k in names[: len(args)]]
    given = {*names[: len(args)], *kwargs}
    missing = [n for n in names if n not in given]
    problems = []
    if unknown:
        problems.append(f"no input named {', '.join(map(repr, unknown))}")
    if twice:
        problems.append(f"{', '.join(map(repr, twice))} given by position and by name")
    if missing:
        problems.append(f"no argument for {', '.join(map(repr, missing))}")
    if problems:
        raise OpTypeError(
            f"call (at {loc}): subgraph {graph.name!r} takes {len(names)} arguments "
            f"({', '.join(names)}): {'; '.join(problems)}"
        )
    return (*args, *(kwargs[n] for n in names[len(args) :]))


def _call_rule(p: Policy, types: list[TensorType], attrs: dict[str, Any]) -> Any:
    (r,) = regions_of(attrs)
    sub = r.graph
    if len(types) != len(sub.inputs):
        raise OpTypeError(f"subgraph {sub.name!r} takes {len(sub.inputs)} arguments, given "
                          f"{len(types)}")  # fmt: skip
    bound: dict[str, Dim] = {}
    derived: list[tuple[int, Dim, Dim]] = []
    for k, (t, s) in enumerate(zip(types, sub.inputs, strict=True)):
        q = s.type
        what = f"argument {k} of subgraph {sub.name!r} (parameter {s.attrs['name']!r}: {q})"
        try:
            j = p.decide(t.dtype, t.ambiguous, q.dtype, False).result
        except PromotionError as e:
            raise PromotionError(
                f"{what} is {t}; no join under policy {p.name!r} ({e}); cast it first "
                f"(gd.ops.cast(value, gd.{q.dtype.name}))",
                lhs=str(t), rhs=str(q), policy=p.name, fix="cast the argument",
            ) from None  # fmt: skip
        if j.dtype is not q.dtype:
            raise OpTypeError(
                f"{what} is {t}: {t.dtype.name} does not convert implicitly to "
                f"{q.dtype.name} under policy {p.name!r} (their join is {j}); cast it "
                f"explicitly (gd.ops.cast(value, gd.{q.dtype.name}))"
            )
        if len(t.shape) != len(q.shape):
            raise ShapeError(f"{what} has shape {format_shape(t.shape)}; give it rank {q.rank}")
        for a, d in zip(t.shape, q.shape, strict=True):
            if isinstance(d, str) and _TOKEN.fullmatch(d):
                if bound.setdefault(d, a) != a:
                    raise ShapeError(
                        f"{what} has shape {format_shape(t.shape)}, but {dim_repr(d)} is "
                        f"{bound[d]} by an earlier argument"
                    )
            else:
                derived.append((k, a, d))
    for k, a, d in derived:  # static and derived dimensions, once the names are bound
        if _substituted(d, bound) != a:
            raise ShapeError(
                f"argument {k} of subgraph {sub.name!r} has shape "
                f"{format_shape(types[k].shape)}, but its parameter "
                f"{format_shape(sub.inputs[k].shape)} needs {_substituted(d, bound)} there"
            )
    o = sub.outputs[attrs["index"]]
    shape = tuple(_substituted(d, bound) for d in o.shape)
    return tuple(s.dtype for s in sub.inputs), TensorType(o.dtype, shape)


_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _substituted(d: Dim, bound: dict[str, Dim]) -> Dim:
    """Dimension ``d`` of the subgraph with its names bound to the caller's dimensions."""
    if isinstance(d, int):
        return d
    if d in bound:
        return bound[d]
    parts = []
    for coef, names in dim_terms(d):
        up = [bound.get(n, n) for n, c in names.items() for _ in range(c)]
        down = [bound.get(n, n) for n, c in names.items() for _ in range(-c)]
        parts.append(derived_dim([coef.numerator, *up], [coef.denominator, *down]))
    return parts[0] if len(parts) == 1 else sum_dims(parts)


def _call_all(attrs: dict[str, Any], args: list[np.ndarray], dims: dict[str, int]) -> list[Any]:
    (r,) = regions_of(attrs)
    own: dict[str, int] = {}  # the subgraph's dimension names, bound from the arguments
    for s, a in zip(r.graph.inputs, args, strict=True):
        for d, n in zip(s.shape, np.shape(a), strict=True):
            if isinstance(d, str):
                own.setdefault(d, int(n))
    return in_dtypes(run_graph(r.graph, args, own), r.results)


def _call_impl(args: list[np.ndarray], attrs: dict[str, Any], out: TensorType) -> np.ndarray:
    return np.asarray(_call_all(attrs, args, {})[attrs["index"]])


define(call, _call_rule, _call_impl, "the subgraph's parameter types (arguments promote)")
RESULTS["call"] = _call_all


# ---------------------------------------------------------------------------- checks


def _join(p: Policy, a: TensorType, b: TensorType, what: str, a_is: str, b_is: str) -> Any:
    """The join of ``a`` and ``b`` under ``p``; a PromotionError naming ``what`` (a branch's
    result, a loop variable), both types, the policy and the fix."""
    try:
        return p.decide(a.dtype, a.ambiguous, b.dtype, b.ambiguous).result
    except PromotionError as e:
        fix = (
            "cast a branch's result to the type both should have (gd.ops.cast(value, dtype))"
            if "branch" in a_is
            else "cast the body's result to the loop variable's type (gd.ops.cast(value, dtype))"
        )
        raise PromotionError(
            f"{what}: no join under policy {p.name!r}: {a_is} gives {a}, {b_is} gives {b} "
            f"({e}); {fix}",
            lhs=str(a), rhs=str(b), policy=p.name, fix=fix,
        ) from None  # fmt: skip


def _check_fit(v: Symbol, want: DType, what: str, p: Policy) -> None:
    """A literal result takes the joined dtype: it must fit it."""
    if v.op != "literal":
        return
    value = v.attrs["value"]
    problem = p.literal_problem(value, want)
    if problem:
        raise LiteralError(
            f"{what}, the literal {value!r}, takes the joined type {want.name} (policy "
            f"{p.name!r}) and {problem}; {literal_fix(value, want)}"
        )


def _check_predicate(t: TensorType, what: str) -> None:
    if t.dtype is not DType.bool or t.shape != ():
        raise OpTypeError(
            f"{what} is {t}, but a predicate is a bool scalar (bool[]); compare it "
            "(x != 0, x < n), reduce it (gd.ops.any, gd.ops.all) or index one element"
        )


def _check_args(r: Region, types: Sequence[TensorType]) -> None:
    """The graph of ``r`` takes the node's operands at ``r.args``, with their types."""
    ins = r.graph.inputs
    if len(ins) != len(r.args):
        raise OpTypeError(f"the {r.role} graph has {len(ins)} inputs for {len(r.args)} operands")
    for s, i in zip(ins, r.args, strict=True):
        t = types[i]
        if s.dtype is not t.dtype or s.shape != t.shape:
            raise OpTypeError(
                f"the {r.role} graph's input {s.attrs['name']!r} is {s.type}, but it takes "
                f"operand {i} of type {t}"
            )
