"""Static checks on program images that need no simulator."""

from __future__ import annotations

from ..arch import DEP_FLAGS, QUEUES
from ..encoding import Opcode, decode_program, module_of

__all__ = ["token_balance", "instruction_mix"]



def token_balance(image) -> dict[str, int]:
    """Pushes minus pops per token queue over the whole stream (all zero when balanced)."""
    balance = dict.fromkeys(QUEUES, 0)
    for insn in decode_program(image.instruction_bytes, image.config):
        for flag, queue in DEP_FLAGS[module_of(insn)].items():
            if getattr(insn, flag) and queue is not None:
                balance[queue] += 1 if flag.startswith("push") else -1
    return balance


def instruction_mix(image) -> dict[str, int]:
    """How many instructions of each kind (LOAD_INP, GEMM, ALU_SHR, NOP_compute, ...)."""
    mix: dict[str, int] = {}
    for insn in decode_program(image.instruction_bytes, image.config):
        if insn.opcode in (Opcode.LOAD, Opcode.STORE) and insn.x_size == 0:
            key = f"NOP_{module_of(insn)}"
        elif insn.opcode == Opcode.LOAD:
            from ..encoding import MemType
            key = f"LOAD_{MemType(insn.memory_type).name}"
            if any((insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1)):
                mix["padded_loads"] = mix.get("padded_loads", 0) + 1
        elif insn.opcode == Opcode.ALU:
            from ..encoding import AluOp
            key = f"ALU_{AluOp(insn.alu_opcode).name}{'_imm' if insn.use_imm else ''}"
        elif insn.opcode == Opcode.GEMM:
            key = "GEMM_reset" if insn.reset else "GEMM"
        else:
            key = insn.opcode.name
        mix[key] = mix.get(key, 0) + 1
    return mix


def divergence_tags(image) -> tuple[str, ...]:
    """Tags for features where the original implementations diverge (reference §5.8) and the
    project follows the original functional simulator (SPEC §4): ``div-mul`` (ALU MUL),
    ``div-acc8`` (LOAD ACC_8BIT), ``div-wgt-pad`` (padded WGT loads), ``div-uop-2d`` (2-D,
    strided or padded UOP loads), ``div-shr-imm-range`` (SHR immediates outside [-16, 15]),
    ``div-vec-shr`` (vector SHR: amounts are data, possibly negative or >= 32)."""
    from ..encoding import AluOp, MemType
    tags = set()
    for insn in decode_program(image.instruction_bytes, image.config):
        if insn.opcode == Opcode.ALU:
            if insn.alu_opcode == AluOp.MUL:
                tags.add("div-mul")
            if insn.alu_opcode == AluOp.SHR:
                if not insn.use_imm:
                    tags.add("div-vec-shr")
                elif not -16 <= insn.imm <= 15:
                    tags.add("div-shr-imm-range")
        elif insn.opcode == Opcode.LOAD and insn.x_size:
            pads = any((insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1))
            if insn.memory_type == MemType.ACC_8BIT:
                tags.add("div-acc8")
            elif insn.memory_type == MemType.WGT and pads:
                tags.add("div-wgt-pad")
            elif insn.memory_type == MemType.UOP and (pads or insn.y_size != 1
                                                       or insn.x_stride != insn.x_size):
                tags.add("div-uop-2d")
    return tuple(sorted(tags))
