"""Finding nvFuser: which of its Python modules is installed, and why it cannot be used.

nvFuser is optional (its wheels are built against one torch version each), so nothing here
imports it until a fusion is defined. Two modules define fusions:

- ``nvfuser_direct`` (0.2.36 ships only this one): ``from nvfuser_direct import
  FusionDefinition, DataType``; values print as ``tv0``; the FusionDefinition is made
  without touching the GPU, and its values answer ``dtype()`` and ``ndim``.
- ``nvfuser`` (the older module; 0.2.35 ships both): the same ``define_tensor``,
  ``define_scalar``, ``fd.ops.*`` and ``add_output`` calls for everything the translation
  emits, but values print as ``T0``/``S1``, they answer only ``ndim`` (``shape()`` records
  new ops into the definition), ``iota`` takes defined scalars only, ops are checked when
  the ``with`` block closes, and the first ``FusionDefinition()`` in a process initialises a
  CUDA-backed cache: without a GPU that first call raises and later ones work.
"""

from __future__ import annotations

import functools
import importlib

import torch

# The modules tried, in order, when no ``api`` is named.
APIS = ("nvfuser_direct", "nvfuser")

# torch dtype -> the name of nvFuser's ``DataType`` member (same in both modules).
DATATYPE_NAMES = {
    torch.float64: "Double",
    torch.float32: "Float",
    torch.float16: "Half",
    torch.bfloat16: "BFloat16",
    torch.int64: "Int",
    torch.int32: "Int32",
    torch.bool: "Bool",
    torch.complex64: "ComplexFloat",
    torch.complex128: "ComplexDouble",
}

# A Python number's nvFuser scalar dtype, as torch sees the number.
NUMBER_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64}


class NvFuserUnavailable(RuntimeError):
    """nvFuser cannot be used here; the message says why."""


@functools.cache
def _import(api: str):
    """(module, None) or (None, why it did not import); memoised per process."""
    if api not in APIS:
        raise ValueError(f"thunder: unknown nvFuser API {api!r}; expected one of {APIS}")
    try:
        return importlib.import_module(api), None
    except Exception as e:  # a broken wheel raises ImportError, OSError, RuntimeError...
        return None, f"{type(e).__name__}: {e}"


def load(api: str | None = None):
    """The nvFuser module to define fusions with: ``api`` if named, else the first of
    ``APIS`` that imports. Raises ``NvFuserUnavailable`` saying why none did."""
    errors = []
    for name in (api,) if api else APIS:
        module, error = _import(name)
        if module is not None:
            return module
        errors.append(f"{name}: {error}")
    raise NvFuserUnavailable("nvfuser not importable: " + "; ".join(errors))


def api_name(module) -> str:
    return module.__name__.split(".")[0]


def unavailable_reason(api: str | None = None) -> str | None:
    """Why nvFuser cannot run fusions here (``"no CUDA device"``, ``"nvfuser not importable:
    ..."``), or None when it can. CUDA is asked first: importing a wheel built for another
    torch can itself fail or warn."""
    if not torch.cuda.is_available():
        return "no CUDA device"
    return definition_unavailable_reason(api)


def definition_unavailable_reason(api: str | None = None) -> str | None:
    """Why fusions cannot even be defined here (no GPU is needed to define one), or None."""
    try:
        load(api)
    except NvFuserUnavailable as e:
        return str(e)
    return None


def new_definition(module, calls: int = 0):
    """A fresh FusionDefinition for about ``calls`` definition calls. The older module holds
    at most ``max_length`` records (9999 by default; it adds records of its own, such as the
    shape of a reshape's result), and its first definition in a process fails without a GPU
    (see the module docstring): the second attempt is the one that counts."""
    if api_name(module) != "nvfuser":
        return module.FusionDefinition()
    max_length = max(9999, 2 * calls + 100)
    try:
        return module.FusionDefinition(max_length=max_length)
    except Exception:
        return module.FusionDefinition(max_length=max_length)
