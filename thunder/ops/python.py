"""Python-level primitives for prologues and epilogues: unpacking inputs by provenance,
checking them, building return values, and ``del``.

They print as ``prims.unpack_item(args, 0)`` etc. in the traces made by acquisition and as
``pythonex.*`` once claimed; their implementations live in ``thunder.executors.pythonex``.
"""

from __future__ import annotations

from thunder.core.proxies import AnyProxy
from thunder.core.symbol import Symbol, register
from thunder.core.trace import current_trace


def _python_prim(name: str, meta, *tags: str) -> Symbol:
    return register(Symbol(name, "prims", meta=meta, tags=("prim", "python", *tags)))


# Unpacking: acquisition makes these BoundSymbols itself, because it names the output proxy
# after the value's provenance (``t_fc1_weight``).
def _unpack_meta(container, key):
    raise RuntimeError("thunder: unpack BoundSymbols are made by acquisition, not by calling the symbol")


unpack_item = _python_prim("unpack_item", _unpack_meta, "unpack")
unpack_attr = _python_prim("unpack_attr", _unpack_meta, "unpack")
unpack_param = _python_prim("unpack_param", _unpack_meta, "unpack")
unpack_buffer = _python_prim("unpack_buffer", _unpack_meta, "unpack")
unpack_submodule = _python_prim("unpack_submodule", _unpack_meta, "unpack")


def _no_output(*args, **kwargs):
    return None


check_len = _python_prim("check_len", _no_output, "prologue_check")
check_keys = _python_prim("check_keys", _no_output, "prologue_check")
check_tensor = _python_prim("check_tensor", _no_output, "prologue_check")
check_literal = _python_prim("check_literal", _no_output, "prologue_check")
check_type = _python_prim("check_type", _no_output, "prologue_check")
check_is = _python_prim("check_is", _no_output, "prologue_check")
check_grad_enabled = _python_prim("check_grad_enabled", _no_output, "prologue_check")
check_default_dtype = _python_prim("check_default_dtype", _no_output, "prologue_check")
# ``check_int_compare(i0, '>=', 32, False)``: the outcome of comparing a counter with a limit
COMPARE_OPS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
check_int_compare = _python_prim("check_int_compare", _no_output, "prologue_check")
# ``check_tensor_value(t, 5)``: the value of a one-element input tensor the trace read
check_tensor_value = _python_prim("check_tensor_value", _no_output, "prologue_check")
# ``check_hasattr(obj, "name", False)``: an attribute the function found missing (or created)
check_hasattr = _python_prim("check_hasattr", _no_output, "prologue_check")


def _setattr_meta(obj, name, value):
    return None


# Epilogue write-backs onto the user's objects.
python_setattr = _python_prim("python_setattr", _setattr_meta, "writeback")
python_setitem = _python_prim("python_setitem", _setattr_meta, "writeback")
python_delattr = _python_prim("python_delattr", _no_output, "writeback")
python_delitem = _python_prim("python_delitem", _no_output, "writeback")


def _new_any(cls):
    trc = current_trace()
    return AnyProxy(trc.make_name("any"), cls)


def _construct_meta(cls, *args, **kwargs):
    return _new_any(cls)


# ``any0 = __main___MyContainer(res=t0, num=1)``: printed as a call of the class itself.
construct = _python_prim("construct", _construct_meta, "dataclass_new")


def _print_construct(bsym, printer) -> str:
    cls, *args = bsym.args
    call = printer.call(printer.value(cls), args, bsym.kwargs)
    return f"{bsym.output.name} = {call}"


construct.printer = _print_construct

# A dataclass that calling the class would not rebuild exactly (frozen with __post_init__,
# ``init=False`` fields, extra attributes): ``object.__new__`` and one setattr per attribute.
dataclass_new = _python_prim("dataclass_new", _construct_meta, "dataclass_new")
# A mapping dataclass (transformers' ModelOutput) whose keys differ from what its
# constructor makes: ``r = cls()`` then ``r[k] = v`` in the recorded order, then attributes.
mapping_new = _python_prim("mapping_new", _construct_meta, "dataclass_new")


# An object of a Python class made inside the function (a transformers DynamicCache):
# ``object.__new__(cls)`` (no ``__init__``) with its attributes set in order, as keywords
# (``any1 = pythonex.object_new(C, keys=t0, is_initialized=True)``).
object_new = _python_prim("object_new", _construct_meta, "dataclass_new")
# One attribute of an object that takes part in a reference cycle, set once both exist.
object_setattr = _python_prim("object_setattr", _setattr_meta, "dataclass_new")


def _print_unpack(bsym, printer) -> str:
    container, key = bsym.args
    from thunder.core.printing import type_comment

    line = f"{bsym.output.name} = {bsym.sym.id}({printer.value(container)}, {printer.value(key)})"
    c = type_comment([bsym.output])
    return f"{line}  # {c}" if c else line


for _s in (unpack_item, unpack_attr, unpack_param, unpack_buffer, unpack_submodule):
    _s.printer = _print_unpack


def _print_del(bsym, printer) -> str:
    return "del " + ", ".join(p.name for p in bsym.args)


python_del = _python_prim("python_del", _no_output, "del")
python_del.printer = _print_del


def _print_unpack_captured(bsym, printer) -> str:
    from thunder.core.printing import type_comment

    line = f"{bsym.output.name} = {printer.value(bsym.args[0])}"
    c = type_comment([bsym.output])
    return f"{line}  # {c}" if c else line


# A tensor captured from a closure or a global: the prologue refers to it by name.
unpack_captured = _python_prim("unpack_captured", _unpack_meta, "unpack")
unpack_captured.printer = _print_unpack_captured


# Integer arithmetic on numbers that change from call to call (a step counter read from an
# input and written back): ``i1 = i0 + 1``.
NUMBER_OPS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "floordiv": "//",
    "mod": "%",
}


def _number_meta(op: str):
    import operator

    fn = getattr(operator, op)

    def meta(a, b):
        from thunder.core.proxies import NumberProxy

        value = fn(getattr(a, "value", a), getattr(b, "value", b))
        return NumberProxy(current_trace().make_name("i"), value)

    meta.__name__ = f"number_{op}_meta"
    return meta


def number_printer(symbol: str):
    def printer(bsym, p) -> str:
        a, b = bsym.args
        return f'{bsym.output.name} = {p.value(a)} {symbol} {p.value(b)}  # {bsym.output.name}: "int"'

    return printer


for _op, _symbol in NUMBER_OPS.items():
    _s = _python_prim(f"number_{_op}", _number_meta(_op), "number")
    _s.printer = number_printer(_symbol)
    globals()[f"number_{_op}"] = _s
