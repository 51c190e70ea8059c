"""The ``vta`` command as a process: devices, FIFOs, signals, timeouts and a memory limit.

These run ``python -m vta`` (a few seconds each) for what an in-process call cannot show: a
read that would block forever, an exit status after a signal, a run under an address-space
limit that a materialised loop nest would blow.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from isa.errors import EXIT_INTERRUPTED, EXIT_TIMEOUT, EXIT_USAGE
from isa.image import save_image

from .test_simulators_bounded import PATHOLOGICAL

ROOT = Path(__file__).resolve().parents[2]
IMAGE = ROOT / "tests" / "data" / "conformance" / "small-pub-sram-edges.in.npz"


def _default_sigint():
    # A shell's background job (`make test &`, nohup) starts with SIGINT ignored and children
    # inherit that; a test that sends SIGINT wants the disposition a terminal gives.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def vta(*argv, env=None, timeout=120, preexec_fn=None):
    return subprocess.run([sys.executable, "-m", "vta", *map(str, argv)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, preexec_fn=preexec_fn)


def assert_clean(proc, code):
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-2000:]
    if code:
        lines = proc.stderr.strip().splitlines()
        assert lines and lines[-1].startswith("vta ") and ": error: " in lines[-1], lines


def test_devices_as_inputs_are_refused_quickly(tmp_path):
    never = tmp_path / "never.bin"
    for argv in (["run", "/dev/zero"], ["disasm", "/dev/zero"], ["asm", "/dev/zero", "-o", never],
                 ["config", "/dev/zero"], ["relay", "check", "/dev/zero"]):
        start = time.monotonic()
        proc = vta(*argv)
        assert_clean(proc, EXIT_USAGE)
        assert time.monotonic() - start < 60, argv
    assert not never.exists()


def test_a_fifo_without_a_writer_and_one_that_never_ends(tmp_path):
    fifo = tmp_path / "in.s"
    os.mkfifo(fifo)
    # No writer: reads as empty input; an empty program assembles to nothing.
    proc = vta("disasm", fifo, env={"VTA_PIPE_TIMEOUT": "2"})
    assert_clean(proc, 0)
    # A writer that never closes: bounded by the pipe timeout.
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    try:
        os.write(fd, b"FINISH\n")
        start = time.monotonic()
        proc = vta("asm", fifo, "-o", tmp_path / "x.bin", env={"VTA_PIPE_TIMEOUT": "2"})
        assert_clean(proc, EXIT_USAGE)
        assert "no end of input within 2 s" in proc.stderr
        assert time.monotonic() - start < 60
    finally:
        os.close(fd)
    assert not (tmp_path / "x.bin").exists()


def test_timeout_and_interrupt_leave_no_output(tmp_path):
    path = tmp_path / "huge.npz"
    save_image(path, PATHOLOGICAL["gemm-in-range"])
    out = tmp_path / "r.npz"
    for backend in ("functional", "cycle"):
        proc = vta("run", path, "--backend", backend, "--timeout", "1", "--out", out)
        assert_clean(proc, EXIT_TIMEOUT)
        assert "timed out after 1 s" in proc.stderr and "GEMM" in proc.stderr
        assert not out.exists() and not list(tmp_path.glob("*.part"))
    proc = subprocess.Popen([sys.executable, "-m", "vta", "run", str(path), "--out", str(out)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    try:
        time.sleep(8)           # imports done, deep in the GEMM (which runs for hours)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err and not out.exists()


def _limit_memory():
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))


@pytest.mark.parametrize("backend", ["functional", "cycle"])
def test_pathological_programs_run_under_a_memory_limit(tmp_path, backend):
    """3 GiB of address space: listing one instruction's executions needs hundreds."""
    for name in ("gemm-in-range", "gemm-early-bad"):
        path = tmp_path / f"{name}.npz"
        save_image(path, PATHOLOGICAL[name])
        proc = vta("run", path, "--backend", backend, "--timeout", "1",
                   preexec_fn=_limit_memory)
        assert_clean(proc, EXIT_TIMEOUT if "in-range" in name else 1)


def test_debug_prints_the_traceback_of_an_internal_error(tmp_path):
    """An internal error (here: a broken trace writer) is one line, or a traceback with
    --debug; both exit 3."""
    script = ("import sys, sim.cycle_trace as t\n"
              "def boom(*a, **k): raise ZeroDivisionError('boom')\n"
              "t.write_trace = boom\n"
              "from vta.cli import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    argv = ["run", str(IMAGE), "--backend", "cycle", "--trace", str(tmp_path / "t.json")]
    for extra, traceback in (([], False), (["--debug"], True)):
        proc = subprocess.run([sys.executable, "-c", script, *extra, *argv], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 3, proc.stderr
        assert ("Traceback" in proc.stderr) == traceback
        assert "internal error: ZeroDivisionError: boom" in proc.stderr
        assert "this is a bug in vta-py; please report it" in proc.stderr


_LANDS_IN_IMPORT = """
import signal, sys, time
from vta import interrupts
interrupts.install()
assert signal.getsignal(signal.SIGINT) is interrupts._on_interrupt
# a frame of the import machinery, where Python would ignore the KeyboardInterrupt
ns = {"sys": sys}
exec(compile("frame = sys._getframe()", "<frozen importlib._bootstrap>", "exec"), ns)
start = time.monotonic()
interrupts._on_interrupt(signal.SIGINT, ns["frame"])     # deferred: no exception here
print("deferred", flush=True)
try:
    time.sleep(30)
except KeyboardInterrupt:
    print("raised again", flush=True)
assert time.monotonic() - start < 10      # re-sent at once, not waiting out the sleep
interrupts._retries = interrupts.RETRY_LIMIT
try:
    interrupts._on_interrupt(signal.SIGINT, ns["frame"])
except KeyboardInterrupt:
    print("raised at the limit", flush=True)
"""


def test_an_interrupt_in_the_import_machinery_is_sent_again_not_lost(tmp_path):
    """A Ctrl-C landing in importlib's module-lock callback was ignored by Python and the
    command ran on for hours (a flaky test_timeout_and_interrupt_leave_no_output under load)."""
    script = tmp_path / "lands_in_import.py"
    script.write_text(_LANDS_IN_IMPORT)
    proc = subprocess.run([sys.executable, str(script)], cwd=ROOT, env={**os.environ,
                                                                      "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60, preexec_fn=_default_sigint)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["deferred", "raised again", "raised at the limit"]


def test_install_leaves_an_ignored_interrupt_ignored():
    script = ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
              "from vta import interrupts\ninterrupts.install()\n"
              "assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
