"""Error codes shared by the simulators and the hardware status register (SPEC §4.6)."""

import os
import sys
import traceback
from enum import IntEnum

__all__ = ["ErrorCode", "InputError", "RejectedError", "RunTimeout", "Unavailable",
           "EXIT_OK", "EXIT_REJECTED", "EXIT_USAGE", "EXIT_INTERNAL", "EXIT_TIMEOUT",
           "EXIT_UNAVAILABLE", "EXIT_INTERRUPTED", "EXIT_CODES_HELP", "exit_code_of",
           "run_command"]


class ErrorCode(IntEnum):
    """The code the hardware latches in its status register; simulators raise with the same."""

    NONE = 0
    ILLEGAL_OPCODE = 1          # opcode 5..7
    ILLEGAL_MEMORY_TYPE = 2     # LOAD of OUT or 6/7; STORE of anything but OUT (unless x_size 0)
    ILLEGAL_ALU_OPCODE = 3      # alu_opcode 5..7
    ILLEGAL_DEP_FLAG = 4        # a must-be-zero token bit is set for the executing module
    STORE_PADDING = 5           # a STORE with a non-zero pad field
    SRAM_RANGE = 6              # an on-chip index past the buffer depth
    DRAM_RANGE = 7              # a DRAM address past the end of memory
    EMPTY_LOOP = 8              # iter_out == 0, iter_in == 0 or uop_end <= uop_bgn
    TOKEN_OVERFLOW = 9          # a push past TOKEN_QUEUE_DEPTH outstanding tokens
    DEADLOCK = 10               # every unfinished module waits on a token nobody can push
    MISSING_FINISH = 11         # the stream ended without a FINISH


# ---------------------------------------------------------------------------------------------
# Exit codes of the ``vta`` command (documented in ``vta --help`` and the README). Every layer
# states what its exceptions mean by an integer ``exit_code`` class attribute; the command maps
# any exception carrying one (:func:`run_command`). The classes below carry them for the layers that
# may import isa; Relay, which stands alone, sets the attribute on its own classes.
# :func:`run_command` (used by ``vta.cli.main`` and every layer's standalone ``main``) runs one
# command, prints one line for an error and returns the code; the traceback of an internal
# error only with ``vta --debug`` (or ``VTA_DEBUG=1``).
EXIT_OK = 0
EXIT_REJECTED = 1       # the program or model is rejected (simulation error, unsupported, ...)
EXIT_USAGE = 2          # bad usage, or an unreadable or invalid input file
EXIT_INTERNAL = 3       # a bug in this project
EXIT_TIMEOUT = 4        # a --timeout (or another bound the user set) ran out
EXIT_UNAVAILABLE = 5    # the tool, backend or board is not available on this machine
EXIT_INTERRUPTED = 130  # Ctrl-C


class InputError(ValueError):
    """An input the user gave (a file, an option value) is unreadable or invalid."""

    exit_code = EXIT_USAGE


class RejectedError(RuntimeError):
    """A well-formed program or model that cannot run (an error code, an unsupported op)."""

    exit_code = EXIT_REJECTED


class RunTimeout(RuntimeError):
    """A wall-clock or cycle bound set by the user ran out before the work finished."""

    exit_code = EXIT_TIMEOUT


class Unavailable(RuntimeError):
    """What the command needs (a tool, a backend, a board) is not available here."""

    exit_code = EXIT_UNAVAILABLE


#: Where an internal error (a bug) should be reported.
REPORT_TO = "the vta-py issue tracker (an issue with the command line and its input files)"

#: The table printed by ``vta --help`` and copied in the README.
EXIT_CODES_HELP = f"""\
exit status:
  {EXIT_OK}    success
  {EXIT_REJECTED}    the program or model was rejected: a simulation error (the message names the
       hardware's error code, the instruction index, the field and its value), an
       unsupported operator, a model that does not fit, a type error
  {EXIT_USAGE}    bad usage, or an input file that is missing, unreadable or invalid (nothing
       is written: outputs are checked before the work and written atomically)
  {EXIT_INTERNAL}    internal error: a bug in vta-py; one line says where to report it
       (vta --debug COMMAND ... prints the traceback)
  {EXIT_TIMEOUT}    --timeout ran out (the message says what was still running)
  {EXIT_UNAVAILABLE}    a tool, backend or board that the command needs is not available here
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)"""


def exit_code_of(exc: BaseException) -> int | None:
    """The documented exit code for ``exc``, or None if it is not an expected error."""
    code = getattr(type(exc), "exit_code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    if isinstance(exc, (UnicodeDecodeError, IsADirectoryError, NotADirectoryError,
                        FileNotFoundError, PermissionError)):
        return EXIT_USAGE
    return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return (f"the input is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                f"{exc.start})")
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) < 4000 else text[:4000] + " ..."


def debug_enabled() -> bool:
    return os.environ.get("VTA_DEBUG", "") not in ("", "0")


def run_command(func, args, name: str, *, debug: bool = False) -> int:
    """Run ``func(args)`` and turn whatever it raises into one line and an exit code."""
    debug = debug or debug_enabled()
    try:
        status = func(args)
        return EXIT_OK if status is None else int(status)
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of our standard output went away (``vta disasm X | head``): not an error.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except SystemExit as exc:     # a layer that still exits by itself
        if isinstance(exc.code, str):
            print(exc.code if exc.code.startswith("vta") else f"{name}: error: {exc.code}",
                  file=sys.stderr)
            return EXIT_USAGE
        return EXIT_OK if exc.code is None else int(exc.code)
    except Exception as exc:  # noqa: BLE001 - this is the one place that maps every error
        code = exit_code_of(exc)
        if code is None:
            if debug:
                traceback.print_exc()
            first = (_describe(exc).splitlines() or [""])[0]
            print(f"{name}: internal error: {type(exc).__name__}: {first} -- this is "
                  f"a bug in vta-py; please report it with the command line to {REPORT_TO}"
                  + ("" if debug else " (run 'vta --debug ...' for the traceback)"),
                  file=sys.stderr)
            return EXIT_INTERNAL
        if debug:
            traceback.print_exc()
        print(f"{name}: error: {_describe(exc)}", file=sys.stderr)
        return code
