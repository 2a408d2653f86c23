"""Hands off the user's state: what a measurement could touch, saved before it runs and put back after.

A measurement runs the user's program (or a new compilation of it) on the user's own inputs, so
whatever the program writes would be changed by the explorer: tensors written in place (an
input's ``x.add_(1)``, a BatchNorm's running statistics and ``num_batches_tracked``), attributes
set (``self.calls += 1``), items appended, globals rebound, and the random number generators
drawn from (dropout). ``Snapshot`` records all of that before the run::

    with Snapshot.kept(jfn, args, kwargs):    # walks what the call can reach
        ...                                   # run it as often as needed
    # here every tensor, attribute, item and RNG is as it was (also after an error)

What is walked: the arguments, the module behind a jitted module (its parameters, buffers,
``.grad``s, submodules, their attribute dictionaries and the functions of their classes), and for
functions (the target and the user's functions it reaches) their closure cells, defaults and the
globals their code names; from those, lists, dicts, sets, tuples and objects' attributes (their
``__dict__`` and ``__slots__``). Library code (torch, thunder, numpy) is not walked into, except
``nn.Module``s. Tensors are saved by value (CUDA tensors on the host, so that the device's memory
figures are not disturbed; every tensor reached is copied, parameters included, so a snapshot
costs a copy of the model in host memory) and written back only where they changed (their version
counter moved or their values differ): writing back a tensor nobody wrote would bump its version
and break an autograd graph that saved it. Dicts, lists and sets are put back item by item,
keeping their identity. The RNG states of torch (CPU, and every CUDA device once CUDA is
initialised), Python's ``random`` and numpy's are restored, so restoring a snapshot also starts
each run of a measurement from the same random numbers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import random
import sys
import types

import torch

_ATOMS = (int, float, complex, bool, str, bytes, type(None), torch.dtype, torch.device, torch.Size)
_LIBRARIES = frozenset({"torch", "thunder", "explorer", "numpy", "builtins", "typing", "enum", "abc"})
_LIMIT = 200_000  # objects walked at most (a walk that reaches further says so: ``complete``)
_MISSING = object()


def target_of(obj):
    """The function or module a jitted function was made from (``obj`` itself when it was not jitted)."""
    model = getattr(obj, "_model", None)
    if isinstance(model, torch.nn.Module):
        return model
    fn = getattr(obj, "fn", None)
    if callable(fn) and hasattr(obj, "executors"):
        return fn
    return obj


def _library(obj) -> bool:
    """Defined by a library the walk does not enter (its own state is not the user's)."""
    try:
        name = getattr(obj, "__module__", None)
    except Exception:  # an object whose ``__getattr__`` raises something else
        name = None
    if not isinstance(name, str):
        name = getattr(type(obj), "__module__", None) or ""
    return name.partition(".")[0] in _LIBRARIES


# -- random number generators -----------------------------------------------------------------
@dataclasses.dataclass
class RngState:
    """The states of torch's generators (CPU, and the CUDA devices' when CUDA is initialised),
    Python's ``random`` and numpy's global generator (when numpy is imported)."""

    torch_cpu: torch.Tensor
    torch_cuda: list | None
    python: object
    numpy: object

    @classmethod
    def capture(cls) -> RngState:
        cuda = (
            torch.cuda.get_rng_state_all()
            if torch.cuda.is_available() and torch.cuda.is_initialized()
            else None
        )
        np = sys.modules.get("numpy")
        return cls(torch.get_rng_state(), cuda, random.getstate(), np.random.get_state() if np else None)

    def restore(self) -> None:
        """Every generator back to this state (so the next draw is the one that came next then)."""
        torch.set_rng_state(self.torch_cpu)
        if self.torch_cuda is not None:
            torch.cuda.set_rng_state_all(self.torch_cuda)
        random.setstate(self.python)
        np = sys.modules.get("numpy")
        if np is not None and self.numpy is not None:
            np.random.set_state(self.numpy)


# -- tensors ------------------------------------------------------------------------------------
def _version(t: torch.Tensor) -> int | None:
    try:
        return t._version
    except RuntimeError:  # an inference tensor has no version counter
        return None


@dataclasses.dataclass
class _SavedTensor:
    tensor: torch.Tensor
    value: torch.Tensor | None
    version: int | None
    requires_grad: bool
    grad: torch.Tensor | None  # the leaf's ``.grad`` object (its value is saved as a tensor of its own)

    @classmethod
    def of(cls, t: torch.Tensor) -> _SavedTensor:
        value = None
        if t.device.type != "meta":  # (a meta tensor has no values to write)
            with torch.no_grad():
                try:
                    value = t.detach().to("cpu", copy=True) if t.is_cuda else t.detach().clone()
                except Exception:  # a subclass without a host copy: a copy on its device
                    value = t.detach().clone()
        grad = t.grad if t.is_leaf else None
        return cls(t, value, _version(t), t.requires_grad, grad)

    def restore(self) -> None:
        t = self.tensor
        if t.is_leaf:
            if t.grad is not self.grad:
                t.grad = self.grad
            if t.requires_grad != self.requires_grad:
                t.requires_grad_(self.requires_grad)
        if self.value is None or not self.changed():
            return
        if self.version is None:  # an inference tensor: written inside inference mode
            with torch.inference_mode():
                t.copy_(self.value)
        else:
            with torch.no_grad():
                t.copy_(self.value)

    def changed(self) -> bool:
        """Written since saved: its version moved, or its values differ (a BatchNorm's kernel
        updates the running statistics without moving their version)."""
        t = self.tensor
        if self.version is not None and _version(t) != self.version:
            return True
        try:
            with torch.no_grad():
                return not torch.equal(t.detach().to(self.value.device), self.value)
        except Exception:  # a subclass without equal: its version is what there is to go by
            return self.version is None


# -- the walk -----------------------------------------------------------------------------------
def _code_names(code: types.CodeType) -> set[str]:
    """The global names a function's code (and the code nested in it) can read or write."""
    names, stack = set(), [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return names


def _slots(cls) -> list[str]:
    out = []
    for k in cls.__mro__:
        s = k.__dict__.get("__slots__", ())
        out += [s] if isinstance(s, str) else [n for n in s if n not in ("__dict__", "__weakref__")]
    return out


class Snapshot:
    """Everything a call of the user's program could change, saved (see the module docstring)."""

    def __init__(self, roots, *, limit: int = _LIMIT):
        self.tensors: list[_SavedTensor] = []
        self.dicts: list[tuple[dict, list]] = []  # (the dict, its items in order)
        self.lists: list[tuple[list, list]] = []
        self.sets: list[tuple[set, set]] = []
        self.slots: list[tuple[object, str, object]] = []
        self.globals: list[tuple[dict, str, object]] = []
        self.rng = RngState.capture()
        self.complete = True
        self._keep: list[object] = []  # the objects walked, alive while saved (their ids stay theirs)
        self._walk(list(roots), limit)

    @classmethod
    def of(cls, obj, args=(), kwargs=None) -> Snapshot:
        """The state a call of ``obj`` (a jitted function or module) on ``args`` can reach."""
        return cls([args, kwargs or {}, target_of(obj)])

    @classmethod
    @contextlib.contextmanager
    def kept(cls, obj, args=(), kwargs=None):
        """``with Snapshot.kept(jfn, args, kwargs) as snap:`` the block runs, then everything the
        call can reach is put back (also when the block raises)."""
        snap = cls.of(obj, args, kwargs)
        try:
            yield snap
        finally:
            snap.restore()

    def _walk(self, stack: list, limit: int) -> None:
        seen: set[int] = set()
        while stack:
            o = stack.pop()
            if isinstance(o, _ATOMS) or id(o) in seen:
                continue
            if len(seen) >= limit:
                self.complete = False
                return
            seen.add(id(o))
            self._keep.append(o)
            try:
                self._visit(o, stack)
            except Exception:  # an object that cannot be read as the walk reads it: not saved
                self.complete = False

    def _visit(self, o, stack: list) -> None:
        """Save ``o`` (a tensor's values, a container's items, an object's attributes) and
        push what it holds."""
        if isinstance(o, torch.Tensor):
            saved = _SavedTensor.of(o)
            self.tensors.append(saved)
            if saved.grad is not None:
                stack.append(saved.grad)
            return
        if isinstance(o, (type, types.ModuleType, types.BuiltinFunctionType)):
            return
        if isinstance(o, types.FunctionType):
            if not _library(o):
                self._function(o, stack)
            return
        if isinstance(o, types.MethodType):
            stack += [o.__self__, o.__func__]
            return
        if isinstance(o, functools.partial):
            stack += [o.func, o.args, o.keywords]
            return
        if isinstance(o, dict):  # (read as a dict: a subclass's __getitem__ may do anything)
            self.dicts.append((o, list(dict.items(o))))
            stack += list(dict.values(o))
            return
        if isinstance(o, list):
            self.lists.append((o, list.copy(o)))
            stack += list.copy(o)
            return
        if isinstance(o, set):
            self.sets.append((o, set(o)))
            stack += list(o)
            return
        if isinstance(o, (tuple, frozenset)):
            stack += list(o)
            return
        if not isinstance(o, torch.nn.Module) and _library(o):
            return
        d = getattr(o, "__dict__", None)
        if isinstance(d, dict):
            stack.append(d)
        for name in _slots(type(o)):
            value = getattr(o, name, _MISSING)
            self.slots.append((o, name, value))
            stack.append(value)
        if isinstance(o, torch.nn.Module) and not _library(type(o)):
            # its methods read globals too (a config, a counter)
            stack += [f for k in type(o).__mro__ if not _library(k) for f in vars(k).values()]

    def _function(self, fn: types.FunctionType, stack: list) -> None:
        """A function's closure cells, defaults and the globals its code names."""
        for cell in fn.__closure__ or ():
            try:
                stack.append(cell.cell_contents)
            except ValueError:  # an empty cell
                pass
        stack += [fn.__defaults__, fn.__kwdefaults__]
        g = fn.__globals__
        for name in _code_names(fn.__code__):
            value = g.get(name, _MISSING)
            self.globals.append((g, name, value))
            if value is not _MISSING:
                stack.append(value)

    def restore(self) -> None:
        """Put back every binding, item and attribute, then every tensor written and the RNGs.
        What cannot be put back is named in one error, after all the rest is put back."""
        failed: list[str] = []
        for what, put_back in self._steps():
            try:
                put_back()
            except Exception as e:
                failed.append(f"{what}: {type(e).__name__}: {e}")
        if failed:
            raise RuntimeError("explorer: the measurement could not put back " + "; ".join(failed[:5]))

    def _steps(self):
        for g, name, value in self.globals:
            yield f"the global {name}", functools.partial(_rebind, g, name, value)
        for live, saved in self.dicts:
            yield "a dict", functools.partial(_put_items, live, saved)
        for live, saved in self.lists:
            yield "a list", functools.partial(_put_list, live, saved)
        for live, saved in self.sets:
            yield "a set", functools.partial(_put_set, live, saved)
        for o, name, value in self.slots:
            yield (
                f"the attribute {name} of a {type(o).__name__}",
                functools.partial(_put_slot, o, name, value),
            )
        for t in self.tensors:
            yield f"a tensor {list(t.tensor.shape)}", t.restore
        yield "the random number generators", self.rng.restore


def _rebind(g: dict, name: str, value) -> None:
    if value is _MISSING:
        g.pop(name, None)
    elif g.get(name, _MISSING) is not value:
        g[name] = value


def _put_items(live: dict, saved: list) -> None:
    now = list(dict.items(live))
    if len(now) != len(saved) or any(a[0] != b[0] or a[1] is not b[1] for a, b in zip(now, saved)):
        live.clear()
        live.update(saved)


def _put_list(live: list, saved: list) -> None:
    if len(live) != len(saved) or any(a is not b for a, b in zip(list.copy(live), saved)):
        live[:] = saved


def _put_set(live: set, saved: set) -> None:
    if live != saved:
        live.clear()
        live.update(saved)


def _put_slot(o, name: str, value) -> None:
    if value is _MISSING:
        if hasattr(o, name):
            delattr(o, name)
    elif getattr(o, name, _MISSING) is not value:
        setattr(o, name, value)
