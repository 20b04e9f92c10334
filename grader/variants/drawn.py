"""A variant's traces, drawn from its key: the unit's public builders and hidden specs.

unit.yaml names what varies (``variants``)::

    variants:
      public: {burst: "public_traces.py:burst"}   # a builder in labs/<unit>, called with seed=
      hidden: [steady-mix, deadlines]             # traces/<unit>/specs/<name>.yaml
      protocols: [notebook-sweep]                 # protocols/<name>.json: seeds of its own

A public name is a trace, drawn into the lab's ``traces/<name>.json``; a name that ends in
``.json`` is another lab file of that path (``tailruns.json: "public_traces.py:tailruns"``),
which is no trace: its builder checks what it draws, this module only that it is an object.
A builder module that reads files of ``labs/<unit>`` besides itself names them in ``INPUTS``
(``builder_inputs``), so that a change to one of them makes new variants (``store``).

A hidden spec must ``generate`` its requests. Its variant gets a ``seed`` derived from the key
and, for each entry of the spec's optional ``vary`` block, a value drawn for the field the
entry names (a dotted path into ``generate``)::

    vary:
      arrivals.ratePerMs: {min: 0.016, max: 0.024, step: 0.001}
      outputTokens.weights: {values: [[1, 1, 3, 3, 2], [2, 1, 2, 3, 2]]}
      pin: {set: [{request: 1, outputTokens: 1}]}   # every variant; a field only variants have

``{set: value}`` draws nothing: it keeps in every draw a case that a graded check needs (the
strict check would otherwise refuse the draws that lack it). A spec that lists its
``requests`` (a construction) is drawn again as a perturbation of them
(``grader.traces.perturb``): its ``vary`` entries name the perturbation's knobs, and the
knobs it does not name keep their identity values::

    vary:
      arrivalScale: {min: 0.85, max: 1.15, step: 0.01}
      idPrefix: {values: [k, m, v]}

The fixed (non-variant) trace ignores ``vary``, so adding one changes no existing file. Every
drawn trace is checked with the lab's own ``servesim.parse_trace``.

A named protocol (``protocols/<name>.json`` in the lab folder) keeps every field but its
``seeds``: the variant's replications draw other arrivals, sizes and quality outcomes from the
same workload, so an experiment's figures are the student's own while what it measures stays
the same. Its seeds are as many as the fixed protocol's, distinct, and at least
``PROTOCOL_SEED_FLOOR`` (never one of the small seeds a lab ships); it is checked with
``servesim.protocol.parse_protocol``.
"""

from __future__ import annotations

import copy
import json
import random

import servesim
from servesim.protocol import ProtocolError, parse_protocol

from ..plugins import load_plugin
from ..traces.errors import SpecError
from ..traces.perturb import KNOBS, perturb_requests
from ..traces.tracegen import load_yaml_or_json, trace_from_spec
from ..traces.tracetools import trace_text
from ..units import Unit, UnitError
from .keys import derived_seed

# A drawn protocol seed lies in [FLOOR, CEILING): above every seed a lab ships.
PROTOCOL_SEED_FLOOR, PROTOCOL_SEED_CEILING = 1_000, 1_000_000


def public_names(unit: Unit) -> tuple[str, ...]:
    return tuple(unit.doc.get("variants", {}).get("public", {}))


def public_file(name: str) -> str:
    """The lab-relative path that public variant ``name`` is drawn into."""
    return name if is_lab_file(name) else f"traces/{name}.json"


def is_lab_file(name: str) -> bool:
    """Whether public variant ``name`` is a lab file that is not a trace."""
    return name.endswith(".json")


def hidden_names(unit: Unit) -> tuple[str, ...]:
    return tuple(unit.doc.get("variants", {}).get("hidden", ()))


def protocol_names(unit: Unit) -> tuple[str, ...]:
    return tuple(unit.doc.get("variants", {}).get("protocols", ()))


def _label(kind: str, name: str, draw: int) -> str:
    """What a seed is derived for: a trace of a draw (draw 0 is the first; a refused draw is
    followed by the next, ``store``)."""
    return f"{kind}:{name}" if draw == 0 else f"{kind}:{name}#{draw}"


def builder_inputs(unit: Unit, ref: str) -> tuple[str, ...]:
    """The files (relative to ``labs/<unit>``) that the builder module of ``ref``
    (``file.py:function``) reads besides itself and the lab folder: its ``INPUTS``, which the
    variant cache's hash covers (``store``)."""
    module = load_plugin(unit, ref.partition(":")[0], "variant builder")
    return tuple(getattr(module, "INPUTS", ()))


def public_traces(unit: Unit, key: str, draw: int = 0) -> dict[str, str]:
    """``name -> file text`` of each public trace (or lab file) the unit varies, drawn for
    ``key``; ``public_file(name)`` is where it goes."""
    out = {}
    for name, ref in unit.doc.get("variants", {}).get("public", {}).items():
        relative, function = ref.split(":")
        module = load_plugin(unit, relative, "variant builder")
        build = getattr(module, function, None)
        if not callable(build):
            raise UnitError(f"unit {unit.id}: variants.public.{name}: {ref} is not a function")
        doc = build(seed=derived_seed(key, _label("public", name, draw)))
        if is_lab_file(name):
            if not isinstance(doc, dict):
                raise UnitError(f"{ref} (variant): the drawn {name} must be a JSON object")
        else:
            _check(doc, name, f"{ref} (variant)")
        render = getattr(module, "render", None)
        out[name] = render(doc) if callable(render) else trace_text(doc)
    return out


def hidden_traces(unit: Unit, key: str, draw: int = 0) -> dict[str, str]:
    """``name -> file text`` of each hidden trace the unit varies, drawn for ``key``."""
    out = {}
    for name in hidden_names(unit):
        path = unit.traces_dir / "specs" / f"{name}.yaml"
        spec = load_yaml_or_json(path)
        doc = trace_from_spec(draw_spec(spec, key, str(path), draw), f"{path} (variant)")
        _check(doc, name, f"{path} (variant)")
        out[name] = trace_text(doc)
    return out


def protocols(unit: Unit, key: str, draw: int = 0) -> dict[str, str]:
    """``name -> file text`` of each protocol the unit varies, with seeds drawn for ``key``."""
    out = {}
    for name in protocol_names(unit):
        path = unit.lab_dir / "protocols" / f"{name}.json"
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            count = len(parse_protocol(doc, str(path)).seeds)
        except (OSError, ValueError) as exc:  # ProtocolError is a ValueError
            raise UnitError(f"unit {unit.id}: variants.protocols: {name}: {exc}") from None
        rng = random.Random(derived_seed(key, _label("protocol", name, draw)))
        doc["seeds"] = sorted(rng.sample(range(PROTOCOL_SEED_FLOOR, PROTOCOL_SEED_CEILING), count))
        try:
            parse_protocol(json.loads(json.dumps(doc)), f"{path} (variant)")
        except ProtocolError as exc:
            raise UnitError(f"{path} (variant): the drawn protocol is not valid: {exc}") from None
        out[name] = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    return out


def draw_spec(spec, key: str, where: str, draw: int = 0) -> dict:
    """``spec`` as variant ``key`` has it: a seed of its own and its ``vary`` entries drawn
    (for a listed spec, its requests perturbed by the drawn knobs)."""
    listed = isinstance(spec, dict) and "requests" in spec
    if not isinstance(spec, dict) or not (listed or "generate" in spec):
        raise SpecError(f"{where}: a varied trace's spec must 'generate' or list its requests")
    drawn = copy.deepcopy(spec)
    vary = drawn.pop("vary", None) or {}
    name = str(drawn.get("name", ""))
    seed = derived_seed(key, _label("hidden", name, draw))
    rng = random.Random(derived_seed(key, _label("vary", name, draw)))
    target = dict(KNOBS) if listed else drawn["generate"]
    if not isinstance(target, dict):
        raise SpecError(f"{where}: 'generate' must be a mapping")
    if not listed:
        target["seed"] = seed
    what = "perturbation knob" if listed else "field of 'generate'"
    for path in sorted(vary):
        entry = vary[path]
        if isinstance(entry, dict) and "set" in entry:
            _set(target, path, copy.deepcopy(entry["set"]), where, not listed, what)
        else:
            value = draw_value(entry, rng, f"{where}: vary.{path}")
            _set(target, path, value, where, False, what)
    if listed:  # the knobs read the fixed requests' fields: the lab's own check comes first
        fixed = {"name": name, "description": "", "requests": drawn["requests"]}
        try:
            servesim.parse_trace(json.loads(json.dumps(fixed)), source=where)
        except (servesim.TraceError, TypeError, ValueError) as exc:
            raise SpecError(f"{where}: the listed requests are not a valid trace: {exc}") from None
        drawn["requests"] = perturb_requests(drawn["requests"], target, seed, f"{where}: vary")
    return drawn


def draw_value(entry, rng: random.Random, where: str):
    """One value of a ``vary`` entry: one of ``values``, or ``min + k * step`` up to ``max``
    (integers when all three are), or uniform in [min, max] rounded to 6 decimals."""
    if not isinstance(entry, dict):
        raise SpecError(f"{where}: must be {{values}} or {{min, max, step?}}")
    if "values" in entry:
        return copy.deepcopy(rng.choice(entry["values"]))
    low, high, step = entry["min"], entry["max"], entry.get("step")
    if high < low:
        raise SpecError(f"{where}: 'max' must be >= 'min'")
    if step is None:
        return round(rng.uniform(low, high), 6)
    value = low + step * rng.randint(0, int((high - low) / step + 1e-9))
    return value if isinstance(value, int) else round(value, 10)


def _set(target: dict, path: str, value, where: str, new: bool, what: str) -> None:
    """Set ``path`` in ``target`` (``generate``, or a listed spec's knobs); only a ``set``
    entry of a generated spec (``new``) may add a leaf, which the spec schema then checks (a
    drawn entry naming no field is a typo)."""
    *parents, leaf = path.split(".")
    node = target
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or (leaf not in node and not new):
        raise SpecError(f"{where}: vary names '{path}', which is no {what}")
    node[leaf] = value


def _check(doc, name: str, source: str) -> None:
    if not isinstance(doc, dict) or doc.get("name") != name:
        raise UnitError(f"{source}: the drawn trace must be a trace named '{name}'")
    try:
        servesim.parse_trace(json.loads(json.dumps(doc)), source=source)
    except servesim.TraceError as exc:
        raise UnitError(f"{source}: the drawn trace is not valid: {exc}") from None
