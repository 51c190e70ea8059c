"""Relay: a typed, functional, differentiable IR with its interpreter and passes."""
from . import op  # noqa: F401  (registers the operators)
from .ir import (Attrs, Call, Clause, Constant, Constructor, Expr, Function, GlobalVar, If, IRModule, Let,
                 Match, Op, PatternConstructor, PatternTuple, PatternVar, PatternWildcard, RefCreate,
                 RefRead, RefWrite, Span, Tuple, TupleGetItem, TypeData, Var, const, op_call)
from .ty import (ANY, FuncType, GlobalTypeVar, IncompleteType, RefType, TensorType, TupleType, TypeCall,
                 TypeVar, scalar_type)
from .typecheck import RelayTypeError, check_module, infer_expr
from .parser import ParseError, parse, parse_expr, parse_type
from .printer import expr_to_text, module_to_text, type_to_text
from .interpreter import Interpreter, evaluate, run
from .prelude import prelude

__all__ = [
    "Attrs", "Call", "Clause", "Constant", "Constructor", "Expr", "Function", "GlobalVar", "If", "IRModule",
    "Let", "Match", "Op", "PatternConstructor", "PatternTuple", "PatternVar", "PatternWildcard", "RefCreate",
    "RefRead", "RefWrite", "Span", "Tuple", "TupleGetItem", "TypeData", "Var", "const", "op_call",
    "ANY", "FuncType", "GlobalTypeVar", "IncompleteType", "RefType", "TensorType", "TupleType", "TypeCall",
    "TypeVar", "scalar_type", "RelayTypeError", "check_module", "infer_expr", "ParseError", "parse",
    "parse_expr", "parse_type", "expr_to_text", "module_to_text", "type_to_text", "Interpreter", "evaluate",
    "run", "prelude",
]
from . import transform  # noqa: E402,F401
from . import grad, zoo  # noqa: E402,F401
