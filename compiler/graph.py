"""The compiled model: a graph of VTA and CPU segments over named tensors.

``build_graph`` turns a partitioned ``@main`` into segments in execution order. Tensors are
plain (NCHW, as Relay sees them) or packed (the configuration's blocked layout, in which VTA
operators read and write them); a packed tensor that only VTA operators consume is never
unpacked. Layout transforms at the edges are CPU segments (``pack``, ``unpack``); every Relay
operator that is not part of a VTA operator is a CPU segment of kind ``relay`` — reported,
never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from isa.config import VTAConfig
from relay.analysis import post_order
from relay.ir import Call, Constant, Function, IRModule, Op, Tuple, TupleGetItem, Var
from relay.transform import infer_type
from relay.ty import TensorType

from .errors import UnsupportedOperator
from .emit import build_program, to_program
from .lower import lower_conv
from .operators import ConvOp, fold_columns, geometry
from .partition import vta_operator
from .program import VtaProgram
from .schedule import Schedule, choose, estimate
from .transpose import TransposeOp, lower_transpose
from .vector import EltwiseOp, PoolOp, lower_eltwise, lower_pool

__all__ = ["TensorInfo", "VtaSegment", "CpuSegment", "CompiledModel", "build_graph"]


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple
    dtype: str
    layout: str = "plain"     # "plain" | "packed" | "planes" (int32 as four int8 byte planes)


@dataclass(frozen=True, eq=False)
class VtaSegment:
    name: str
    op: ConvOp
    schedule: Schedule
    program: VtaProgram
    inputs: tuple
    output: str
    image: "Program"         # isa.program: relocatable launches, packed weights attached
    target = "vta"

    @property
    def macs(self) -> int:
        return self.op.macs

    def geometry(self, cfg: VTAConfig):
        return geometry(self.op, cfg)


@dataclass(frozen=True, eq=False)
class CpuSegment:
    """``kind`` pack / unpack (attrs: batch, block, shape), unfold (a column-folded stem's
    input, attrs of :class:`~compiler.operators.ColumnFold`) or relay (``function``)."""

    name: str
    kind: str
    inputs: tuple
    output: str
    attrs: dict = field(default_factory=dict)
    function: Function | None = None
    target = "cpu"

    @property
    def macs(self) -> int:
        if self.kind != "relay":
            return 0
        return _relay_macs(self.function.body)


def _relay_macs(body) -> int:
    total = 0
    for n in post_order(body):
        if isinstance(n, Call) and isinstance(n.op, Op) and n.op.name in ("nn.conv2d", "nn.dense"):
            out = n.checked_type
            w = n.args[1].checked_type
            if isinstance(out, TensorType) and isinstance(w, TensorType):
                per = 1
                for d in w.shape[1:]:
                    per *= d
                count = 1
                for d in out.shape:
                    count *= d
                total += count * per
    return total


@dataclass(frozen=True, eq=False)
class CompiledModel:
    config: VTAConfig
    inputs: tuple          # TensorInfo of @main's runtime parameters, in order
    outputs: tuple         # tensor names of the results, in order
    tensors: dict          # name -> TensorInfo
    segments: tuple

    @property
    def vta_macs(self) -> int:
        return sum(s.macs for s in self.segments if s.target == "vta")

    @property
    def macs(self) -> int:
        return sum(s.macs for s in self.segments)


class _Builder:
    def __init__(self, cfg: VTAConfig, schedules: dict | None):
        self.cfg = cfg
        self.schedules = schedules or {}
        self.tensors: dict[str, TensorInfo] = {}
        self.segments: list = []
        self.plain: dict[int, str] = {}
        self.packed: dict[int, str] = {}
        self.nodes: dict[int, object] = {}
        self.count = {"vta": 0, "cpu": 0, "t": 0}

    def tensor(self, shape, dtype, layout="plain", name=None) -> str:
        if name is None:
            name = f"t{self.count['t']}"
            self.count["t"] += 1
        self.tensors[name] = TensorInfo(name, tuple(int(d) for d in shape), dtype, layout)
        return name

    def seg_name(self, target: str) -> str:
        n = self.count[target]
        self.count[target] += 1
        return f"{target}{n}"

    # -- layouts
    def get_plain(self, node) -> str:
        if id(node) in self.plain:
            return self.plain[id(node)]
        packed = self.packed[id(node)]
        info = self.tensors[packed]
        seg = self.vta_of[packed]
        n, o, oh, ow = seg.op.out_shape
        shape = (n, o) if getattr(seg.op, "kind", "") == "dense" else (n, o, oh, ow)
        out = self.tensor(shape, seg.op.out_dtype)
        self.segments.append(CpuSegment(self.seg_name("cpu"), "unpack", (packed,), out,
                                        {"shape": list(shape), "planes": info.layout == "planes",
                                         "in_shape": list(info.shape)}))
        self.plain[id(node)] = out
        return out

    def get_packed(self, node, shape4, block: int) -> str:
        key = (id(node), block)
        if key in self.packed_in:
            return self.packed_in[key]
        if id(node) in self.packed and self.tensors[self.packed[id(node)]].layout == "packed":
            name = self.packed[id(node)]
            if self.tensors[name].shape[-1] == block and self.packed_shape4[name] == shape4:
                return name
        out = self.pack_name(self.get_plain(node), shape4, block)
        self.packed_in[key] = out
        return out

    def pack_name(self, src: str, shape4, block: int) -> str:
        """A ``pack`` segment from the plain tensor ``src``; the packed tensor's name."""
        cfg = self.cfg
        nb, cb = -(-shape4[0] // cfg.batch), -(-shape4[1] // block)
        out = self.tensor((nb, cb, shape4[2], shape4[3], cfg.batch, block), "int8", "packed")
        self.segments.append(CpuSegment(self.seg_name("cpu"), "pack", (src,), out,
                                        {"shape": list(shape4), "batch": cfg.batch,
                                         "block": block}))
        return out

    # -- nodes
    def vta(self, call: Call) -> None:
        cfg = self.cfg
        name = self.seg_name("vta")
        op = vta_operator(call.op, name)
        sched = None
        if isinstance(op, ConvOp):
            folded = None
            if id(call.args[0]) not in self.packed:     # plain input: the stem can fold
                folded = fold_columns(op, cfg)
            if folded is not None:
                op, fold = folded
            geo = geometry(op, cfg)
            sched = self.schedules.get(_workload_key(op)) or choose(geo)
            program = lower_conv(geo, sched)
            image = to_program(geo, program, name)
            if folded is not None:
                unfolded = self.tensor(op.data_shape, "int8")
                self.segments.append(CpuSegment(
                    self.seg_name("cpu"), "unfold", (self.get_plain(call.args[0]),), unfolded,
                    {"kw": fold.kw, "sw": fold.sw, "dw": fold.dw, "pad_left": fold.pad_left,
                     "out_w": fold.out_w, "in_shape": list(fold.in_shape)}))
                inputs = [self.pack_name(unfolded, op.data_shape, cfg.block_in)]
            else:
                inputs = [self.get_packed(call.args[0], op.data_shape, cfg.block_in)]
            if op.residual:
                inputs.append(self.get_packed(call.args[1], op.out_shape, cfg.block_out))
        elif isinstance(op, TransposeOp):
            program, geos, sched = lower_transpose(op, cfg,
                                                   self.schedules.get(_workload_key(op)))
            inputs = [self.get_packed(call.args[0], op.data_shape, cfg.block_in)]
            shapes = {"data": self.tensors[inputs[0]].shape}
            params = {f"weights{k}": g.packed_weight for k, g in enumerate(geos)}
            params["consts"] = geos[0].packed_consts
        else:
            program = (lower_pool(op, cfg) if isinstance(op, PoolOp)
                       else lower_eltwise(op, cfg))
            inputs = [self.get_packed(a, op.data_shape, cfg.block_out) for a in call.args]
            shapes = {"data": self.tensors[inputs[0]].shape}
            params = {}
            if len(inputs) > 1:
                shapes["data2"] = self.tensors[inputs[1]].shape
        n, o, oh, ow = op.out_shape
        shape = (-(-n // cfg.batch), -(-o // cfg.block_out), oh, ow, cfg.batch, cfg.block_out)
        if op.out_dtype == "int32":
            out = self.tensor((4,) + shape, "int8", "planes")
        else:
            out = self.tensor(shape, "int8", "packed")
        if not isinstance(op, ConvOp):
            shapes["out"] = self.tensors[out].shape
            image = build_program(cfg, program, shapes, params, name)
        self.packed_shape4[out] = op.out_shape
        seg = VtaSegment(name, op, sched, program, tuple(inputs), out, image)
        self.vta_of[out] = seg
        self.segments.append(seg)
        self.packed[id(call)] = out

    def cpu(self, node) -> None:
        params, inputs = [], []

        def arg(a):
            if isinstance(a, Constant):
                return a
            if isinstance(a, Tuple):
                return Tuple([arg(f) for f in a.fields])
            t = a.checked_type
            if not isinstance(t, TensorType):
                raise UnsupportedOperator(f"cannot place a value of type {t} between segments")
            v = Var(f"p{len(params)}", t)
            params.append(v)
            inputs.append(self.get_plain(a))
            return v

        if isinstance(node, TupleGetItem):
            inner = node.tuple_value
            if not (isinstance(inner, Call) and isinstance(inner.op, Op)):
                raise UnsupportedOperator("only projections of operator results are supported")
            body = TupleGetItem(Call(inner.op, [arg(a) for a in inner.args], inner.attrs),
                                node.index)
        else:
            body = Call(node.op, [arg(a) for a in node.args], node.attrs)
        t = node.checked_type
        out = self.tensor(t.shape, t.dtype)
        fn = infer_type(IRModule({"main": Function(params, body, t)}))["main"]
        self.segments.append(CpuSegment(self.seg_name("cpu"), "relay", tuple(inputs), out,
                                        function=fn))
        self.plain[id(node)] = out


def dataflow_order(body) -> list:
    """The nodes of ``body`` children first, without entering function literals."""
    order, seen, stack = [], set(), [(body, False)]
    while stack:
        n, done = stack.pop()
        if done:
            order.append(n)
            continue
        if id(n) in seen:
            continue
        seen.add(id(n))
        stack.append((n, True))
        children = (list(n.args) if isinstance(n, Call) else list(n.fields)
                    if isinstance(n, Tuple) else [n.tuple_value]
                    if isinstance(n, TupleGetItem) else [])
        for c in reversed(children):
            if id(c) not in seen:
                stack.append((c, False))
    return order


def _workload_key(op: ConvOp) -> str:
    from .tuning import workload_key
    return workload_key(op)


def _is_vta_call(n) -> bool:
    return (isinstance(n, Call) and isinstance(n.op, Function)
            and n.op.attrs.get("Compiler") == "vta")


def build_graph(main: Function, cfg: VTAConfig, schedules: dict | None = None, progress=None
                ) -> CompiledModel:
    """Segments of a partitioned ``@main``, in execution order. Guarantees: every operator call
    of ``@main`` is in exactly one segment; VTA operators get a schedule (``schedules`` maps
    workload keys to tuned ones, the cost model's choice otherwise) and their program.
    ``progress("compile", done, total)`` after each VTA operator."""
    b = _Builder(cfg, schedules)
    b.vta_of, b.packed_in, b.packed_shape4 = {}, {}, {}
    inputs = []
    for p in main.params:
        t = p.checked_type or p.type_annotation
        if not isinstance(t, TensorType):
            raise UnsupportedOperator(f"@main parameter %{p.name_hint} has type {t}; only "
                                      f"tensors can be inputs")
        b.plain[id(p)] = b.tensor(t.shape, t.dtype, name=p.name_hint)
        inputs.append(b.tensors[p.name_hint])
    body = main.body
    roots = list(body.fields) if isinstance(body, Tuple) else [body]
    order = dataflow_order(body)
    done, total = 0, sum(1 for n in order if _is_vta_call(n))
    for n in order:
        if isinstance(n, (Var, Constant, Op, Function)) or n is body and isinstance(n, Tuple):
            if isinstance(n, Var) and id(n) not in b.plain:
                raise UnsupportedOperator(f"free variable %{n.name_hint}")
            continue
        if isinstance(n, Call) and isinstance(n.op, Function):
            if n.op.attrs.get("Compiler") != "vta":
                raise UnsupportedOperator("calls of local functions are not supported; inline them")
            b.vta(n)
            done += 1
            if progress:
                progress("compile", done, total)
        elif isinstance(n, Call) and isinstance(n.op, Op):
            if not isinstance(n.checked_type, TensorType):
                continue        # a tuple result: compiled with its projections
            b.cpu(n)
        elif isinstance(n, TupleGetItem):
            b.cpu(n)
        elif isinstance(n, Tuple):
            continue            # an argument tuple (e.g. of concatenate), handled by its user
        else:
            raise UnsupportedOperator(f"{type(n).__name__} is not supported in a compiled @main "
                                      f"(dataflow programs only)")
    outputs = []
    for r in roots:
        if isinstance(r, Constant):
            raise UnsupportedOperator("a constant result is not supported")
        outputs.append(b.get_plain(r))
    return CompiledModel(cfg, tuple(inputs), tuple(outputs), dict(b.tensors), tuple(b.segments))
