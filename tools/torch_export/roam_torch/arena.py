"""Executes a traced training step with every planned storage in one preallocated arena.

In: an export_graph.Export (the fx graph of the step, its roam graph and which graph tensor
each fx node's value is), a plan's order and byte offsets, and the real persistent tensors
(weights, buffers, optimizer state, data), which live outside the arena as in PyTorch.
Out: the step's loss; the persistent tensors updated in place, as torch.optim does; ExecStats
saying how each op's outputs reached their planned place.

How an op's outputs get to their place (docs/torch-export.md, "Running a plan"):
- a fresh storage (the graph tensor is a root with a producer and size > 0) is a view of the
  arena at the plan's offset, shaped like the traced (fake) value; the op writes into it with
  its out= overload when the device's backend has a kernel for that overload, else the op runs
  as traced and its result is copied into place and freed (those bytes are "transient");
- empty/empty_like outputs are the planned view itself (the op only allocates);
- views and in-place results share their input's storage, so they run as traced and land in
  the arena (or in persistent memory) by construction.
After every op each output's address is checked against the plan: the root's place plus the
traced value's storage offset. A mismatch means the graph's memory model is wrong about that
op, and is reported as a failed run.
"""

import math
import operator
from collections import Counter
from dataclasses import dataclass, field

import torch
import torch.fx as fx

from . import compat, nested, patches
from . import cuda_scratch
from . import scratch as cpu_scratch
from .export_graph import _op_outputs

aten = torch.ops.aten
_has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key

# Ops that only allocate: their planned place is their result (its contents are undefined).
EMPTY_FACTORIES = frozenset({aten.empty.memory_format, aten.empty_like.default,
                             aten.new_empty.default, aten.empty_strided.default,
                             aten.new_empty_strided.default})


# Ops whose storage_offset argument is absolute: counted from the start of the input's storage,
# not from the input's own offset. In the trace that storage is the planned root's; in the
# arena it is the whole arena, so the runner adds the root's place (absolute_offsets).
ABSOLUTE_OFFSET_OPS = {aten.as_strided.default: 3, aten.as_strided_.default: 3}


class RunFailure(Exception):
    """The planned run failed where eager PyTorch does not (exit status 1)."""


class PlacementError(RunFailure):
    """The planned run could not put a tensor where the plan says."""


class OrderError(Exception):
    """The plan's order runs an op before one of its inputs exists (bad input)."""


def storage_base(t):
    """Address of the first byte of t's storage."""
    return compat.storage(t).data_ptr()


def storage_nbytes(t):
    return compat.storage(t).nbytes()


def is_random(op):
    """Ops that draw from the generator (dropout's mask): their results depend on the order
    random numbers are drawn in."""
    return torch.Tag.nondeterministic_seeded in getattr(op, "tags", ())


def random_order_changed(export, order):
    """True when `order` runs the random ops of the step in another relative order than the
    program does (their draws would then differ from eager's)."""
    nodes = export.op_nodes
    program = [i for i, n in enumerate(nodes) if is_random(n.target)]
    random = set(program)
    return [i for i in order if i in random] != program


class Arena:
    """One byte tensor of the plan's peak, its start aligned to the plan's alignment (and to 64
    bytes) by allocating that much slack."""

    def __init__(self, nbytes, alignment, device):
        self.granule = math.lcm(int(alignment), 64)
        self.raw = torch.empty(nbytes + self.granule, dtype=torch.uint8, device=device)
        self.shift = (-self.raw.data_ptr()) % self.granule
        self.nbytes = nbytes
        self.allocated = nbytes + self.granule
        self.base = self.raw.data_ptr() + self.shift

    def view(self, offset, nbytes, like):
        """A tensor with `like`'s dtype, shape, strides and storage offset, on a storage that
        is the nbytes at byte `offset` of the arena."""
        start = self.shift + offset
        if start % like.element_size() or nbytes % like.element_size():
            raise PlacementError(f"offset {offset} / size {nbytes} is not a multiple of the "
                                 f"{like.dtype} element size {like.element_size()}")
        region = self.raw[start:start + nbytes].view(like.dtype)
        return region.as_strided(like.shape, like.stride(),
                                 region.storage_offset() + like.storage_offset())


@dataclass
class ExecStats:
    """How one step's ops placed their outputs."""
    ops_out: int = 0  # fresh outputs written by the op's out= overload
    ops_copied: int = 0  # ran as traced, result copied into place
    ops_empty: int = 0  # empty/empty_like: the planned view is the result
    ops_other: int = 0  # views, in-place ops, ops without planned output
    ops_recomputed: int = 0  # of the above, copies that recompute an op (remat)
    transient_bytes_max: int = 0  # largest temporary (copied result, unused output) at one op
    transient_bytes_total: int = 0  # summed over the step
    transient_max_op: str = ""
    copied: Counter = field(default_factory=Counter)  # op name -> count

    def as_dict(self):
        return {"ops_out": self.ops_out, "ops_copied": self.ops_copied,
                "ops_empty": self.ops_empty, "ops_other": self.ops_other,
                "ops_recomputed": self.ops_recomputed,
                "transient_bytes_max": self.transient_bytes_max,
                "transient_bytes_total": self.transient_bytes_total,
                "transient_max_op": self.transient_max_op,
                "copied_ops": dict(sorted(self.copied.items()))}


# Ops whose out= kernel fails where the functional op runs: they are computed, then copied
# into place. cudnn_batch_norm.out (CUDA) fails on PyTorch 2.11 with an internal assertion of
# its Python-object preservation (`!c10::detail::has_pyobject(combined)`) while the functional
# call with the same arguments succeeds (measured on an H200; perf/RESULTS.md, "The API on
# CUDA").
BROKEN_OUT_KERNELS = frozenset({"aten.cudnn_batch_norm"})


def _out_overload(op, backend):
    """op's out= overload (same arguments plus one out tensor per return) when `backend` (CPU,
    CUDA) has a kernel of its own for it, else None. Generated out= wrappers (registered as
    CompositeExplicitAutograd) compute into a temporary and copy, which would hide transient
    bytes, so they are not used."""
    if not isinstance(op, torch._ops.OpOverload) or not op._schema.returns:
        return None
    if str(op.overloadpacket) in BROKEN_OUT_KERNELS:
        return None
    want = [(a.name, str(a.type)) for a in op._schema.arguments]
    packet = op.overloadpacket
    for name in packet.overloads():
        cand = getattr(packet, name)
        args = cand._schema.arguments
        outs = [a for a in args if getattr(a, "is_out", False)]
        if not outs or len(outs) != len(op._schema.returns):
            continue
        if [(a.name, str(a.type)) for a in args if not getattr(a, "is_out", False)] != want:
            continue
        if any(str(a.type) != "Tensor" for a in outs):
            continue
        if _has_kernel(cand.name(), backend):
            return cand, [a.name for a in outs]
    return None


def _retarget(x, device):
    """Factory ops traced on the CPU carry device=cpu; on another device they must make their
    tensors there."""
    def fn(v):
        return device if isinstance(v, torch.device) and v.type == "cpu" else v
    return nested.map_leaves(x, fn)


def _get_rng_state(device):
    return torch.cuda.get_rng_state(device) if device.type == "cuda" else torch.get_rng_state()


def _set_rng_state(device, state):
    if device.type == "cuda":
        torch.cuda.set_rng_state(state, device)
    else:
        torch.set_rng_state(state)


def scratch_allocator_for(device):
    """The allocator that serves ops' own allocations from their windows on `device`: c10's CPU
    allocator wrapped (scratch.py), or on CUDA roam's pluggable allocator (cuda_scratch.py)."""
    return cuda_scratch if torch.device(device).type == "cuda" else cpu_scratch


class PlannedStep:
    """The ops of `program` (rewritten.Program: the trace, or a remat rewrite of it), run in
    `order` with planned storages at `placement` (root tensor id -> byte offset) in `arena`.

    A copy (an op recomputing one of the trace) runs its original's fx node on the inputs the
    graph wires it to, and writes its outputs to its own planned places; a copy of a random op
    draws with the generator state its original drew with (saved when the original ran, as
    torch.utils.checkpoint's preserve_rng_state does), and the state is put back after it."""

    def __init__(self, program, export, gm, order, placement, arena, device, use_out=True,
                 scratch=None):
        self.program, self.export, self.gm, self.arena = program, export, gm, arena
        self.device = torch.device(device)
        self.backend = "CUDA" if self.device.type == "cuda" else "CPU"
        self.use_out = use_out
        self.tensors = {t["id"]: t for t in program.graph["tensors"]}
        self.node_of = {}  # tensor id -> the fx node whose value it is (first one: producer's)
        for node, tid in export.tensor_of.items():
            self.node_of.setdefault(tid, node)
        for tid, v in program.value.items():
            if tid != v and v in self.node_of:
                self.node_of[tid] = self.node_of[v]
        self.root = {}
        for tid in self.tensors:
            r = tid
            while self.tensors[r].get("alias_of") is not None:
                r = self.tensors[r]["alias_of"]
            self.root[tid] = r
        self.nodes = list(gm.graph.nodes)
        self.placeholders = [n for n in self.nodes if n.op == "placeholder"]
        self.op_set = set(export.op_nodes)
        self.host_ops = [n for n in self.nodes if n in export.host and n.op == "call_function"
                         and n.target is not operator.getitem]
        self.order = list(order)
        self.output_node = next(n for n in self.nodes if n.op == "output")
        # Planned views, made once: the arena outlives the steps.
        self.views = {}
        # Op temporaries (docs/torch-export.md "Op scratch in the arena"): op id -> the
        # (address, size) of the window its own allocations are served from.
        scratch = scratch or {}
        self.scratch = {op: (arena.base + placement[tid], self.tensors[tid]["size"])
                        for op, tid in scratch.items()}
        self.scratch_allocator = scratch_allocator_for(self.device)
        self.measure_window = None  # (address, size): measure every op's scratch there
        self.scratch_seen = {}  # op id -> (high-water mark, outside peak, blocks left live)
        scratch_tensors = set(scratch.values())
        for tid, offset in placement.items():
            if tid in scratch_tensors:
                continue
            node = self._node_of_root(tid)
            self.views[tid] = arena.view(offset, self.tensors[tid]["size"], node.meta["val"])
        self.place = {tid: arena.base + off for tid, off in placement.items()}
        self.outputs = {}  # op id -> [(result index, fx output node, tensor id)]
        self.copy_tensor = {}  # copy's tensor id -> (copy op id, result index)
        for op, n in program.op_nodes.items():
            made = program.copy_outputs.get(op)
            outs = []
            for o in _op_outputs(n):
                tid = export.tensor_of.get(o)
                if made is not None:
                    tid = made.get(tid)
                    if tid is not None:
                        self.copy_tensor[tid] = (op, self._index(o))
                outs.append((self._index(o), o, tid))
            self.outputs[op] = outs
        self.out_overloads = {}
        self.random_ops = [n for n in export.op_nodes if is_random(n.target)]
        self.random_index = {n: j for j, n in enumerate(self.random_ops)}
        self.stats = ExecStats()
        # fx node -> (args, kwargs) to run it with instead of the traced ones: this step's
        # scalars where they change from step to step (the optimizer's bias corrections).
        self.arg_overrides = {}

    def _node_of_root(self, tid):
        node = self.node_of.get(tid)
        if node is None or not isinstance(node.meta.get("val"), torch.Tensor):
            raise PlacementError(f"tensor {tid} has no traced value")
        return node

    @staticmethod
    def _index(out_node):
        return out_node.args[1] if out_node.target is operator.getitem else None

    # ------------------------------------------------------------------------------------------
    def run(self, flat, seed_random_op=None):
        """Runs one step on the persistent tensors `flat` (placeholder order); returns the
        graph's output (the loss). seed_random_op(j), when given, is called before the j-th
        random op of program order runs, so reordering random ops does not change their
        draws."""
        self.begin(flat)
        for op in self.order:
            self.run_op(op, seed_random_op)
        return self.end()

    def begin(self, flat):
        """Starts a step: binds the persistent tensors and runs the host bookkeeping."""
        self.stats = ExecStats()
        self.env = {}
        self.copy_results = {}  # copy op id -> its result
        self.rng_states = {}  # random op id -> generator state before it drew
        for n, t in zip(self.placeholders, flat):
            self.env[n] = t
        for n in self.host_ops:  # the step counters' bookkeeping; depends only on constants
            self.env[n] = n.target(*fx.node.map_arg(n.args, self._value),
                                   **fx.node.map_arg(n.kwargs, self._value))
        self.persistent_place = {}

    def run_op(self, op, seed_random_op=None):
        """Runs op `op` of the program (the next one of the order)."""
        n = self.program.op_nodes[op]
        origin = self.program.origin[op]
        if n not in self.random_index:
            self._run_op(op, n)
            return
        if origin == op:
            if seed_random_op is not None:
                seed_random_op(self.random_index[n])
            self.rng_states[op] = _get_rng_state(self.device)
            self._run_op(op, n)
            return
        saved = self.rng_states.get(origin)
        if saved is None:
            raise OrderError(f"the order runs op {op}, a recomputation of random op {origin}, "
                             f"before op {origin}, so the generator state to draw with is not "
                             "known yet")
        now = _get_rng_state(self.device)
        _set_rng_state(self.device, saved)
        try:
            self._run_op(op, n)
        finally:
            _set_rng_state(self.device, now)

    def inputs(self, op):
        """[(fx input node, tensor id or None, current value)] of op `op`, during a step."""
        n = self.program.op_nodes[op]
        rewired = self.program.rewired.get(op, {})
        out = []
        for inp in nested.leaves((n.args, n.kwargs), nested.is_fx_node, unique=True):
            tid = rewired.get(inp, self.export.tensor_of.get(inp))
            out.append((inp, tid, self._input_value(rewired, inp)))
        return out

    def output_values(self, op):
        """[(tensor id, value)] of the outputs op `op` made this step."""
        result = self._result(op)
        return [(tid, result if idx is None else result[idx])
                for idx, _, tid in self.outputs[op]]

    def end(self):
        """Ends a step; returns the graph's output."""
        result = fx.node.map_arg(self.output_node.args[0], self._value)
        self.env = None
        self.copy_results = None
        return result

    def _result(self, op):
        if self.program.origin[op] == op:
            return self.env[self.program.op_nodes[op]]
        return self.copy_results[op]

    def _input_value(self, rewired, m):
        tid = rewired.get(m)
        if tid is None:
            return self._value(m)
        op, idx = self.copy_tensor[tid]
        result = self.copy_results.get(op)
        if result is None:
            raise OrderError(f"the order runs an op reading tensor {tid} before op {op}, which "
                             "makes it")
        return result if idx is None else result[idx]

    def _value(self, n):
        env = self.env
        if n in env:
            return env[n]
        if n.op == "get_attr":
            env[n] = getattr(self.gm, n.target)
            return env[n]
        if n.op == "call_function" and n.target is operator.getitem:
            src = n.args[0]
            if src in env:
                return env[src][n.args[1]]
        elif n.op == "call_function" and n.target is aten.detach.default and \
                n not in self.op_set:
            return self._value(n.args[0])  # a tracing artifact eager never dispatches
        producer = n.args[0] if n.target is operator.getitem else n
        raise OrderError(f"the order runs an op before {producer.name}, which makes one of "
                         "its inputs")

    def _run_op(self, op_id, n):
        window = self.measure_window or self.scratch.get(op_id)
        if window is None:
            self._run_op_here(op_id, n)
            return
        self.scratch_allocator.open_window(*window)
        try:
            self._run_op_here(op_id, n)
        finally:
            self.scratch_seen[op_id] = self.scratch_allocator.close_window()
        live = self.scratch_seen[op_id][2]
        if live and self.measure_window is None:
            # The window's bytes belong to the next op's temporaries: a block still in use
            # would be overwritten (another thread allocating CPU tensors during the step?).
            raise RunFailure(f"op {op_id} ({n.target.overloadpacket}): {live} allocation(s) "
                             "served from its planned scratch are still alive after it ran")

    def _run_op_here(self, op_id, n):
        op = n.target
        rewired = self.program.rewired.get(op_id)
        if rewired:
            def lookup(m):
                return self._input_value(rewired, m)
        else:
            lookup = self._value
        targs, tkwargs = self.arg_overrides.get(n, (n.args, n.kwargs))
        args = fx.node.map_arg(targs, lookup)
        kwargs = fx.node.map_arg(tkwargs, lookup)
        if self.device.type != "cpu":
            args, kwargs = _retarget(args, self.device), _retarget(kwargs, self.device)
        if op in ABSOLUTE_OFFSET_OPS:
            args, kwargs = self._absolute_offsets(op, targs[0], args, kwargs)
        outs = self.outputs[op_id]
        planned = {idx: tid for idx, _, tid in outs if tid in self.views}
        copy = self.program.origin[op_id] != op_id
        if copy:
            self.stats.ops_recomputed += 1
            skip_update = patches.STATE_UPDATE_SKIPPED.get(op)
            if skip_update is not None:
                args, kwargs = skip_update(args, kwargs)
        try:
            if not planned:
                self.stats.ops_other += 1
                result = op(*args, **kwargs)
            elif op in EMPTY_FACTORIES:
                self.stats.ops_empty += 1
                (tid,) = planned.values()
                result = self.views[tid]
            else:
                result = self._run_into_place(op_id, n, op, args, kwargs, outs, planned)
        except (RuntimeError, IndexError, ValueError) as e:
            # Eager ran this op on the same inputs: here its inputs were wrong (overwritten
            # while live) or its output place overlaps an input.
            raise RunFailure(f"op {op_id} ({op.overloadpacket}) failed in the planned "
                             f"run: {type(e).__name__}: {str(e).splitlines()[0]}") from e
        if isinstance(result, (tuple, list)):
            kept = {idx for idx, _, _ in outs}
            result = [r if i in kept else None for i, r in enumerate(result)]
        if copy:
            self.copy_results[op_id] = result
        else:
            self.env[n] = result
        self._check_places(op_id, n, outs, result)

    def _absolute_offsets(self, op, traced_input, args, kwargs):
        """as_strided(input, size, stride, storage_offset): the traced storage_offset counts
        from the first element of the input's storage, which the trace made the planned root's
        own storage; in the arena that storage is the whole arena, so the root's place, in
        elements of the input's dtype, is added. Without it the result lands at the arena's
        base (efficientnet_b0: autograd's CopySlices after an in-place dropout on a flattened
        view)."""
        index = ABSOLUTE_OFFSET_OPS[op]
        x = args[0]
        if self.arena is None or not isinstance(x, torch.Tensor) or \
                storage_base(x) != storage_base(self.arena.raw):
            return args, kwargs
        args = list(args)
        if len(args) > index:
            offset = args[index]
        else:
            offset = kwargs.get("storage_offset")
        if offset is None:
            return tuple(args), kwargs  # None keeps the input's own offset: already right
        # The input's root starts where its view's storage offset, minus the traced one, says
        # (a copy reads its own computation of the same value: same traced offset).
        root_start = x.storage_offset() - traced_input.meta["val"].storage_offset()
        if len(args) > index:
            args[index] = root_start + offset
        else:
            kwargs = {**kwargs, "storage_offset": root_start + offset}
        return tuple(args), kwargs

    def _run_into_place(self, op_id, n, op, args, kwargs, outs, planned):
        multi = not isinstance(n.meta.get("val"), torch.Tensor)
        if multi:  # the traced values of the outputs something reads (getitem nodes)
            traced = {idx: o.meta.get("val") for idx, o, _ in outs}
            returns = op._schema.returns
            fakes = [traced.get(i) for i in range(len(returns))]
            if any(str(r.type) != "Tensor" for r in returns):
                fakes = [None]  # a list result: no out= overload fits
        else:
            fakes = [n.meta["val"]]
        all_fresh = all(self.tensors[tid]["alias_of"] is None for _, _, tid in outs
                        if tid is not None)
        found = None
        if self.use_out and all_fresh and all(isinstance(f, torch.Tensor) for f in fakes):
            if op not in self.out_overloads:
                self.out_overloads[op] = _out_overload(op, self.backend)
            found = self.out_overloads[op]
        if found is not None:
            out_op, names = found
            dests, transient = [], 0
            for i, f in enumerate(fakes):
                key = i if multi else None
                if key in planned:
                    dests.append(self.views[planned[key]])
                else:  # an output nobody reads: not in the graph, so not planned
                    dests.append(torch.empty_strided(f.shape, f.stride(), dtype=f.dtype,
                                                     device=self.device))
                    transient += storage_nbytes(dests[-1])
            result = out_op(*args, **kwargs, **dict(zip(names, dests)))
            results = list(result) if multi else [result]
            if all(r.data_ptr() == d.data_ptr() and r.stride() == d.stride()
                   for r, d in zip(results, dests)):
                self.stats.ops_out += 1
                self._transient(n, transient)
                return result
            # The kernel resized or reallocated its out tensors: recompute as traced.
        self.stats.ops_copied += 1
        self.stats.copied[str(op.overloadpacket)] += 1
        result = op(*args, **kwargs)
        results = list(result) if multi else [result]
        inputs = {storage_base(a) for a in _tensors(args, kwargs)}
        transient = 0
        for i, r in enumerate(results):
            key = i if multi else None
            if key in planned:
                view = self.views[planned[key]]
                if r.shape != view.shape or r.stride() != view.stride() or r.dtype != view.dtype:
                    raise PlacementError(
                        f"op {op_id} ({op}) made output {key or 0} with shape "
                        f"{tuple(r.shape)} strides {r.stride()} {r.dtype}; the trace has "
                        f"{tuple(view.shape)} {view.stride()} {view.dtype}")
                view.copy_(r)
                transient += storage_nbytes(r)
                results[i] = view
            elif isinstance(r, torch.Tensor) and storage_base(r) not in inputs:
                transient += storage_nbytes(r)
        self._transient(n, transient)
        return results if multi else results[0]

    def _transient(self, n, nbytes):
        s = self.stats
        s.transient_bytes_total += nbytes
        if nbytes > s.transient_bytes_max:
            s.transient_bytes_max = nbytes
            s.transient_max_op = str(n.target.overloadpacket)

    def _check_places(self, op_id, n, outs, result):
        """Every output is where the plan (for planned storages) or its base (persistent
        storages) says: the root's first byte plus the traced value's storage offset."""
        for idx, out_node, tid in outs:
            if tid is None:
                continue
            fake = out_node.meta["val"]
            if fake.numel() == 0:
                continue
            root = self.root[tid]
            start = self.place.get(root)
            if start is None:
                if self.tensors[root]["producer"] is not None:
                    continue  # a size-0 storage: nothing to place
                start = self._persistent_start(root)
            real = result if idx is None else result[idx]
            want = start + fake.storage_offset() * fake.element_size()
            if real.data_ptr() != want:
                in_arena = root in self.place
                where = "the arena" if in_arena else "its persistent storage"
                expected = storage_base(self.arena.raw) if in_arena else start
                if storage_base(real) == expected:
                    # The right storage, the wrong place in it: the graph was right that the
                    # output is this storage's; the runner computed the place wrong.
                    blame = ("the runner is at fault: the output is on the right storage at "
                             "the wrong offset (an offset argument the runner did not map "
                             "to the arena?)")
                else:
                    blame = "the graph's memory model is wrong about this op"
                raise PlacementError(
                    f"op {op_id} ({n.target.overloadpacket}): tensor {tid} is at "
                    f"address {real.data_ptr():#x}, not at its place in {where} "
                    f"({want:#x}, storage of tensor {root}): {blame}")

    def _persistent_start(self, root):
        start = self.persistent_place.get(root)
        if start is None:
            start = storage_base(self._value(self.node_of[root]))
            self.persistent_place[root] = start
        return start


def _tensors(args, kwargs):
    return nested.leaves((args, kwargs), nested.is_tensor)
