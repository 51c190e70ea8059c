"""Workloads of a sweep: ``workload -> (config -> program images + MACs)``.

A :class:`Workload` is a named layer shape (a GEMM, a convolution, a transposed convolution,
an MLP); :func:`compile_workload` turns it into a :class:`Program` for one configuration: the
program images of its launches (SPEC §5) and the multiply-accumulates it performs. Cycles then
come from the cycle-accurate simulator (:func:`program_cycles`), so the sweep never looks at
how a program was made: when ``compiler/`` lowers Relay's conv2d/dense for any configuration,
only :func:`compile_workload` changes.

Until then programs are built on the driver API: every layer is a blocked int8 GEMM with bias,
requantised by the ALU (arithmetic shift right, ReLU) — test_lib's ``blocked_gemm_test`` made
rectangular and with its blocks chosen to fill the configuration's buffers. Convolutions are
lowered by im2col on the host (a transposed convolution: zeros inserted between input pixels
first). Every program is run once on the functional simulator while it is built and its output
is compared with numpy, so a sweep never reports cycles of a wrong program.

The target set is ResNet-18's distinct convolutions and its fc, a DCGAN transposed
convolution and an MLP (:data:`WORKLOADS`); ``spatial_div`` divides the spatial size of the
convolutions (the channel structure is kept) so that a sweep of many points stays minutes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from isa.config import VTAConfig
from isa.image import ProgramImage

__all__ = ["Workload", "Program", "WorkloadError", "WORKLOADS", "get_workload",
           "compile_workload", "program_cycles", "choose_blocks"]

# ALU requantisation every layer applies after its GEMM (shift right, then ReLU).
REQUANT_SHIFT = 8


class WorkloadError(ValueError):
    """A workload that cannot be built for a configuration (or an unknown workload name)."""


@dataclass(frozen=True)
class Workload:
    """One layer (or a chain of dense layers) of a model.

    ``kind`` is ``dense`` (``m`` rows times ``layers``: in/out widths), ``conv`` or ``deconv``
    (``channels`` in/out, ``size`` input H = W, ``kernel``, ``stride``, ``pad``).
    """

    name: str
    kind: str
    layers: tuple = ()
    m: int = 1
    channels: tuple = (0, 0)
    size: int = 0
    kernel: int = 1
    stride: int = 1
    pad: int = 0

    def gemms(self, spatial_div: int = 1) -> list[tuple[int, int, int]]:
        """The (M, K, N) of the GEMMs this workload lowers to (in order)."""
        if self.kind == "dense":
            return [(self.m, k, n) for k, n in zip(self.layers, self.layers[1:])]
        cin, cout = self.channels
        out = self.out_size(spatial_div)
        return [(out * out, cin * self.kernel * self.kernel, cout)]

    def in_size(self, spatial_div: int = 1) -> int:
        return max(1, self.size // spatial_div)

    def out_size(self, spatial_div: int = 1) -> int:
        h = self.in_size(spatial_div)
        if self.kind == "conv":
            return (h + 2 * self.pad - self.kernel) // self.stride + 1
        # Transposed convolution (PyTorch's output size without output_padding).
        return (h - 1) * self.stride - 2 * self.pad + self.kernel

    def macs(self, spatial_div: int = 1) -> int:
        """Multiply-accumulates of the layer itself (not counting padding or inserted zeros)."""
        if self.kind == "deconv":
            cin, cout = self.channels
            return self.in_size(spatial_div) ** 2 * cin * cout * self.kernel ** 2
        return sum(m * k * n for m, k, n in self.gemms(spatial_div))


def _conv(name, cin, cout, size, kernel, stride, pad):
    return Workload(name, "conv", channels=(cin, cout), size=size, kernel=kernel, stride=stride,
                    pad=pad)


#: The target set: ResNet-18's distinct convolutions (input size at 224 × 224) and its fc, the
#: DCGAN generator's 512 -> 256 transposed convolution, and an MNIST-sized MLP.
WORKLOADS = {w.name: w for w in (
    _conv("resnet18.conv1", 3, 64, 224, 7, 2, 3),
    _conv("resnet18.layer1", 64, 64, 56, 3, 1, 1),
    _conv("resnet18.layer2.down", 64, 128, 56, 3, 2, 1),
    _conv("resnet18.layer2", 128, 128, 28, 3, 1, 1),
    _conv("resnet18.layer2.proj", 64, 128, 56, 1, 2, 0),
    _conv("resnet18.layer3.down", 128, 256, 28, 3, 2, 1),
    _conv("resnet18.layer3", 256, 256, 14, 3, 1, 1),
    _conv("resnet18.layer3.proj", 128, 256, 28, 1, 2, 0),
    _conv("resnet18.layer4.down", 256, 512, 14, 3, 2, 1),
    _conv("resnet18.layer4", 512, 512, 7, 3, 1, 1),
    _conv("resnet18.layer4.proj", 256, 512, 14, 1, 2, 0),
    Workload("resnet18.fc", "dense", layers=(512, 1000), m=1),
    Workload("dcgan.deconv2", "deconv", channels=(512, 256), size=4, kernel=4, stride=2, pad=1),
    Workload("mlp", "dense", layers=(784, 256, 256, 10), m=16),
)}


def get_workload(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise WorkloadError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}") from None


@dataclass(frozen=True)
class Program:
    """A workload compiled for one configuration: its launches and its MACs."""

    workload: str
    config: VTAConfig
    images: tuple[ProgramImage, ...]
    macs: int


# ---------------------------------------------------------------------------- host-side lowering
def _im2col(x: np.ndarray, kernel: int, stride: int, pad: int) -> np.ndarray:
    """x (C, H, W) -> (OH*OW, C*k*k) patches."""
    c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kernel) // stride + 1
    ow = (w + 2 * pad - kernel) // stride + 1
    cols = np.empty((oh * ow, c, kernel, kernel), x.dtype)
    for ky in range(kernel):
        for kx in range(kernel):
            patch = xp[:, ky:ky + stride * oh:stride, kx:kx + stride * ow:stride]
            cols[:, :, ky, kx] = patch.reshape(c, oh * ow).T
    return cols.reshape(oh * ow, c * kernel * kernel)


def _dilate(x: np.ndarray, stride: int) -> np.ndarray:
    """Zeros between input pixels: a transposed convolution as a convolution."""
    c, h, w = x.shape
    out = np.zeros((c, (h - 1) * stride + 1, (w - 1) * stride + 1), x.dtype)
    out[:, ::stride, ::stride] = x
    return out


def _gemm_inputs(wl: Workload, spatial_div: int, rng) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per GEMM, the int8 (A, W) operands (dense chains get A of the first layer only)."""
    if wl.kind == "dense":
        a = rng.integers(-128, 128, (wl.m, wl.layers[0]), dtype=np.int8)
        ws = [rng.integers(-128, 128, (n, k), dtype=np.int8)
              for k, n in zip(wl.layers, wl.layers[1:])]
        return [(a if i == 0 else None, w) for i, w in enumerate(ws)]
    cin, cout = wl.channels
    h = wl.in_size(spatial_div)
    x = rng.integers(-128, 128, (cin, h, h), dtype=np.int8)
    w = rng.integers(-128, 128, (cout, cin * wl.kernel * wl.kernel), dtype=np.int8)
    if wl.kind == "conv":
        return [(_im2col(x, wl.kernel, wl.stride, wl.pad), w)]
    # Transposed convolution: stride-1 convolution of the dilated input, padded by k - 1 - p.
    return [(_im2col(_dilate(x, wl.stride), wl.kernel, 1, wl.kernel - 1 - wl.pad), w)]


def _requant(acc: np.ndarray) -> np.ndarray:
    """int32 wrap, SHR, ReLU, low 8 bits: what the ALU kernels and STORE do (SPEC §4)."""
    acc = acc.astype(np.int64).astype(np.uint32).view(np.int32).astype(np.int64)
    return np.maximum(acc >> REQUANT_SHIFT, 0).astype(np.int8)


# ---------------------------------------------------------------------------- blocking
def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def choose_blocks(cfg: VTAConfig, tiles: tuple[int, int, int]) -> tuple[int, int, int, int]:
    """(bt, it, ot, threads): tiles per block along M, K, N and the SRAM halves (1 or 2).

    The largest block (most multiply-accumulates per loaded tile) whose double-buffered INP
    and WGT halves, ACC block and micro-op kernel fit the configuration's buffers; ties go to
    the block with the fewest loads.
    """
    mt, kt, nt = tiles
    best = None
    for threads in (2, 1):
        for bt in _divisors(mt):
            if bt * threads > cfg.uop_depth:
                continue
            for ot in _divisors(nt):
                if bt * ot > cfg.acc_depth:
                    continue
                for it in _divisors(kt):
                    # it is also the kernel's wgt_factor_out, a log_wgt_depth-bit field.
                    if it >= cfg.wgt_depth:
                        continue
                    if threads * bt * it > cfg.inp_depth or threads * it * ot > cfg.wgt_depth:
                        continue
                    loads = (mt // bt) * (nt // ot) * (kt // it) * (bt + ot)
                    score = (bt * it * ot, -loads, threads)
                    if best is None or score > best[0]:
                        best = (score, (bt, it, ot, threads))
    if best is None:
        raise WorkloadError(f"no GEMM block fits the buffers of {cfg}")
    return best[1]


def _pad_to(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    return np.pad(x, ((0, rows - x.shape[0]), (0, cols - x.shape[1])))


def _blocked_gemm(dev, a: np.ndarray, w: np.ndarray, bias: np.ndarray):
    """out = requant(bias + a @ w.T) on the device, and the images of its launches."""
    from driver import Loop, MemType, Uop, alu_kernel, gemm_kernel
    from driver.testlib import pack, unpack
    from isa.encoding import AluOp

    cfg = dev.config
    m, k = a.shape
    n = w.shape[0]
    mp, kp, np_ = (-(-m // cfg.batch) * cfg.batch, -(-k // cfg.block_in) * cfg.block_in,
                   -(-n // cfg.block_out) * cfg.block_out)
    mt, kt, nt = mp // cfg.batch, kp // cfg.block_in, np_ // cfg.block_out
    bt, it, ot, vt = choose_blocks(cfg, (mt, kt, nt))
    inp = dev.array(pack(_pad_to(a, mp, kp), cfg.batch, cfg.block_in), name="inp")
    wgt = dev.array(pack(_pad_to(w, np_, kp), cfg.block_out, cfg.block_in), name="wgt")
    acc = dev.array(pack(_pad_to(bias, mp, np_), cfg.batch, cfg.block_out), name="bias")
    out = dev.empty((mt, nt, cfg.batch, cfg.block_out), np.int8, name="out")
    s = dev.stream()

    def gemm_uops(t):
        return gemm_kernel([Uop(i * ot, t * bt * it + i * it, t * it * ot) for i in range(bt)],
                           [Loop(it, dst=0, src=1, wgt=1), Loop(ot, dst=1, src=0, wgt=it)])

    kernels = [s.kernel(("sweep.gemm", bt, it, ot, t), lambda t=t: gemm_uops(t))
               for t in range(vt)]
    requant = [s.kernel(("sweep.alu", op, imm, bt * ot),
                        lambda op=op, imm=imm: alu_kernel(op, [Uop(0, 0)],
                                                          [Loop(bt * ot, dst=1, src=1)], imm=imm))
               for op, imm in ((AluOp.SHR, REQUANT_SHIFT), (AluOp.MAX, 0))]
    for _ in range(vt):
        s.dep_push("compute", "load")
    blocks = [(i, j) for i in range(0, mt, bt) for j in range(0, nt, ot)]
    for nb, (i, j) in enumerate(blocks):
        with s.unit():
            if nb > 0:
                s.dep_pop("store", "compute")
            s.load_2d(MemType.ACC, 0, acc, i * nt + j, x_size=ot, y_size=bt, x_stride=nt)
            for step, kk in enumerate(range(0, kt, it)):
                t = step % vt
                s.dep_pop("compute", "load")
                s.load_2d(MemType.WGT, t * it * ot, wgt, j * kt + kk, x_size=it, y_size=ot,
                          x_stride=kt)
                s.load_2d(MemType.INP, t * bt * it, inp, i * kt + kk, x_size=it, y_size=bt,
                          x_stride=kt)
                s.dep_push("load", "compute")
                s.dep_pop("load", "compute")
                s.gemm(kernels[t])
                s.dep_push("compute", "load")
            for kernel in requant:
                s.alu(kernel)
            s.dep_push("compute", "store")
            s.dep_pop("compute", "store")
            s.store_2d(0, out, i * nt + j, x_size=ot, y_size=bt, x_stride=nt)
            if nb < len(blocks) - 1:
                s.dep_push("store", "compute")
    for _ in range(vt):
        s.dep_pop("compute", "load")
    s.synchronize()
    images = list(s.images)
    s.close()
    for buf in (inp, wgt, acc):
        buf.free()
    result = unpack(out.read())[:m, :n]
    out.free()
    return result, images


def _dram_bytes(wl: Workload, spatial_div: int, cfg: VTAConfig) -> int:
    """DRAM for the largest GEMM's operands (padded), the staging buffers and a margin."""
    need = 0
    for m, k, n in wl.gemms(spatial_div):
        m, k, n = m + cfg.batch, k + cfg.block_in, n + cfg.block_out
        need = max(need, m * k + n * k + 4 * m * n + m * n)
    return 1 << max(22, math.ceil(math.log2(4 * need + (8 << 20))))


def compile_workload(wl: "Workload | str", cfg: VTAConfig, *, spatial_div: int = 1,
                     seed: int = 0) -> Program:
    """The program images of ``wl`` on ``cfg`` (checked against numpy) and its MACs."""
    from driver import Device, DeviceError, StreamError

    wl = get_workload(wl) if isinstance(wl, str) else wl
    rng = np.random.default_rng(seed)
    dev = Device(cfg, "functional", dram_bytes=_dram_bytes(wl, spatial_div, cfg),
                 keep_images=True)
    images: list[ProgramImage] = []
    x = None
    try:
        for a, w in _gemm_inputs(wl, spatial_div, rng):
            a = x if a is None else a
            bias = rng.integers(-(1 << 12), 1 << 12, (a.shape[0], w.shape[0]), dtype=np.int32)
            expected = _requant(bias.astype(np.int64) + a.astype(np.int64) @ w.astype(np.int64).T)
            x, launches = _blocked_gemm(dev, a, w, bias)
            images.extend(launches)
            if not np.array_equal(x, expected):
                raise WorkloadError(f"{wl.name} on {cfg}: the device's result differs from "
                                    f"numpy's")
    except (DeviceError, StreamError) as exc:
        raise WorkloadError(f"{wl.name} cannot run on {cfg}: {exc}") from None
    return Program(wl.name, cfg, tuple(images), wl.macs(spatial_div))


def program_cycles(program: Program) -> int:
    """Cycles of every launch of ``program`` on the cycle-accurate simulator, summed."""
    from sim.cycle import run_image
    return sum(run_image(image).cycles for image in program.images)
