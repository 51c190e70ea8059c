"""A design space read from a TOML or JSON file, and its expansion into configurations.

::

    base = "default"                  # keys a point does not set come from this configuration
    include = ["ecp5-small"]          # whole configurations (names or JSON paths) added as points
    [params]                          # configuration keys (isa.VTAConfig's JSON names)
    LOG_BATCH = 0                     # one value
    LOG_BLOCK_IN = [1, 2, 3]          # a list
    LOG_ACC_BUFF_SIZE = {range = [10, 14, 2]}        # lo..hi inclusive, optional step
    LOG_BLOCK_OUT = "LOG_BLOCK_IN"                    # an expression of other keys
    LOG_INP_BUFF_SIZE = "LOG_BATCH + LOG_BLOCK_IN + INP_DEPTH"   # bytes from a depth
    constraints = ["LOG_WGT_BUFF_SIZE >= LOG_INP_BUFF_SIZE"]
    [vars]                            # helper variables: enumerated, used in expressions only
    INP_DEPTH = [7, 9]
    [targets]
    devices = ["LFE5U-25F", "LFE5U-85F"]
    [workloads]
    names = ["resnet18.layer1", "mlp"]
    spatial_div = 8                   # convolutions at 1/8 of their spatial size
    [synthesis]
    margin = 0.25                     # screening: what the model must miss by to rule out
    fmax = "frontier"                 # nextpnr on "none", "frontier" or "all" synthesised points
    max_pnr = 2                       # at most this many nextpnr runs
    [search]
    method = "grid"                   # or "nsga2" (Optuna) for large spaces
    trials = 40
    seed = 0

Expressions and constraints use integers, the keys, + - * // % **, comparisons, and/or/not,
min() and max(); nothing else is evaluated. A point that ``isa.VTAConfig`` rejects is listed
with its message, not fatal.
"""

from __future__ import annotations

import ast
import itertools
import json
import operator
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from isa.config import ConfigError, VTAConfig, load_config
from isa.errors import InputError

from .devices import DEVICES
from .workloads import WORKLOADS

__all__ = ["Space", "SpaceError", "load_space", "parse_space", "Expansion", "expand",
           "point_config", "point_name", "complete_point", "validate", "CONFIG_KEYS"]


class SpaceError(InputError):
    """A space file that cannot be used; the message names the entry and what is wrong."""


def _config_keys() -> tuple[str, ...]:
    keys = [k for k in VTAConfig().to_dict() if k != "LOG_BLOCK"]
    at = list(VTAConfig().to_dict()).index("LOG_BLOCK")
    return tuple(keys[:at] + ["LOG_BLOCK_IN", "LOG_BLOCK_OUT"] + keys[at:])


#: Every configuration key of a point, in the order of points.csv.
CONFIG_KEYS = _config_keys()
_SECTIONS = {"base", "include", "params", "vars", "targets", "workloads", "synthesis",
             "search"}
_FMAX_MODES = ("none", "frontier", "all")
#: The most combinations a space may enumerate: expanding checks each with VTAConfig (tens of
#: microseconds), and a sweep measures minutes per point, so larger grids are typos.
MAX_GRID = 100_000
#: Space expressions are short formulas; the bound keeps parsing and evaluating shallow.
MAX_EXPRESSION_CHARS = 1000
#: The largest integer (in bits) an expression may build: ``**`` is bounded by it.
MAX_INT_BITS = 4096
_METHODS = ("grid", "nsga2")


# ---------------------------------------------------------------------------- expressions
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_CMPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
         ast.Gt: operator.gt, ast.GtE: operator.ge}
_FUNCS = {"min": min, "max": max}


def _pow(base, exp):
    """``**`` on integers, refusing a result of more than :data:`MAX_INT_BITS` bits (which
    would take minutes and gigabytes to compute)."""
    if exp < 0:
        raise ValueError(f"{base} ** {exp}: a negative exponent is not an integer")
    if abs(base) > 1 and int(base).bit_length() * exp > MAX_INT_BITS + int(base).bit_length():
        raise ValueError(f"{base} ** {exp} is too large (over {MAX_INT_BITS} bits)")
    return base ** exp


_BINOPS[ast.Pow] = _pow


def _compile(text: str, where: str) -> ast.Expression:
    if len(text) > MAX_EXPRESSION_CHARS:
        raise SpaceError(f"{where}: an expression of {len(text)} characters (at most "
                         f"{MAX_EXPRESSION_CHARS}); write a shorter formula")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise SpaceError(f"{where}: {text!r} is not an expression ({exc.msg})") from None
    except (RecursionError, MemoryError):
        raise SpaceError(f"{where}: the expression is nested too deeply") from None
    for node in ast.walk(tree):
        ok = isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp,
                               ast.Name, ast.Load, ast.Constant, ast.Call, ast.USub, ast.UAdd,
                               ast.Not, ast.And, ast.Or, *_BINOPS, *_CMPS))
        if isinstance(node, ast.Constant) and not isinstance(node.value, int):
            ok = False
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in _FUNCS and not node.keywords
                                               and len(node.args) >= 2):
            ok = False      # min(x) and max() are errors in Python too
        if not ok:
            raise SpaceError(f"{where}: {text!r} uses {type(node).__name__}, which space "
                             f"expressions do not allow (integers, keys, + - * // % **, "
                             f"comparisons, and/or/not, min, max)")
    return tree


def _names(tree: ast.Expression) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in _FUNCS}


def _eval(node, env: dict):
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, env)
        return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}[
            type(node.op)](v)
    if isinstance(node, ast.BoolOp):
        values = [_eval(v, env) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, right in zip(node.ops, node.comparators):
            right = _eval(right, env)
            if not _CMPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Call):
        return _FUNCS[node.func.id](*(_eval(a, env) for a in node.args))
    raise SpaceError(f"cannot evaluate {ast.dump(node)}")   # _compile let nothing else in


# ---------------------------------------------------------------------------- the space
@dataclass(frozen=True)
class Space:
    """A parsed space file: how to enumerate points and what to measure on them."""

    base: str = "default"
    domains: tuple = ()          # ((key, (values...)), ...) of the enumerated keys and vars
    variables: tuple = ()        # names of the [vars] (not configuration keys)
    derived: tuple = ()          # ((key, expression text), ...)
    constraints: tuple = ()      # expression texts
    devices: tuple = ("LFE5U-25F", "LFE5U-45F", "LFE5U-85F")
    workloads: tuple = ("resnet18.layer1", "resnet18.fc", "mlp")
    spatial_div: int = 8
    margin: float = 0.25
    fmax: str = "frontier"
    max_pnr: int = 2
    method: str = "grid"
    trials: int = 40
    seed: int = 0
    include: tuple = ()          # ((name, point), ...) whole configurations added to the grid
    source: str = field(default="", compare=False)

    @property
    def grid_size(self) -> int:
        n = 1
        for _, values in self.domains:
            n *= len(values)
        return n


@dataclass(frozen=True)
class Expansion:
    """The points of a space: valid ones (key -> value dicts) and the rejected ones."""

    points: tuple
    rejected: tuple               # ((point, message), ...) VTAConfig refused these
    excluded: int                 # combinations the constraints removed


def _int(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpaceError(f"{where}: {value!r} is not an integer")
    return value


def _domain(key: str, spec) -> "tuple | str":
    where = f"params.{key}"
    if isinstance(spec, str):
        return spec
    if isinstance(spec, list):
        if not spec:
            raise SpaceError(f"{where}: an empty list leaves no point")
        return tuple(dict.fromkeys(_int(v, where) for v in spec))
    if isinstance(spec, dict):
        if set(spec) != {"range"} or not isinstance(spec["range"], list) \
                or len(spec["range"]) not in (2, 3):
            raise SpaceError(f"{where}: a table must be {{range = [lo, hi]}} or "
                             f"{{range = [lo, hi, step]}}")
        lo, hi, *step = (_int(v, where) for v in spec["range"])
        step = step[0] if step else 1
        if step <= 0 or hi < lo:
            raise SpaceError(f"{where}: range {spec['range']} is empty (need lo <= hi, step > 0)")
        if (hi - lo) // step >= MAX_GRID:
            raise SpaceError(f"{where}: range {spec['range']} has {(hi - lo) // step + 1} "
                             f"values (a space enumerates at most {MAX_GRID} combinations)")
        return tuple(range(lo, hi + 1, step))
    return (_int(spec, where),)


def _table(data: dict, name: str) -> dict:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise SpaceError(f"[{name}] must be a table")
    return value


def _unknown(table: dict, known: set, where: str) -> None:
    extra = sorted(set(table) - known)
    if extra:
        raise SpaceError(f"{where}: unknown entr{'ies' if len(extra) > 1 else 'y'} "
                         f"{', '.join(extra)}; known: {', '.join(sorted(known))}")


def parse_space(data: dict, *, source: str = "") -> Space:
    """A :class:`Space` from the parsed file (a dict); :class:`SpaceError` if it is wrong."""
    if not isinstance(data, dict):
        raise SpaceError("a space file holds a table (TOML) or an object (JSON)")
    _unknown(data, _SECTIONS, "the space file")
    base = data.get("base", "default")
    if not isinstance(base, str):
        raise SpaceError(f"base: {base!r} is not a configuration name or JSON path")
    try:
        load_config(base)
    except ConfigError as exc:
        raise SpaceError(f"base: {exc}") from None
    include = data.get("include", [])
    if not isinstance(include, list) or not all(isinstance(i, str) for i in include):
        raise SpaceError("include must be a list of configuration names or JSON paths")
    included = []
    for name in include:
        try:
            included.append((name, _as_point(load_config(name))))
        except ConfigError as exc:
            raise SpaceError(f"include: {exc}") from None
    params = dict(_table(data, "params"))
    constraints = params.pop("constraints", [])
    if not isinstance(constraints, list) or not all(isinstance(c, str) for c in constraints):
        raise SpaceError("params.constraints must be a list of expressions (strings)")
    keys = set(CONFIG_KEYS) | {"LOG_BLOCK"}
    _unknown(params, keys, "[params]")
    if "LOG_BLOCK" in params and ({"LOG_BLOCK_IN", "LOG_BLOCK_OUT"} & set(params)):
        raise SpaceError("[params]: give LOG_BLOCK or LOG_BLOCK_IN/LOG_BLOCK_OUT, not both")
    if "LOG_BLOCK" in params:
        params["LOG_BLOCK_IN"] = params.pop("LOG_BLOCK")
        params["LOG_BLOCK_OUT"] = "LOG_BLOCK_IN"
    variables = _table(data, "vars")
    clash = sorted(set(variables) & (keys | set(_FUNCS)))
    if clash:
        raise SpaceError(f"[vars]: {', '.join(clash)} is a configuration key or function; "
                         f"give helper variables other names")
    names = set(CONFIG_KEYS) | set(variables)
    domains, derived = [], []
    for key, spec in variables.items():
        d = _domain(key, spec)
        if isinstance(d, str):
            raise SpaceError(f"vars.{key}: helper variables take values, not expressions")
        domains.append((key, d))
    for key, spec in params.items():
        d = _domain(key, spec)
        if isinstance(d, str):
            tree = _compile(d, f"params.{key}")
            bad = _names(tree) - names
            if bad:
                raise SpaceError(f"params.{key}: {d!r} names {', '.join(sorted(bad))}, which "
                                 f"is neither a configuration key nor a [vars] variable")
            derived.append((key, d))
        else:
            domains.append((key, d))
    for i, c in enumerate(constraints):
        bad = _names(_compile(c, f"params.constraints[{i}]")) - names
        if bad:
            raise SpaceError(f"params.constraints[{i}]: {c!r} names {', '.join(sorted(bad))}, "
                             f"which is neither a configuration key nor a [vars] variable")
    _order_derived(derived)
    grid = 1
    for _, values in domains:
        grid *= len(values)
    if grid > MAX_GRID:
        raise SpaceError(f"[params] and [vars] enumerate {grid} combinations, more than "
                         f"{MAX_GRID}; narrow the ranges (or sample them: a list of values)")

    targets = _table(data, "targets")
    _unknown(targets, {"devices"}, "[targets]")
    devices = tuple(targets.get("devices", Space.devices))
    for d in devices:
        if d not in DEVICES:
            raise SpaceError(f"targets.devices: unknown device {d!r}; known: "
                             f"{', '.join(DEVICES)}")
    wl = _table(data, "workloads")
    _unknown(wl, {"names", "spatial_div"}, "[workloads]")
    wl_names = tuple(wl.get("names", Space.workloads))
    for n in wl_names:
        if n not in WORKLOADS:
            raise SpaceError(f"workloads.names: unknown workload {n!r}; known: "
                             f"{', '.join(WORKLOADS)}")
    if not wl_names:
        raise SpaceError("workloads.names: at least one workload is needed")
    spatial_div = _int(wl.get("spatial_div", Space.spatial_div), "workloads.spatial_div")
    syn = _table(data, "synthesis")
    _unknown(syn, {"margin", "fmax", "max_pnr"}, "[synthesis]")
    margin = syn.get("margin", Space.margin)
    if not isinstance(margin, (int, float)) or not 0 <= margin < 1:
        raise SpaceError(f"synthesis.margin: {margin!r} must be a number in [0, 1)")
    fmax = syn.get("fmax", Space.fmax)
    if fmax not in _FMAX_MODES:
        raise SpaceError(f"synthesis.fmax: {fmax!r} must be one of {', '.join(_FMAX_MODES)}")
    max_pnr = _int(syn.get("max_pnr", Space.max_pnr), "synthesis.max_pnr")
    search = _table(data, "search")
    _unknown(search, {"method", "trials", "seed"}, "[search]")
    method = search.get("method", Space.method)
    if method not in _METHODS:
        raise SpaceError(f"search.method: {method!r} must be one of {', '.join(_METHODS)}")
    trials = _int(search.get("trials", Space.trials), "search.trials")
    seed = _int(search.get("seed", Space.seed), "search.seed")
    if spatial_div < 1 or max_pnr < 0 or trials < 1:
        raise SpaceError("workloads.spatial_div and search.trials must be >= 1, "
                         "synthesis.max_pnr >= 0")
    return Space(base, tuple(domains), tuple(variables), tuple(derived), tuple(constraints),
                 devices, wl_names, spatial_div, float(margin), fmax, max_pnr, method, trials,
                 seed, tuple(included), source)


def _order_derived(derived: list) -> None:
    """Sort derived keys so each comes after the derived keys it reads; reject cycles."""
    pending = {k: _names(_compile(e, k)) for k, e in derived}
    ordered = []
    while pending:
        ready = [k for k, deps in pending.items() if not (deps & set(pending))]
        if not ready:
            raise SpaceError(f"[params]: the expressions of {', '.join(sorted(pending))} "
                             f"depend on each other in a cycle")
        for k in ready:
            ordered.append(k)
            del pending[k]
    derived.sort(key=lambda kv: ordered.index(kv[0]))


def load_space(path: "str | Path") -> Space:
    """Read a ``.toml`` or ``.json`` space file."""
    from isa.errors import InputError
    from isa.safeio import parse_json, read_text

    path = Path(path)
    try:        # bounded in size and time (a device or a FIFO is not read forever)
        text = read_text(path, what="space file", limit=16 << 20)
    except InputError as exc:
        raise SpaceError(str(exc)) from None
    try:
        if path.suffix == ".json":
            data = parse_json(text, what=str(path))
        else:
            data = tomllib.loads(text)
    except (ValueError, RecursionError) as exc:   # InputError is a ValueError
        raise SpaceError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: "
                         f"{exc}") from None
    return parse_space(data, source=str(path))


def _base_point(space: Space) -> dict:
    return _as_point(load_config(space.base))


def _as_point(cfg: VTAConfig) -> dict:
    """A configuration as a point: every key of :data:`CONFIG_KEYS`."""
    d = cfg.to_dict()
    if "LOG_BLOCK" in d:
        block = d.pop("LOG_BLOCK")
        d["LOG_BLOCK_IN"] = d["LOG_BLOCK_OUT"] = block
    return {k: d[k] for k in CONFIG_KEYS}


def point_config(point: dict) -> VTAConfig:
    """The configuration of a point (raises ConfigError if it is invalid)."""
    return VTAConfig.from_dict(dict(point), name=point_name(point))


def point_name(point: dict) -> str:
    """A short readable name: ``b0i2o2-u10i11w12a13-bus64-lat4`` (log2 of BATCH, BLOCK_IN,
    BLOCK_OUT; of the buffer sizes; the bus width; the memory latency)."""
    return (f"b{point['LOG_BATCH']}i{point['LOG_BLOCK_IN']}o{point['LOG_BLOCK_OUT']}"
            f"-u{point['LOG_UOP_BUFF_SIZE']}i{point['LOG_INP_BUFF_SIZE']}"
            f"w{point['LOG_WGT_BUFF_SIZE']}a{point['LOG_ACC_BUFF_SIZE']}"
            f"-bus{1 << point['LOG_BUS_WIDTH']}-lat{point['MEM_LATENCY']}")


def complete_point(space: Space, assignment: dict) -> "dict | None":
    """The full point for values of the enumerated keys and vars: derived keys evaluated;
    None if a constraint excludes it. Vars are not part of the point."""
    env = _base_point(space)
    env.update(assignment)
    for key, expr in space.derived:
        try:
            env[key] = int(_eval(_compile(expr, key), env))
        except (ArithmeticError, ValueError) as exc:
            raise SpaceError(f"params.{key}: {expr!r} cannot be evaluated at "
                             f"{assignment}: {exc}") from None
    for i, c in enumerate(space.constraints):
        try:
            if not _eval(_compile(c, c), env):
                return None
        except (ArithmeticError, ValueError) as exc:
            raise SpaceError(f"params.constraints[{i}]: {c!r} cannot be evaluated at "
                             f"{assignment}: {exc}") from None
    return {k: env[k] for k in CONFIG_KEYS}


def validate(point: dict) -> "str | None":
    """None if VTAConfig accepts the point, else its message."""
    try:
        point_config(point)
    except ConfigError as exc:
        return str(exc)
    return None


def expand(space: Space) -> Expansion:
    """Every combination of the enumerated keys, completed, filtered and validated."""
    keys = [k for k, _ in space.domains]
    points, rejected, excluded, seen = [], [], 0, set()
    for values in itertools.product(*(v for _, v in space.domains)):
        point = complete_point(space, dict(zip(keys, values)))
        if point is None:
            excluded += 1
            continue
        ident = tuple(point.values())
        if ident in seen:        # vars that do not change the configuration
            continue
        seen.add(ident)
        message = validate(point)
        if message is None:
            points.append(point)
        else:
            rejected.append((point, message))
    for _, point in space.include:
        if tuple(point.values()) not in seen:
            seen.add(tuple(point.values()))
            points.append(point)
    return Expansion(tuple(points), tuple(rejected), excluded)
