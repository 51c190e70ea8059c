"""Deeply nested programs: the recursive parser, type checker, printer and interpreter run on a
thread with a large stack and a high recursion limit, so a few thousand levels of nesting work;
deeper than that gives a one-line error instead of a ``RecursionError`` dump.

``MAX_NESTING`` is the deepest nesting the parser accepts (brackets, calls, functions, types,
patterns); anything it accepts can be checked, printed and evaluated.
"""
from __future__ import annotations

import functools
import sys
import threading

__all__ = ["MAX_NESTING", "deep"]

MAX_NESTING = 5_000
_RECURSION_LIMIT = 40 * MAX_NESTING      # Python frames per nesting level: about 10 in the parser
_STACK_BYTES = 512 * 1024 * 1024         # virtual; only the pages a deep program touches are used

_state = threading.local()
_limit_lock = threading.Lock()
_active = 0


def deep(error_factory):
    """Decorate an entry point so that it runs with room for deep recursion.  A
    ``RecursionError`` that still happens becomes ``error_factory(message)``."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if getattr(_state, "inside", False):
                return fn(*args, **kwargs)
            result, failure = [], []

            def work():
                _state.inside = True
                try:
                    result.append(fn(*args, **kwargs))
                except RecursionError:
                    failure.append(error_factory(
                        f"the program is nested more than about {MAX_NESTING} levels deep; "
                        f"flatten it (e.g. with let or graph bindings)"))
                except BaseException as e:   # re-raised on the caller's thread
                    failure.append(e)
                finally:
                    _state.inside = False
            _run_on_big_stack(work)
            if failure:
                raise failure[0]
            return result[0]
        return wrapper
    return deco


def _run_on_big_stack(work):
    global _active
    with _limit_lock:
        if _active == 0:
            _run_on_big_stack.saved = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_RECURSION_LIMIT, _run_on_big_stack.saved))
        _active += 1
    try:
        old = threading.stack_size()
        with _limit_lock:
            threading.stack_size(_STACK_BYTES)
            t = threading.Thread(target=work, name="relay-deep", daemon=True)
            threading.stack_size(old)
        t.start()
        t.join()
    finally:
        with _limit_lock:
            _active -= 1
            if _active == 0:
                sys.setrecursionlimit(_run_on_big_stack.saved)
