"""The layers of ``torch.nn`` (and Hugging Face's ``Conv1D``), with PyTorch's parameter names,
shapes and layouts, so that a PyTorch checkpoint loads as it is: ``Linear``, ``Conv1D``,
``Embedding``, ``LayerNorm``, ``RMSNorm``, ``Conv2d``, ``BatchNorm2d``, ``MaxPool2d``,
``AdaptiveAvgPool2d``, ``MLP`` (torchvision's), and the parameterless
``ReLU``, ``GELU``, ``SiLU``, ``Tanh``, ``Dropout``, ``Identity``, ``Flatten``.

Images are NCHW and convolution filters OIHW, as PyTorch's. Weights stored transposed
(``Linear``'s (out, in), ``Conv1D``'s (in, out)) keep that layout: the ops take it as it is.
Inference only: dropout is the identity, batch norm uses the running statistics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from graphdsl import ops
from graphdsl.dtypes import DType, dtype
from graphdsl.graph import Symbol
from graphdsl.nn._qlinear import check_quantize, quantize_linear, quantized_forward
from graphdsl.nn._trace import join
from graphdsl.nn.module import Module, Parameter, Sequential
from graphdsl.types import OpTypeError

__all__ = [
    "GELU",
    "MLP",
    "AdaptiveAvgPool2d",
    "BatchNorm2d",
    "Conv1D",
    "Conv2d",
    "Dropout",
    "Embedding",
    "Flatten",
    "Identity",
    "LayerNorm",
    "Linear",
    "MaxPool2d",
    "RMSNorm",
    "ReLU",
    "SiLU",
    "Tanh",
]

DTypeLike = DType | str


def _pair(v: int | Sequence[int], what: str) -> tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    if len(v) != 2:
        raise OpTypeError(f"{what} must be an int or two ints, got {v!r}")
    return int(v[0]), int(v[1])


def _size(normalized_shape: int | Sequence[int], what: str) -> int:
    if isinstance(normalized_shape, (int, np.integer)):
        return int(normalized_shape)
    if len(normalized_shape) != 1:
        raise OpTypeError(
            f"{what} normalizes over the last dimension: give its size (an int or a 1-tuple), "
            f"got {normalized_shape!r}"
        )
    return int(normalized_shape[0])


class Linear(Module):
    """``y = x @ weight.T + bias``, as ``torch.nn.Linear``: weight (out_features,
    in_features), bias (out_features,).

    ``quantize="int4"`` (or ``"uint4"``, ``"int8"``, ``"uint8"``) keeps the weight narrow:
    when the state dict is loaded, the weight is quantized in blocks of ``block_size`` input
    features (``gd.ops.quantize_weights``: symmetric, or with zero points) and the layer is
    ``gd.ops.qmatmul`` of those constants (``export(exact=False)`` makes a 4-bit one
    onnxruntime's MatMulNBits). The state dict stays the float one.

    >>> from graphdsl import nn
    >>> [(n, p.shape) for n, p in nn.Linear(3, 2).named_parameters()]
    [('weight', (2, 3)), ('bias', (2,))]
    """

    weight: Any  # a Parameter; in forward, the weight's value
    bias: Any  # a Parameter; in forward, the weight's value

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: DTypeLike = DType.float32, quantize: str | None = None,
                 block_size: int = 32, symmetric: bool = True) -> None:  # fmt: skip
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        dt = _dtype(dtype)
        self.weight = Parameter((out_features, in_features), dt)
        self.has_bias = bias
        if bias:
            self.bias = Parameter((out_features,), dt)
        self.quantize = quantize
        self.block_size, self.symmetric = block_size, symmetric
        # (q, scale, zero point) once loaded: an attribute, so each layer traces on its own
        self.quantized: tuple[Any, ...] | None = None
        if quantize is not None:
            check_quantize(quantize, block_size, in_features)

    def _after_load(self, weights: Any, path: str) -> None:
        if self.quantize is not None:
            w = weights.array(join(path, "weight"), self._parameters["weight"].dtype)
            self.quantized = quantize_linear(w, self.quantize, self.block_size, self.symmetric)

    def forward(self, x: Symbol) -> Symbol:
        if self.quantize is None:  # (the weight read first: weights are declared in order)
            return ops.linear(x, self.weight, self.bias if self.has_bias else None)
        return quantized_forward(self, x, self.bias if self.has_bias else None)

    def extra_repr(self) -> str:
        q = f", quantize={self.quantize!r}, block_size={self.block_size}" if self.quantize else ""
        return f"in_features={self.in_features}, out_features={self.out_features}{q}"


class Conv1D(Module):
    """Hugging Face's ``Conv1D`` (GPT-2's projections): ``y = x @ weight + bias`` with weight
    (nx, nf) = (in, out), bias (nf,); its arguments in its order, ``Conv1D(nf, nx)``.

    >>> from graphdsl import nn
    >>> [(n, p.shape) for n, p in nn.Conv1D(6, 2).named_parameters()]
    [('weight', (2, 6)), ('bias', (6,))]
    """

    weight: Any  # a Parameter; in forward, the weight's value
    bias: Any  # a Parameter; in forward, the weight's value

    def __init__(self, nf: int, nx: int, dtype: DTypeLike = DType.float32) -> None:
        super().__init__()
        self.nf, self.nx = nf, nx
        self.weight = Parameter((nx, nf), _dtype(dtype))
        self.bias = Parameter((nf,), _dtype(dtype))

    def forward(self, x: Symbol) -> Symbol:
        y: Symbol = ops.matmul(x, self.weight) + self.bias
        return y

    def extra_repr(self) -> str:
        return f"nf={self.nf}, nx={self.nx}"


class Embedding(Module):
    """Rows of ``weight`` (num_embeddings, embedding_dim) by integer index, as
    ``torch.nn.Embedding`` (a gather; negative indices count from the end).

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> emb = nn.Embedding(10, 3)
    >>> emb.load_state_dict({"weight": np.arange(30, dtype=np.float32).reshape(10, 3)})
    IncompatibleKeys(missing_keys=[], unexpected_keys=[])
    >>> g = gd.Graph("e", input_types={"x": gd.TensorType(gd.int64, (2,))})
    >>> g.output(emb(g.inputs[0]))
    >>> gd.evaluate(g, {"x": np.array([1, -1])}, weights=emb.weights())[0]
    array([[ 3.,  4.,  5.],
           [27., 28., 29.]], dtype=float32)
    """

    weight: Any  # a Parameter; in forward, the weight's value

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 dtype: DTypeLike = DType.float32) -> None:  # fmt: skip
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = Parameter((num_embeddings, embedding_dim), _dtype(dtype))

    def forward(self, ids: Symbol) -> Symbol:
        return ops.gather(self.weight, ids)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class LayerNorm(Module):
    """``torch.nn.LayerNorm`` over the last dimension (``gd.ops.layer_norm``): weight and
    bias of its size unless ``elementwise_affine=False`` (or ``bias=False``).

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> ln = nn.LayerNorm(4)
    >>> ln.load_state_dict({"weight": np.ones(4, np.float32), "bias": np.zeros(4, np.float32)})
    IncompatibleKeys(missing_keys=[], unexpected_keys=[])
    >>> g = gd.Graph("ln", input_types={"x": gd.TensorType(gd.float32, (1, 4))})
    >>> g.output(ln(g.inputs[0]))
    >>> gd.evaluate(g, {"x": np.array([[1, 2, 3, 4]], np.float32)}, weights=ln.weights())[0]
    array([[-1.3416355, -0.4472118,  0.4472118,  1.3416355]], dtype=float32)
    """

    weight: Any  # a Parameter; in forward, the weight's value
    bias: Any  # a Parameter; in forward, the weight's value

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True,
                 dtype: DTypeLike = DType.float32) -> None:  # fmt: skip
        super().__init__()
        n = self.size = _size(normalized_shape, "LayerNorm")
        self.eps = eps
        self.affine, self.has_bias = elementwise_affine, elementwise_affine and bias
        self.dt = _dtype(dtype)
        if self.affine:
            self.weight = Parameter((n,), self.dt)
        if self.has_bias:
            self.bias = Parameter((n,), self.dt)

    def forward(self, x: Symbol) -> Symbol:
        w = self.weight if self.affine else _filled(x, 1, self.size, self.dt)
        b = self.bias if self.has_bias else _filled(x, 0, self.size, self.dt)
        return ops.layer_norm(x, w, b, self.eps)

    def extra_repr(self) -> str:
        return f"({self.size},), eps={self.eps}"


class RMSNorm(Module):
    """``torch.nn.RMSNorm`` over the last dimension (``gd.ops.rms_norm``); ``eps=None``
    takes the dtype's machine epsilon, as PyTorch does.

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> norm = nn.RMSNorm(2, eps=1e-6)
    >>> norm.load_state_dict({"weight": np.ones(2, np.float32)})
    IncompatibleKeys(missing_keys=[], unexpected_keys=[])
    >>> g = gd.Graph("rms", input_types={"x": gd.TensorType(gd.float32, (1, 2))})
    >>> g.output(norm(g.inputs[0]))
    >>> gd.evaluate(g, {"x": np.array([[3, 4]], np.float32)}, weights=norm.weights())[0].round(4)
    array([[0.8485, 1.1314]], dtype=float32)
    """

    weight: Any  # a Parameter; in forward, the weight's value

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True,
                 dtype: DTypeLike = DType.float32) -> None:  # fmt: skip
        super().__init__()
        n = self.size = _size(normalized_shape, "RMSNorm")
        self.dt = _dtype(dtype)
        self.eps = float(np.finfo(np.float32 if self.dt.bits < 32 else self.dt.np).eps
                         if eps is None else eps)  # fmt: skip
        self.affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter((n,), self.dt)

    def forward(self, x: Symbol) -> Symbol:
        w = self.weight if self.affine else _filled(x, 1, self.size, self.dt)
        return ops.rms_norm(x, w, self.eps)

    def extra_repr(self) -> str:
        return f"({self.size},), eps={self.eps}"


class Conv2d(Module):
    """``torch.nn.Conv2d`` on NCHW images: weight (out, in / groups, kh, kw), bias (out,);
    ``padding`` an int, a pair, ``"valid"`` or ``"same"`` (stride 1), zeros only.

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> conv = nn.Conv2d(1, 2, 3, padding=1, bias=False)
    >>> [(name, p.shape) for name, p in conv.named_parameters()]
    [('weight', (2, 1, 3, 3))]
    >>> conv.load_state_dict({"weight": np.ones((2, 1, 3, 3), np.float32)})
    IncompatibleKeys(missing_keys=[], unexpected_keys=[])
    >>> g = gd.Graph("conv", input_types={"x": gd.TensorType(gd.float32, ("batch", 1, 3, 3))})
    >>> y = conv(g.inputs[0])
    >>> y.type
    TensorType(float32[batch, 2, 3, 3])
    >>> g.output(y)
    >>> gd.evaluate(g, {"x": np.ones((1, 1, 3, 3), np.float32)}, weights=conv.weights())[0][0, 0]
    array([[4., 6., 4.],
           [6., 9., 6.],
           [4., 6., 4.]], dtype=float32)
    """

    weight: Any  # a Parameter; in forward, the weight's value
    bias: Any  # a Parameter; in forward, the weight's value

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int],
                 stride: int | Sequence[int] = 1, padding: int | Sequence[int] | str = 0,
                 dilation: int | Sequence[int] = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros",
                 dtype: DTypeLike = DType.float32) -> None:  # fmt: skip
        super().__init__()
        if padding_mode != "zeros":
            raise OpTypeError(f"Conv2d: padding_mode {padding_mode!r}: only 'zeros' is built")
        kh, kw = self.kernel_size = _pair(kernel_size, "kernel_size")
        self.stride, self.dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
        self.groups, self.has_bias = groups, bias
        if padding == "valid":
            self.padding = (0, 0, 0, 0)
        elif padding == "same":
            if self.stride != (1, 1):
                raise OpTypeError("Conv2d: padding='same' needs stride 1, as PyTorch's")
            th, tw = (d * (k - 1) for d, k in zip(self.dilation, self.kernel_size, strict=True))
            self.padding = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
        elif isinstance(padding, str):
            raise OpTypeError(f"Conv2d: padding {padding!r}: give ints, 'valid' or 'same'")
        else:
            ph, pw = _pair(padding, "padding")
            self.padding = (ph, ph, pw, pw)
        dt = _dtype(dtype)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.weight = Parameter((out_channels, in_channels // groups, kh, kw), dt)
        if bias:
            self.bias = Parameter((out_channels,), dt)

    def forward(self, x: Symbol) -> Symbol:
        return ops.conv2d(x, self.weight, self.stride, self.dilation, self.padding,
                          self.groups, self.bias if self.has_bias else None,
                          input_layout="NCHW")  # fmt: skip

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")  # fmt: skip


class BatchNorm2d(Module):
    """``torch.nn.BatchNorm2d`` in inference (eval) mode on NCHW images: (x - running_mean)
    / sqrt(running_var + eps) * weight + bias (``gd.ops.batch_norm``), which the ONNX export
    folds into the convolution it follows. ``num_batches_tracked`` is declared, checked by
    ``load_state_dict``, and read by no graph.

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> bn = nn.BatchNorm2d(2)
    >>> [name for name, _ in bn.named_parameters()]
    ['weight', 'bias', 'running_mean', 'running_var', 'num_batches_tracked']
    >>> f = np.float32
    >>> bn.load_state_dict({"weight": np.array([1, 2], f), "bias": np.array([0, 1], f),
    ...                     "running_mean": np.array([1, 0], f), "running_var": np.array([4, 1], f),
    ...                     "num_batches_tracked": np.array(0)})
    IncompatibleKeys(missing_keys=[], unexpected_keys=[])
    >>> g = gd.Graph("bn", input_types={"x": gd.TensorType(gd.float32, (1, 2, 1, 1))})
    >>> g.output(bn(g.inputs[0]))
    >>> gd.evaluate(g, {"x": np.full((1, 2, 1, 1), 3, f)}, weights=bn.weights())[0].ravel()
    array([0.99999875, 6.99997   ], dtype=float32)
    """

    weight: Any  # a Parameter; in forward, the weight's value
    bias: Any  # a Parameter; in forward, the weight's value
    running_mean: Any  # a Parameter; in forward, the weight's value
    running_var: Any  # a Parameter; in forward, the weight's value
    num_batches_tracked: Any  # a Parameter; in forward, the weight's value

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 dtype: DTypeLike = DType.float32) -> None:  # fmt: skip
        super().__init__()
        if not track_running_stats:
            raise OpTypeError(
                "BatchNorm2d(track_running_stats=False) normalizes by each batch's statistics "
                "even in eval mode; graphdsl builds inference with running statistics only"
            )
        dt = _dtype(dtype)
        self.num_features, self.eps, self.affine = num_features, eps, affine
        if affine:
            self.weight = Parameter((num_features,), dt)
            self.bias = Parameter((num_features,), dt)
        self.running_mean = Parameter((num_features,), dt)
        self.running_var = Parameter((num_features,), dt)
        self.num_batches_tracked = Parameter((), DType.int64, in_graph=False)

    def forward(self, x: Symbol) -> Symbol:
        gamma, beta = (self.weight, self.bias) if self.affine else (None, None)
        return ops.batch_norm(x, self.running_mean, self.running_var, gamma, beta, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_features}, eps={self.eps}"


class MaxPool2d(Module):
    """``torch.nn.MaxPool2d`` on NCHW images (``stride`` defaults to the kernel size).

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> pool = nn.MaxPool2d(2)
    >>> g = gd.Graph("pool", input_types={"x": gd.TensorType(gd.float32, (1, 1, 4, 4))})
    >>> g.output(pool(g.inputs[0]))
    >>> gd.evaluate(g, {"x": np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)})[0]
    array([[[[ 5.,  7.],
             [13., 15.]]]], dtype=float32)
    """

    def __init__(self, kernel_size: int | Sequence[int], stride: int | Sequence[int] | None = None,
                 padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
                 ceil_mode: bool = False) -> None:  # fmt: skip
        super().__init__()
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.stride = self.kernel_size if stride is None else _pair(stride, "stride")
        self.padding, self.dilation = _pair(padding, "padding"), _pair(dilation, "dilation")
        self.ceil_mode = ceil_mode

    def forward(self, x: Symbol) -> Symbol:
        return ops.max_pool2d(x, self.kernel_size, self.stride, self.dilation, self.padding,
                              self.ceil_mode, input_layout="NCHW")  # fmt: skip


class AdaptiveAvgPool2d(Module):
    """``torch.nn.AdaptiveAvgPool2d`` on NCHW images (``gd.ops.adaptive_avg_pool2d``).

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> pool = nn.AdaptiveAvgPool2d((1, 1))
    >>> g = gd.Graph("pool", input_types={"x": gd.TensorType(gd.float32, ("batch", 1, 2, 2))})
    >>> y = pool(g.inputs[0])
    >>> y.type
    TensorType(float32[batch, 1, 1, 1])
    >>> g.output(y)
    >>> gd.evaluate(g, {"x": np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)})[0].ravel()
    array([1.5], dtype=float32)
    """

    def __init__(self, output_size: int | Sequence[int | None]) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: Symbol) -> Symbol:
        return ops.adaptive_avg_pool2d(x, self.output_size)


class _Activation(Module):
    fn: Callable[..., Symbol]

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # (inplace= and the like: ignored)
        super().__init__()

    def forward(self, x: Symbol) -> Symbol:
        return type(self).fn(x)


class ReLU(_Activation):
    """``torch.nn.ReLU``.

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> g = gd.Graph("relu", input_types={"x": gd.TensorType(gd.float32, (3,))})
    >>> g.output(nn.ReLU()(g.inputs[0]))
    >>> gd.evaluate(g, {"x": np.array([-1, 0, 2], np.float32)})[0]
    array([0., 0., 2.], dtype=float32)
    """

    fn = staticmethod(ops.relu)


class SiLU(_Activation):
    """``torch.nn.SiLU``.

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> g = gd.Graph("silu", input_types={"x": gd.TensorType(gd.float32, (2,))})
    >>> g.output(nn.SiLU()(g.inputs[0]))
    >>> gd.evaluate(g, {"x": np.array([0, 1], np.float32)})[0].round(4)
    array([0.    , 0.7311], dtype=float32)
    """

    fn = staticmethod(ops.silu)


class Tanh(_Activation):
    """``torch.nn.Tanh``.

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> g = gd.Graph("tanh", input_types={"x": gd.TensorType(gd.float32, (2,))})
    >>> g.output(nn.Tanh()(g.inputs[0]))
    >>> gd.evaluate(g, {"x": np.array([0, 1], np.float32)})[0].round(4)
    array([0.    , 0.7616], dtype=float32)
    """

    fn = staticmethod(ops.tanh)


class GELU(Module):
    """``torch.nn.GELU``: ``approximate`` "none" (erf) or "tanh" (GPT-2's ``gelu_new``).

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> g = gd.Graph("gelu", input_types={"x": gd.TensorType(gd.float32, (2,))})
    >>> x, = g.inputs
    >>> g.output(nn.GELU()(x), nn.GELU(approximate="tanh")(x))
    >>> [y.round(4) for y in gd.evaluate(g, {"x": np.array([0, 1], np.float32)})]
    [array([0.    , 0.8413], dtype=float32), array([0.    , 0.8412], dtype=float32)]
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Symbol) -> Symbol:
        return ops.gelu(x, approximate=self.approximate)


class Identity(Module):
    """``torch.nn.Identity``: its input (any arguments are ignored).

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> g = gd.Graph("id", input_types={"x": gd.TensorType(gd.float32, (2,))})
    >>> x, = g.inputs
    >>> nn.Identity(54, unused_argument=0.1)(x) is x
    True
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, x: Symbol) -> Symbol:
        return x


class Dropout(Identity):
    """``torch.nn.Dropout`` at inference: the identity.

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> g = gd.Graph("drop", input_types={"x": gd.TensorType(gd.float32, (2,))})
    >>> x, = g.inputs
    >>> nn.Dropout(p=0.1)(x) is x
    True
    """


class Flatten(Module):
    """``torch.nn.Flatten``: axes ``start_dim..end_dim`` merged (default: all but the
    batch).

    >>> import numpy as np, graphdsl as gd
    >>> from graphdsl import nn
    >>> g = gd.Graph("flat", input_types={"x": gd.TensorType(gd.float32, ("batch", 3, 4))})
    >>> x, = g.inputs
    >>> nn.Flatten()(x).type, nn.Flatten(0)(x).type
    (TensorType(float32[batch, 12]), TensorType(float32[batch*12]))
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: Symbol) -> Symbol:
        return ops.flatten(x, self.start_dim, self.end_dim)


class MLP(Sequential):
    """torchvision's ``ops.MLP``: for each hidden size but the last, Linear, the norm layer
    (if any), the activation and Dropout; then the last Linear and Dropout, named ``0``,
    ``1``... as torchvision names them (``0.weight``, ``3.weight``...).

    >>> from graphdsl import nn
    >>> [n for n, _ in nn.MLP(4, [8, 2]).named_parameters()]
    ['0.weight', '0.bias', '3.weight', '3.bias']
    """

    def __init__(self, in_channels: int, hidden_channels: Sequence[int],
                 norm_layer: Callable[[int], Module] | None = None,
                 activation_layer: Callable[[], Module] = ReLU, bias: bool = True,
                 dropout: float = 0.0, dtype: DTypeLike = DType.float32) -> None:  # fmt: skip
        layers: list[Module] = []
        width = in_channels
        for hidden in hidden_channels[:-1]:
            layers.append(Linear(width, hidden, bias, dtype))
            if norm_layer is not None:
                layers.append(norm_layer(hidden))
            layers += [activation_layer(), Dropout(dropout)]
            width = hidden
        layers += [Linear(width, hidden_channels[-1], bias, dtype), Dropout(dropout)]
        super().__init__(*layers)


def _filled(x: Symbol, value: int, n: int, dt: DType) -> Symbol:
    """``n`` values ``value`` of ``dt`` in ``x``'s graph: a scalar broadcast there (a norm's
    weight or bias that is not a parameter), not a constant of the feature size."""
    return ops.broadcast_to(x.graph.constant(np.asarray(value, dt.np)), (n,))


def _dtype(value: DTypeLike) -> DType:
    return dtype(value)
