"""What the plan runner executes: the ops of a graph file as fx nodes of the trace, with the
wiring the file gives them. A plain graph is the trace itself; a graph `roam remat` rewrote
(docs/remat.md) also holds copies, ops with `recomputes` that compute an op of the trace
again, whose consumers read the copy's outputs instead of the original's.

In: the graph file (a dict) and the export of the runner's own trace. Out: a Program, or
BadInput naming the first difference from the trace. The check here is what running needs
(each op of the file is an op of the trace or a copy of one, and reads, input by input, a
computation of the value the trace's op reads); `roam validate --original` checks the same
faithfulness independently, plus the orderings of in-place writes.
"""

from dataclasses import dataclass, field

from . import nested
from .patches import STATE_UPDATE_SKIPPED_NAMES
from .plan_io import BadInput


def is_ordering(t):
    """A size-0 control tensor: an ordering dependency that carries no value."""
    return t.get("size") == 0 and t.get("kind") == "control"


@dataclass
class Program:
    graph: dict  # the graph file
    op_nodes: dict  # op id -> the fx node it runs (a copy runs its original's node)
    origin: dict  # op id -> the trace's op it computes (itself for the trace's ops)
    # op id -> {fx input node: tensor id it reads}, where that is not the trace's tensor
    rewired: dict = field(default_factory=dict)
    # copy op id -> {trace tensor id: the copy's tensor computing it}
    copy_outputs: dict = field(default_factory=dict)
    value: dict = field(default_factory=dict)  # tensor id -> the trace tensor whose value it is

    @property
    def copies(self):
        return [op for op, o in self.origin.items() if op != o]

    def is_copy(self, op):
        return self.origin[op] != op


def has_copies(graph):
    return any(op.get("recomputes") is not None for op in graph.get("ops", []))


def plain_program(export, graph):
    """The trace's own ops (graph is the trace, checked by plan_io.first_graph_difference)."""
    nodes = dict(enumerate(export.op_nodes))
    value = {t["id"]: t["id"] for t in graph["tensors"]}
    return Program(graph=graph, op_nodes=nodes, origin={i: i for i in nodes}, value=value)


def _on_input_storage(tensors, t):
    """Whether trace tensor t lies on a graph input's storage (it aliases one)."""
    if t.get("alias_of") is None:
        return False
    while t.get("alias_of") is not None:
        t = tensors[t["alias_of"]]
    return t.get("producer") is None


def _fields(t):
    return {"size": t.get("size"), "producer": t.get("producer"), "alias_of": t.get("alias_of"),
            "output": t.get("output", False), "kind": t.get("kind", "")}


def _check_ids(given):
    """The ids the check below looks up, as integers (null where a field may be absent), so
    that a malformed file (run with --unsafe-skip-validate) is bad input, not a crash."""
    def integer(v):
        return isinstance(v, int) and not isinstance(v, bool)

    for what, optional in (("ops", ("recomputes",)), ("tensors", ("producer", "alias_of"))):
        items = given.get(what, [])
        if not isinstance(items, list) or not all(isinstance(x, dict) for x in items):
            raise BadInput(f"field \"{what}\" is not a list of objects")
        for i, x in enumerate(items):
            for key in ("id",) + optional:
                v = x.get(key)
                if not integer(v) and not (v is None and key in optional):
                    raise BadInput(f"{what}[{i}]: field \"{key}\" is {v!r}, not an integer")
            if what == "tensors":
                consumers = x.get("consumers", [])
                if not isinstance(consumers, list) or not all(integer(c) for c in consumers):
                    raise BadInput(f"tensors[{i}]: field \"consumers\" is {consumers!r}, not a "
                                   "list of integers")


def rewritten_program(export, given):
    """The Program of `given`, a remat rewrite of the trace `export.graph`; raises BadInput
    (without the file name, which the caller adds) at the first difference."""
    _check_ids(given)
    trace = export.graph
    tops = trace["ops"]
    ops = given.get("ops", [])
    originals = [op for op in ops if op.get("recomputes") is None]
    if len(originals) != len(tops):
        raise BadInput(f"{len(originals)} ops that are not copies in the file, {len(tops)} in "
                       "the trace")
    for g, t in zip(originals, tops):
        for key in ("id", "name", "phase"):
            if g.get(key) != t.get(key):
                raise BadInput(f"op {t['id']}: field \"{key}\" is {g.get(key)!r} in the file, "
                               f"{t.get(key)!r} in the trace")
    by_id = {op["id"]: op for op in tops}
    origin = {op["id"]: op["id"] for op in tops}
    for op in ops:
        o = op.get("recomputes")
        if o is None:
            continue
        if op.get("id") in origin:
            raise BadInput(f"copy {op.get('id')}: its id is already an op's")
        if o not in by_id:
            raise BadInput(f"op {op.get('id')}: field \"recomputes\" is {o!r}, not an op of the "
                           "trace")
        if op.get("name") != by_id[o]["name"]:
            raise BadInput(f"op {op['id']} recomputes op {o} ({by_id[o]['name']}) but is "
                           f"named {op.get('name')!r}")
        origin[op["id"]] = o

    # Tensors: the trace's, with other consumers, plus the copies' outputs.
    tensors = given.get("tensors", [])
    mine = [t for t in tensors if t.get("producer") not in origin or
            origin[t["producer"]] == t["producer"]]
    tts = trace["tensors"]
    if len(mine) != len(tts):
        raise BadInput(f"{len(mine)} tensors not made by copies in the file, {len(tts)} in the "
                       "trace")
    for g, t in zip(mine, tts):
        if g.get("id") != t["id"]:
            raise BadInput(f"tensor {t['id']}: missing (found tensor {g.get('id')!r} in its "
                           "place)")
        a, b = _fields(g), _fields(t)
        for key in a:
            # An original view of a copy aliases the copy (checked below, once copies' values
            # are known).
            if key == "alias_of" and a[key] is not None and b[key] is not None:
                continue
            if a[key] != b[key]:
                raise BadInput(f"tensor {t['id']}: field \"{key}\" is {a[key]!r} in the file, "
                               f"{b[key]!r} in the trace")
    value = {t["id"]: t["id"] for t in tts}
    made = {}  # op id -> its valued outputs in file order
    for t in tensors:
        if t.get("producer") is not None and not is_ordering(t):
            made.setdefault(t["producer"], []).append(t)
    trace_made = {}
    for t in tts:
        if t["producer"] is not None and not is_ordering(t):
            trace_made.setdefault(t["producer"], []).append(t)
    copy_outputs = {}
    for c, o in origin.items():
        if c == o:
            continue
        outs, theirs = made.get(c, []), trace_made.get(o, [])
        if by_id[o]["name"] in STATE_UPDATE_SKIPPED_NAMES:
            # The copy leaves the state update (outputs on the running statistics) out.
            theirs = [t for t in theirs if not _on_input_storage(tts, t)]
        if len(outs) != len(theirs):
            raise BadInput(f"copy {c} of op {o} has {len(outs)} outputs, op {o} "
                           f"{len(theirs)}")
        copy_outputs[c] = {}
        for x, y in zip(outs, theirs):
            if x.get("size") != y["size"] or x.get("kind", "") != y["kind"] or x.get("output"):
                raise BadInput(f"tensor {x.get('id')} of copy {c} is not a computation of "
                               f"tensor {y['id']} (size, kind or output differ)")
            value[x["id"]] = y["id"]
            copy_outputs[c][y["id"]] = x["id"]
    for g, t in zip(mine, tts):
        if g.get("alias_of") is not None and value.get(g["alias_of"]) != t["alias_of"]:
            raise BadInput(f"tensor {t['id']}: field \"alias_of\" is {g['alias_of']!r} in the file, "
                           f"not a computation of {t['alias_of']!r}, which it aliases in the trace")
    for c in copy_outputs:
        for x in made.get(c, []):
            base = x.get("alias_of")
            want = trace["tensors"][value[x["id"]]]["alias_of"]
            if (value.get(base) if base is not None else None) != want:
                raise BadInput(f"tensor {x['id']} of copy {c} does not alias a computation of "
                               f"what tensor {value[x['id']]} aliases")

    # Wiring: every op reads, input by input, one computation of what the trace's op reads.
    reads = {}
    for t in tensors:
        if is_ordering(t):
            continue
        if t.get("id") not in value:
            raise BadInput(f"tensor {t.get('id')}: neither the trace's nor a copy's output")
        for op in set(t.get("consumers", [])):
            if op not in origin:
                raise BadInput(f"tensor {t['id']}: consumer {op} is not an op of the file")
            reads.setdefault(op, []).append(t["id"])
    trace_reads = {}
    for t in tts:
        if not is_ordering(t):
            for op in set(t["consumers"]):
                trace_reads.setdefault(op, set()).add(t["id"])
    rewired = {}
    tensor_of = export.tensor_of
    for op, o in origin.items():
        which = {}
        for r in reads.get(op, []):
            v = value[r]
            if v in which:
                raise BadInput(f"op {op} reads tensors {which[v]} and {r}, two computations of "
                               f"tensor {v}")
            which[v] = r
        want = trace_reads.get(o, set())
        if set(which) != want:
            extra = sorted(set(which) - want)
            if extra:
                raise BadInput(f"op {op} reads tensor {which[extra[0]]}, a computation of "
                               f"tensor {extra[0]}, which op {o} of the trace does not read")
            missing = sorted(want - set(which))
            raise BadInput(f"op {op} reads no computation of tensor {missing[0]}, which op {o} "
                           "of the trace reads")
        node = export.op_nodes[o]
        sub = {}
        for inp in nested.leaves((node.args, node.kwargs), nested.is_fx_node):
            v = tensor_of.get(inp)
            if v is not None and which.get(v, v) != v:
                sub[inp] = which[v]
        if sub:
            rewired[op] = sub
    # An original's view or in-place write is of the computation it reads, whose storage it
    # shares; a graph output keeps its own (roam's CheckFaithful, docs/remat.md).
    copy_made = {x["id"] for c in copy_outputs for x in made.get(c, [])}
    for g in mine:
        base, op = g.get("alias_of"), g.get("producer")
        if base is None or op is None or base in reads.get(op, []):
            continue
        if base in copy_made:
            raise BadInput(f"tensor {g['id']} of op {op} aliases tensor {base} of a copy, "
                           f"which op {op} does not read")
        other = next((r for r in reads.get(op, []) if value[r] == value.get(base)), None)
        if other is not None and not g.get("output"):
            raise BadInput(f"tensor {g['id']} of op {op} aliases tensor {base} but op {op} "
                           f"reads tensor {other}, another computation of it")
    nodes = {op: export.op_nodes[o] for op, o in origin.items()}
    return Program(graph=given, op_nodes=nodes, origin=origin, rewired=rewired,
                   copy_outputs=copy_outputs, value=value)
