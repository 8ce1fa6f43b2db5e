"""The public API: plan a user's own training step with roam and run it in the user's loop.

    planned = roam_torch.plan_training_step(model, optimizer, loss_fn, example_inputs,
                                            example_targets, budget_ratio=None)
    loss = planned.step(inputs, targets)
    planned.memory()

plan_training_step traces one step of the user's objects (user_trace), exports it as
roam-graph-v1, plans it with the roam binary (`roam optimize`, or `roam remat --budget-ratio`
when a budget is asked for), validates the plan with `roam validate`, and allocates the arena.
step() then runs the traced aten ops in the plan's order with every planned tensor in the arena
(arena.PlannedStep), on the user's own parameters, buffers and optimizer state, which it updates
in place as eager PyTorch would, bit for bit on the CPU (docs/torch-export.md, "Planning your
own training step").
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch

from . import arena as ar
from . import compat, export_graph, memory, plan_io, progress
from . import rewritten as rw
from . import user_trace as ut
from .user_trace import UserStepError


class PlanningError(Exception):
    """roam could not plan the step, or wrote a plan the runner cannot run."""


class KeptMemory(Exception):
    """An op kept memory it allocated past its step, so its scratch cannot be planned."""


# Measuring windows an op's kept allocation still points into (see measure_scratch).
_KEPT_WINDOWS = []


def find_roam_binary():
    """$ROAM_BINARY when set (it must be an executable file), else `roam` on PATH."""
    env = os.environ.get("ROAM_BINARY")
    if env:
        if os.path.isfile(env) and os.access(env, os.X_OK):
            return env
        raise PlanningError(f"ROAM_BINARY={env}: not an executable file")
    found = shutil.which("roam")
    if found:
        return found
    raise PlanningError("cannot find the roam binary: put `roam` on PATH or set ROAM_BINARY "
                        "to its path (build it with `cmake --preset release && cmake --build "
                        "--preset release --target roam`: build/release/apps/roam)")


def chain_random_ops(graph, export):
    """Adds size-0 control tensors from each random op (dropout's draw) to the next one in
    program order, so every plan draws in eager's order and the masks are eager's."""
    nodes = export.op_nodes
    random = [i for i, n in enumerate(nodes) if ar.is_random(n.target)]
    tensors = graph["tensors"]
    for a, b in zip(random, random[1:]):
        tensors.append({"id": len(tensors), "size": 0, "producer": a, "consumers": [b],
                        "alias_of": None, "output": False, "kind": "control"})


def _run_roam(command, what):
    r = subprocess.run(command, capture_output=True, text=True)
    if r.returncode != 0:
        message = (r.stdout + r.stderr).strip().replace("\n", "; ")
        raise PlanningError(f"`{' '.join(command[:2])}` failed while {what} "
                            f"(exit {r.returncode}): {message}")


def _validate(roam, graph_path, plan_path, original=None):
    try:
        plan_io.validate_with_roam(roam, graph_path, plan_path, original)
    except plan_io.BadInput as e:
        raise PlanningError(f"roam wrote a plan that roam validate rejects: {e}") from None


def _same_batch(expected, given, what):
    """UserStepError unless given has the structure, shapes, dtypes and devices the plan was
    made for."""
    e_leaves, e_spec = expected
    g_leaves, g_spec = torch.utils._pytree.tree_flatten(given)
    if g_spec != e_spec or len(g_leaves) != len(e_leaves):
        raise UserStepError(f"{what}: the step was planned for {e_spec}, got {g_spec}")
    for i, (e, g) in enumerate(zip(e_leaves, g_leaves)):
        if not isinstance(g, torch.Tensor) or (g.shape, g.dtype, g.device, g.stride()) != \
                (e.shape, e.dtype, e.device, e.stride()):
            got = (f"shape {tuple(g.shape)} {g.dtype} on {g.device}, strides {g.stride()}"
                   if isinstance(g, torch.Tensor) else type(g).__name__)
            raise UserStepError(
                f"{what}[{i}]: the step was planned for shape {tuple(e.shape)} {e.dtype} on "
                f"{e.device}, strides {e.stride()}; got {got}")


class PlannedTrainingStep:
    """A training step planned by roam, bound to the user's model and optimizer."""

    def __init__(self, model, optimizer, loss_fn, traced, layout, export, program, plan,
                 first_step_eager, measure_memory, workdir, op_scratch=None,
                 library_workspace_bytes=0):
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.traced, self.layout, self.export = traced, layout, export
        self.program, self.plan = program, plan
        self.first_step_eager = first_step_eager  # why the next step runs eagerly, or None
        self.measure_memory = measure_memory
        # The graph and plan files, kept for inspection while this object lives (a
        # TemporaryDirectory, removed with it).
        self._workdir = workdir
        self.workdir = workdir.name
        placed = plan_io.check_plan(program.graph, plan, "the plan roam wrote")
        placement = {tid: off for tid, (off, _) in placed.items()}
        self.arena_bytes = max((off + size for off, size in placed.values()), default=0)
        self.device = layout.params[0].device if layout.params else torch.device("cpu")
        self.arena = ar.Arena(self.arena_bytes, plan.get("alignment", 1), self.device)
        self.op_scratch = op_scratch or {}  # op id -> its temporary's tensor id
        self.runner = ar.PlannedStep(program, export, traced.gm, plan["order"], placement,
                                     self.arena, self.device, scratch=self.op_scratch)
        self.scalars = ut.OptimizerScalars(layout, optimizer, export.op_nodes, export.host)
        self.batch_shape = (
            (layout.input_leaves, layout.input_spec),
            (layout.target_leaves, layout.target_spec))
        self.scratch_note = "yes" if self.op_scratch else "no"
        # CUDA: the bytes of cuBLAS's workspaces, made before planning and kept (persistent).
        self.library_workspace_bytes = library_workspace_bytes
        self.steps_run = 0
        self.eager_steps = 0
        self.last = {}

    def step(self, inputs, targets):
        """One training step on (inputs, targets): the loss (a new 0-dim tensor); the model's
        parameters and buffers and the optimizer's state are updated in place."""
        _same_batch(self.batch_shape[0], inputs, "inputs")
        _same_batch(self.batch_shape[1], targets, "targets")
        if self.first_step_eager is not None:
            loss = self._eager_step(inputs, targets)
        else:
            loss = self._planned_step(inputs, targets)
        self.steps_run += 1
        progress.step_done(self.steps_run, float(loss))
        return loss

    def _eager_step(self, inputs, targets):
        # The optimizer creates its state here with its own code (see
        # user_trace.missing_state); afterwards the state has the structure the plan has.
        trained = self.layout.trained
        loss = self.loss_fn(self.model(inputs), targets)
        grads = torch.autograd.grad(loss, trained, allow_unused=True)
        saved = [p.grad for p in trained]
        with torch.no_grad():
            for p, g in zip(trained, grads):
                p.grad = g
            self.optimizer.step()
            for p, g in zip(trained, saved):
                p.grad = g
        why = self.first_step_eager
        self.first_step_eager = ut.missing_state(self.optimizer)
        if self.first_step_eager is not None:
            raise UserStepError(f"optimizer: still incomplete after an eager step ({why})")
        self.eager_steps += 1
        self.last = {"eager": True}
        return loss.detach()

    def _planned_step(self, inputs, targets):
        flat, _, _ = self.layout.flat(self.optimizer.state, inputs, targets)
        if len(flat) != len(self.runner.placeholders):
            raise UserStepError("optimizer: its state has other tensors than when the step was "
                                "planned: plan the step again")
        self.runner.arg_overrides = self.scalars.refresh()
        with torch.no_grad():
            if self.measure_memory:
                loss, outside = memory.peak_outside(lambda: self.runner.run(flat), self.device)
            else:
                loss, outside = self.runner.run(flat), None
            loss = loss.clone()  # the arena's copy is overwritten by the next step
        stats = self.runner.stats
        self.last = {"eager": False, "outside_peak_bytes": outside,
                     "transient_bytes_max": stats.transient_bytes_max,
                     "transient_max_op": stats.transient_max_op,
                     "ops_copied": stats.ops_copied}
        return loss

    def measure_scratch(self, inputs, targets):
        """Runs one step of this plan on copies of the persistent tensors, every op's own
        allocations served from a measuring window; returns {op id: bytes} for the ops that
        allocate (the window's high-water mark under scratch_allocator.cpp's policy, plus any
        overflow). The generator state is put back, so the user's next draws are unchanged."""
        # Before SGD's eager first step its momentum buffers do not exist yet: zeros stand in.
        state = ut.future_state(self.optimizer) if self.first_step_eager else \
            self.optimizer.state
        flat = [torch.empty_strided(t.shape, t.stride(), dtype=t.dtype,
                                    device=self.device).zero_()
                if t.is_meta else t.clone()
                for t in self.layout.flat(state, inputs, targets)[0]]
        window = torch.empty(max(64 << 20, 2 * self.arena_bytes), dtype=torch.uint8,
                             device=self.device)
        cuda = self.device.type == "cuda"
        rng = torch.get_rng_state()
        cuda_rng = torch.cuda.get_rng_state(self.device) if cuda else None
        self.runner.measure_window = (window.data_ptr(), window.numel())
        try:
            with torch.no_grad():
                self.runner.run(flat)
            if cuda:
                torch.cuda.synchronize(self.device)
        finally:
            self.runner.measure_window = None
            torch.set_rng_state(rng)
            if cuda:
                torch.cuda.set_rng_state(cuda_rng, self.device)
        kept = [op for op, (_, _, live) in self.runner.scratch_seen.items() if live]
        if kept:
            # An op kept memory past its step (a library's cache made on first use): it points
            # into the measuring window, which must then outlive every step.
            _KEPT_WINDOWS.append(window)
            raise KeptMemory(
                f"{len(kept)} op(s) kept memory they allocated past their step (first: op "
                f"{kept[0]}) when their scratch was measured")
        return {op: high + outside for op, (high, outside, _) in
                self.runner.scratch_seen.items() if high + outside > 0}

    def memory(self):
        """Byte figures of the plan and of the last step (dict)."""
        persistent = sum(ar.storage_nbytes(t) for t in self._persistent())
        out = {"arena_bytes": self.arena_bytes,
               "arena_allocated_bytes": self.arena.allocated,
               "planned_total_bytes": self.arena_bytes,
               "persistent_bytes": persistent,
               "measured_peak_bytes": None,
               "outside_arena_peak_bytes": None,
               "steps": self.steps_run, "eager_steps": self.eager_steps,
               "ops": len(self.program.graph["ops"]),
               "recomputed_ops": len(self.program.copies),
               "op_scratch_ops": len(self.op_scratch),
               "op_scratch_bytes": sum(self.program.graph["tensors"][t]["size"]
                                       for t in self.op_scratch.values()),
               "op_scratch_in_arena": self.scratch_note,
               "library_workspace_bytes": self.library_workspace_bytes}
        if self.last.get("outside_peak_bytes") is not None:
            out["outside_arena_peak_bytes"] = self.last["outside_peak_bytes"]
            out["measured_peak_bytes"] = self.arena.allocated + self.last["outside_peak_bytes"]
        for key in ("transient_bytes_max", "transient_max_op", "ops_copied"):
            if key in self.last:
                out[key] = self.last[key]
        return out

    def _persistent(self):
        """The model's parameters and buffers and the optimizer's device state, each storage
        once (the batch is the caller's)."""
        seen, out = set(), []
        tensors = self.layout.params + self.layout.buffers
        for entry in self.layout.state_keys(self.optimizer.state):
            tensors += [v for _, v in entry]
        for t in tensors:
            key = ar.storage_base(t)
            if key not in seen:
                seen.add(key)
                out.append(t)
        return out


def plan_training_step(model, optimizer, loss_fn, example_inputs, example_targets,
                       budget_ratio=None, measure_memory=True, time_limit=None,
                       op_scratch=True):
    """Plans one training step of `model` with `optimizer` and `loss_fn(model(inputs),
    targets)` for batches shaped like the examples; returns a PlannedTrainingStep.

    budget_ratio in (0, 1] plans with `roam remat` under that fraction of the step's
    no-remat arena (recomputing forward ops); None plans with `roam optimize`.
    measure_memory: account every allocation of each planned step (memory()'s
    measured_peak_bytes); costs a profiler pass per step. op_scratch: give every op's own
    allocations a planned temporary in the arena (needs g++ and PyTorch's C++ headers; see
    memory()["op_scratch_in_arena"]); costs one measuring step on copies of the model's and
    optimizer's tensors and a second roam run."""
    compat.check_torch_version()
    if not isinstance(model, torch.nn.Module):
        raise UserStepError(f"model: must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise UserStepError("optimizer: must be a torch.optim.Optimizer, got "
                            f"{type(optimizer).__name__}")
    if not callable(loss_fn):
        raise UserStepError("loss_fn: must be callable as loss_fn(model(inputs), targets)")
    if budget_ratio is not None and not (isinstance(budget_ratio, (int, float))
                                         and 0 < budget_ratio <= 1):
        raise UserStepError(f"budget_ratio: must be in (0, 1] or None, got {budget_ratio!r}")
    roam = find_roam_binary()
    devices = {p.device for p in model.parameters()} | {b.device for b in model.buffers()}
    if len(devices) > 1:
        raise UserStepError(f"model: its parameters and buffers are on {len(devices)} devices "
                            f"({', '.join(sorted(map(str, devices)))}); a planned step runs on one")
    device = next(iter(devices), torch.device("cpu"))
    if device.type not in ("cpu", "cuda"):
        raise UserStepError(f"model: on {device}; a planned step runs on the CPU or on CUDA")
    allocator = ar.scratch_allocator_for(device)
    workspace_bytes = _warm_cuda_libraries(device) if device.type == "cuda" else 0

    ut.init_adam_state(optimizer)
    first_step_eager = ut.missing_state(optimizer)
    future = ut.future_state(optimizer) if first_step_eager else None
    traced, layout = ut.trace_user_step(model, optimizer, loss_fn, example_inputs,
                                        example_targets, state=future)
    export = export_graph.build_export(traced)
    graph = export.graph
    chain_random_ops(graph, export)

    workdir = tempfile.TemporaryDirectory(prefix="roam-train-")
    want_scratch = op_scratch and allocator.available()
    # With op scratch, a first plan without temporaries runs the measuring step (remat's
    # copies come with the second plan).
    first = _plan(roam, export, workdir.name, None if want_scratch else budget_ratio,
                  time_limit)
    planned = _planned(model, optimizer, loss_fn, traced, layout, export, *first,
                       first_step_eager, measure_memory, workdir,
                       library_workspace_bytes=workspace_bytes)
    if not want_scratch:
        planned.scratch_note = "no: " + ("op_scratch=False" if not op_scratch
                                         else allocator.why())
        return planned
    # Op scratch (docs/torch-export.md "Op scratch in the arena"): measure what each op
    # allocates beyond its planned outputs, give it a planned temporary, plan again.
    progress.say("measuring each op's scratch")
    try:
        sizes = planned.measure_scratch(example_inputs, example_targets)
    except ar.RunFailure as e:
        raise PlanningError(f"the step measuring each op's scratch failed: {e}") from None
    except KeptMemory as e:
        del planned
        planned = _planned(model, optimizer, loss_fn, traced, layout, export,
                           *_plan(roam, export, workdir.name, budget_ratio, time_limit),
                           first_step_eager, measure_memory, workdir,
                           library_workspace_bytes=workspace_bytes)
        planned.scratch_note = f"no: {e}"
        return planned
    del planned
    temporaries = add_op_temporaries(export.graph, sizes)
    program, plan, path = _plan(roam, export, workdir.name, budget_ratio, time_limit)
    windows = {}
    for op, origin in program.origin.items():
        t = temporaries.get(origin)
        if t is not None and op != origin:  # a remat copy: its own copy of the temporary
            t = program.copy_outputs.get(op, {}).get(t)
        if t is not None:
            windows[op] = t
    return _planned(model, optimizer, loss_fn, traced, layout, export, program, plan, path,
                    first_step_eager, measure_memory, workdir, windows, workspace_bytes)


def _warm_cuda_libraries(device):
    """Makes cuBLAS and cuBLASLt allocate the workspaces they keep for the process (at their
    first product on a stream), so that no op's window serves them and they are persistent
    bytes like the parameters; returns their bytes (docs/torch-export.md, "Op scratch on
    CUDA")."""
    before = memory.cuda_live_bytes(device)
    with torch.no_grad():
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            a = torch.ones(64, 64, dtype=dtype, device=device)
            bias = torch.ones(64, dtype=dtype, device=device)
            try:
                torch.addmm(bias, a, a)
                torch.mm(a, a)
                torch.bmm(a[None], a[None])
                torch.nn.functional.linear(a, a, bias)
            except RuntimeError:
                pass  # a dtype this GPU's cuBLAS lacks (bf16 before Ampere): no step uses it
            del a, bias
    torch.cuda.synchronize(device)
    return max(0, memory.cuda_live_bytes(device) - before)


def _plan(roam, export, workdir, budget_ratio, time_limit):
    """Writes export.graph, plans it with `roam optimize` (budget_ratio None) or `roam remat`,
    validates the plan; returns (Program, plan, path of the graph the plan is for)."""
    graph = export.graph
    graph_path = os.path.join(workdir, "graph.json")
    plan_path = os.path.join(workdir, "plan.json")
    with open(graph_path, "w", encoding="utf-8") as f:
        json.dump(graph, f)
    temporaries = sum(t["kind"] == "temporary" and not t["consumers"] for t in graph["tensors"])
    progress.say(f"planning {len(graph['ops'])} ops ({temporaries} op temporaries) with roam "
                 f"{'remat' if budget_ratio is not None else 'optimize'}")
    quiet = [] if sys.stderr.isatty() else ["--quiet"]
    limit = [] if time_limit is None else ["--time-limit", str(time_limit)]
    if budget_ratio is None:
        _run_roam([roam, "optimize", graph_path, "-o", plan_path] + quiet + limit,
                  "planning the step")
        _validate(roam, graph_path, plan_path)
        program, path = rw.plain_program(export, graph), graph_path
    else:
        path = os.path.join(workdir, "rewritten.json")
        _run_roam([roam, "remat", graph_path, "--budget-ratio", str(budget_ratio),
                   "--rng-state-kept", "--graph-out", path, "-o", plan_path] + limit,
                  "planning the step with remat")
        run_graph = plan_io.load_json(path, "GRAPH", export_graph.FORMAT)
        _validate(roam, path, plan_path, graph_path)
        try:
            program = (rw.rewritten_program(export, run_graph) if rw.has_copies(run_graph)
                       else rw.plain_program(export, run_graph))
        except plan_io.BadInput as e:
            raise PlanningError(f"roam remat's rewrite {path} cannot run: {e}") from None
    return program, plan_io.load_json(plan_path, "PLAN", "roam-plan-v1"), path


def add_op_temporaries(graph, sizes):
    """Adds to graph, for each op id -> bytes of sizes, a tensor the op makes and nobody reads,
    kind `temporary` (docs/memory-model.md: live during its producer's step only). Returns
    {op id: tensor id}."""
    tensors = graph["tensors"]
    out = {}
    for op in sorted(sizes):
        out[op] = len(tensors)
        tensors.append({"id": len(tensors), "size": int(sizes[op]), "producer": op,
                        "consumers": [], "alias_of": None, "output": False,
                        "kind": "temporary"})
    return out


def _planned(model, optimizer, loss_fn, traced, layout, export, program, plan, graph_path,
             first_step_eager, measure_memory, workdir, op_scratch=None,
             library_workspace_bytes=0):
    try:
        return PlannedTrainingStep(model, optimizer, loss_fn, traced, layout, export, program,
                                   plan, first_step_eager, measure_memory, workdir, op_scratch,
                                   library_workspace_bytes)
    except (plan_io.BadInput, ar.RunFailure) as e:
        raise PlanningError(f"the plan roam wrote for {graph_path} cannot run: {e}") from None
