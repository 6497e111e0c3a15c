"""``Module``, the base of every layer, and the containers ``Sequential`` and ``ModuleList``,
in the style of ``torch.nn``.

A module declares its parameters (``self.weight = Parameter((out, in))``: shape and dtype,
no data) and its submodules (``self.attn = Attention(...)``), and computes in ``forward``.
Called with Symbols, it builds graph nodes: each parameter it reads is a weight
(``g.weight``) named by its place in the module tree, as PyTorch's ``state_dict`` names it
(``h.0.attn.c_attn.weight``), and each block (a module with submodules) is one subgraph,
called with its weights by name (see :mod:`graphdsl.nn._trace`). ``load_state_dict`` checks
data against the declarations; ``weights()`` gives it to ``export`` and ``gd.evaluate``.

>>> import numpy as np, graphdsl as gd
>>> from graphdsl import nn
>>> class Scale(nn.Module):
...     def __init__(self, n: int) -> None:
...         super().__init__()
...         self.weight = nn.Parameter((n,))
...     def forward(self, x: gd.Symbol) -> gd.Symbol:
...         return x * self.weight
>>> model = nn.Sequential(Scale(2), nn.ReLU())
>>> [(name, p.shape) for name, p in model.named_parameters()]
[('0.weight', (2,))]
>>> with gd.Graph("scale", input_types={"x": gd.TensorType(gd.float32, ("n", 2))}) as g:
...     g.output(model(g.inputs[0]))
>>> g.weights
{'0.weight': TensorType(float32[2])}
>>> _ = model.load_state_dict({"0.weight": np.array([2, -1], np.float32)})
>>> gd.evaluate(g, [np.ones((1, 2), np.float32)], weights=model.weights())
[array([[2., 0.]], dtype=float32)]
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from graphdsl.graph import GraphError
from graphdsl.nn._parameter import Parameter
from graphdsl.nn._trace import call_module, call_root, current_value, join
from graphdsl.nn.state import IncompatibleKeys, check_state, to_weights
from graphdsl.weights import WeightError, Weights

__all__ = ["Module", "ModuleList", "Parameter", "Sequential"]


class Module:
    """The base class of layers and models (``torch.nn.Module``'s shape, for graphs).

    Subclasses call ``super().__init__()`` first, assign :class:`Parameter` declarations and
    submodules as attributes, and define ``forward``. ``subgraph``: whether a call from the
    root's graph is traced into one subgraph called with its weights (None, the default:
    when the module has submodules and is not a container).

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> class Scale(nn.Module):
    ...     def __init__(self, n: int) -> None:
    ...         super().__init__()
    ...         self.weight = nn.Parameter((n,))
    ...     def forward(self, x: gd.Symbol) -> gd.Symbol:
    ...         return x * self.weight
    >>> m = Scale(2)
    >>> m.load_state_dict({"weight": np.array([2, 3], np.float32)})
    IncompatibleKeys(missing_keys=[], unexpected_keys=[])
    >>> g = gd.Graph("m", input_types={"x": gd.TensorType(gd.float32, (2,))})
    >>> g.output(m(g.inputs[0]))
    >>> g.weights
    {'weight': TensorType(float32[2])}
    >>> gd.evaluate(g, {"x": np.ones(2, np.float32)}, weights=m.weights())
    [array([2., 3.], dtype=float32)]
    """

    subgraph: bool | None = None
    _parameters: dict[str, Parameter]
    _modules: dict[str, Module]
    _loaded: Weights | None

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_loaded", None)

    # -- attributes: parameters and submodules are kept apart, as torch keeps them
    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise GraphError(
                f"cannot assign {name!r} before Module.__init__(): call super().__init__() "
                f"first in {type(self).__name__}.__init__"
            )
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self.__dict__.pop(name, None)
            self._parameters[name] = value
        elif isinstance(value, Module):
            self.__dict__.pop(name, None)
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        # (only for names not found the usual way: parameters and submodules)
        params = self.__dict__.get("_parameters", {})
        if name in params:
            return current_value(self, name, params[name])
        modules = self.__dict__.get("_modules", {})
        if name in modules:
            return modules[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        if self._parameters.pop(name, None) is None and self._modules.pop(name, None) is None:
            object.__delattr__(self, name)

    # -- calling
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """What the module computes, from Symbols (parameters read as ``self.name``)."""
        raise NotImplementedError(f"{type(self).__name__} defines no forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return call_module(self, args, kwargs)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` as a forward of this module, called as the root: its
        submodules and weights are named as ``self(...)`` names them. A second forward of
        the same modules, for another export form of the model (examples/hf_llama.py's
        ``build_buffered``).

        >>> import numpy as np, graphdsl as gd
        >>> from graphdsl import nn
        >>> net = nn.Linear(2, 2, bias=False)
        >>> g = gd.Graph("twice", input_types={"x": gd.TensorType(gd.float32, (1, 2))})
        >>> g.output(net.call(lambda x: net(net(x)), g.inputs[0]))  # the layer twice
        >>> swap = {"weight": np.array([[0, 1], [1, 0]], np.float32)}
        >>> gd.evaluate(g, [np.array([[1, 2]], np.float32)], weights=swap)[0]
        array([[1., 2.]], dtype=float32)
        """
        return call_root(self, fn, args, kwargs)

    def is_block(self) -> bool:
        """Is a call of this module from the root's graph one subgraph call?"""
        if self.subgraph is not None:
            return self.subgraph
        return bool(self._modules) and not isinstance(self, (Sequential, ModuleList))

    # -- the tree
    def named_children(self) -> Iterator[tuple[str, Module]]:
        yield from self._modules.items()

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module and every one below it, each once, by path (``''`` for this one)."""
        seen: set[int] = set()
        todo = [(prefix, self)]
        while todo:
            path, m = todo.pop(0)
            if id(m) in seen:
                continue
            seen.add(id(m))
            yield path, m
            todo[:0] = [(join(path, n), c) for n, c in m._modules.items()]

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """Every parameter declaration, named as PyTorch's ``state_dict`` names it."""
        for path, m in self.named_modules(prefix):
            for name, p in m._parameters.items():
                yield join(path, name), p

    def parameters(self) -> Iterator[Parameter]:
        for _, p in self.named_parameters():
            yield p

    # -- data
    def load_state_dict(self, state_dict: object, strict: bool = True) -> IncompatibleKeys:
        """Bind data to the parameters: a dict of arrays, a PyTorch ``state_dict()`` (torch
        tensors, bfloat16 included), a ``.safetensors`` or ``.npz`` path, or
        :class:`graphdsl.Weights`. Every name is checked: a dtype or shape other than the
        declaration's raises :class:`~graphdsl.nn.StateDictError`, and so do missing and
        unexpected names unless ``strict=False`` (which returns them, as PyTorch does)."""
        specs = dict(self.named_parameters())
        weights = to_weights(state_dict, f"{type(self).__name__}.load_state_dict")
        result = check_state(type(self).__name__, specs, weights, strict)
        object.__setattr__(self, "_loaded", weights)
        for path, m in self.named_modules():
            m._after_load(weights, path)
        return result

    def _after_load(self, weights: Weights, path: str) -> None:
        """What a module makes of its data once loaded (named ``path`` + "." + parameter
        in ``weights``): nothing, but for a quantized :class:`~graphdsl.nn.Linear`."""

    def weights(self) -> Weights:
        """The data bound by :meth:`load_state_dict`, for ``export(g, weights=...)`` and
        ``gd.evaluate(g, inputs, weights=...)`` (names a graph does not use, such as batch
        norm's ``num_batches_tracked``, are left alone)."""
        if self._loaded is None:
            raise WeightError(
                f"{type(self).__name__} has no weights yet: call load_state_dict(...) first"
            )
        return self._loaded

    def state_dict(self) -> dict[str, np.ndarray]:
        """The bound data by name (memory-mapped from a file where it came from one)."""
        w = self.weights()
        return {name: w.array(name, spec.dtype) for name, spec in self.named_parameters()
                if name in w}  # fmt: skip

    # -- printing
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"({name}): {m!r}".replace("\n", "\n  ") for name, m in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ")" if not lines else head + "\n  " + "\n  ".join(lines) + "\n)"


class _Modules(Module):
    """A module whose children are a sequence: their count, iteration and index."""

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def __getitem__(self, index: int) -> Module:
        return list(self._modules.values())[index]


class Sequential(_Modules):
    """Modules called one after the other, named ``0``, ``1``... (or by an OrderedDict's
    keys), as ``torch.nn.Sequential``.

    >>> from graphdsl import nn
    >>> s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    >>> [name for name, _ in s.named_parameters()], len(s), type(s[1]).__name__
    (['0.weight', '0.bias', '2.weight', '2.bias'], 3, 'ReLU')
    """

    def __init__(self, *modules: Module | Mapping[str, Module]) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], (OrderedDict, dict)):
            for name, m in modules[0].items():
                setattr(self, name, m)
        else:
            for k, m in enumerate(modules):
                setattr(self, str(k), m)

    def forward(self, x: Any) -> Any:
        for m in self._modules.values():
            x = m(x)
        return x


class ModuleList(_Modules):
    """A list of modules named ``0``, ``1``..., as ``torch.nn.ModuleList`` (call them in
    your own forward).

    >>> from graphdsl import nn
    >>> blocks = nn.ModuleList(nn.Linear(2, 2, bias=False) for _ in range(3))
    >>> len(blocks), [name for name, _ in blocks.named_parameters()]
    (3, ['0.weight', '1.weight', '2.weight'])
    """

    def __init__(self, modules: Iterable[Module] = ()) -> None:
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module: Module) -> None:
        setattr(self, str(len(self._modules)), module)
