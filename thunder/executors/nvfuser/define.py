"""Building an nvFuser FusionDefinition from prims, and printing it as a standalone repro.

``define_fusion(bsyms, inputs, outputs)`` defines a region (prim BoundSymbols in order, the
proxies that enter it and those that leave it) on a real FusionDefinition.
``fusion_repro(...)`` gives the same region as the script nvFuser users paste into bug
reports: imports, ``def nvfuser_fusion(fd)``, example inputs on CUDA and the execute call.
Both run the one translation (``translate.py``) on an emitter: ``FusionEmitter`` calls the
FusionDefinition, ``ScriptEmitter`` writes the same calls as text, so the repro is exactly
what was defined and prints without nvFuser installed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import torch

from thunder.core.printing import Printer, bsym_line
from thunder.core.proxies import NumberProxy, TensorProxy
from thunder.core.pytree import tree_leaves
from thunder.core.symbol import BoundSymbol
from thunder.core.symbolic import expr_of, fold, hint_of, hints, is_symbolic, symbol_name
from thunder.executors.nvfuser.loader import DATATYPE_NAMES, NUMBER_DTYPES, api_name, load, new_definition
from thunder.executors.nvfuser.translate import TRANSLATIONS, unsupported_reason

# a size expression's operation -> nvFuser's scalar op
_SIZE_OPS = {"floordiv": "div", "mod": "fmod", "max": "maximum", "min": "minimum", "pow": "pow"}


class TranslationError(RuntimeError):
    """A region nvFuser cannot take, or a translation nvFuser disagrees with."""


@dataclasses.dataclass(frozen=True)
class TensorDescriptor:
    """How a region input is declared to ``define_tensor``: ``shape`` holds -1 for an extent
    known at run time, 1 for a broadcast dimension, or the static extent; ``contiguity``
    is None on broadcast dimensions; an empty ``stride_order`` means row-major."""

    shape: tuple[int, ...]
    contiguity: tuple[bool | None, ...]
    stride_order: tuple[int, ...] = ()


def contiguous_descriptor(shape: Sequence[int], *, static: bool = False) -> TensorDescriptor:
    """A row-major tensor of ``shape``; extents stay symbolic unless ``static`` (nvFuser
    takes no static extent 0, so an empty dimension stays symbolic), and a symbolic size of
    the trace (``s0``, at least 2) always does."""
    dims = tuple(-1 if is_symbolic(s) else int(s) for s in shape)
    return TensorDescriptor(
        tuple(s if s == 1 or (static and s > 1) else -1 for s in dims),
        tuple(None if s == 1 else True for s in dims),
    )


# -- emitters -------------------------------------------------------------------------------
class Emitter:
    """Where translations write. ``get`` gives the fusion value of a thunder proxy;
    subclasses implement the calls a FusionDefinition has (``define_tensor``,
    ``define_scalar``, ``constant``, ``add_output`` and ``op(name, *args, outputs=1,
    scalar=False, **kwargs)``, which adds ``fd.ops.<name>``: ``outputs`` values, scalars
    when ``scalar``)."""

    def __init__(self):
        self._values: dict[str, object] = {}
        self._sizes: dict = {}  # a size expression's key -> its fusion scalar
        self._extents: dict[str, tuple] = {}  # symbol -> (an input tensor's value, the dimension it sizes)

    def bind(self, proxy, value) -> None:
        self._values[proxy.name] = value

    def note_extents(self, proxy: TensorProxy, value) -> None:
        """The input ``proxy`` (``value`` in the fusion) has a symbol as the size of these
        dimensions: a symbol that is no input of the fusion is read from it (``fd.ops.size``)."""
        for d, size in enumerate(proxy.meta_shape):
            name = symbol_name(size)
            if name is not None:
                self._extents.setdefault(name, (value, d))

    def get(self, proxy):
        if not isinstance(proxy, (TensorProxy, NumberProxy)):
            raise TypeError(f"thunder: expected a proxy, got {type(proxy).__name__}")
        try:
            return self._values[proxy.name]
        except KeyError:
            raise TranslationError(
                f"thunder: {proxy.name} is used in the fusion but is neither one of its inputs "
                "nor made by an earlier member"
            ) from None

    def size(self, x):
        """A size as a fusion value: an int as itself; a symbolic one (``2*s0 + 1``) as nvFuser
        scalar ops over the symbols, which are inputs of the fusion (each expression once)."""
        e = expr_of(x)
        if isinstance(e, int):
            return e
        env = x.node.env
        i64 = torch.int64

        def symbol(name):
            proxy = env.symbols[name]
            if proxy.name in self._values or name not in self._extents:
                return self.get(proxy)
            tensor, d = self._extents[name]
            return self.op("size", tensor, dim=d, scalar=True)

        def binary(op, a, b):  # (sizes are not negative: C's division and remainder are Python's)
            return self.op(_SIZE_OPS[op], a, b, scalar=True)

        return fold(
            e,
            symbol=symbol,
            number=lambda n: self.constant(n, i64),
            add=lambda a, b: self.op("add", a, b, scalar=True),
            scale=lambda a, k: self.op("mul", a, self.constant(k, i64), scalar=True),
            mul=lambda a, b: self.op("mul", a, b, scalar=True),
            binary=binary,
            memo=self._sizes,
        )

    def sizes(self, x):
        """``x`` (an op's argument: lists nested) with each symbolic size as a fusion value."""
        if isinstance(x, (list, tuple)):
            return type(x)(self.sizes(v) for v in x)
        if is_symbolic(x):
            return self.size(x)
        return x

    def begin(self, bsym: BoundSymbol) -> None:
        """Called before ``bsym`` is translated."""

    def note_index(self, proxy, extent: int) -> None:
        """``proxy`` indexes a dimension of length ``extent`` (for example inputs)."""

    def check_result(self, proxy, value) -> None:
        """Raise if nvFuser's ``value`` does not have the metadata of ``proxy``."""


class FusionEmitter(Emitter):
    """Writes to a real FusionDefinition of the nvFuser ``module``."""

    def __init__(self, fd, module):
        super().__init__()
        self.fd = fd
        self.DataType = module.DataType
        # nvfuser_direct builds the fusion as it goes and its values answer dtype() and
        # shape(); in the older module shape() would record new ops into the definition
        self.inspect = api_name(module) == "nvfuser_direct"

    def _dtype(self, dtype: torch.dtype):
        return getattr(self.DataType, DATATYPE_NAMES[dtype])

    def _arg(self, x):
        if isinstance(x, torch.dtype):
            return self._dtype(x)
        if isinstance(x, (list, tuple)):
            return [self._arg(v) for v in x]
        return x

    def define_tensor(self, proxy: TensorProxy, d: TensorDescriptor):
        kwargs = {"stride_order": list(d.stride_order)} if d.stride_order else {}
        return self.fd.define_tensor(
            shape=list(d.shape),
            contiguity=list(d.contiguity),
            dtype=self._dtype(proxy.meta_dtype),
            is_cpu=False,
            **kwargs,
        )

    def define_scalar(self, proxy: NumberProxy):
        return self.fd.define_scalar(None, dtype=self._dtype(NUMBER_DTYPES[proxy.python_type]))

    def constant(self, value, dtype: torch.dtype):
        return self.fd.define_scalar(_number_as(value, dtype), dtype=self._dtype(dtype))

    def op(self, name: str, *args, outputs: int = 1, scalar: bool = False, **kwargs):
        args, kwargs = self.sizes(args), {k: self.sizes(v) for k, v in kwargs.items()}
        fn = getattr(self.fd.ops, name)
        result = fn(*(self._arg(a) for a in args), **{k: self._arg(v) for k, v in kwargs.items()})
        return tuple(result) if outputs > 1 else result

    def add_output(self, value) -> None:
        self.fd.add_output(value)

    def check_result(self, proxy, value) -> None:
        if not isinstance(proxy, TensorProxy):
            return
        if value.ndim != len(proxy.meta_shape):
            raise TranslationError(
                f"thunder: nvFuser made {proxy.name} with {value.ndim} dimensions, "
                f"thunder says {len(proxy.meta_shape)}"
            )
        if not self.inspect:
            return
        if value.dtype() != self._dtype(proxy.meta_dtype):
            raise TranslationError(
                f"thunder: nvFuser made {proxy.name} as {value.dtype()}, thunder says {proxy.meta_dtype}"
            )
        extents = [str(v) for v in value.shape()]  # the extents nvFuser knows print as numbers
        if any(
            got.isdigit() and type(want) is int and int(got) != want
            for got, want in zip(extents, proxy.meta_shape)
        ):
            raise TranslationError(
                f"thunder: nvFuser made {proxy.name} of shape {extents}, thunder says {list(proxy.meta_shape)}"
            )


class _Value:
    """A fusion value in a script, named ``S...`` for a scalar, ``T...`` for a tensor."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class ScriptEmitter(Emitter):
    """Writes the calls a FusionEmitter would make as the body of ``nvfuser_fusion(fd)``."""

    def __init__(self):
        super().__init__()
        self.lines: list[str] = []
        self.inputs: list[tuple[object, TensorDescriptor | None, _Value]] = []
        self._indexed: dict[str, int] = {}  # proxy name -> extent of the dimension it indexes
        self._producers: dict[str, BoundSymbol] = {}
        self._count = 0

    def _new(self, kind: str) -> _Value:
        v = _Value(f"{kind}{self._count}")
        self._count += 1
        return v

    def _src(self, x) -> str:
        if isinstance(x, _Value):
            return x.name
        if isinstance(x, torch.dtype):
            return f"DataType.{DATATYPE_NAMES[x]}"
        if isinstance(x, (list, tuple)):
            return "[" + ", ".join(self._src(v) for v in x) + "]"
        if isinstance(x, float) and not math.isfinite(x):
            return f"float('{x}')"
        return repr(x)

    def _emit(self, out: str, call: str, args, kwargs, comment: str = "") -> None:
        parts = [self._src(a) for a in args] + [f"{k}={self._src(v)}" for k, v in kwargs.items()]
        line = f"{out} = {call}({', '.join(parts)})" if out else f"{call}({', '.join(parts)})"
        self.lines.append(f"{line}  # {comment}" if comment else line)

    def begin(self, bsym: BoundSymbol) -> None:
        self.lines.append(f"# {bsym_line(bsym, Printer())}")
        if bsym.source is not None:
            self.lines.append(f"#   from {bsym.source}")
        for o in bsym.flat_proxy_outs:
            self._producers[o.name] = bsym

    def note_index(self, proxy, extent: int) -> None:
        if isinstance(proxy, TensorProxy):
            extent = hint_of(extent)  # (for example inputs: the sizes of the call traced)
            self._indexed[proxy.name] = min(self._indexed.get(proxy.name, extent), extent)

    def index_extents(self) -> dict[str, int]:
        """The extent each integer tensor indexes, carried back from an index to the integer
        tensors it is computed from (``where(idx < 0, idx + n, idx)`` indexes with ``idx``),
        so that example inputs stay in range."""
        extents, todo = dict(self._indexed), list(self._indexed)
        while todo:
            name = todo.pop()
            producer = self._producers.get(name)
            for p in producer.flat_proxy_args if producer is not None else ():
                integer = isinstance(p, TensorProxy) and not p.meta_dtype.is_floating_point
                if (
                    integer
                    and p.meta_dtype is not torch.bool
                    and extents.get(p.name, math.inf) > extents[name]
                ):
                    extents[p.name] = extents[name]
                    todo.append(p.name)
        return extents

    def define_tensor(self, proxy: TensorProxy, d: TensorDescriptor):
        v = self._new("T")
        kwargs = {"shape": list(d.shape), "contiguity": list(d.contiguity), "dtype": proxy.meta_dtype}
        kwargs["is_cpu"] = False
        if d.stride_order:
            kwargs["stride_order"] = list(d.stride_order)
        self._emit(v.name, "fd.define_tensor", (), kwargs, proxy.name)
        self.inputs.append((proxy, d, v))
        return v

    def define_scalar(self, proxy: NumberProxy):
        v = self._new("S")
        self._emit(
            v.name, "fd.define_scalar", (None,), {"dtype": NUMBER_DTYPES[proxy.python_type]}, proxy.name
        )
        self.inputs.append((proxy, None, v))
        return v

    def constant(self, value, dtype: torch.dtype):
        v = self._new("S")
        self._emit(v.name, "fd.define_scalar", (_number_as(value, dtype),), {"dtype": dtype})
        return v

    def op(self, name: str, *args, outputs: int = 1, scalar: bool = False, **kwargs):
        args, kwargs = self.sizes(args), {k: self.sizes(v) for k, v in kwargs.items()}
        results = tuple(self._new("S" if scalar else "T") for _ in range(outputs))
        self._emit(", ".join(r.name for r in results), f"fd.ops.{name}", args, kwargs)
        return results if outputs > 1 else results[0]

    def add_output(self, value) -> None:
        self._emit("", "fd.add_output", (value,), {})


def _number_as(value, dtype: torch.dtype):
    """A Python number as the Python type of nvFuser's scalar of ``dtype``."""
    if dtype is torch.bool:
        return bool(value)
    if dtype.is_floating_point:
        return float(value)
    return int(value)


# -- the driver -----------------------------------------------------------------------------
def check_region(bsyms: Sequence[BoundSymbol]) -> None:
    """Raise ``TranslationError`` naming the first member nvFuser cannot take, and why."""
    for bsym in bsyms:
        reason = unsupported_reason(bsym)
        if reason is not None:
            where = f" (from {bsym.source})" if bsym.source is not None else ""
            raise TranslationError(
                f"thunder: nvFuser cannot take `{bsym_line(bsym, Printer())}`: {reason}{where}"
            )


def emit_region(
    em: Emitter,
    bsyms: Sequence[BoundSymbol],
    inputs: Sequence,
    outputs: Sequence,
    *,
    descriptors: Sequence[TensorDescriptor | None] | None = None,
    static_shapes: bool = False,
) -> None:
    """Define ``inputs``, translate ``bsyms`` in order, add ``outputs``, all on ``em``."""
    descriptors = list(descriptors) if descriptors is not None else [None] * len(inputs)
    if len(descriptors) != len(inputs):
        raise ValueError(f"thunder: {len(inputs)} inputs but {len(descriptors)} descriptors")
    for p, d in zip(inputs, descriptors):
        if isinstance(p, TensorProxy):
            em.bind(p, em.define_tensor(p, d or contiguous_descriptor(p.meta_shape, static=static_shapes)))
            em.note_extents(p, em.get(p))
        elif isinstance(p, NumberProxy):
            em.bind(p, em.define_scalar(p))
        else:
            raise TranslationError(f"thunder: a fusion input must be a proxy, got {type(p).__name__}")
    for bsym in bsyms:
        em.begin(bsym)
        result = TRANSLATIONS[bsym.sym].emit(em, bsym)
        outs = [o for o in tree_leaves(bsym.output) if isinstance(o, (TensorProxy, NumberProxy))]
        results = result if isinstance(result, tuple) else (result,)
        if len(results) != len(outs):
            raise TranslationError(
                f"thunder: the translation of `{bsym_line(bsym, Printer())}` gave {len(results)} values "
                f"for {len(outs)} outputs"
            )
        for o, v in zip(outs, results):
            em.check_result(o, v)
            em.bind(o, v)
    input_names = {p.name for p in inputs}
    for o in outputs:
        if not isinstance(o, TensorProxy):
            raise TranslationError(f"thunder: a fusion output must be a tensor, got {type(o).__name__}")
        v = em.get(o)
        # an input passed straight through still leaves as a new tensor
        em.add_output(em.op("set", v) if o.name in input_names else v)


def define_fusion(
    bsyms: Sequence[BoundSymbol],
    inputs: Sequence,
    outputs: Sequence,
    *,
    api: str | None = None,
    descriptors: Sequence[TensorDescriptor | None] | None = None,
    static_shapes: bool = False,
):
    """An nvFuser FusionDefinition of the region (no GPU needed to define it; executing it
    needs one). ``api`` picks ``"nvfuser_direct"`` or ``"nvfuser"`` (default: whichever
    imports). Raises ``TranslationError`` for a member nvFuser cannot take and
    ``NvFuserUnavailable`` when nvFuser does not import."""
    check_region(bsyms)
    module = load(api)
    calls = 0
    if api_name(module) == "nvfuser":  # it needs the number of calls up front
        script = _script(bsyms, inputs, outputs, descriptors, static_shapes)
        calls = sum(not line.startswith("#") for line in script.lines)
    fd = new_definition(module, calls)
    with fd:
        emit_region(
            FusionEmitter(fd, module),
            bsyms,
            inputs,
            outputs,
            descriptors=descriptors,
            static_shapes=static_shapes,
        )
    return fd


def _script(bsyms, inputs, outputs, descriptors, static_shapes) -> ScriptEmitter:
    check_region(bsyms)
    em = ScriptEmitter()
    emit_region(em, bsyms, inputs, outputs, descriptors=descriptors, static_shapes=static_shapes)
    return em


def _header(api: str) -> list[str]:
    return ["import torch", f"from {api} import FusionDefinition, DataType", "", ""]


def _function(em: ScriptEmitter) -> list[str]:
    return ["def nvfuser_fusion(fd: FusionDefinition) -> None:"] + [f"    {line}" for line in em.lines]


def fusion_definition_source(
    bsyms: Sequence[BoundSymbol],
    inputs: Sequence,
    outputs: Sequence,
    *,
    api: str = "nvfuser_direct",
    descriptors: Sequence[TensorDescriptor | None] | None = None,
    static_shapes: bool = False,
) -> str:
    """Imports and ``def nvfuser_fusion(fd)`` for the region, as Python source."""
    em = _script(bsyms, inputs, outputs, descriptors, static_shapes)
    return "\n".join(_header(api) + _function(em)) + "\n"


def fusion_repro(
    bsyms: Sequence[BoundSymbol],
    inputs: Sequence,
    outputs: Sequence,
    *,
    api: str = "nvfuser_direct",
    descriptors: Sequence[TensorDescriptor | None] | None = None,
    static_shapes: bool = False,
) -> str:
    """The region as a standalone script: the definition, example inputs of the region's
    shapes and dtypes on CUDA (index inputs within the extents they index), and the execute
    call."""
    em = _script(bsyms, inputs, outputs, descriptors, static_shapes)
    lines = [f"# nvFuser repro of a thunder fusion region ({len(bsyms)} prims)"] + _header(api)
    lines += _function(em) + ["", "", "with FusionDefinition() as fd:", "    nvfuser_fusion(fd)", ""]
    lines.append("inputs = [")
    extents = em.index_extents()
    for proxy, d, v in em.inputs:
        lines.append(f"    {_example(proxy, d, extents)},  # {v.name}: {proxy.name}")
    lines += ["]", "outputs = fd.execute(inputs)", "print(outputs)"]
    return "\n".join(lines) + "\n"


def _example(proxy, d: TensorDescriptor | None, index_extents: dict[str, int]) -> str:
    if isinstance(proxy, NumberProxy):
        return repr(proxy.value)
    p = Printer()
    shape = hints(tuple(proxy.meta_shape))  # (symbolic sizes: those of the call traced)
    order = list(range(len(shape)))
    if d is not None and d.stride_order:  # make it in memory order, then view it logically
        order = sorted(order, key=lambda i: -d.stride_order[i])
    made = tuple(shape[i] for i in order)
    extra = ""
    if proxy.name in index_extents:
        extra = f", low=0, high={max(index_extents[proxy.name], 1)}"
    text = (
        f"torch.testing.make_tensor({p.value(made)}, dtype={p.value(proxy.meta_dtype)}, device='cuda'{extra})"
    )
    if order != sorted(order):
        inverse = [order.index(i) for i in range(len(order))]
        text += f".permute({p.value(tuple(inverse))})"
    return text
