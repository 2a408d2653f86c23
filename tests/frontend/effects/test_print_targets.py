"""Prints to a file (``file=sys.stdout``, a global ``io.StringIO``, an open file, a file passed
in) and the prints, warnings and log records of library code: made on every call as eager
makes them, those under a cache (``logger.warning_once``) once."""

from __future__ import annotations

import contextlib
import dis
import io
import logging
import os
import sys
import textwrap
import warnings

import numpy as np
import pytest
import torch

import thunder
from thunder.core.proxies import Proxy
from thunder.frontend.prologue import code_reads

_BUF = io.StringIO()


def _printing(x):
    y = x * 2
    print("out", y, file=sys.stdout, sep="|", end="!\n", flush=True)
    print("err", file=sys.stderr)
    print("buf", y.shape[0], file=_BUF, sep="-")
    print("plain", end="")
    print()
    return y


def test_print_to_stdout_stderr_and_a_global_buffer_every_call(capsys):
    runs = []
    for fn in (_printing, thunder.jit(_printing)):
        _BUF.seek(0)
        _BUF.truncate()
        outs = []
        for i in range(3):
            torch.testing.assert_close(fn(torch.full((2,), float(i))), torch.full((2,), 2.0 * i))
            outs.append(capsys.readouterr())
            assert not isinstance(sys.stdout, Proxy)
        runs.append(([(o.out, o.err) for o in outs], _BUF.getvalue()))
    assert runs[0] == runs[1]
    assert runs[1][0][2] == ("out|tensor([4., 4.])!\nplain\n", "err\n")


def test_print_follows_a_redirect_made_between_calls():
    def f(x):
        print("a", x.shape[0], file=sys.stdout)
        print("b")
        return x + 1

    jf = thunder.jit(f)
    for _ in range(3):
        target = io.StringIO()
        with contextlib.redirect_stdout(target):
            jf(torch.ones(2))
        assert target.getvalue() == "a 2\nb\n"


def test_print_to_an_open_file_in_a_closure_and_to_a_file_argument(tmp_path):
    path = tmp_path / "out.txt"
    with open(path, "w") as fh:

        def f(x, sink):
            print("step", x.sum(), file=fh)
            print("to", file=sink)
            return x * 3

        jf = thunder.jit(f)
        sinks = [io.StringIO(), io.StringIO(), io.StringIO()]
        for i, sink in enumerate(sinks):
            jf(torch.ones(2) * i, sink)
        sinks.append(sinks[0])
        jf(torch.ones(2), sinks[0])
    assert path.read_text().splitlines() == [f"step {torch.tensor(2.0 * i)!s}" for i in range(3)] + [
        f"step {torch.tensor(2.0)!s}"
    ]
    assert [s.getvalue() for s in sinks[:3]] == ["to\nto\n", "to\n", "to\n"]


_LIB = """
import functools
import logging
import warnings

logger = logging.getLogger("thunder_test_printlib")


@functools.lru_cache(None)
def warning_once(msg):
    logger.warning(msg)


class Helper:
    @functools.lru_cache(None)
    def note(self, msg):
        print(msg)


HELPER = Helper()


def stats(x):
    if logger.isEnabledFor(logging.DEBUG):  # (what a trace cannot compute, when not shown)
        logger.debug("max %s", float(x.max()))
    return x + 1


def helper(x):
    print("helper", x)
    logger.warning("logged %s", x)
    warnings.warn("library warning", stacklevel=2)
    warnings.warn("library warning here")
    warning_once("once only")
    HELPER.note("noted once")
    return x * 2
"""


@pytest.fixture
def printlib(tmp_path, monkeypatch):
    """A module of a library: its directory is one of those installed packages are in."""
    (tmp_path / "thunder_test_printlib.py").write_text(textwrap.dedent(_LIB))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(
        code_reads, "_LIBRARY_DIRS", (*code_reads._LIBRARY_DIRS, os.path.join(str(tmp_path), ""))
    )
    import thunder_test_printlib

    yield thunder_test_printlib
    sys.modules.pop("thunder_test_printlib", None)


def test_library_prints_logs_and_warnings_every_call(printlib, capsys, caplog, monkeypatch):
    def f(x):
        return printlib.helper(x) + 1

    def run(fn):
        printlib.warning_once.cache_clear()
        printlib.Helper.note.cache_clear()
        caplog.clear()
        outs = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.resetwarnings()  # the default filter: each location once
            warnings.simplefilter("default")
            for i in range(3):
                torch.testing.assert_close(fn(torch.full((2,), float(i))), torch.full((2,), 2.0 * i + 1))
                outs.append(capsys.readouterr().out)
        records = sorted(r.getMessage() for r in caplog.records)
        shown = [(str(w.message), w.filename) for w in caught]
        return outs, records, shown

    with caplog.at_level(logging.WARNING, logger="thunder_test_printlib"):
        eager = run(f)
        # (the registry of once-shown locations is per module: forgotten between the runs)
        globals().pop("__warningregistry__", None)
        vars(printlib).pop("__warningregistry__", None)
        jitted = run(thunder.jit(f))
    assert eager[0] == [
        "helper tensor([0., 0.])\nnoted once\n",
        "helper tensor([1., 1.])\n",
        "helper tensor([2., 2.])\n",
    ]
    assert jitted[0][1:] == eager[0][1:]
    assert sorted(jitted[0][0].splitlines()) == sorted(
        eager[0][0].splitlines()
    )  # (the cached one while tracing)
    assert jitted[1] == eager[1]
    assert sorted(jitted[2]) == sorted(eager[2])
    assert sorted(eager[2]) == [("library warning", __file__), ("library warning here", printlib.__file__)]


def test_torch_s_own_warnings_are_not_recorded():
    def f(x):
        return torch.nn.functional.upsample(x, scale_factor=2) * 2  # (torch warns, from its own code)

    jf = thunder.jit(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            jf(torch.ones(1, 1, 2))
    assert 0 < len(caught) <= 1
    assert "pythonex.python_call" not in str(thunder.last_epilogue_traces(jf)[-1])


def test_a_redirect_inside_the_function_keeps_a_library_s_prints_silent(printlib, capsys):
    def f(x):
        with contextlib.redirect_stdout(io.StringIO()):
            y = printlib.helper(x)
        print("kept")
        return y

    jf = thunder.jit(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(3):
            jf(torch.ones(2))
            assert capsys.readouterr().out == "kept\n"


def test_a_library_s_debug_branch_is_not_taken_when_its_logger_does_not_show_it(printlib, caplog):
    jf = thunder.jit(printlib.stats)
    with caplog.at_level(logging.INFO, logger="thunder_test_printlib"):
        for i in range(3):
            torch.testing.assert_close(jf(torch.ones(2) * i), torch.ones(2) * i + 1)
    assert caplog.records == []


def _tiny():
    return 1


def test_the_standard_library_s_prints_for_the_user_s_code_every_call(capsys):
    def f(x):
        dis.dis(_tiny)  # (prints from the standard library, called by the user's code)
        return x + 1

    outs = []
    for fn in (f, thunder.jit(f)):
        for _ in range(3):
            fn(torch.ones(2))
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and outs[0].count("RETURN_VALUE") == 3


def test_writes_to_sys_stdout_and_stderr_every_call_to_the_current_streams(capsys):
    def f(x):
        sys.stdout.write("out\n")
        sys.stderr.write("err\n")
        sys.stdout.writelines(["a", "b\n"])
        sys.stdout.flush()
        return x + 1

    runs = []
    for fn in (f, thunder.jit(f)):
        got = []
        for _ in range(3):
            target = io.StringIO()
            with contextlib.redirect_stdout(target):
                fn(torch.ones(2))
            got.append((target.getvalue(), capsys.readouterr()))
        runs.append(got)
    assert runs[0] == runs[1]
    assert runs[1][2][0] == "out\nab\n" and runs[1][2][1].err == "err\n"
    assert not isinstance(sys.stdout, thunder.frontend.effects.python_calls.RecordedStream)


def test_reading_the_state_of_sys_stdout_is_refused_with_the_line():
    def f(x):
        sys.stdout.buffer.write(b"raw")
        return x + 1

    with pytest.raises(Exception, match=r"buffer of the file(.|\n)*test_print_targets.py.*sys.stdout.buffer"):
        thunder.jit(f)(torch.ones(2))


def test_a_print_of_a_numpy_array_and_of_a_c_object_every_call(capsys):
    values = np.arange(3)
    token = object()

    def f(x):
        print("values", values, token is token, x.sum())
        return x + 1

    outs = []
    for fn in (f, thunder.jit(f)):
        for i in range(3):
            values[0] = i  # (shown as it is at each call)
            fn(torch.ones(2))
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]


def test_a_log_record_names_the_line_that_logged(caplog):
    log = logging.getLogger("thunder_test_print_targets")

    def f(x):
        log.warning("value %s", x.sum())
        log.warning("named %(n)s", {"n": 3})
        return x + 1

    def run(fn):
        caplog.clear()
        for _ in range(3):
            fn(torch.ones(2))
        return [(r.getMessage(), r.filename, r.lineno, r.funcName) for r in caplog.records]

    with caplog.at_level(logging.WARNING, logger="thunder_test_print_targets"):
        eager, jitted = run(f), run(thunder.jit(f))
    assert jitted == eager and len(eager) == 6 and eager[0][1] == os.path.basename(__file__)


# -- a print shows the value as it is at the print ---------------------------------------------
_LOG = logging.getLogger("thunder.test.prints")


def _writes_between_prints(x):
    print("before", x)
    x.add_(1)
    print("between", x, [x])
    _LOG.warning("logged %s", x)
    x.mul_(2)
    print("after", x)
    return x * 3


def _without_autograd(text: str) -> str:
    # (eager's and thunder's graph nodes have other names: the values are compared)
    import re

    return re.sub(r",\s*(grad_fn=<[^>]*>|requires_grad=True)", "", text)


@pytest.mark.parametrize("grad", [False, True], ids=["plain", "non-leaf requiring grad"])
def test_prints_around_in_place_writes_show_the_value_at_each_print(capsys, caplog, grad):
    jfn = thunder.jit(_writes_between_prints)
    for call in range(3):
        base = torch.full((2,), float(call), requires_grad=grad)
        x, y = base * 1, base.detach() * 1  # (a non-leaf input may be written in place)
        with caplog.at_level(logging.WARNING, logger="thunder.test.prints"):
            caplog.clear()
            want_out = _writes_between_prints(y)
            want = capsys.readouterr().out, caplog.text  # (formatted as each record was emitted)
            caplog.clear()
            got_out = jfn(x)
            got = capsys.readouterr().out, caplog.text
        assert _without_autograd(got[0]) == want[0]
        assert _without_autograd(got[1]).split("logged")[1] == want[1].split("logged")[1]
        torch.testing.assert_close(got_out.detach(), want_out)
        torch.testing.assert_close(x.detach(), y)
