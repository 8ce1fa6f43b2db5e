"""Reading the graph and plan run_plan.py executes, and deciding whether it may run them.

In: the paths of a roam-graph-v1 and a roam-plan-v1 file, and the graph the runner traced
itself. Out: the documents, or BadInput naming the file and the field. Every check here runs
before anything executes, so bad input never runs half a step.
"""

import json
import os
import shutil
import subprocess


class BadInput(Exception):
    """A file or option the runner cannot use (exit status 2)."""


def load_json(path, what, fmt):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise BadInput(f"{what} {path}: cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}:{e.lineno}:{e.colno}: {what} is not JSON: {e.msg}") from None
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise BadInput(f"{path}: field \"format\" is {got!r}, expected {fmt!r}")
    return doc


def _tensor_fields(t):
    """A tensor of roam-graph-v1 with its documented defaults filled in."""
    return {"id": t.get("id"), "size": t.get("size"), "producer": t.get("producer"),
            "consumers": sorted(set(t.get("consumers", []))), "alias_of": t.get("alias_of"),
            "output": t.get("output", False), "kind": t.get("kind", "")}


def first_graph_difference(given, traced):
    """Where the graph file `given` differs from the graph the runner traced (`traced`), or
    None when they are the same step: same ops (id, name, phase), tensors (every field but
    the order of consumers) and program order. The graph's name is a label and is not
    compared."""
    gops, tops = given.get("ops", []), traced["ops"]
    if len(gops) != len(tops):
        return f"{len(gops)} ops in the file, {len(tops)} in the trace"
    for i, (g, t) in enumerate(zip(gops, tops)):
        for key in ("id", "name", "phase"):
            if g.get(key) != t.get(key):
                return (f"ops[{i}]: field \"{key}\" is {g.get(key)!r} in the file, "
                        f"{t.get(key)!r} in the trace")
    gts, tts = given.get("tensors", []), traced["tensors"]
    if len(gts) != len(tts):
        return f"{len(gts)} tensors in the file, {len(tts)} in the trace"
    for i, (g, t) in enumerate(zip(gts, tts)):
        g, t = _tensor_fields(g), _tensor_fields(t)
        for key in ("id", "size", "producer", "alias_of", "kind", "output", "consumers"):
            if g[key] != t[key]:
                return (f"tensors[{i}] (id {t['id']}): field \"{key}\" is {g[key]!r} in the "
                        f"file, {t[key]!r} in the trace")
    gorder = given.get("program_order", [op.get("id") for op in gops])
    if gorder != traced["program_order"]:
        return "program_order differs"
    return None


def find_roam(explicit=None):
    """The roam binary that validates plans: --roam, $ROAM_BINARY, the release build next to
    this checkout, or roam on PATH."""
    candidates = [explicit] if explicit else []
    if not explicit:
        candidates.append(os.environ.get("ROAM_BINARY"))
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
        candidates.append(os.path.join(root, "build", "release", "apps", "roam"))
        candidates.append(shutil.which("roam"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    if explicit:
        raise BadInput(f"--roam {explicit}: not an executable file")
    raise BadInput("cannot find the roam binary to validate the plan: build it "
                   "(cmake --build --preset release), or give --roam PATH or ROAM_BINARY")


def validate_with_roam(roam, graph_path, plan_path, original=None):
    """Runs `roam validate GRAPH PLAN` (with `--original ORIGINAL` for a remat rewrite: GRAPH
    must then be a faithful rewrite of ORIGINAL); raises BadInput with its message when the
    plan is invalid or the files are bad."""
    command = [roam, "validate", graph_path, plan_path]
    if original is not None:
        command += ["--original", original]
    r = subprocess.run(command, capture_output=True, text=True)
    if r.returncode != 0:
        message = (r.stdout + r.stderr).strip().replace("\n", "; ")
        how = "roam validate --original" if original is not None else "roam validate"
        raise BadInput(f"PLAN {plan_path} fails `{how}` (exit {r.returncode}): {message}")


def _integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


def planned_roots(graph):
    """Root tensor id -> size of every planned storage (docs/memory-model.md: a storage whose
    root has a producer and whose size is non-zero)."""
    roots = {}
    for t in graph["tensors"]:
        if t.get("alias_of") is None and t.get("producer") is not None and t["size"] > 0:
            roots[t["id"]] = t["size"]
    return roots


def check_steps(graph, plan, where, pos):
    """A multi-stream plan's steps (docs/formats.md, "Steps"): one per order entry, from 0,
    never decreasing and skipping none, each op after its inputs' steps. The runner executes
    the order as it is, one op at a time: the steps are sorted, and the ops of one step are
    independent with all their tensors resident together, so any order within a step runs the
    same numbers in the same arena."""
    steps = plan.get("steps")
    if steps is None:
        return
    order = plan["order"]
    if not isinstance(steps, list) or len(steps) != len(order):
        raise BadInput(f"{where}: field \"steps\" must be a list with one step per order entry")
    for k, st in enumerate(steps):
        lo, hi = (0, 0) if k == 0 else (steps[k - 1], steps[k - 1] + 1)
        if not _integer(st) or not lo <= st <= hi:
            raise BadInput(f"{where}: steps[{k}] is {st!r}, must be {lo} or {hi}: steps start "
                           "at 0, never decrease along the order and skip none")
    step_of = {op: steps[i] for op, i in pos.items()}
    for t in graph["tensors"]:
        p = t.get("producer")
        if p is None:
            continue
        for c in t.get("consumers", []):
            if c != p and step_of[c] <= step_of[p]:
                raise BadInput(f"{where}: field \"steps\" runs op {c} at step {step_of[c]}, "
                               f"not after op {p} (step {step_of[p]}), which makes its input "
                               f"tensor {t['id']}")


def check_plan(graph, plan, plan_path):
    """What running the plan needs, checked even when `roam validate` is skipped: the order is
    a topological permutation of the graph's ops, and every planned storage has one buffer at
    least as big as the storage, at a non-negative integer offset. Returns {root id: (offset,
    size)}."""
    where = plan_path
    if plan.get("graph", "") != graph.get("name", ""):
        raise BadInput(f"{where}: field \"graph\" is {plan.get('graph')!r}, but GRAPH is "
                       f"{graph.get('name')!r}: a plan for another graph")
    order = plan.get("order")
    op_ids = sorted(op["id"] for op in graph["ops"])
    if not isinstance(order, list) or sorted(order) != op_ids:
        raise BadInput(f"{where}: field \"order\" is not a permutation of the graph's "
                       f"{len(op_ids)} ops")
    pos = {op: i for i, op in enumerate(order)}
    tensors = {t["id"]: t for t in graph["tensors"]}
    for t in graph["tensors"]:  # docs/formats.md "Dependencies"
        p = t.get("producer")
        if p is None:
            continue
        for c in t.get("consumers", []):
            if c != p and pos[c] < pos[p]:
                raise BadInput(f"{where}: field \"order\" runs op {c} before op {p}, which "
                               f"makes its input tensor {t['id']}")
        base = tensors.get(t.get("alias_of"), {}).get("producer")
        if base is not None and base != p and pos[p] < pos[base]:
            raise BadInput(f"{where}: field \"order\" runs op {p} before op {base}, which "
                           f"makes the base of its output tensor {t['id']}")
    check_steps(graph, plan, where, pos)
    alignment = plan.get("alignment", 1)
    if not _integer(alignment) or alignment <= 0:
        raise BadInput(f"{where}: field \"alignment\" is {alignment!r}, must be a positive "
                       "integer")
    roots = planned_roots(graph)
    placed = {}
    for i, b in enumerate(plan.get("buffers", [])):
        tid, off, size = b.get("tensor"), b.get("offset"), b.get("size")
        name = f"{where}: buffers[{i}] (tensor {tid})"
        if tid not in roots:
            raise BadInput(f"{name}: not a planned storage of the graph")
        if tid in placed:
            raise BadInput(f"{name}: a second buffer for the same storage")
        if not _integer(off) or off < 0:
            raise BadInput(f"{name}: field \"offset\" is {off!r}, must be an integer >= 0")
        if not _integer(size) or size < roots[tid]:
            raise BadInput(f"{name}: field \"size\" is {size!r}, smaller than the storage's "
                           f"{roots[tid]} bytes")
        placed[tid] = (off, size)
    missing = sorted(set(roots) - set(placed))
    if missing:
        raise BadInput(f"{where}: no buffer for planned storage {missing[0]} "
                       f"({len(missing)} missing)")
    return placed
