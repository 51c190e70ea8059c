"""Hypothesis strategies for the model commands (``import``, ``quantize``, ``compile``, ``tune``):
real models mutated in their bytes and in their structure, and calibration data.

Seeds: the bundled digits CNN (``examples/digits_cnn.onnx``, 40 KB), the same network written
with torch and saved by ``torch.export`` (exported once per session, seeded), and the compiler's
integer ``requant_chain.rly`` with its parameters. Structural mutations are the mistakes a
user's model holds: an opset the frontend does not cover, an operator it does not know, an
initializer that is missing or has the wrong shape, an input of another shape or element type,
attributes out of range, a graph output nobody produces; a ``.pt2`` archive with a member
dropped, truncated or its JSON mutated.
"""

from __future__ import annotations

import functools
import io
import zipfile

import numpy as np
from hypothesis import strategies as st

from .inputs import ROOT, mutate_bytes, mutate_text, npy_bytes, npz_bytes

DIGITS = ROOT / "examples" / "digits_cnn.onnx"
#: The digits CNN's input: one 8x8 grey image.
INPUT_NAME, INPUT_SHAPE = "image", (1, 1, 8, 8)


# ------------------------------------------------------------------------------ ONNX
@functools.lru_cache(None)
def onnx_seed() -> bytes:
    return DIGITS.read_bytes()


_OP_TYPES = ["Hardmax", "Foo", "", "Conv", "Relu", "Gemm", "MaxPool", "Loop", "If",
             "Softmax", "Reshape", "Add"]
_DIMS = [0, -1, 1, 3, 7, 8, 1 << 20, 1 << 62]


@st.composite
def onnx_structure(draw) -> bytes:
    """The digits model with one structural mistake, serialised again."""
    import onnx

    model = onnx.load_from_string(onnx_seed())
    graph = model.graph
    how = draw(st.sampled_from(("opset", "op_type", "drop_init", "init_shape", "init_dtype",
                                "input_shape", "input_dtype", "attribute", "drop_node",
                                "output", "domain", "node_input", "ir_version")))
    if how == "opset":
        model.opset_import[0].version = draw(st.sampled_from([0, 1, 6, 8, 9, 27, 100, -3]))
    elif how == "domain":
        model.opset_import[0].domain = draw(st.sampled_from(["com.microsoft", "ai.onnx.ml", "x"]))
    elif how == "ir_version":
        model.ir_version = draw(st.sampled_from([0, 1, 3, 99]))
    elif how == "op_type":
        node = graph.node[draw(st.integers(0, len(graph.node) - 1))]
        node.op_type = draw(st.sampled_from(_OP_TYPES))
    elif how == "drop_init":
        del graph.initializer[draw(st.integers(0, len(graph.initializer) - 1))]
    elif how == "init_shape":
        init = graph.initializer[draw(st.integers(0, len(graph.initializer) - 1))]
        arr = onnx.numpy_helper.to_array(init)
        k = draw(st.integers(0, len(init.dims) - 1))
        init.dims[k] = draw(st.sampled_from(_DIMS))
        if draw(st.booleans()):     # make the data agree with the new shape, when it can
            size = int(np.prod([max(d, 0) for d in init.dims])) if all(
                0 <= d < 1 << 16 for d in init.dims) else None
            if size is not None:
                new = np.resize(arr.reshape(-1), size).reshape(tuple(init.dims))
                init.CopyFrom(onnx.numpy_helper.from_array(new.astype(arr.dtype), init.name))
    elif how == "init_dtype":
        init = graph.initializer[draw(st.integers(0, len(graph.initializer) - 1))]
        init.data_type = draw(st.sampled_from([0, 2, 3, 6, 7, 8, 9, 10, 11, 16, 99]))
    elif how == "input_shape":
        dims = graph.input[0].type.tensor_type.shape.dim
        dim = dims[draw(st.integers(0, len(dims) - 1))]
        choice = draw(st.sampled_from(_DIMS + ["N", ""]))
        if isinstance(choice, str):
            dim.dim_param = choice
        else:
            dim.dim_value = choice
    elif how == "input_dtype":
        graph.input[0].type.tensor_type.elem_type = draw(st.sampled_from([0, 2, 3, 6, 7, 10, 11, 99]))
    elif how == "attribute":
        node = graph.node[draw(st.sampled_from([0, 2, 4, 5, 6]))]    # Conv, Conv, pool, ...
        attr = node.attribute[draw(st.integers(0, len(node.attribute) - 1))]
        if attr.ints:
            attr.ints[draw(st.integers(0, len(attr.ints) - 1))] = draw(st.sampled_from(
                [0, -1, -5, 2, 9, 1 << 31, 1 << 62]))
        elif attr.type == onnx.AttributeProto.INT:
            attr.i = draw(st.sampled_from([0, -1, -5, 2, 9, 1 << 31, 1 << 62]))
        else:
            attr.f = draw(st.sampled_from([0.0, -1.0, float("nan"), float("inf"), 1e38]))
    elif how == "drop_node":
        del graph.node[draw(st.integers(0, len(graph.node) - 1))]
    elif how == "node_input":
        node = graph.node[draw(st.integers(0, len(graph.node) - 1))]
        if draw(st.booleans()) or not node.input:
            node.input.append(draw(st.sampled_from(["", "image", "nowhere", "fc.bias"])))
        else:
            node.input[draw(st.integers(0, len(node.input) - 1))] = draw(
                st.sampled_from(["", "nowhere", "scores", "fc.weight"]))
    else:
        graph.output[0].name = draw(st.sampled_from(["nowhere", "", "image", "fc.bias"]))
    return model.SerializeToString()


def onnx_file() -> st.SearchStrategy:
    """The digits model: whole, with a structural mistake, or with corrupted bytes."""
    return st.one_of(st.just(None).map(lambda _: onnx_seed()), onnx_structure(),
                     onnx_structure(), st.just(None).flatmap(
                         lambda _: mutate_bytes(onnx_seed(), max_ops=2)))


# ------------------------------------------------------------------------------ torch.export
@functools.lru_cache(None)
def pt2_seed() -> bytes:
    """The digits CNN in torch (4 channels), exported by ``torch.export`` (seeded)."""
    import torch

    from relay.frontend import torch_models as tm

    torch.manual_seed(0)
    model = tm.randomize_batch_norm(tm.DigitsCNN(channels=4), seed=0).eval()
    buf = io.BytesIO()
    torch.export.save(torch.export.export(model, (torch.zeros(INPUT_SHAPE),)), buf)
    return buf.getvalue()


@st.composite
def pt2_structure(draw) -> bytes:
    """The archive with a member dropped, replaced, truncated, or its JSON mutated."""
    with zipfile.ZipFile(io.BytesIO(pt2_seed())) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    name = draw(st.sampled_from(sorted(members)))
    how = draw(st.sampled_from(("drop", "truncate", "bytes", "json", "json", "empty")))
    if how == "drop":
        del members[name]
    elif how == "truncate":
        members[name] = members[name][:draw(st.integers(0, max(0, len(members[name]) - 1)))]
    elif how == "bytes":
        members[name] = draw(mutate_bytes(members[name], max_ops=2))
    elif how == "empty":
        members[name] = b""
    else:
        json_members = sorted(n for n in members if n.endswith(".json"))
        name = draw(st.sampled_from(json_members))
        text = members[name].decode()
        members[name] = draw(mutate_text(text, nest="[", unnest="]", max_ops=2)).encode(
            "utf-8", "surrogatepass")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for n, data in members.items():
            z.writestr(n, data)
    return buf.getvalue()


def pt2_file() -> st.SearchStrategy:
    return st.one_of(st.just(None).map(lambda _: pt2_seed()), pt2_structure(),
                     st.just(None).flatmap(lambda _: mutate_bytes(pt2_seed(), max_ops=2)))


# ------------------------------------------------------------------------------ calibration
@st.composite
def calibration_file(draw, name: str = INPUT_NAME, shape=INPUT_SHAPE) -> bytes:
    """Calibration samples ``{name: (S, *shape)}``: right, or wrong in one way."""
    rng = np.random.default_rng(draw(st.integers(0, 3)))
    good = rng.uniform(0, 1, (4, *shape)).astype("float32")
    # Mostly right, so that the mutated models get past the calibration check into the
    # quantiser and the compiler.
    how = draw(st.sampled_from(("good",) * 8 + ("name", "extra", "shape", "samples", "dtype",
                                                "values", "npy", "bytes", "object", "empty")))
    if how == "good":
        return npz_bytes({name: good})
    if how == "name":
        return npz_bytes({draw(st.sampled_from(["x", "", "image_", "a" * 300])): good})
    if how == "extra":
        return npz_bytes({name: good, "other": good})
    if how == "shape":
        return npz_bytes({name: np.zeros(draw(st.sampled_from(
            [(), (4,), shape, (4, 1, 8, 8), (4, 1, 1, 8, 9), (4, 1, 1, 0, 8)])), "float32")})
    if how == "samples":
        return npz_bytes({name: np.zeros((draw(st.sampled_from([0, 1])), *shape), "float32")})
    if how == "dtype":
        return npz_bytes({name: good.astype(draw(st.sampled_from(
            ["int8", "float64", "float16", "bool", "complex64", "<U3"])))})
    if how == "values":
        bad = good.copy()
        bad.flat[draw(st.integers(0, bad.size - 1))] = draw(st.sampled_from(
            [np.nan, np.inf, -np.inf, 1e38, 0.0]))
        if draw(st.booleans()):
            bad[:] = draw(st.sampled_from([0.0, np.nan, 1e30]))
        return npz_bytes({name: bad})
    if how == "npy":
        return npy_bytes(good)
    if how == "object":
        buf = io.BytesIO()
        np.savez(buf, **{name: np.array([{"a": 1}], dtype=object)})
        return buf.getvalue()
    if how == "empty":
        return b""
    return draw(mutate_bytes(npz_bytes({name: good}), max_ops=2))


# ------------------------------------------------------------------------------ the options
SHAPE_OPTIONS = st.lists(st.sampled_from([
    ["--shape", "image=1,1,8,8"], ["--shape", "image=0,1,8,8"], ["--shape", "image=-1"],
    ["--shape", "nope=1,2"], ["--shape", "image"], ["--shape", "=1"], ["--shape", "image=a"],
    ["--shape", "image=" + "9" * 50], ["--shape", "image=1,1,80000,80000"]]),
    max_size=2).map(lambda xs: [a for x in xs for a in x])

QUANTIZE_OPTIONS = st.lists(st.sampled_from([
    ["--per-channel"], ["--skip-op", "nn.dense"], ["--skip-op", "*"], ["--skip-op", "["],
    ["--skip-layer", "0"], ["--skip-layer", "-1"], ["--skip-layer", "99"],
    ["--skip-layer", "-99"], ["--skip-layer", "x"], ["--params", "/nonexistent.npz"]]),
    max_size=2).map(lambda xs: [a for x in xs for a in x])

TUNE_OPTIONS = st.lists(st.sampled_from([
    ["--top", "0"], ["--top", "-1"], ["--top", "1"], ["--top", "9" * 30], ["--top", "x"],
    ["--config", "nope"], ["--config", "/dev/zero"], ["--config", "default"]]),
    max_size=2).map(lambda xs: [a for x in xs for a in x])


# ------------------------------------------------------------------------------ tuning cache
@functools.lru_cache(None)
def tuning_seed() -> str:
    """The tuning cache ``vta tune`` writes for the compiler's seed model (``--top 1``)."""
    import tempfile
    from pathlib import Path

    from compiler.tuning import TuningCache, tune_module
    from isa.config import load_config
    from isa.safeio import load_arrays

    import relay

    from .inputs import compiled_seed

    seed = compiled_seed()
    with tempfile.TemporaryDirectory() as tmp:
        cache = TuningCache(Path(tmp) / "tune.json")
        tune_module(relay.parse(seed["text"]), load_arrays(seed["params"]),
                    load_config("small"), cache=cache, top=1)
        return (Path(tmp) / "tune.json").read_text()


@st.composite
def tuning_cache(draw) -> bytes:
    """``$VTA_TUNE_CACHE``: absent (empty), the real one, or the real one mutated."""
    how = draw(st.sampled_from(("good", "good", "empty", "text", "bytes", "entry", "entry")))
    if how == "empty":
        return b""
    text = tuning_seed()
    if how == "entry":          # valid JSON, a damaged entry: a schedule outside the space
        import json

        doc = json.loads(text)
        entry = doc[draw(st.sampled_from(sorted(doc)))]
        field = draw(st.sampled_from(["tb", "tco", "th", "tw", "tci", "vt", "layout", "x"]))
        value = draw(st.sampled_from([0, -1, 3, 1 << 40, "1", None, "C", [1]]))
        if draw(st.booleans()):
            entry["schedule"][field] = value
        else:
            entry[draw(st.sampled_from(["schedule", "cycles"]))] = value
        text = json.dumps(doc)
    if how == "text":
        text = draw(mutate_text(text, nest="[", unnest="]", max_ops=2))
    data = text.encode("utf-8", "surrogatepass")
    return draw(mutate_bytes(data, max_ops=2)) if how == "bytes" else data
