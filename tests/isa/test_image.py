import io
import json

import numpy as np
import pytest

from isa.config import load_config
from isa.encoding import Finish, encode_program
from isa.image import ImageError, OutputRegion, ProgramImage, load_image, save_image

from ..conftest import reference_vectors


def _image(**changes):
    cfg = load_config("small")
    dram = np.zeros(256, np.uint8)
    dram[64:80] = np.frombuffer(encode_program([Finish()], cfg), np.uint8)
    fields = dict(dram=dram, insn_addr=64, insn_count=1, config=cfg,
                  outputs=[OutputRegion("y", 128, (2, 4), "int8")])
    fields.update(changes)
    return ProgramImage(**fields)


def test_save_load_round_trip(tmp_path):
    image = _image()
    save_image(tmp_path / "a.npz", image)
    again = load_image(tmp_path / "a.npz")
    assert np.array_equal(again.dram, image.dram) and again.config == image.config
    assert (again.insn_addr, again.insn_count, again.outputs) == (64, 1, image.outputs)


def test_reference_images_load():
    paths = reference_vectors()
    assert len(paths) == 30
    for path in paths:
        image = load_image(path)
        assert image.insn_count > 0 and image.outputs


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


GOOD = dict(dram=np.zeros(64, np.uint8), insn_addr=np.int64(0), insn_count=np.int64(1),
            config=np.str_(load_config("small").to_json()))


@pytest.mark.parametrize("changes, message", [
    ({"dram": None}, "image lacks dram"),
    ({"dram": np.zeros(64, np.int32)}, "'dram' must be a 1-D uint8 array"),
    ({"insn_addr": np.int64(8)}, "insn_addr = 8 must be a non-negative multiple of 16"),
    ({"insn_count": np.int64(5)}, "runs past the end of DRAM"),
    ({"insn_count": np.float64(1)}, "'insn_count' must be an integer scalar"),
    ({"config": np.str_('{"LOG_BATCH": 0}')}, "bad 'config': configuration is missing"),
    ({"outputs": np.str_("[{}]")}, "'outputs' entry 0 lacks name, addr, shape, dtype"),
    ({"outputs": np.str_("{}")}, "'outputs' must be a JSON list"),
    ({"outputs": np.str_(json.dumps([{"name": "y", "addr": 60, "shape": [8],
                                      "dtype": "int8"}]))}, "lies outside DRAM"),
])
def test_bad_images_are_explained(changes, message):
    arrays = {**GOOD, **changes}
    arrays = {k: v for k, v in arrays.items() if v is not None}
    with pytest.raises(ImageError, match=message):
        load_image(_npz(**arrays))


def test_not_an_npz(tmp_path):
    (tmp_path / "x.npz").write_text("hello")
    with pytest.raises(ImageError, match="not a NumPy .npz program image"):
        load_image(tmp_path / "x.npz")
    with pytest.raises(ImageError, match="no such image file"):
        load_image(tmp_path / "missing.npz")
