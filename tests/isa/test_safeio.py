"""isa.safeio: untrusted files in, outputs written whole or not at all."""

import io
import json
import zipfile

import numpy as np
import pytest

from isa.errors import InputError
from isa.safeio import (atomic_output, check_output, load_array, load_arrays, parse_json,
                        read_bytes, read_text, save_npz, timeout_seconds)


def npy(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def test_arrays_round_trip_and_every_corruption_is_one_input_error(tmp_path):
    arrays = {"a": np.arange(1000, dtype=np.int32).reshape(10, 100), "b": np.str_("{}"),
              "c": np.asfortranarray(np.ones((3, 4), ">f8")), "d": np.zeros((0, 5), np.uint8)}
    path = save_npz(tmp_path / "x", arrays)
    assert path.name == "x"                         # exactly the name given
    got = load_arrays(path)
    assert got.keys() == arrays.keys()
    for key in arrays:
        assert np.array_equal(got[key], arrays[key]) and got[key].dtype == arrays[key].dtype
    raw = path.read_bytes()
    for bad, message in ((b"", "is empty"), (raw[:len(raw) // 2], "corrupted or truncated"),
                         (raw[:40] + bytes(40) + raw[80:], "corrupted or truncated"),
                         (npy(np.zeros(3)), "single .npy array"), (b"hello", "not a NumPy")):
        (tmp_path / "bad.npz").write_bytes(bad)
        with pytest.raises(InputError, match=message):
            load_arrays(tmp_path / "bad.npz")


def test_headers_that_lie_and_objects_are_refused(tmp_path):
    # A header promising more data than the file holds: refused before allocating.
    fixed = npy(np.zeros(4, np.uint8))
    (tmp_path / "a.npy").write_bytes(fixed.replace(b"(4,)", b"(9,)"))
    with pytest.raises(InputError, match="promises 9 bytes"):
        load_array(tmp_path / "a.npy")
    buf = io.BytesIO()
    np.save(buf, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "o.npy").write_bytes(buf.getvalue())
    with pytest.raises(InputError, match="Python objects"):
        load_array(tmp_path / "o.npy")


def test_a_zip_that_unpacks_to_too_much_is_refused(tmp_path, monkeypatch):
    import isa.safeio as safeio

    monkeypatch.setattr(safeio, "MAX_ARRAY_BYTES", 1 << 20)
    with zipfile.ZipFile(tmp_path / "bomb.npz", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("x.npy", npy(np.zeros(1 << 21, np.uint8)))
    with pytest.raises(InputError, match="unpacks to"):
        load_arrays(tmp_path / "bomb.npz")


def test_text_json_and_devices(tmp_path):
    (tmp_path / "t").write_bytes("ok ✓\n".encode() + b"\xff")
    with pytest.raises(InputError, match=r"not UTF-8 text: byte 0xff at offset 7 \(line 2\)"):
        read_text(tmp_path / "t")
    with pytest.raises(InputError, match="it is a directory"):
        read_text(tmp_path)
    with pytest.raises(InputError, match="No such file"):
        read_bytes(tmp_path / "missing")
    with pytest.raises(InputError, match="more than the 1,000 bytes"):
        read_bytes("/dev/zero", limit=1000)
    assert parse_json('{"a": [1, 2.5]}') == {"a": [1, 2.5]}
    for text, message in (("[" * 100 + "]" * 100, "nested more than 64"),
                          ('{"a": ' + "9" * 5000 + "}", "5000-digit"),
                          ('{"a": NaN}', "not a JSON number"), ('{"a": 1e999}', "overflows"),
                          ('{"a": ', "not valid JSON")):
        with pytest.raises(InputError, match=message):
            parse_json(text)
    assert json.loads('"[[["') == "[[["
    assert parse_json('"' + "[" * 100 + '"') == "[" * 100     # brackets inside strings


def test_outputs_are_checked_first_and_never_partial(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        check_output(tmp_path / "no" / "x.npz")
    with pytest.raises(InputError, match="it is a directory"):
        check_output(tmp_path)
    target = tmp_path / "x.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_output(target) as fh:
            fh.write(b"half")
            raise RuntimeError("the work failed half-way")
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == \
        ["x.bin"]
    with atomic_output(target) as fh:
        fh.write(b"new")
    assert target.read_bytes() == b"new"


@pytest.mark.parametrize("text, ok", [("2", True), ("0.5", True), ("0", False), ("-1", False),
                                      ("nan", False), ("inf", False), ("1e999", False),
                                      ("x", False)])
def test_timeout_values(text, ok):
    import argparse

    if ok:
        assert timeout_seconds(text) == float(text)
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            timeout_seconds(text)
