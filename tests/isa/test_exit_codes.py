"""isa.errors.run_command: every exception becomes one line and its documented exit code."""

import sys

import pytest

from isa.errors import (EXIT_CODES_HELP, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_REJECTED,
                        EXIT_TIMEOUT, EXIT_UNAVAILABLE, EXIT_USAGE, InputError, RejectedError,
                        RunTimeout, Unavailable, run_command)


class _Relayish(Exception):
    exit_code = 1       # a layer that cannot import isa states its code by the attribute


def _raise(exc):
    def func(args):
        raise exc
    return func


@pytest.mark.parametrize("exc, code", [
    (InputError("bad file"), EXIT_USAGE), (RejectedError("SRAM_RANGE"), EXIT_REJECTED),
    (RunTimeout("slow"), EXIT_TIMEOUT), (Unavailable("no tool"), EXIT_UNAVAILABLE),
    (_Relayish("type error"), EXIT_REJECTED), (FileNotFoundError(2, "No such file", "x"),
                                               EXIT_USAGE),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid"), EXIT_USAGE),
    (KeyError("a bug"), EXIT_INTERNAL), (ZeroDivisionError(), EXIT_INTERNAL),
    (KeyboardInterrupt(), EXIT_INTERRUPTED), (BrokenPipeError(), EXIT_OK),
])
def test_each_exception_has_its_code_and_one_line(exc, code, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdout", sys.stdout)   # a broken pipe replaces it
    assert run_command(_raise(exc), None, "vta x") == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if code not in (EXIT_OK,):
        assert len(err.strip().splitlines()) == 1 and err.startswith("vta x: ")
    if code == EXIT_INTERNAL:
        assert "this is a bug in vta-py; please report it" in err and "--debug" in err


def test_debug_prints_the_traceback(capsys):
    assert run_command(_raise(KeyError("k")), None, "vta x", debug=True) == EXIT_INTERNAL
    assert "Traceback" in capsys.readouterr().err


def test_the_help_table_lists_every_code():
    for code in (EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_INTERNAL, EXIT_TIMEOUT,
                 EXIT_UNAVAILABLE, EXIT_INTERRUPTED):
        assert f"\n  {code} " in EXIT_CODES_HELP
