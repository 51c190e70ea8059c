"""Hypothesis strategies: real inputs of every command, and mutated versions of them.

Seeds are the project's own files (the conformance images, their disassembly, the shipped
configurations, the Relay programs, a cycle-simulator trace); mutations work at three levels:
bytes (flips, truncation, insertion, duplication), text tokens (numbers replaced by extreme or
non-ASCII ones, tokens deleted or duplicated, deep nesting) and structure (an image's arrays,
a configuration's keys, an ``outputs`` list).
"""

from __future__ import annotations

import functools
import io
import json
import re
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "data" / "conformance"

#: Numbers that break naive parsers: out of every field's range, other scripts' digits,
#: floats where integers go, 5,000 digits, prefixes without digits.
NUMBERS = ["0", "-1", "1", "15", "16", "255", "256", "16383", "16384", "32767", "-32769",
           "65535", "65536", "2147483648", "4294967296", "18446744073709551616",
           "9" * 5000, "٣", "１２", "߃", "0x", "0b102", "0o9", "1e309", "-1e309", "NaN",
           "Infinity", "-0", "1_0", "0x" + "f" * 40, "3.5", "", "true", "null", "0x1p3"]


# ------------------------------------------------------------------------------ seeds
@functools.lru_cache(None)
def image_seeds() -> tuple[bytes, ...]:
    return tuple(p.read_bytes() for p in sorted(VECTORS.glob("small-*.in.npz")))


@functools.lru_cache(None)
def image_arrays() -> tuple[dict, ...]:
    return tuple(dict(np.load(io.BytesIO(b))) for b in image_seeds())


@functools.lru_cache(None)
def asm_seeds() -> tuple[str, ...]:
    from isa.asm import disassemble
    from isa.image import load_image

    return tuple(disassemble(load_image(b).instruction_bytes, load_image(b).config)
                 for b in image_seeds())


@functools.lru_cache(None)
def config_seeds() -> tuple[str, ...]:
    return tuple(p.read_text() for p in sorted((ROOT / "isa" / "configs").glob("*.json")))


RELAY_SMALL = (
    '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 2), float32]) {\n  add(%x, 1f)\n}\n',
    '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 2), float32]) {\n'
    '  let %y = multiply(%x, %x);\n  (%y, nn.relu(%y))\n}\n',
    '#[version = "0.0.5"]\ntype Box[A] { B(A) }\ndef @main(%x: Tensor[(2, 2), float32]) {\n'
    '  match (B(%x)) { B(%v) => subtract(%v, %x) }\n}\n',
    '#[version = "0.0.5"]\ndef @main(%x: Tensor[(2, 2), float32]) {\n'
    '  add(%x, meta[relay.Constant][0])\n}\n#[metadata]\n{"relay.Constant": [{"data": '
    '"AAAAAAAAgD8AAABAAABAQA==", "dtype": "float32", "shape": [2, 2]}]}\n',
)


@functools.lru_cache(None)
def relay_seeds() -> tuple[str, ...]:
    files = sorted((ROOT / "tests" / "relay" / "programs").glob("*.rly"))
    return RELAY_SMALL + tuple(p.read_text() for p in files)


@functools.lru_cache(None)
def trace_seed() -> str:
    """A real trace: the smallest conformance image on the cycle simulator."""
    from sim.cycle import simulate
    from sim.cycle_trace import write_trace

    import tempfile

    core = simulate(VECTORS / "small-pub-sram-edges.in.npz", trace=True)
    with tempfile.TemporaryDirectory() as tmp:
        write_trace(core, Path(tmp) / "t.json")
        return (Path(tmp) / "t.json").read_text()


def npy_bytes(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def npz_bytes(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


# ------------------------------------------------------------------------------ mutations
_BYTE_OPS = ("flip", "truncate", "insert", "delete", "duplicate", "zero", "ff")


@st.composite
def mutate_bytes(draw, data: bytes, max_ops: int = 4) -> bytes:
    """``data`` with 1..max_ops byte-level mutations."""
    data = bytearray(data)
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(st.sampled_from(_BYTE_OPS))
        pos = draw(st.integers(0, max(0, len(data))))
        if op == "flip" and data:
            pos = min(pos, len(data) - 1)
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del data[pos:pos + draw(st.integers(1, 64))]
        elif op == "duplicate":
            n = draw(st.integers(1, 64))
            data[pos:pos] = data[pos:pos + n]
        elif op in ("zero", "ff"):
            n = draw(st.integers(1, 32))
            data[pos:pos + n] = (b"\0" if op == "zero" else b"\xff") * len(data[pos:pos + n])
    return bytes(data)


_TOKEN = re.compile(r"\s+|[^\s=,;:(){}\[\]\"]+|.", re.S)
_NUMBER = re.compile(r"-?(0x[0-9a-fA-F]+|\d+(\.\d+)?)")
_TEXT_OPS = ("number", "replace", "delete", "duplicate-line", "swap-lines", "insert-text",
             "nest", "bom", "nul")


@st.composite
def mutate_text(draw, text: str, *, nest: str = "(", unnest: str = ")",
                max_ops: int = 3) -> str:
    """``text`` with 1..max_ops token-level mutations."""
    for _ in range(draw(st.integers(1, max_ops))):
        tokens = _TOKEN.findall(text) or [""]
        op = draw(st.sampled_from(_TEXT_OPS))
        k = draw(st.integers(0, len(tokens) - 1))
        if op == "number":
            numbers = [i for i, t in enumerate(tokens) if _NUMBER.fullmatch(t)]
            if numbers:
                k = numbers[draw(st.integers(0, len(numbers) - 1))]
            tokens[k] = draw(st.sampled_from(NUMBERS))
        elif op == "replace":
            tokens[k] = draw(st.text(max_size=12))
        elif op == "delete":
            tokens[k] = ""
        elif op == "insert-text":
            tokens.insert(k, draw(st.text(min_size=1, max_size=20)))
        elif op == "nest":
            depth = draw(st.sampled_from([50, 1000, 20000]))
            tokens.insert(k, nest * depth + "0" + unnest * depth)
        elif op == "bom":
            tokens.insert(k, "\ufeff")
        elif op == "nul":
            tokens.insert(k, "\0")
        text = "".join(tokens)
        if op in ("duplicate-line", "swap-lines"):
            lines = text.splitlines(keepends=True) or [""]
            i = draw(st.integers(0, len(lines) - 1))
            j = draw(st.integers(0, len(lines) - 1))
            if op == "duplicate-line":
                lines.insert(j, lines[i])
            else:
                lines[i], lines[j] = lines[j], lines[i]
            text = "".join(lines)
    return text


@st.composite
def text_file(draw, seeds, **kw) -> bytes:
    """A seed text, mutated as text and sometimes as bytes (non-UTF-8, truncated)."""
    text = draw(st.sampled_from(seeds))
    if draw(st.booleans()):
        text = draw(mutate_text(text, **kw))
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 3)) == 0:
        data = draw(mutate_bytes(data))
    return data


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) |
    st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)


@st.composite
def config_text(draw) -> str:
    """A shipped configuration with a structural or textual mutation."""
    doc = json.loads(draw(st.sampled_from(config_seeds())))
    how = draw(st.sampled_from(("value", "drop", "add", "replace", "nest", "digits", "text")))
    keys = sorted(doc)
    if how == "value":
        doc[draw(st.sampled_from(keys))] = draw(json_values)
    elif how == "drop":
        doc.pop(draw(st.sampled_from(keys)))
    elif how == "add":
        doc[draw(st.text(max_size=12))] = draw(json_values)
    elif how == "replace":
        doc = draw(json_values)
    elif how == "nest":
        depth = draw(st.sampled_from([70, 5000, 100000]))
        return "[" * depth + "]" * depth
    elif how == "digits":
        key = draw(st.sampled_from(keys))
        return json.dumps(doc).replace(f'"{key}": {json.dumps(doc[key])}',
                                       f'"{key}": {"9" * draw(st.sampled_from([50, 5000]))}')
    else:
        return draw(mutate_text(json.dumps(doc, indent=1), nest="[", unnest="]"))
    return json.dumps(doc)


# ------------------------------------------------------------------------------ images
weird_arrays = st.sampled_from([
    np.zeros(0, np.uint8), np.zeros(16, np.uint8), np.zeros((4, 4), np.uint8),
    np.zeros(64, np.int32), np.float64(1.5), np.int64(-16), np.int64(1 << 40),
    np.int64(0), np.int64(16), np.array([0, 16]), np.str_("x"), np.bytes_(b"\xff\xfe"),
    np.array(True), np.uint64((1 << 64) - 1), np.array(["a", "b"]),
])


@st.composite
def outputs_json(draw) -> str:
    entry = st.fixed_dictionaries(
        {"name": st.sampled_from(["y", "", "a" * 300, "\n", 5]),
         "addr": st.sampled_from([0, -16, 1 << 70, 64, "0", 1.5]),
         "shape": st.sampled_from([[4], [-1], [0], [1 << 40, 1 << 40], [], "4", [1.5],
                                   [2] * 40, [True]]),
         "dtype": st.sampled_from(["int8", "O", "object", "V8", "<U4", "int32", "x", ">i4",
                                   "float16", 7, "(2,)i4", "i4,i4"])},
        optional={"nbytes": st.sampled_from([0, 4, -1, 1 << 80])})
    return json.dumps(draw(st.lists(entry, max_size=3)))


@st.composite
def image_file(draw) -> bytes:
    """A conformance image mutated in its bytes, its arrays, its metadata or its program."""
    k = draw(st.integers(0, len(image_seeds()) - 1))
    how = draw(st.sampled_from(("bytes", "array", "drop", "config", "outputs", "program",
                                "program", "npy")))
    if how == "bytes":
        return draw(mutate_bytes(image_seeds()[k]))
    arrays = {key: np.array(v) for key, v in image_arrays()[k].items()}
    if how == "array":
        arrays[draw(st.sampled_from(sorted(arrays) + ["outputs"]))] = draw(weird_arrays)
    elif how == "drop":
        arrays.pop(draw(st.sampled_from(sorted(arrays))))
    elif how == "config":
        arrays["config"] = np.str_(draw(config_text()))
    elif how == "outputs":
        arrays["outputs"] = np.str_(draw(outputs_json()))
    elif how == "npy":
        return npy_bytes(arrays["dram"])
    else:
        arrays["dram"] = dram = arrays["dram"].copy()
        dram[:] = draw(mutate_program(dram, int(arrays["insn_addr"]),
                                      int(arrays["insn_count"])))
    return npz_bytes(arrays)


@st.composite
def mutate_program(draw, dram: np.ndarray, insn_addr: int, insn_count: int) -> np.ndarray:
    """The DRAM with 1..3 instruction words changed: bits flipped, a field's bits set to
    extremes, or a random 128-bit word."""
    dram = dram.copy()
    for _ in range(draw(st.integers(1, 3))):
        at = insn_addr + 16 * draw(st.integers(0, insn_count - 1))
        word = int.from_bytes(dram[at:at + 16].tobytes(), "little")
        how = draw(st.sampled_from(("flip", "flip", "ones", "random")))
        if how == "flip":
            for _ in range(draw(st.integers(1, 3))):
                word ^= 1 << draw(st.integers(0, 127))
        elif how == "ones":
            lo = draw(st.integers(0, 120))
            word |= ((1 << draw(st.integers(1, 16))) - 1) << lo
            word &= (1 << 128) - 1
        else:
            word = draw(st.integers(0, (1 << 128) - 1))
        dram[at:at + 16] = np.frombuffer(word.to_bytes(16, "little"), np.uint8)
    return dram


@st.composite
def npy_file(draw) -> bytes:
    """An input array for ``relay run``: right, wrong dtype or shape, or corrupted."""
    good = np.arange(4, dtype="float32").reshape(2, 2)
    how = draw(st.sampled_from(("good", "dtype", "shape", "bytes", "npz", "object", "empty")))
    if how == "good":
        return npy_bytes(good)
    if how == "dtype":
        return npy_bytes(good.astype(draw(st.sampled_from(["int8", "float64", "<U3", "bool"]))))
    if how == "shape":
        return npy_bytes(np.zeros(draw(st.sampled_from([(), (3,), (2, 2, 1), (0, 2)])),
                                  "float32"))
    if how == "npz":
        return npz_bytes({"x": good})
    if how == "object":
        buf = io.BytesIO()
        np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        return buf.getvalue()
    if how == "empty":
        return b""
    return draw(mutate_bytes(npy_bytes(good)))


@st.composite
def trace_file(draw) -> bytes:
    doc = json.loads(trace_seed())
    how = draw(st.sampled_from(("event", "drop", "events", "text", "bytes", "good")))
    events = doc["traceEvents"]
    if how == "event":
        e = events[draw(st.integers(0, len(events) - 1))]
        e[draw(st.sampled_from(["ts", "dur", "tid", "name", "ph", "args"]))] = draw(
            json_values | st.sampled_from([-5, 1e300, 1 << 80, "12"]))
    elif how == "drop":
        e = events[draw(st.integers(0, len(events) - 1))]
        e.pop(draw(st.sampled_from(sorted(e))))
    elif how == "events":
        doc["traceEvents"] = draw(json_values)
    elif how == "text":
        return draw(mutate_text(json.dumps(doc), nest="[", unnest="]",
                                max_ops=2)).encode("utf-8", "surrogatepass")
    elif how == "bytes":
        return draw(mutate_bytes(json.dumps(doc).encode()))
    return json.dumps(doc).encode()
