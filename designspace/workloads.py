"""Workloads of a sweep: ``workload -> (config -> program images + MACs)``.

A :class:`Workload` is a named layer shape (a convolution, a transposed convolution, a dense
layer or a chain of them); :func:`relay_text` writes it as an integer Relay program (int8
operands, int32 accumulation with bias, requantised by a shift, ReLU and clip), and
:func:`compile_workload` compiles it with ``compiler/`` for one configuration and runs it: a
:class:`Program` holds the program images of its launches (SPEC §5), the multiply-accumulates
of the layer and, when run on the cycle-accurate simulator, its cycles. Every run is compared
with the Relay interpreter's result, so a sweep never reports cycles of a wrong program.

The target set is ResNet-18's distinct convolutions and its fc, the DCGAN generator's
transposed convolution and an MLP (:data:`WORKLOADS`); ``spatial_div`` divides the spatial size
of the convolutions (the channel structure is kept) so that a sweep of many points stays
minutes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isa.config import VTAConfig
from isa.image import ProgramImage

__all__ = ["Workload", "Program", "WorkloadError", "WORKLOADS", "get_workload", "relay_text",
           "compile_workload", "program_cycles"]

# The requantisation every layer applies to its int32 result: shift right, ReLU, clip to int8.
REQUANT_SHIFT = 8


class WorkloadError(ValueError):
    """A workload that cannot be built for a configuration (or an unknown workload name)."""


@dataclass(frozen=True)
class Workload:
    """One layer (or a chain of dense layers) of a model.

    ``kind`` is ``dense`` (``m`` rows through ``layers``: the widths from input to output),
    ``conv`` or ``deconv`` (``channels`` in/out, ``size`` input H = W, ``kernel``, ``stride``,
    ``pad``).
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
        """The (M, K, N) of its matrix products (a convolution's as im2col would make it)."""
        if self.kind == "dense":
            return [(self.m, k, n) for k, n in zip(self.layers, self.layers[1:])]
        cin, cout = self.channels
        out = self.out_size(spatial_div)
        return [(out * out, cin * self.kernel * self.kernel, cout)]

    def in_size(self, spatial_div: int = 1) -> int:
        """The input's H = W: ``size`` divided by ``spatial_div``, never below 7 (ResNet's
        last stage) nor above ``size``."""
        return min(self.size, max(7, self.size // spatial_div))

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
    """A workload compiled for one configuration and run once: its launches, its MACs and
    (when it ran on the cycle-accurate simulator) its cycles."""

    workload: str
    config: VTAConfig
    images: tuple[ProgramImage, ...]
    macs: int
    cycles: "int | None" = None


# ---------------------------------------------------------------------------- Relay programs
_TAIL = ('  %{o} = nn.relu(right_shift(%{i}, {shift}));\n'
         '  %{c} = cast(clip(%{o}, a_min=-128f, a_max=127f), dtype="int8");\n')


def relay_text(wl: Workload, spatial_div: int = 1) -> str:
    """``wl`` as an integer Relay program: ``@main(%x, weights..., biases...)``."""
    args, body, n = [], [], 0

    def requant(src: str) -> str:
        nonlocal n
        body.append(_TAIL.format(o=n, i=src, c=n + 1, shift=REQUANT_SHIFT))
        n += 2
        return str(n - 1)

    if wl.kind == "dense":
        args.append(f"%x: Tensor[({wl.m}, {wl.layers[0]}), int8]")
        cur = "x"
        for i, (k, units) in enumerate(zip(wl.layers, wl.layers[1:])):
            args += [f"%w{i}: Tensor[({units}, {k}), int8]", f"%b{i}: Tensor[({units}), int32]"]
            body.append(f'  %{n} = nn.bias_add(nn.dense(%{cur}, %w{i}, units={units}, '
                        f'out_dtype="int32"), %b{i});\n')
            n += 1
            cur = requant(str(n - 1))
    else:
        cin, cout = wl.channels
        h, k, s, p = wl.in_size(spatial_div), wl.kernel, wl.stride, wl.pad
        args.append(f"%x: Tensor[(1, {cin}, {h}, {h}), int8]")
        if wl.kind == "conv":
            args.append(f"%w0: Tensor[({cout}, {cin}, {k}, {k}), int8]")
            op = "nn.conv2d"
        else:
            args.append(f"%w0: Tensor[({cin}, {cout}, {k}, {k}), int8]")    # IOHW
            op = "nn.conv2d_transpose"
        args.append(f"%b0: Tensor[({cout}), int32]")
        body.append(f'  %{n} = nn.bias_add({op}(%x, %w0, strides=[{s}, {s}], padding=[{p}, {p}, '
                    f'{p}, {p}], channels={cout}, kernel_size=[{k}, {k}], out_dtype="int32"), '
                    f'%b0);\n')
        n += 1
        cur = requant(str(n - 1))
    return ('#[version = "0.0.5"]\ndef @main(' + ", ".join(args) + ") {\n" + "".join(body)
            + f"  %{cur}\n}}\n")


def _inputs(mod, rng) -> tuple[np.ndarray, dict]:
    """Random int8 input and weights, int32 biases small enough not to swamp the products."""
    params = {}
    for p in mod["main"].params[1:]:
        t = p.type_annotation
        lo, hi = (-128, 128) if t.dtype == "int8" else (-3000, 3000)
        params[p.name_hint] = rng.integers(lo, hi, t.shape).astype(t.dtype)
    x_t = mod["main"].params[0].type_annotation
    return rng.integers(-128, 128, x_t.shape).astype("int8"), params


def compile_workload(wl: "Workload | str", cfg: VTAConfig, *, spatial_div: int = 1,
                     seed: int = 0, backend: str = "cycle") -> Program:
    """Compile ``wl`` for ``cfg``, run it on ``backend`` (its cycles when that is ``cycle``)
    and check the result against the Relay interpreter."""
    import relay
    from compiler.compile import compile_module
    from compiler.errors import CompileError
    from compiler.runtime import execute
    from driver import DeviceError

    wl = get_workload(wl) if isinstance(wl, str) else wl
    mod = relay.parse(relay_text(wl, spatial_div))
    x, params = _inputs(mod, np.random.default_rng(seed))
    try:
        model = compile_module(mod, params, cfg)
        outs, report, images = execute(model, {"x": x}, backend)
    except (CompileError, DeviceError) as exc:
        raise WorkloadError(f"{wl.name} cannot run on {cfg}: {exc}") from None
    if report.get("vta_mac_share") != 1.0:
        raise WorkloadError(f"{wl.name} on {cfg}: only {report.get('vta_mac_share'):.0%} of "
                            f"its MACs run on VTA")
    expected = relay.run(mod, x, *params.values())
    if not np.array_equal(outs[0], expected):
        raise WorkloadError(f"{wl.name} on {cfg}: the compiled program's result differs from "
                            f"the Relay interpreter's")
    return Program(wl.name, cfg, tuple(images), wl.macs(spatial_div), report.get("cycles"))


def program_cycles(program: Program) -> int:
    """Cycles of every launch of ``program`` on the cycle-accurate simulator, summed (the
    cycles measured when it ran, if it ran there)."""
    if program.cycles is not None:
        return program.cycles
    from sim.cycle import run_image
    return sum(run_image(image).cycles for image in program.images)
