"""Reading untrusted input files and writing outputs safely, for every command.

* Reads are bounded in size and, for pipes and devices, in time: ``/dev/zero`` or a FIFO whose
  writer never finishes gives an :class:`~isa.errors.InputError`, not a hang.
* Text is UTF-8 (an error names the first bad byte); JSON rejects deep nesting, numbers longer
  than :data:`MAX_NUMBER_DIGITS` digits, NaN and infinities.
* ``.npz``/``.npy`` files are parsed from memory with ``allow_pickle=False``; a corrupted,
  truncated or oversized archive (zlib, EOF, header, zip errors, a header promising more data
  than the file holds) is one :class:`~isa.errors.InputError`.
* Outputs are checked before the work (:func:`check_output`) and written through a temporary
  file in the same directory that is renamed at the end (:func:`atomic_output`), so a failure
  never leaves a partial file.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import select
import stat
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

from .errors import InputError

__all__ = ["MAX_TEXT_BYTES", "MAX_ARRAY_BYTES", "MAX_JSON_DEPTH", "MAX_NUMBER_DIGITS",
           "MAX_STREAM_BYTES", "PIPE_TIMEOUT", "read_bytes", "read_text", "parse_json", "load_arrays", "load_array",
           "check_output", "atomic_output", "save_npz", "timeout_seconds"]

#: Largest text input (assembly, configuration, Relay, trace) read, in bytes.
MAX_TEXT_BYTES = 256 << 20
#: Largest .npz/.npy read, compressed or not (a DRAM image is at most 4 GiB: 32-bit addresses).
MAX_ARRAY_BYTES = 4 << 30
#: Deepest JSON nesting accepted (configurations and image metadata are two levels deep).
MAX_JSON_DEPTH = 64
#: Longest integer literal accepted in JSON (a 64-bit number has 20 digits).
MAX_NUMBER_DIGITS = 40
#: Largest input read from a pipe or a device (held in memory while it arrives).
MAX_STREAM_BYTES = 256 << 20
#: How long a pipe or device may take to deliver its input, in seconds (VTA_PIPE_TIMEOUT).
PIPE_TIMEOUT = 30.0


def _pipe_timeout() -> float:
    try:
        value = float(os.environ.get("VTA_PIPE_TIMEOUT", PIPE_TIMEOUT))
    except ValueError:
        return PIPE_TIMEOUT
    return value if math.isfinite(value) and value > 0 else PIPE_TIMEOUT


def _label(path, what: str) -> str:
    return f"{what} {str(path)!r}" if what else repr(str(path))


def read_bytes(path: "str | Path", *, what: str = "", limit: int = MAX_TEXT_BYTES,
               timeout: float | None = None) -> bytes:
    """The bytes of ``path`` ('-' is standard input), at most ``limit`` of them; a pipe or
    device must deliver them within ``timeout`` seconds (default :data:`PIPE_TIMEOUT`)."""
    label = _label(path, what)
    timeout = _pipe_timeout() if timeout is None else timeout
    if str(path) == "-":
        return _read_stream(0, label, min(limit, MAX_STREAM_BYTES), timeout)
    try:
        info = os.stat(path)
    except ValueError:                      # a NUL byte in the name
        raise InputError(f"cannot read {label}: the name holds a NUL byte") from None
    except OSError as exc:
        raise InputError(f"cannot read {label}: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"cannot read {label}: it is a directory")
    if stat.S_ISREG(info.st_mode):
        if info.st_size > limit:
            raise InputError(f"{label} is {info.st_size:,} bytes, more than the {limit:,} "
                             f"this command reads")
        try:
            with open(path, "rb") as fh:        # read(n) allocates n bytes up front
                data = fh.read(min(limit, info.st_size) + 1)
                if len(data) > info.st_size:
                    data += fh.read(limit + 1 - len(data))
        except OSError as exc:
            raise InputError(f"cannot read {label}: {exc.strerror}") from None
        if len(data) > limit:
            raise InputError(f"{label} grew past {limit:,} bytes while being read")
        return data
    # A pipe, a FIFO, a character device: open without blocking (a FIFO without a writer reads
    # as empty) and read with a bounded wait.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InputError(f"cannot read {label}: {exc.strerror}") from None
    try:
        return _read_stream(fd, label, min(limit, MAX_STREAM_BYTES), timeout)
    finally:
        os.close(fd)


def _read_stream(fd: int, label: str, limit: int, timeout: float) -> bytes:
    """Read ``fd`` to its end. A non-blocking ``fd`` is read first and waited on only when
    it has nothing yet (a FIFO that no writer holds open reads as its end at once)."""
    chunks, size = [], 0
    deadline = time.monotonic() + timeout
    wait = fd == 0                      # standard input is blocking: wait before reading
    while True:
        if wait:
            left = deadline - time.monotonic()
            if left <= 0:
                raise InputError(f"{label} delivered no end of input within {timeout:g} s")
            try:
                ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            except (OSError, ValueError) as exc:
                raise InputError(f"cannot read {label}: {exc}") from None
            if not ready:
                continue
        try:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            wait = fd == 0
        except BlockingIOError:
            wait = True
            continue
        except OSError as exc:
            raise InputError(f"cannot read {label}: {exc.strerror}") from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise InputError(f"{label} holds more than the {limit:,} bytes this command reads "
                             f"(is it a device such as /dev/zero?)")


def read_text(path: "str | Path", *, what: str = "", limit: int = MAX_TEXT_BYTES) -> str:
    """UTF-8 text of ``path`` (a leading byte-order mark is dropped)."""
    data = read_bytes(path, what=what, limit=limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{_label(path, what)} is not UTF-8 text: byte 0x{data[exc.start]:02x} "
                         f"at offset {exc.start} (line {line})") from None


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a {len(text)}-digit number (at most {MAX_NUMBER_DIGITS} digits)")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_DIGITS + 10:
        raise ValueError(f"a {len(text)}-character number")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} overflows a float")
    return value


def _parse_constant(text: str):
    raise ValueError(f"{text} is not a JSON number")


def _depth(text: str) -> int:
    """The deepest nesting of [ and { outside strings (a linear scan, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def parse_json(text: str, *, what: str = "JSON", max_depth: int = MAX_JSON_DEPTH):
    """``json.loads`` for untrusted text; :class:`InputError` says what is wrong."""
    if _depth(text) > max_depth:
        raise InputError(f"{what} is nested more than {max_depth} levels deep")
    try:
        return json.loads(text, parse_int=_parse_int, parse_float=_parse_float,
                          parse_constant=_parse_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} is not valid JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{what} is not acceptable JSON: {exc}") from None


# ------------------------------------------------------------------------------ arrays
_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def _read_npy(stream, label: str, available: int) -> np.ndarray:
    """One .npy from ``stream`` whose header promises no more than ``available`` bytes."""
    from numpy.lib import format as npformat

    version = npformat.read_magic(stream)
    if version == (1, 0):
        shape, fortran, dtype = npformat.read_array_header_1_0(stream)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = npformat.read_array_header_2_0(stream)
    else:
        raise ValueError(f"unsupported .npy version {version}")
    if dtype.hasobject:
        raise ValueError("it holds Python objects (refused: untrusted files are never "
                         "unpickled)")
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    available -= stream.tell()                  # what follows the header
    if nbytes > available:
        raise ValueError(f"its header promises {nbytes:,} bytes of data ({dtype}, shape "
                         f"{shape}) but only {available:,} are there")
    data = stream.read(nbytes)
    if len(data) != nbytes:
        raise ValueError(f"truncated: {len(data):,} of {nbytes:,} data bytes")
    array = np.frombuffer(data, dtype=dtype, count=count).copy() if nbytes else \
        np.zeros(count, dtype)
    order = "F" if fortran else "C"
    return array.reshape(shape, order=order)


def _load(data: bytes, label: str, kind: str) -> "dict[str, np.ndarray] | np.ndarray":
    if not data:
        raise InputError(f"{label} is empty")
    is_zip, is_npy = data[:4] in _ZIP_MAGIC, data.startswith(_NPY_MAGIC)
    if kind == "npz" and is_npy:
        raise InputError(f"{label} is a single .npy array; a .npz archive is expected here")
    if kind == "npy" and is_zip:
        raise InputError(f"{label} is a .npz archive; a single .npy array is expected here")
    if not (is_zip or is_npy):
        raise InputError(f"{label} is not a NumPy .{kind} file (it starts with "
                         f"{data[:8]!r})")
    try:
        if is_npy:
            stream = io.BytesIO(data)
            array = _read_npy(stream, label, len(data))
            return array
        arrays = {}
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            total = sum(i.file_size for i in infos)
            if total > MAX_ARRAY_BYTES:
                raise InputError(f"{label} unpacks to {total:,} bytes, more than the "
                                 f"{MAX_ARRAY_BYTES:,} this command reads")
            for info in infos:
                name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                if name in arrays:
                    raise ValueError(f"the archive holds {name!r} twice")
                with archive.open(info) as member:
                    try:
                        arrays[name] = _read_npy(member, label, info.file_size)
                    except ValueError as exc:
                        raise ValueError(f"member {name!r}: {exc}") from None
        return arrays
    except InputError:
        raise
    except Exception as exc:    # noqa: BLE001 - numpy's and zipfile's parsers on untrusted
        # bytes raise anything (zlib.error, EOFError, BadZipFile, tokenize.TokenError, ...)
        raise InputError(f"{label} is corrupted or truncated: {type(exc).__name__}: "
                         f"{exc}") from None


def load_arrays(source: "str | Path | bytes", *, what: str = "",
                label: str | None = None) -> dict[str, np.ndarray]:
    """Every array of a ``.npz`` file (or bytes), read eagerly and without pickle.
    ``label`` replaces "what 'path'" as the subject of error messages."""
    if isinstance(source, (bytes, bytearray)):
        return _load(bytes(source), label or what or "the data", "npz")
    data = read_bytes(source, what=what, limit=MAX_ARRAY_BYTES)
    return _load(data, label or _label(source, what), "npz")


def load_array(source: "str | Path", *, what: str = "") -> np.ndarray:
    """The array of a ``.npy`` file, read without pickle."""
    data = read_bytes(source, what=what, limit=MAX_ARRAY_BYTES)
    return _load(data, _label(source, what), "npy")


# ------------------------------------------------------------------------------ outputs
def check_output(path: "str | Path", *, what: str = "output") -> Path:
    """Fail now, before any work, if ``path`` cannot be written as a new file."""
    path = Path(path)
    label = _label(path, what)
    if str(path) in ("", "-"):
        raise InputError(f"{label}: give a file name")
    if path.is_dir():
        raise InputError(f"cannot write {label}: it is a directory")
    parent = path.parent
    if not parent.is_dir():
        raise InputError(f"cannot write {label}: the directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {label}: the directory {str(parent)!r} is not "
                         f"writable")
    if path.exists() and not path.is_file():
        raise InputError(f"cannot write {label}: it exists and is not a regular file")
    return path


@contextlib.contextmanager
def atomic_output(path: "str | Path", *, what: str = "output", mode: str = "wb"):
    """Yield a file object; on success it becomes ``path``, on failure nothing is left."""
    path = check_output(path, what=what)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, mode) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def save_npz(path: "str | Path", arrays: dict, *, compressed: bool = True,
             what: str = "output") -> Path:
    """Write ``arrays`` as a .npz at exactly ``path`` (no suffix added), atomically."""
    with atomic_output(path, what=what) as fh:
        (np.savez_compressed if compressed else np.savez)(fh, **arrays)
    return Path(path)


def timeout_seconds(text: str) -> float:
    """argparse type of a ``--timeout``: a finite number of seconds greater than zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a timeout is a finite number of seconds "
                                         f"greater than 0")
    return value
