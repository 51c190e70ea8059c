"""Operators: the registry, and the families that populate it."""
from .registry import (OpDef, OpPattern, REQUIRED, NotReady, RelationError, get_op, get_op_attr,
                       get_relation, list_ops, register_op, register_op_attr, relation)
from . import tensor, nn, transform  # noqa: F401  (registration side effects)
from . import image, matmul, normalization, qnn, slicing  # noqa: F401,E402  (frontend operators)

__all__ = ["OpDef", "OpPattern", "REQUIRED", "NotReady", "RelationError", "get_op", "get_op_attr",
           "get_relation", "list_ops", "register_op", "register_op_attr", "relation"]
