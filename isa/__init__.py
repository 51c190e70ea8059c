"""The hardware contract: configuration, instruction encodings, assembler and program images.

``isa`` imports nothing else of the project; everything else imports it.
"""

from .config import ConfigError, VTAConfig, load_config, named_configs
from .encoding import (Alu, AluOp, Finish, Gemm, IsaError, Load, MemType, Opcode, Store, Uop,
                       decode, decode_program, decode_uops, encode, encode_program, encode_uops,
                       module_of)
from . import registers

__all__ = ["ConfigError", "VTAConfig", "load_config", "named_configs", "Alu", "AluOp", "Finish",
           "Gemm", "IsaError", "Load", "MemType", "Opcode", "Store", "Uop", "decode",
           "decode_program", "decode_uops", "encode", "encode_program", "encode_uops",
           "module_of", "registers"]
