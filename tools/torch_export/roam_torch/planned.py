"""Runs a roam plan for real and judges it against eager PyTorch (tools/torch_export/
run_plan.py, docs/torch-export.md "Running a plan").

In: what to build (a StepSpec, or a model factory in tests), the graph and plan files, the
number of steps, the device. Out: a RunReport with the plan's figures, the arena, the
transient bytes, the device's peaks, and the first tensor where the planned run and eager
differ (None when they agree).

Both runs start from the same seeded model, batch and optimizer state and run the same step
K times: eager runs roam_torch.trace.training_step (autograd and torch.optim), the planned
run replays the traced aten ops in the plan's order with planned storages in one arena
(arena.PlannedStep). Every input is checked before anything runs; problems raise
plan_io.BadInput.
"""

import contextlib
import json
import os
import tempfile
from dataclasses import dataclass, field

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

from . import arena as ar
from . import export_graph, patches, plan_io, progress
from . import rewritten as rw
from . import trace as tr
from .plan_io import BadInput

# Tolerances when the two runs cannot be bit-identical (see docs/torch-export.md): on CUDA,
# cuBLAS/cuDNN pick algorithms by workspace and alignment, and some backward kernels
# accumulate with atomics, so the same ops in another order or place may round differently.
CUDA_RTOL, CUDA_ATOL = 1e-4, 1e-6


def _seed(base, step, random_op=None):
    """The generator seed before a step (and before its j-th random op, when the plan
    reorders random ops)."""
    return base + 100_003 * step + (0 if random_op is None else 1 + random_op)


class _SeedEachRandomOp(TorchDispatchMode):
    """Eager's side of per-random-op seeding: reseeds before the j-th random op it sees."""

    def __init__(self, base, step):
        super().__init__()
        self.base, self.step, self.count = base, step, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if ar.is_random(func):
            torch.manual_seed(_seed(self.base, self.step, self.count))
            self.count += 1
        return func(*args, **(kwargs or {}))


@dataclass
class StepResult:
    losses: list  # per step, on the CPU
    # The persistent tensors on the CPU: eager keeps them after every step, the planned run
    # (which compares as it goes) after the last one only.
    states: list
    peak_allocated: int = None  # CUDA: torch.cuda.max_memory_allocated during the steps
    peak_reserved: int = None


@dataclass
class RunReport:
    graph: str
    ops: int
    steps: int
    device: str
    plan_summary: dict
    alignment: int
    arena_bytes: int  # the plan's actual peak: max(offset + size)
    arena_allocated: int  # with the alignment slack
    stats: ar.ExecStats
    random_reseeded: bool  # the plan reordered random ops: both runs reseed before each
    planned: StepResult
    eager: StepResult = None
    difference: str = None  # the first tensor that differs; None when they match
    diagnosis: str = None  # CPU: the first value the planned run read wrong (see diagnose)
    tolerance: tuple = (0.0, 0.0)
    compared: dict = field(default_factory=dict)  # kind -> count of tensors compared

    def as_dict(self):
        d = {"graph": self.graph, "ops": self.ops, "steps": self.steps, "device": self.device,
             "plan": self.plan_summary, "alignment": self.alignment,
             "arena_bytes": self.arena_bytes, "arena_allocated": self.arena_allocated,
             "random_ops_reseeded": self.random_reseeded, **self.stats.as_dict(),
             "planned_losses": [float(x) for x in self.planned.losses]}
        if self.device.startswith("cuda"):
            d["planned_peak_allocated"] = self.planned.peak_allocated
            d["planned_peak_reserved"] = self.planned.peak_reserved
        if self.eager is not None:
            d["eager_losses"] = [float(x) for x in self.eager.losses]
            d["matches_eager"] = self.difference is None
            d["difference"] = self.difference
            d["diagnosis"] = self.diagnosis
            d["rtol"], d["atol"] = self.tolerance
            d["compared"] = self.compared
            if self.device.startswith("cuda"):
                d["eager_peak_allocated"] = self.eager.peak_allocated
                d["eager_peak_reserved"] = self.eager.peak_reserved
        return d


def _null():
    return contextlib.nullcontext()


class Runner:
    """One model traced once; plans for its graph run against it (tests run many plans)."""

    def __init__(self, spec, model_fn=None, seed=0):
        self.spec, self.model_fn, self.seed = spec, model_fn, seed
        fake_mode = FakeTensorMode(allow_fallback_kernels=False)
        if model_fn is None:
            model = tr.build_fake_model(spec, fake_mode)
        else:
            with fake_mode:
                model = model_fn().train()
        with fake_mode:
            batch = tr.make_batch(spec)
            state = tr.make_optimizer_state(spec, list(model.parameters()))
        inputs = tr.collect_inputs(spec, model, batch, state)
        self.names, self.kinds = inputs.names, inputs.kinds
        self.traced = tr.trace_module_step(spec, inputs, fake_mode)
        self.export = export_graph.build_export(self.traced)
        self._eager = {}

    @property
    def graph(self):
        return self.export.graph

    # -- inputs ---------------------------------------------------------------------------------
    def check_graph(self, graph, graph_path):
        """The Program GRAPH runs: the trace itself, or a remat rewrite of it (its ops that
        are not copies are the trace, and every op reads computations of what the trace's op
        reads). BadInput naming the first difference otherwise."""
        if not rw.has_copies(graph):
            diff = plan_io.first_graph_difference(graph, self.graph)
            if diff is not None:
                raise BadInput(f"GRAPH {graph_path} is not the trace of {self.spec.name}: "
                               f"{diff}")
            return rw.plain_program(self.export, graph)
        try:
            return rw.rewritten_program(self.export, graph)
        except BadInput as e:
            raise BadInput(f"GRAPH {graph_path} is not a remat rewrite of the trace of "
                           f"{self.spec.name}: {e}") from None

    def real_inputs(self, device):
        """The model, batch and optimizer state from the seed, on `device`."""
        spec = self.spec
        torch.manual_seed(self.seed)
        gen = torch.Generator().manual_seed(self.seed + 1)
        model = self.model_fn().train() if self.model_fn else tr.build_model(spec)
        batch = tr.make_batch(spec, generator=gen)
        state = tr.make_optimizer_state(spec, list(model.parameters()), generator=gen)
        model.to(device)
        batch = tuple(b.to(device) for b in batch)
        state = [[t.to(device) for t in entry] for entry in state]
        return tr.collect_inputs(spec, model, batch, state)

    # -- runs -----------------------------------------------------------------------------------
    def eager(self, steps, device, reseed_random_ops):
        key = (steps, str(device), reseed_random_ops)
        if key not in self._eager:
            self._eager[key] = self._run_eager(steps, torch.device(device), reseed_random_ops)
        return self._eager[key]

    def _run_eager(self, steps, device, reseed):
        inputs = self.real_inputs(device)
        dropout = patches.cuda_dropout() if self.spec.dropout_form == "cuda" else _null()
        _reset_peaks(device)
        losses, states = [], []
        for k in range(steps):
            torch.manual_seed(_seed(self.seed, k))
            with dropout, (_SeedEachRandomOp(self.seed, k) if reseed else _null()):
                loss = tr.training_step(self.spec, inputs, inputs.tensors)
            losses.append(loss.detach().to("cpu", copy=True))
            states.append([t.detach().to("cpu", copy=True) for t in inputs.tensors])
        peaks = _peaks(device)
        del inputs, loss
        _release(device)
        return StepResult(losses, states, *peaks)

    def run_planned(self, program, order, placement, arena_bytes, alignment, steps, device,
                    after_step=None):
        """Runs the plan; after_step(k, loss, flat), when given, sees each step's results
        before the next step overwrites them."""
        device = torch.device(device)
        inputs = self.real_inputs(device)
        flat = [t.detach() for t in inputs.tensors]
        reseed = ar.random_order_changed(self.export, order)
        _reset_peaks(device)
        arena = ar.Arena(arena_bytes, alignment, device)
        step = ar.PlannedStep(program, self.export, self.traced.gm, order, placement, arena,
                              device)
        losses = []
        with torch.no_grad():
            for k in range(steps):
                torch.manual_seed(_seed(self.seed, k))
                reseed_op = (lambda j, k=k: torch.manual_seed(_seed(self.seed, k, j))) \
                    if reseed else None
                loss = step.run(flat, reseed_op)
                losses.append(loss.to("cpu", copy=True))
                progress.step_done(k + 1, float(losses[-1]))
                if after_step is not None:
                    after_step(k, losses[-1], flat)
        peaks = _peaks(device)
        states = [[t.to("cpu", copy=True) for t in flat]]
        allocated, stats = arena.allocated, step.stats
        del inputs, flat, arena, step, loss
        _release(device)
        return StepResult(losses, states, *peaks), allocated, reseed, stats

    def run(self, graph, graph_path, plan, plan_path, steps=2, device="cpu", check_eager=True,
            roam=None, skip_validate=False, rtol=None, atol=None):
        """Checks the inputs (BadInput), runs the plan, and with check_eager compares with
        eager PyTorch."""
        program = self.check_graph(graph, graph_path)
        if not skip_validate:
            roam_path = plan_io.find_roam(roam)
            if program.copies:
                # roam checks the rewrite's faithfulness against the runner's own trace.
                with tempfile.TemporaryDirectory(prefix="roam-run-plan-") as d:
                    original = os.path.join(d, "trace.json")
                    with open(original, "w", encoding="utf-8") as f:
                        json.dump(self.graph, f)
                    plan_io.validate_with_roam(roam_path, graph_path, plan_path, original)
            else:
                plan_io.validate_with_roam(roam_path, graph_path, plan_path)
        placed = plan_io.check_plan(graph, plan, plan_path)
        placement = {tid: off for tid, (off, _) in placed.items()}
        arena_bytes = max((off + size for off, size in placed.values()), default=0)
        alignment = plan.get("alignment", 1)
        order = plan["order"]
        reseed = ar.random_order_changed(self.export, order)
        eager, after_step, differences = None, None, []
        cuda = torch.device(device).type == "cuda"
        if rtol is None:
            rtol = CUDA_RTOL if cuda and check_eager else 0.0
        if atol is None:
            atol = CUDA_ATOL if cuda and check_eager else 0.0
        if check_eager:
            # Eager first, keeping its state after every step; the planned run compares as it
            # goes, so no second copy of every step's state is held.
            eager = self.eager(steps, device, reseed)

            def after_step(k, loss, flat):
                if not differences:
                    diff = self.step_difference(eager, k, loss, flat, rtol, atol)
                    if diff is not None:
                        differences.append(diff)
        try:
            planned, allocated, reseed, stats = self.run_planned(
                program, order, placement, arena_bytes, alignment, steps, device, after_step)
        except ar.OrderError as e:
            raise BadInput(f"PLAN {plan_path}: {e}") from None
        report = RunReport(graph=graph.get("name", ""), ops=len(graph["ops"]), steps=steps,
                           device=str(device), plan_summary=plan.get("summary", {}),
                           alignment=alignment, arena_bytes=arena_bytes,
                           arena_allocated=allocated, stats=stats,
                           random_reseeded=reseed, planned=planned)
        if check_eager:
            report.eager = eager
            report.tolerance = (rtol, atol)
            report.difference = differences[0] if differences else None
            report.compared = {k: self.kinds.count(k) for k in sorted(set(self.kinds))}
            if report.difference is not None and report.tolerance == (0.0, 0.0):
                report.diagnosis = self.diagnose(program, order, placement, arena_bytes,
                                                 alignment, steps, device)
        return report

    def diagnose(self, program, order, placement, arena_bytes, alignment, steps, device):
        """Where a planned run that differs from eager first goes wrong: runs it in lockstep
        with a reference that executes the same order with every tensor in its own
        allocation, and names the first tensor an op reads (or writes) with other values
        than the reference's. Exact comparison, so only for bit-identical devices."""
        device = torch.device(device)
        graph = program.graph
        tensors = {t["id"]: t for t in graph["tensors"]}
        names = {op["id"]: op.get("name", "") for op in graph["ops"]}
        ref_flat = [t.detach() for t in self.real_inputs(device).tensors]
        run_flat = [t.detach() for t in self.real_inputs(device).tensors]
        gm = self.traced.gm
        ref = ar.PlannedStep(program, self.export, gm, order, {}, None, device)
        arena = ar.Arena(arena_bytes, alignment, device)
        run = ar.PlannedStep(program, self.export, gm, order, placement, arena, device)

        def describe(node, tid):
            if tid is None:
                return node.name
            root = tid
            while tensors[root].get("alias_of") is not None:
                root = tensors[root]["alias_of"]
            t = tensors[tid]
            made = "a graph input" if t["producer"] is None else \
                f"made by op {t['producer']} ({names[t['producer']]}" + \
                (f", recomputing op {program.origin[t['producer']]})"
                 if program.is_copy(t["producer"]) else ")")
            where = f", storage {root} at arena offset {placement[root]}" \
                if root in placement else ""
            return f"tensor {tid} ({t['kind']}, {made}{where})"

        def differs(a, b):
            return isinstance(a, torch.Tensor) and not (a.shape == b.shape and
                                                        torch.equal(a, b))

        with torch.no_grad():
            for k in range(steps):
                def seed(j, k=k):
                    torch.manual_seed(_seed(self.seed, k, j))
                ref.begin(ref_flat)
                run.begin(run_flat)
                for pos, op_id in enumerate(order):
                    for (inp, tid, a), (_, _, b) in zip(ref.inputs(op_id), run.inputs(op_id)):
                        if differs(a, b):
                            return (f"step {k + 1}: op {op_id} ({names[op_id]}, position {pos} "
                                    f"of the order) reads {describe(inp, tid)}, whose values "
                                    "differ from a run without the arena: overwritten while "
                                    "live")
                    ref.run_op(op_id, seed)
                    try:
                        run.run_op(op_id, seed)
                    except ar.RunFailure as e:
                        return f"step {k + 1}: {e}"
                    outs = zip(run.outputs[op_id], ref.output_values(op_id),
                               run.output_values(op_id))
                    for (_, out, _), (tid, a), (_, b) in outs:
                        if differs(a, b):
                            return (f"step {k + 1}: op {op_id} ({names[op_id]}, position {pos} "
                                    f"of the order) wrote {describe(out, tid)} with other "
                                    "values than a run without the arena")
                ref.end()
                run.end()
        return ("a run of the same order without the arena computes the same values: the "
                "difference is not the arena's (is an ordering dependency missing from the "
                "graph?)")

    def step_difference(self, eager, k, loss, flat, rtol, atol):
        """The first tensor of step k that differs between eager and the planned run (`loss`,
        `flat`): the loss, then every persistent tensor after the step (parameters, buffers,
        optimizer state, data); None when they agree."""
        def same(a, b):
            if rtol == 0 and atol == 0:
                return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
            return torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)

        if not same(eager.losses[k], loss):
            return (f"step {k + 1}: the loss differs: planned {float(loss)!r}, eager "
                    f"{float(eager.losses[k])!r}")
        for name, kind, a, b in zip(self.names, self.kinds, eager.states[k], flat):
            b = b.to("cpu")
            if not same(a, b):
                wrong = int((b != a).sum())
                diff = (b.double() - a.double()).abs().max()
                return (f"after step {k + 1}: {name} ({kind}) differs in {wrong} of "
                        f"{a.numel()} elements, max |planned - eager| = {float(diff):.3g}")
        return None


def _reset_peaks(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)


def _peaks(device):
    if device.type != "cuda":
        return None, None
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device)


def _release(device):
    if device.type == "cuda":
        torch.cuda.empty_cache()


def check_device(device):
    """BadInput unless this PyTorch can run on `device`."""
    try:
        d = torch.device(device)
    except RuntimeError:
        raise BadInput(f"--device {device}: must be cpu or cuda") from None
    if d.type == "cuda" and not torch.cuda.is_available():
        raise BadInput(f"--device {device}: CUDA is not available to this PyTorch "
                       f"({torch.__version__}, CUDA build: {torch.version.cuda or 'none'})")
    if d.type not in ("cpu", "cuda"):
        raise BadInput(f"--device {device}: must be cpu or cuda")
    return d
