"""Ctrl-C that is never lost: SIGINT raises KeyboardInterrupt, but not inside an import.

Python ignores an exception raised in importlib's module-lock callback (it prints "Exception
ignored in ... cb" and carries on), numpy turns one raised while its C extension loads into an
ImportError, and CPython 3.11 exits by SIGINT after a KeyboardInterrupt escaped code that an
extension ran from a C string while it loaded, even when the caller handled it. A Ctrl-C that
lands anywhere inside an import is sent again a moment later, until it lands in plain code (bounded: after :data:`RETRY_LIMIT` tries it is
raised wherever it lands). This module imports nothing heavy: it is installed before the
layers load.
"""

from __future__ import annotations

import os
import signal
import threading

__all__ = ["install", "RETRY_S", "RETRY_LIMIT"]

#: How long an interrupt that landed in an import waits before it is sent again.
RETRY_S = 0.02
#: Tries before an interrupt is raised wherever it lands (2 s of imports).
RETRY_LIMIT = 100

_retries = 0


def _in_import(frame) -> bool:
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _on_interrupt(signum, frame):
    global _retries
    if _retries < RETRY_LIMIT and _in_import(frame):
        _retries += 1
        timer = threading.Timer(RETRY_S, os.kill, (os.getpid(), signum))
        timer.daemon = True
        timer.start()
        return
    _retries = 0
    raise KeyboardInterrupt


def install() -> None:
    """Use this handler for SIGINT where Python's own is installed (not where SIGINT is ignored,
    as under nohup) and from the main thread; otherwise change nothing."""
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        signal.signal(signal.SIGINT, _on_interrupt)
