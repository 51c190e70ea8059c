"""The nine real-architecture models the ``onnx`` package ships (backend/test/data/light), with
their constant-filled weights replaced by seeded random ones so that outputs discriminate."""
from __future__ import annotations

import os

import numpy as np

LIGHT_MODELS = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
                "squeezenet", "vgg19", "zfnet512")


def light_path(name):
    import onnx
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", f"light_{name}.onnx")


def _role(model, tensor):
    """(op_type, input index) of the first node reading ``tensor``."""
    for node in model.graph.node:
        for i, name in enumerate(node.input):
            if name == tensor:
                return node.op_type, i
    return None, None


def randomized(name, seed=0):
    """The shipped model with every ConstantOfShape weight turned into a random initializer:
    He-scaled conv/dense weights, small biases, batch-norm statistics away from the identity."""
    import onnx
    return randomize(onnx.load(light_path(name)), seed)


def randomize(model, seed=0):
    """:func:`randomized` on a loaded model (or a :func:`subgraph` of one), in place."""
    from onnx import numpy_helper
    rng = np.random.default_rng(seed)
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    keep, new_inits = [], []
    for node in model.graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            keep.append(node)
            continue
        shape = tuple(int(d) for d in inits[node.input[0]])
        out = node.output[0]
        op, idx = _role(model, out)
        if len(shape) >= 2:
            fan_in = int(np.prod(shape[1:]))
            a = rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)
        elif op == "BatchNormalization" and idx in (1, 4):
            a = rng.uniform(0.5, 1.5, shape)
        elif op == "Mul":                       # densenet / inception v2 write scale as Mul
            a = rng.uniform(0.5, 1.5, shape)
        else:
            a = rng.standard_normal(shape) * 0.1
        new_inits.append(numpy_helper.from_array(a.astype(np.float32), out))
    used = {n for node in keep for n in node.input}
    dead = [i for i in model.graph.initializer if i.name not in used]
    for i in dead:
        model.graph.initializer.remove(i)
    dead_names = {i.name for i in dead}
    for vi in [vi for vi in model.graph.input if vi.name in dead_names]:
        model.graph.input.remove(vi)
    del model.graph.node[:]
    model.graph.node.extend(keep)
    model.graph.initializer.extend(new_inits)
    return model


def ort_session(model):
    """An onnxruntime session on one thread, quiet."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def with_logits(model):
    """The model with the input of its final Softmax added as a second output, so that a
    comparison is not blunted by a saturated softmax."""
    import onnx
    last = [n for n in model.graph.node if n.op_type == "Softmax"]
    if last:
        model.graph.output.append(onnx.helper.make_tensor_value_info(last[-1].input[0], onnx.TensorProto.FLOAT, None))
    return model


def subgraph(model, inputs, output):
    """The part of ``model`` that computes tensor ``output`` from the tensors ``inputs`` (name ->
    shape, float32; they become the graph's inputs, so a convolutional part can take a smaller
    image than the whole model): a slice of a large model small enough for a quick test."""
    from onnx import TensorProto, helper
    graph = model.graph
    producer = {o: n for n in graph.node for o in n.output}
    inits = {i.name for i in graph.initializer}
    keep, need, seen = [], [output], set()
    while need:
        t = need.pop()
        if t in seen or t in inputs or t in inits or t not in producer:
            continue
        seen.add(t)
        node = producer[t]
        if node not in keep:
            keep.append(node)
            need.extend(i for i in node.input if i)
    order = {id(n): k for k, n in enumerate(graph.node)}
    keep.sort(key=lambda n: order[id(n)])
    used = {i for n in keep for i in n.input}
    missing = [t for t in used if t not in inputs and t not in inits and t not in producer]
    if missing:
        raise ValueError(f"the slice reads {missing}, which are neither inputs nor computed")
    g = helper.make_graph(keep, f"{graph.name}_slice",
                          [helper.make_tensor_value_info(k, TensorProto.FLOAT, list(v)) for k, v in inputs.items()],
                          [helper.make_tensor_value_info(output, TensorProto.FLOAT, None)],
                          [i for i in graph.initializer if i.name in used])
    return helper.make_model(g, opset_imports=model.opset_import, ir_version=model.ir_version)


def data_input(model):
    """The name of the image input: the first Conv's data."""
    return next(n.input[0] for n in model.graph.node if n.op_type == "Conv")


def features(model, side):
    """The convolutional part of a classifier (up to its Flatten/Reshape) on a ``side`` x
    ``side`` image."""
    flat = next(n for n in model.graph.node if n.op_type in ("Reshape", "Flatten"))
    return subgraph(model, {data_input(model): (1, 3, side, side)}, flat.input[0])
