"""The helper process that compiles regions with Inductor while they run as their torch calls
(``thunder/executors/inductor/worker.py`` is its side): jobs go to it through a writer thread (a
large program must not block the calling thread on a full pipe), answers come back through a
reader thread as futures, and a process that ends fails what it had not answered."""

from __future__ import annotations

import concurrent.futures
import os
import queue
import subprocess
import sys
import threading

from thunder.core.source import THUNDER_DIR
from thunder.executors.inductor.compile import compile_settings, read_message, write_message


class Helper:
    """The helper process (``thunder/executors/inductor/worker.py``), started on first use:
    jobs go to it through a writer thread (a large program must not block the calling
    thread on a full pipe) and answers come back through a reader thread, as futures."""

    def __init__(self):
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.outbox: queue.Queue | None = None
        self.futures: dict[int, concurrent.futures.Future] = {}
        self.count = 0

    def submit(self, program: tuple, meta: list, grad: bool) -> concurrent.futures.Future:
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            self.count += 1
            future = concurrent.futures.Future()
            self.futures[self.count] = future
            self.outbox.put((self.count, program, meta, grad, compile_settings()))
            return future

    def _start(self) -> None:
        root = os.path.dirname(THUNDER_DIR.rstrip(os.sep))  # (the folder thunder is imported from)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "thunder.executors.inductor.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self.outbox = queue.Queue()
        threading.Thread(target=self._write, args=(self.proc, self.outbox), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        threading.Thread(target=prepare_loading, daemon=True).start()

    @staticmethod
    def _write(proc: subprocess.Popen, outbox: queue.Queue) -> None:
        while (job := outbox.get()) is not None:
            try:
                write_message(proc.stdin, job)
            except (BrokenPipeError, OSError):
                return

    def _read(self, proc: subprocess.Popen) -> None:
        ended = None
        try:
            while (answer := read_message(proc.stdout)) is not None:
                number, error, cpp = answer
                with self.lock:
                    future = self.futures.pop(number, None)
                if future is not None:
                    future.cpp_wrapper = cpp  # (the wrapper that compiled: loaded alone, no retry)
                    future.set_result(error)
        except Exception as e:  # an answer that cannot be read: the calls must not wait forever
            ended = f"an answer of the compiling process could not be read: {type(e).__name__}: {e}"
            proc.kill()
        with self.lock:  # the process ended: what it had not answered fails
            left = [f for f in self.futures.values()]
            self.futures.clear()
        for future in left:
            future.set_result(ended or f"the compiling process ended (exit code {proc.wait()})")

    def close(self) -> None:
        with self.lock:
            proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()


def prepare_loading() -> None:
    """Meanwhile, here: import Inductor and let it probe the CPU's vector instructions (by
    compiling small programs), which loading the first compiled region would otherwise do
    (seconds). Neither traces anything. Only a head start: where it fails (the interpreter
    shutting down meanwhile refuses imports), loading does it."""
    try:
        import torch._inductor.compile_fx  # noqa: F401
        from torch._inductor import cpu_vec_isa

        cpu_vec_isa.valid_vec_isa_list()
    except Exception:
        pass
