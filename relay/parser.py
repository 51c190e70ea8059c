"""Parse the Relay text format into an ``IRModule`` (or an expression).

Accepts what ``printer`` writes and the text TVM prints: ``#[version = "0.0.5"]``, ``def``
and ``type`` definitions, graph bindings ``%0 = ...;``, ``let``, ``if``, ``fn``, ``match`` and
``match?``, references, tuples, ``meta[relay.Constant][i]``, ``free_var`` declarations, infix
arithmetic and comparisons, and ``/* ... */`` and ``//`` comments.  Errors carry line and column.
"""
from __future__ import annotations

import base64
import json
import re
import struct

import numpy as np

from .ir import (Attrs, Call, Clause, Constant, Constructor, Function, GlobalVar, If, IRModule, Let, Match,
                 Op, PatternConstructor, PatternTuple, PatternVar, PatternWildcard, RefCreate, RefRead,
                 RefWrite, Span, Tuple, TupleGetItem, TypeData, Var)
from .depth import MAX_NESTING, deep
from .op.registry import get_op
from .ty import (ANY, DTYPES, FuncType, GlobalTypeVar, IncompleteType, RefType, TensorType, TupleType, TypeCall,
                 TypeVar, canonical_dtype, is_dtype_name)

__all__ = ["ParseError", "parse", "parse_expr", "parse_type"]


class ParseError(SyntaxError):
    """A syntax error; ``line`` and ``column`` are 1-based."""

    exit_code = 2   # the `vta` command's code for an invalid input file

    def __init__(self, message, line, column, source="<string>", text=None):
        self.message, self.line, self.column, self.source = message, line, column, source
        loc = f"{source}:{line}:{column}: {message}"
        if text is not None:
            lines = text.split("\n")
            if 0 < line <= len(lines):
                # a window of the line around the column (lines may be very long)
                src, col = lines[line - 1], column - 1
                lo = max(0, col - 60)
                snippet = src[lo:col + 60]
                loc += ("\n  " + ("..." if lo else "") + snippet + ("..." if col + 60 < len(src) else "")
                        + "\n  " + " " * (col - lo + (3 if lo else 0)) + "^")
        super().__init__(loc)

    def __str__(self):
        return self.args[0]


_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+|//[^\n]*)
  | (?P<version>\#\[version\s*=\s*"[^"]*"\])
  | (?P<metadata>\#\[metadata\])
  | (?P<local>%[A-Za-z0-9_/]+(?:\.[A-Za-z0-9_/]+)*)
  | (?P<global>@[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?(?:f16|f32|f64|f|i8|i16|i32|i64|i|u8|u16|u32|u64|b)?(?![A-Za-z0-9_]))
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<punct>->|=>|==|!=|<=|>=|[()\[\]{},;:=.+\-*/<>?^])
""", re.VERBOSE | re.DOTALL)

_NUM_SUFFIX = {"f": "float32", "f32": "float32", "f64": "float64", "f16": "float16", "i": "int32", "i8": "int8",
               "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32",
               "u64": "uint64", "b": "bool"}

_INFIX = [("==", "equal"), ("!=", "not_equal"), ("<", "less"), (">", "greater"), ("<=", "less_equal"),
          (">=", "greater_equal")], [("+", "add"), ("-", "subtract")], [("*", "multiply"), ("/", "divide")]


class _Tok:
    __slots__ = ("kind", "text", "line", "col")

    def __init__(self, kind, text, line, col):
        self.kind, self.text, self.line, self.col = kind, text, line, col

    def __repr__(self):
        return f"{self.kind}:{self.text}"


def _tokenize(text, source):
    toks, pos, line, line_start = [], 0, 1, 0
    meta = None
    while pos < len(text):
        if text.startswith("/*", pos):
            end = _block_comment_end(text, pos)
            if end is None:
                raise ParseError("unterminated /* comment", line, pos - line_start + 1, source, text)
            nl = text.count("\n", pos, end)
            if nl:
                line += nl
                line_start = text.rfind("\n", pos, end) + 1
            pos = end
            continue
        m = _TOKEN_RE.match(text, pos)
        if not m:
            raise ParseError(f"unexpected character {text[pos]!r}", line, pos - line_start + 1, source, text)
        kind = m.lastgroup
        tok_text = m.group()
        if kind == "metadata":
            meta = (text[m.end():], line)
            break
        if kind == "number" and len(tok_text) > 64:
            raise ParseError("numeric literal longer than 64 characters", line, pos - line_start + 1, source, text)
        if kind != "ws":
            toks.append(_Tok(kind, tok_text, line, pos - line_start + 1))
        nl = tok_text.count("\n")
        if nl:
            line += nl
            line_start = pos + tok_text.rfind("\n") + 1
        pos = m.end()
    toks.append(_Tok("eof", "", line, pos - line_start + 1))
    return toks, meta


def _block_comment_end(text, pos):
    """End of the block comment opening at ``pos``; block comments nest, as in TVM."""
    depth, i = 0, pos
    while i < len(text):
        if text.startswith("/*", i):
            depth += 1
            i += 2
        elif text.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return None


_FLOAT_MAX = {"float16": 65504.0, "float32": float(np.finfo(np.float32).max), "float64": float(np.finfo(np.float64).max)}


def _literal(body, dtype, is_float, negative, suffixed):
    """``(value, dtype)`` of a literal, range-checked as TVM's tokenizer does: an integer without
    a suffix that does not fit int32 becomes int64; any other value outside its type's range
    (``2147483648i32``, ``3.5e38f``, ``65505f16``) raises ``ValueError``."""
    if dtype == "bool":
        return bool(int(body)), dtype
    sign = "-" if negative else ""
    if is_float:
        value = float(body)
        if abs(value) > _FLOAT_MAX[dtype]:
            raise ValueError(f"floating point literal {sign}{body} does not fit in {dtype}")
        return (-value if negative else value), dtype
    value = -int(body) if negative else int(body)
    for dt in (dtype,) if suffixed or dtype != "int32" else ("int32", "int64"):
        info = np.iinfo(dt)
        if info.min <= value <= info.max:
            return value, dt
    raise ValueError(f"integer literal {sign}{body} does not fit in {dtype}")


def _number(text):
    m = re.match(r"^(.*?)(f16|f32|f64|f|i8|i16|i32|i64|i|u8|u16|u32|u64|b)?$", text)
    body, suffix = m.group(1), m.group(2)
    is_float = any(c in body for c in ".eE")
    if suffix:
        dtype = _NUM_SUFFIX[suffix]
    else:
        dtype = "float32" if is_float else "int32"
    return body, dtype, is_float or dtype.startswith("float")


def _decode_metadata(meta, source, text):
    """Constants of a metadata section; a malformed section is a ``ParseError`` at its header."""
    if meta is None or not meta[0].strip():
        return []
    try:
        return _decode_metadata_json(meta[0])
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError, RecursionError,
            MemoryError, struct.error) as e:   # binascii.Error is a ValueError
        raise ParseError(f"invalid #[metadata] section: {type(e).__name__}: {str(e)[:200]}", meta[1], 1,
                         source, text) from None


def _metadata_array(raw, dtype, shape):
    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}")
    if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ValueError(f"bad shape {shape!r}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _decode_metadata_json(meta_text):
    """Ours (JSON with ``relay.Constant``) or TVM's (``b64ndarrays``)."""
    data = json.loads(meta_text)
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    if "relay.Constant" in data:
        return [_metadata_array(base64.b64decode(c["data"], validate=True), c["dtype"], c["shape"])
                for c in data["relay.Constant"]]
    out = []
    for b in data.get("b64ndarrays", []):
        raw = base64.b64decode(b, validate=True)
        # TVM NDArray blob: magic, reserved, device (2 x i32), ndim (i32), dtype (u8 code, u8 bits, u16 lanes)
        off = 16 + 8
        (ndim,) = struct.unpack_from("<i", raw, off)
        off += 4
        code, bits, lanes = struct.unpack_from("<BBH", raw, off)
        off += 4
        shape = struct.unpack_from(f"<{ndim}q", raw, off)
        off += 8 * ndim
        (nbytes,) = struct.unpack_from("<q", raw, off)
        off += 8
        kind = {0: "int", 1: "uint", 2: "float"}[code]
        dtype = "bool" if (kind == "uint" and bits == 1) else f"{kind}{bits}"
        out.append(_metadata_array(raw[off:off + nbytes], dtype, list(shape)))
    return out


class _Parser:
    def __init__(self, text, source="<string>", base=None, constants=None):
        self.text, self.source = text, source
        self.toks, meta = _tokenize(text, source)
        self.pos = 0
        self.base = base or IRModule()
        self.constants = list(constants) if constants is not None else _decode_metadata(meta, source, text)
        self.gtvs = {name: td.header for name, td in self.base.type_definitions.items()}
        self.ctors = {c.name: c for td in self.base.type_definitions.values() for c in td.constructors}
        self.typedefs = {}
        self.depth = 0
        self.own_ctors = set()
        self.scopes = []
        self.tvar_scopes = []
        self.global_refs = []
        self.meta_nodes = {}

    # -- token helpers
    @property
    def tok(self):
        return self.toks[self.pos]

    def peek(self, k=1):
        return self.toks[min(self.pos + k, len(self.toks) - 1)]

    def error(self, msg, tok=None):
        tok = tok or self.tok
        return ParseError(msg, tok.line, tok.col, self.source, self.text)

    def at(self, text, kind=None):
        t = self.tok
        return t.text == text and t.kind in ((kind,) if kind else ("punct", "ident"))

    def accept(self, text):
        if self.at(text):
            self.pos += 1
            return True
        return False

    def expect(self, text):
        if not self.at(text):
            got = self.tok.text or "end of input"
            raise self.error(f"expected {text!r} but found {got!r}")
        self.pos += 1

    def span(self, tok=None):
        tok = tok or self.tok
        return Span(tok.line, tok.col, self.source)

    def ident(self, what="an identifier"):
        if self.tok.kind != "ident":
            raise self.error(f"expected {what} but found {self.tok.text or 'end of input'!r}")
        t = self.tok
        self.pos += 1
        return t.text

    # -- module
    def skip_version(self):
        """The optional ``#[version = "0.0.5"]`` header (TVM requires it; any other version is an
        error in both)."""
        if self.tok.kind == "version":
            v = re.search(r'"([^"]*)"', self.tok.text).group(1)
            if v != "0.0.5":
                raise self.error(f"unsupported text format version {v!r} (this is version 0.0.5)")
            self.pos += 1

    def parse_module(self):
        self.skip_version()
        if not (self.tok.kind == "eof" or self.at("def") or self.at("type") or self.at("extern")):
            if self.tok.kind == "ident" and self.peek().kind == "global":
                raise self.error(f"expected 'def' or 'type' at top level but found {self.tok.text!r}")
            return self.parse_expression_module()
        depth = 0
        # Pass 1: declare every ADT name so definitions may refer to each other in any order.
        for i in range(self.pos, len(self.toks) - 1):
            t = self.toks[i]
            if t.kind == "punct" and t.text in "{([":
                depth += 1
            elif t.kind == "punct" and t.text in "})]":
                depth -= 1
            elif depth == 0 and t.kind == "ident" and t.text == "type" and self.toks[i - 1].text != ".":
                name_tok = self.toks[i + 1]
                if name_tok.kind == "ident":
                    self.gtvs[name_tok.text] = GlobalTypeVar(name_tok.text)
        # Pass 2: type definitions (so constructors are known), then functions.
        defs = []
        while self.tok.kind != "eof":
            if self.at("type"):
                self.parse_typedef()
            elif self.at("extern"):
                t = self.tok
                self.pos += 1
                if self.parse_typedef().constructors:
                    raise self.error("an external type may not have any constructors", t)
            elif self.at("def"):
                defs.append(self.pos)
                self.skip_def()
            else:
                raise self.error(f"expected 'def' or 'type' at top level but found {self.tok.text!r}")
        end = self.pos
        functions = {}
        for p in defs:
            self.pos = p
            name, fn = self.parse_def()
            if name in functions:
                raise self.error(f"global @{name} is defined twice", self.toks[p])
            functions[name] = fn
        self.pos = end
        base = _without_stale(self.base, set(self.typedefs))
        if base is not self.base:   # the text replaces part of the base: its definitions come in its order
            base = IRModule({n: f for n, f in base.functions.items() if n not in functions}, base.type_definitions)
        mod = base.update(IRModule(functions, self.typedefs))
        for gv in self.global_refs:
            if gv.name_hint not in mod.functions:
                raise ParseError(f"unknown global function @{gv.name_hint}", gv.span.line, gv.span.column,
                                 self.source, self.text)
        return mod

    def parse_expression_module(self):
        """A text that is one expression (``free_var`` lines, bindings, a result) is the module
        whose ``@main`` takes the expression's free variables, like TVM's ``IRModule.from_expr``."""
        from .analysis import free_vars
        start = self.tok
        self.scopes.append({})
        body = self.parse_scope()
        if self.tok.kind != "eof":
            raise self.error(f"unexpected {self.tok.text!r} after the expression")
        for gv in self.global_refs:
            if gv.name_hint not in self.base.functions:
                raise ParseError(f"unknown global function @{gv.name_hint}", gv.span.line, gv.span.column,
                                 self.source, self.text)
        main = Function(tuple(free_vars(body)), body, span=self.span(start))
        return self.base.update(IRModule({"main": main}, {}))

    def skip_def(self):
        start = self.pos
        stack = []
        pairs = {"}": "{", ")": "(", "]": "["}
        self.pos += 1
        while self.tok.kind != "eof":
            t = self.tok
            if t.kind == "punct" and t.text in "{([":
                stack.append(t.text)
            elif t.kind == "punct" and t.text in "})]":
                if not stack or stack.pop() != pairs[t.text]:
                    break
                if not stack and t.text == "}":
                    self.pos += 1
                    return
            self.pos += 1
        # Unbalanced: parse the definition for a precise error message.
        err_tok = self.tok
        self.pos = start
        self.parse_def()
        raise self.error("unbalanced brackets in definition", err_tok)

    def parse_type_params(self):
        params = []
        if self.accept("["):
            while not self.at("]"):
                params.append(TypeVar(self.ident("a type parameter")))
                if not self.accept(","):
                    break
            self.expect("]")
        return params

    def parse_typedef(self):
        self.expect("type")
        name = self.ident("a type name")
        gtv = self.gtvs[name]
        if name in self.typedefs:
            raise self.error(f"type {name} is defined twice")
        tvars = self.parse_type_params()
        self.tvar_scopes.append({v.name: v for v in tvars})
        ctors = []
        if self.accept("{"):
            while not self.at("}"):
                ctok = self.tok
                cname = self.ident("a constructor name")
                if cname in self.own_ctors:
                    raise self.error(f"a constructor named {cname} is already defined", ctok)
                inputs = []
                if self.accept("("):
                    while not self.at(")"):
                        inputs.append(self.parse_type())
                        if not self.accept(","):
                            break
                    self.expect(")")
                c = Constructor(cname, tuple(inputs), gtv, len(ctors))
                ctors.append(c)
                self.ctors[cname] = c
                self.own_ctors.add(cname)
                if not self.accept(","):
                    break
            self.expect("}")
        self.tvar_scopes.pop()
        self.typedefs[name] = TypeData(gtv, tvars, ctors)
        return self.typedefs[name]

    def parse_def(self):
        self.expect("def")
        t = self.tok
        if t.kind != "global":
            raise self.error("expected a global name such as @main after 'def'")
        self.pos += 1
        name = t.text[1:]
        fn = self.parse_function_rest(self.span(t))
        return name, fn

    def parse_function_rest(self, span):
        tparams = self.parse_type_params()
        self.tvar_scopes.append({v.name: v for v in tparams})
        self.scopes.append({})
        self.expect("(")
        params, attrs = [], {}
        while not self.at(")"):
            if self.tok.kind == "ident" and self.peek().text == "=":
                key = self.ident()
                self.expect("=")
                attrs[key] = self.parse_attr_value()
            else:
                params.append(self.parse_binder())
            if not self.accept(","):
                break
        self.expect(")")
        ret = None
        if self.accept("->"):
            ret = self.parse_type()
        self.expect("{")
        body = self.parse_scope()
        self.expect("}")
        self.scopes.pop()
        self.tvar_scopes.pop()
        return Function(tuple(params), body, ret, tuple(tparams), Attrs(attrs), span=span)

    def parse_binder(self):
        t = self.tok
        if t.kind != "local":
            raise self.error(f"expected a variable such as %x but found {t.text!r}")
        self.pos += 1
        ann = None
        if self.accept(":"):
            ann = self.parse_type()
        v = Var(t.text[1:], ann, span=self.span(t))
        self.scopes[-1][t.text[1:]] = v
        return v

    # -- types
    def parse_type(self):
        return self.nested(self._parse_type)

    def _parse_type(self):
        t = self.tok
        if self.accept("("):
            fields = []
            while not self.at(")"):
                fields.append(self.parse_type())
                if not self.accept(","):
                    break
            self.expect(")")
            return TupleType(tuple(fields))
        if self.accept("fn"):
            tparams = self.parse_type_params()
            self.tvar_scopes.append({v.name: v for v in tparams})
            self.expect("(")
            args = []
            while not self.at(")"):
                args.append(self.parse_type())
                if not self.accept(","):
                    break
            self.expect(")")
            self.expect("->")
            ret = self.parse_type()
            self.tvar_scopes.pop()
            return FuncType(tuple(args), ret, tuple(tparams))
        if self.accept("_"):
            return IncompleteType()
        name = self.ident("a type")
        if name == "Tensor":
            self.expect("[")
            shape = self.parse_shape()
            self.expect(",")
            dtype = self.ident("a dtype")
            try:
                dtype = canonical_dtype(dtype)
            except ValueError as e:
                raise self.error(str(e), self.toks[self.pos - 1]) from None
            self.expect("]")
            return TensorType(shape, dtype)
        if is_dtype_name(name):
            try:
                return TensorType((), canonical_dtype(name))
            except ValueError as e:
                raise self.error(str(e), t) from None
        if name == "ref":
            self.expect("(")
            v = self.parse_type()
            self.expect(")")
            return RefType(v)
        for scope in reversed(self.tvar_scopes):
            if name in scope:
                return scope[name]
        if name in self.gtvs:
            args = []
            if self.accept("["):
                while not self.at("]"):
                    args.append(self.parse_type())
                    if not self.accept(","):
                        break
                self.expect("]")
            return TypeCall(self.gtvs[name], tuple(args))
        raise self.error(f"unknown type {name!r}", t)

    def parse_shape(self):
        close = ")" if self.accept("(") else "]" if self.accept("[") else None
        if close is None:
            raise self.error("expected a shape such as (1, 3, 224, 224)")
        dims = []
        while not self.at(close):
            if self.accept("?"):
                dims.append(ANY)
            elif self.tok.kind == "number":
                body, _, is_float = _number(self.tok.text)
                if is_float:
                    raise self.error(f"dimension must be an integer, not {self.tok.text!r}")
                dims.append(int(body))
                self.pos += 1
            else:
                raise self.error(f"expected a dimension (an integer or ?) but found {self.tok.text!r}")
            if not self.accept(","):
                break
        self.expect(close)
        return tuple(dims)

    # -- scopes and expressions
    def lookup(self, name, tok):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise self.error(f"unbound variable %{name}", tok)

    def lookup_dotted(self, name, tok):
        """``%input.1`` may be a variable (TVM keeps PyTorch's dotted names) or ``%x`` projected."""
        parts = name.split(".")
        for k in range(len(parts), 0, -1):
            head = ".".join(parts[:k])
            if any(head in scope for scope in self.scopes) and all(p.isdigit() for p in parts[k:]):
                e = self.lookup(head, tok)
                for p in parts[k:]:
                    e = TupleGetItem(e, int(p), span=self.span(tok))
                return e
        return self.lookup(parts[0] if all(p.isdigit() for p in parts[1:]) else name, tok)

    def parse_scope(self):
        """Statements (graph bindings, lets, free_var declarations) followed by a result expression."""
        self.scopes.append({})
        try:
            while True:
                t = self.tok
                if t.kind == "local" and self.peek().text == "=" and self.peek().kind == "punct":
                    self.pos += 2
                    e = self.parse_expr()
                    self.expect(";")
                    self.scopes[-1][t.text[1:]] = e
                    continue
                if self.at("free_var"):
                    self.pos += 1
                    self.parse_binder()
                    self.expect(";")
                    continue
                if self.at("let"):
                    return self.parse_let()
                e = self.parse_expr()
                if self.at(";"):
                    # ``e; rest`` sequences an effect: let %_ = e; rest
                    self.pos += 1
                    body = self.parse_scope()
                    return Let(Var("_"), e, body, span=self.span(t))
                return e
        finally:
            self.scopes.pop()

    def parse_let(self):
        t = self.tok
        self.expect("let")
        if self.at("("):
            # let (%a, %b) = e; body   is sugar for a tuple match
            self.pos += 1
            self.scopes.append({})
            pats = []
            while not self.at(")"):
                pats.append(self.parse_pattern())
                if not self.accept(","):
                    break
            self.expect(")")
            bound = self.scopes.pop()
            self.expect("=")
            value = self.parse_expr()
            self.expect(";")
            self.scopes.append(bound)
            body = self.parse_scope()
            self.scopes.pop()
            return Match(value, (Clause(PatternTuple(tuple(pats)), body),), True, span=self.span(t))
        self.scopes.append({})
        var = self.parse_binder()
        self.expect("=")
        value = self.parse_expr()
        self.expect(";")
        body = self.parse_scope()
        self.scopes.pop()
        return Let(var, value, body, span=self.span(t))

    def parse_expr(self, level=0):
        if level == len(_INFIX):
            return self.parse_unary()
        lhs = self.parse_expr(level + 1)
        while True:
            t = self.tok
            for sym, op in _INFIX[level]:
                if t.kind == "punct" and t.text == sym:
                    self.pos += 1
                    rhs = self.parse_expr(level + 1)
                    lhs = Call(Op(op), (lhs, rhs), span=self.span(t))
                    break
            else:
                return lhs

    def parse_unary(self):
        t = self.tok
        if self.at("-"):
            # A run of minus signs before a literal is folded into it, as TVM's tokenizer does.
            k = 0
            while self.peek(k).kind == "punct" and self.peek(k).text == "-":
                k += 1
            lit = self.peek(k)
            if lit.kind == "number" and lit.line == t.line and lit.col == t.col + k:
                self.pos += k
                return self.parse_number(negative=k % 2 == 1, start=t)
            if lit.kind == "ident" and lit.text == "inff" and lit.col == t.col + k:
                self.pos += k + 1
                return Constant(np.asarray(-np.inf if k % 2 else np.inf, "float32"), span=self.span(t))
            self.pos += 1
            return Call(Op("negative"), (self.nested(self.parse_unary),), span=self.span(t))
        return self.parse_postfix()

    def parse_number(self, negative=False, start=None):
        t = self.tok
        self.pos += 1
        body, dtype, is_float = _number(t.text)
        suffixed = t.text != body
        try:
            value, dtype = _literal(body, dtype, is_float, negative, suffixed)
        except ValueError as e:
            raise self.error(str(e), start or t) from None
        return Constant(np.asarray(value, dtype=dtype), span=self.span(start or t))

    def parse_postfix(self):
        start = self.tok
        e = self.parse_primary()
        while True:
            t = start
            if self.at("("):
                args, attrs = self.nested(self.parse_call_args)
                e = Call(e, tuple(args), Attrs(attrs), span=self.span(t))
            elif self.at(".") and self.peek().kind == "number":
                self.pos += 1
                e = TupleGetItem(e, int(self.tok.text), span=self.span(t))
                self.pos += 1
            elif self.tok.kind == "number" and self.tok.text.startswith(".") and self.tok.text[1:].isdigit():
                # tokenizer read ".0" as a number
                e = TupleGetItem(e, int(self.tok.text[1:]), span=self.span(t))
                self.pos += 1
            elif self.at("^"):
                self.pos += 1
                e = RefRead(e, span=self.span(t))
            else:
                return e

    def parse_call_args(self):
        self.expect("(")
        args, attrs = [], {}
        while not self.at(")"):
            if self.tok.kind == "ident" and self.peek().text == "=" and self.peek().kind == "punct":
                key = self.ident()
                self.expect("=")
                attrs[key] = self.parse_attr_value()
            else:
                if attrs:
                    raise self.error("positional argument after keyword attributes")
                args.append(self.parse_expr())
            if not self.accept(","):
                break
        self.expect(")")
        return args, attrs

    def parse_attr_value(self):
        t = self.tok
        if t.kind == "number":
            self.pos += 1
            body, dtype, is_float = _number(t.text)
            return float(body) if is_float else int(body)
        if self.at("-"):
            self.pos += 1
            v = self.parse_attr_value()
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                raise self.error("expected a number after '-'", t)
            return -v
        if t.kind == "string":
            self.pos += 1
            try:
                return json.loads(t.text)
            except ValueError as e:
                raise self.error(f"invalid string literal: {e}", t) from None
        if self.at("[") or self.at("("):
            close = "]" if self.tok.text == "[" else ")"
            self.pos += 1
            items = []
            while not self.at(close):
                items.append(self.parse_attr_value())
                if not self.accept(","):
                    break
            self.expect(close)
            return tuple(items)
        if t.kind == "ident":
            self.pos += 1
            return {"True": True, "False": False, "None": None, "nullptr": None,
                    "inff": float("inf")}.get(t.text, t.text)
        raise self.error(f"expected an attribute value but found {t.text!r}")

    def nested(self, parse, *args):
        """``parse(*args)`` one nesting level deeper; too deep is a parse error at the token."""
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                raise self.error(f"expressions, types or patterns nested more than {MAX_NESTING} levels deep; "
                                 f"flatten the program (e.g. with let or graph bindings)")
            return parse(*args)
        finally:
            self.depth -= 1

    def parse_primary(self):
        return self.nested(self._parse_primary)

    def _parse_primary(self):
        t = self.tok
        sp = self.span(t)
        if t.kind == "local":
            self.pos += 1
            return self.lookup_dotted(t.text[1:], t)
        if t.kind == "global":
            self.pos += 1
            gv = GlobalVar(t.text[1:], span=sp)
            self.global_refs.append(gv)
            return gv
        if t.kind == "number":
            return self.parse_number()
        if self.at("("):
            self.pos += 1
            if self.accept(")"):
                return Tuple((), span=sp)
            first = self.parse_scope()
            if self.accept(")"):
                return first
            fields = [first]
            while self.accept(","):
                if self.at(")"):
                    break
                fields.append(self.parse_expr())
            self.expect(")")
            return Tuple(tuple(fields), span=sp)
        if self.at("{"):
            self.pos += 1
            e = self.parse_scope()
            self.expect("}")
            return e
        if t.kind != "ident":
            raise self.error(f"expected an expression but found {t.text or 'end of input'!r}")
        name = t.text
        if name == "fn":
            self.pos += 1
            return self.parse_function_rest(sp)
        if name == "if":
            return self.parse_if()
        if name in ("match",):
            return self.parse_match()
        if name == "let":
            return self.parse_let()
        if name in ("True", "False"):
            self.pos += 1
            return Constant(np.asarray(name == "True"), span=sp)
        if name == "inff":
            self.pos += 1
            return Constant(np.asarray(np.inf, "float32"), span=sp)
        if name in ("ref", "ref_read", "ref_write") and self.peek().text == "(":
            self.pos += 1
            self.expect("(")
            a = self.parse_expr()
            if name == "ref_write":
                self.expect(",")
                b = self.parse_expr()
                self.expect(")")
                return RefWrite(a, b, span=sp)
            self.expect(")")
            return RefCreate(a, span=sp) if name == "ref" else RefRead(a, span=sp)
        if name == "meta":
            return self.parse_meta()
        self.pos += 1
        if name in self.ctors:
            c = self.ctors[name]
            if not c.inputs and not self.at("("):
                return Call(c, (), span=sp)
            return c
        try:
            get_op(name)
        except KeyError:
            raise self.error(f"unknown operator or constructor {name!r}", t) from None
        return Op(name, span=sp)

    def parse_meta(self):
        t = self.tok
        self.expect("meta")
        self.expect("[")
        kind = self.ident("a metadata kind")
        self.expect("]")
        self.expect("[")
        if self.tok.kind != "number":
            raise self.error("expected a metadata index")
        idx = int(self.tok.text)
        self.pos += 1
        self.expect("]")
        if kind != "relay.Constant":
            raise self.error(f"unsupported metadata kind {kind!r}", t)
        if idx >= len(self.constants):
            raise self.error(f"meta[relay.Constant][{idx}] is not in the metadata section "
                             f"({len(self.constants)} constants available)", t)
        if idx not in self.meta_nodes:   # every reference to one entry is the same node
            self.meta_nodes[idx] = Constant(self.constants[idx], span=self.span(t))
        return self.meta_nodes[idx]

    def parse_if(self):
        t = self.tok
        self.expect("if")
        self.expect("(")
        cond = self.parse_scope()
        self.expect(")")
        self.expect("{")
        then = self.parse_scope()
        self.expect("}")
        self.expect("else")
        if self.at("if"):
            other = self.parse_if()
        else:
            self.expect("{")
            other = self.parse_scope()
            self.expect("}")
        return If(cond, then, other, span=self.span(t))

    def parse_match(self):
        t = self.tok
        self.expect("match")
        complete = not self.accept("?")
        data = self.parse_postfix()
        self.expect("{")
        clauses = []
        while not self.at("}"):
            self.scopes.append({})
            lhs = self.parse_pattern()
            self.expect("=>")
            rhs = self.parse_scope()
            self.scopes.pop()
            clauses.append(Clause(lhs, rhs))
            if not self.accept(","):
                break
        self.expect("}")
        return Match(data, tuple(clauses), complete, span=self.span(t))

    def parse_pattern(self):
        return self.nested(self._parse_pattern)

    def _parse_pattern(self):
        t = self.tok
        if self.accept("_"):
            return PatternWildcard()
        if t.kind == "local":
            return PatternVar(self.parse_binder())
        if self.accept("("):
            ps = []
            while not self.at(")"):
                ps.append(self.parse_pattern())
                if not self.accept(","):
                    break
            self.expect(")")
            return PatternTuple(tuple(ps))
        name = self.ident("a pattern")
        if name not in self.ctors:
            raise self.error(f"unknown constructor {name!r} in pattern", t)
        ps = []
        if self.accept("("):
            while not self.at(")"):
                ps.append(self.parse_pattern())
                if not self.accept(","):
                    break
            self.expect(")")
        return PatternConstructor(self.ctors[name], tuple(ps))


def _nesting_error(message):
    return ParseError(message, 1, 1)


@deep(_nesting_error)
def _type_names(t, out):
    """The ADT names a type mentions."""
    if isinstance(t, TypeCall):
        out.add(t.func.name)
        for a in t.args:
            _type_names(a, out)
    elif isinstance(t, GlobalTypeVar):
        out.add(t.name)
    elif isinstance(t, TupleType):
        for f in t.fields:
            _type_names(f, out)
    elif isinstance(t, FuncType):
        for a in t.arg_types:
            _type_names(a, out)
        _type_names(t.ret_type, out)
    elif isinstance(t, RefType):
        _type_names(t.value, out)
    return out


def _mentions(fn):
    """ADT names and globals a function's definition refers to."""
    from .visitor import ExprVisitor

    class Collect(ExprVisitor):
        def __init__(self):
            super().__init__()
            self.types, self.globals = set(), set()

        def visit_var(self, e):
            if e.type_annotation is not None:
                _type_names(e.type_annotation, self.types)

        def visit_globalvar(self, e):
            self.globals.add(e.name_hint)

        def visit_constructor(self, e):
            self.types.add(e.belongs_to.name)

        def visit_function(self, e):
            if e.ret_type is not None:
                _type_names(e.ret_type, self.types)
            super().visit_function(e)

        def visit_match(self, e):
            stack = [c.lhs for c in e.clauses]
            while stack:
                p = stack.pop()
                if isinstance(p, PatternConstructor):
                    self.types.add(p.constructor.belongs_to.name)
                stack.extend(getattr(p, "patterns", ()))
            super().visit_match(e)
    c = Collect()
    c.visit(fn)
    return c.types, c.globals


def _without_stale(base, redefined):
    """``base`` without the types a text redefines and the definitions that depend on them (a
    text that brings its own ``List`` replaces the prelude's, and the prelude functions over the
    old one go with it)."""
    redefined = redefined & set(base.type_definitions)
    if not redefined:
        return base
    stale_types = set(redefined)
    changed = True
    while changed:   # types whose constructors mention stale types are stale too
        changed = False
        for name, td in base.type_definitions.items():
            if name not in stale_types and any(_type_names(t, set()) & stale_types
                                               for c in td.constructors for t in c.inputs):
                stale_types.add(name)
                changed = True
    uses = {name: _mentions(fn) for name, fn in base.functions.items()}
    stale_fns = {n for n, (ts, _) in uses.items() if ts & stale_types}
    changed = True
    while changed:
        changed = False
        for n, (_, gs) in uses.items():
            if n not in stale_fns and gs & stale_fns:
                stale_fns.add(n)
                changed = True
    return IRModule({n: f for n, f in base.functions.items() if n not in stale_fns},
                    {n: td for n, td in base.type_definitions.items() if n not in stale_types})


@deep(_nesting_error)
def parse(text, base: IRModule | None = None, source="<string>", constants=None) -> IRModule:
    """Parse a module.  ``base`` supplies definitions (e.g. the prelude) that the text may use;
    the result contains them plus the text's own.  ``constants`` overrides the metadata section."""
    return _Parser(text, source, base, constants).parse_module()


@deep(_nesting_error)
def parse_expr(text, base: IRModule | None = None, source="<string>", constants=None):
    """Parse a single expression (a scope: bindings, lets and ``free_var`` lines, then a result)."""
    p = _Parser(text, source, base, constants)
    p.skip_version()
    p.scopes.append({})
    e = p.parse_scope()
    if p.tok.kind != "eof":
        raise p.error(f"unexpected {p.tok.text!r} after the expression")
    return e


@deep(_nesting_error)
def parse_type(text, base: IRModule | None = None):
    p = _Parser(text, "<type>", base)
    t = p.parse_type()
    if p.tok.kind != "eof":
        raise p.error(f"unexpected {p.tok.text!r} after the type")
    return t
