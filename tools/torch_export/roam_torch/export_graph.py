"""Turns a TracedStep into a roam-graph-v1 document (docs/formats.md).

In: the fx graph of one step, nodes in eager dispatch order, each carrying the fake value it
produced. Out: a dict ready for json.dump, plus an ExportReport of what was left out.

- One op per device aten call, in fx order (program_order = eager dispatch order).
- Aliasing comes from storage identity of the traced values, not from op schemas: a value
  whose storage already exists is an alias (views, in-place results, aten._unsafe_view, which
  declares no alias). Its alias_of is the op's input on that storage (the mutated tensor for
  in-place ops), else the storage's latest tensor.
- Writes come from the schema's Tensor(a!) annotations plus patches.UNDECLARED_WRITES
  (native_batch_norm's running statistics). A write that returns no value still gets an
  output tensor aliasing the written one, so every write is visible in the graph.
- Ordering: per storage, every op that read it since the previous write feeds the writer a
  size-0 "control" tensor (reads of the old value before the write), and an op reading a
  tensor made before the latest write of its storage gets one from the writer.
- Costs: every op gets `cost` in FLOP-equivalents from its traced shapes (cost.py, the
  generator's model): FLOPs of matrix products and convolutions, else 100 per byte its tensors
  read and make; views 0.
- Host ops are dropped: Adam's step counters (torch.tensor constants lifted into the trace,
  incremented with add_ and read with .item() on the CPU in GPU training) and the profiler's
  record_function bookkeeping. A host value read by a device op becomes a graph input.
"""

import operator
from dataclasses import dataclass, field

import torch
import torch.fx as fx
from torch.multiprocessing.reductions import StorageWeakRef

from . import cost as costs
from . import compat, nested, patches

FORMAT = "roam-graph-v1"


@dataclass
class ExportReport:
    ops: int = 0
    tensors: int = 0
    host_ops: dict = field(default_factory=dict)  # op name -> count, left out of the graph
    host_inputs: int = 0  # host values that device ops read
    control_tensors: int = 0
    dropped_detach: int = 0  # aten.detach nodes that eager does not dispatch
    weight_elements: int = 0  # parameter count (sum of weight inputs / element size)
    kept_whole: list = field(default_factory=list)


# Kind of a fresh tensor by the phase that makes it.
_KIND_OF_PHASE = {"forward": "activation", "backward": "gradient", "optimizer": "temporary"}


def _storage_key(t):
    return StorageWeakRef(compat.storage(t)).cdata


def _tensor_nodes(args, kwargs):
    """The fx Nodes among an op's (possibly nested) arguments, in order, deduplicated."""
    return nested.leaves((args, kwargs), nested.is_fx_node, unique=True)


def _op_outputs(node):
    """The nodes standing for an op's tensor results: itself, or its getitem projections."""
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        return [node]
    items = [u for u in node.users if u.op == "call_function" and u.target is operator.getitem
             and isinstance(u.meta.get("val"), torch.Tensor)]
    return sorted(items, key=lambda u: u.args[1])


class _Builder:
    def __init__(self, traced):
        self.traced = traced
        self.ops = []  # dicts
        self.tensors = []  # dicts
        self.tensor_of = {}  # fx node -> tensor id
        self.storage_root = {}  # storage key -> root tensor id
        self.storage_latest = {}  # storage key -> latest tensor id
        self.storage_of_tensor = []  # tensor id -> storage key
        self.version_of_tensor = []  # tensor id -> writes to its storage before it existed
        self.version = {}  # storage key -> writes so far
        self.last_writer = {}  # storage key -> op id
        self.readers = {}  # storage key -> op ids since the last write
        self.control_of = {}  # op id -> its control tensor id
        self.inputs_of_op = []  # op id -> set of tensor ids consumed
        self.host = set()  # fx nodes whose values live on the host
        self.report = ExportReport(kept_whole=sorted(traced.kept_whole))

    # -- tensors --------------------------------------------------------------------------------
    def new_tensor(self, val, producer, kind, alias_of=None, size=None):
        tid = len(self.tensors)
        key = _storage_key(val)
        if size is None:
            size = val.numel() * val.element_size() if alias_of is not None else \
                compat.storage(val).nbytes()
        self.tensors.append({"id": tid, "size": int(size), "producer": producer,
                             "consumers": [], "alias_of": alias_of, "output": False,
                             "kind": kind})
        self.storage_of_tensor.append(key)
        self.version_of_tensor.append(self.version.get(key, 0))
        self.storage_root.setdefault(key, tid)
        self.storage_latest[key] = tid
        return tid

    def consume(self, tid, op):
        if tid not in self.inputs_of_op[op]:
            self.tensors[tid]["consumers"].append(op)
            self.inputs_of_op[op].add(tid)

    def order(self, first, then):
        """Makes op `then` depend on op `first` through a size-0 control tensor."""
        if first == then:
            return
        if any(self.tensors[t]["producer"] == first for t in self.inputs_of_op[then]):
            return
        ctrl = self.control_of.get(first)
        if ctrl is None:
            ctrl = len(self.tensors)
            self.tensors.append({"id": ctrl, "size": 0, "producer": first, "consumers": [],
                                 "alias_of": None, "output": False, "kind": "control"})
            self.storage_of_tensor.append(None)
            self.version_of_tensor.append(0)
            self.control_of[first] = ctrl
            self.report.control_tensors += 1
        self.consume(ctrl, then)

    # -- nodes ----------------------------------------------------------------------------------
    def placeholder(self, node, index):
        val = node.meta["val"]
        kind = self.traced.kinds[index]
        key = _storage_key(val)
        alias = self.storage_latest.get(key)
        self.tensor_of[node] = self.new_tensor(val, None, kind, alias_of=alias)
        if kind == "weight":
            self.report.weight_elements += val.numel()

    def is_host_op(self, node, inputs):
        if node.meta.get("roam_host"):
            return True
        if node.target is torch.ops.aten.lift_fresh_copy.default:
            return True
        return bool(inputs) and all(i in self.host for i in inputs)

    def tensor_for_input(self, inp):
        """The roam tensor an op reads for fx node inp (host values become graph inputs)."""
        tid = self.tensor_of.get(inp)
        if tid is None:
            val = inp.meta.get("val")
            if val is None and inp.op == "get_attr":
                val = getattr(self.traced.gm, inp.target)
            if not isinstance(val, torch.Tensor):
                raise RuntimeError(f"node {inp.name} feeds a device op but has no tensor value")
            tid = self.new_tensor(val, None, "input")
            self.tensor_of[inp] = tid
            self.report.host_inputs += 1
        return tid

    def call(self, node):
        func = node.target
        inputs = _tensor_nodes(node.args, node.kwargs)
        outputs = _op_outputs(node)
        if func is torch.ops.aten.detach.default and not node.meta.get("roam_explicit"):
            # A tracing artifact (see trace._TorchFunctionHooks): the value is its input.
            (src,) = inputs
            if src in self.host:
                self.host.add(node)
            else:
                self.tensor_of[node] = self.tensor_for_input(src)
            self.report.dropped_detach += 1
            return
        if self.is_host_op(node, inputs):
            self.host.add(node)
            self.host.update(outputs)
            name = str(func.overloadpacket) if hasattr(func, "overloadpacket") else str(func)
            self.report.host_ops[name] = self.report.host_ops.get(name, 0) + 1
            return
        op = len(self.ops)
        self.ops.append({"id": op, "name": str(func.overloadpacket),
                         "phase": node.meta.get("roam_phase", "other")})
        self.inputs_of_op.append(set())

        in_tids = [self.tensor_for_input(i) for i in inputs]
        for tid in in_tids:
            self.consume(tid, op)
        # Reads: an input made before the latest write of its storage sees the written data,
        # so the op must follow that write.
        for tid in in_tids:
            key = self.storage_of_tensor[tid]
            writer = self.last_writer.get(key)
            if writer is not None and self.version_of_tensor[tid] < self.version[key]:
                self.order(writer, op)
        # Writes: every op that read the old value runs first.
        written = [self.tensor_for_input(w) for w in
                   patches.written_arguments(func, node.args, node.kwargs)
                   if isinstance(w, fx.Node)]
        written_keys = []
        for tid in written:
            key = self.storage_of_tensor[tid]
            if key in written_keys:
                continue
            written_keys.append(key)
            for reader in self.readers.get(key, []):
                self.order(reader, op)
            writer = self.last_writer.get(key)
            if writer is not None:
                self.order(writer, op)
        for tid in in_tids:
            key = self.storage_of_tensor[tid]
            if key not in written_keys:
                self.readers.setdefault(key, []).append(op)
        for key in written_keys:
            self.version[key] = self.version.get(key, 0) + 1
            self.last_writer[key] = op
            self.readers[key] = []

        # Outputs: fresh storage, or an alias of an input (view or in-place result).
        in_by_key = {}
        for tid in reversed(in_tids):
            in_by_key[self.storage_of_tensor[tid]] = tid
        for tid in written:  # an in-place result aliases the tensor it mutated
            in_by_key[self.storage_of_tensor[tid]] = tid
        produced_keys = set()
        kind = _KIND_OF_PHASE.get(node.meta.get("roam_phase"), "temporary")
        made, fresh = [], False
        for out in outputs:
            val = out.meta["val"]
            key = _storage_key(val)
            produced_keys.add(key)
            if key in self.storage_root:
                # Views and in-place results are the same memory as their base: same kind.
                alias = in_by_key.get(key, self.storage_latest[key])
                tid = self.new_tensor(val, op, self.tensors[alias]["kind"], alias_of=alias)
            else:
                tid = self.new_tensor(val, op, kind)
                fresh = True
            self.tensor_of[out] = tid
            made.append(tid)
        for tid in written:
            key = self.storage_of_tensor[tid]
            if key not in produced_keys:  # an undeclared write (batch-norm running stats)
                produced_keys.add(key)
                made.append(self.new_tensor_like(tid, op))
        # Cost (docs/formats.md "Costs"): a view moves no bytes; every other op is charged its
        # FLOPs or the bytes it reads and writes, as the generator does.
        if made and not fresh and not written_keys:
            self.ops[op]["cost"] = 0.0
        else:
            moved = sum(self.tensors[t]["size"] for t in dict.fromkeys(in_tids + made))
            name = self.ops[op]["name"]
            results = [o.meta["val"] for o in outputs]  # multi-output nodes: their getitems
            self.ops[op]["cost"] = costs.estimate(name, node.args, results, moved)

    def new_tensor_like(self, tid, op):
        t = self.tensors[tid]
        nid = len(self.tensors)
        key = self.storage_of_tensor[tid]
        self.tensors.append({"id": nid, "size": t["size"], "producer": op, "consumers": [],
                             "alias_of": tid, "output": False, "kind": t["kind"]})
        self.storage_of_tensor.append(key)
        self.version_of_tensor.append(self.version.get(key, 0))
        self.storage_latest[key] = nid
        return nid

    def finish(self, output_node):
        for out in _tensor_nodes(output_node.args, {}):
            tid = self.tensor_of.get(out)
            if tid is not None:
                self.tensors[tid]["output"] = True
        self.report.ops = len(self.ops)
        self.report.tensors = len(self.tensors)


@dataclass
class Export:
    """A built graph with the link back to the fx graph it came from (tools/torch_export/
    run_plan.py replays the fx nodes on real tensors and needs to know which graph tensor each
    node's value is)."""
    graph: dict
    report: ExportReport
    op_nodes: list  # op id -> fx node
    tensor_of: dict  # fx node -> tensor id (dropped detach nodes map to their input's tensor)
    host: set  # fx nodes whose values live on the host (left out of the graph)


def build(traced):
    """Returns (graph dict, ExportReport, op_nodes) where op_nodes[i] is the fx node of op i."""
    e = build_export(traced)
    return e.graph, e.report, e.op_nodes


def build_export(traced) -> Export:
    b = _Builder(traced)
    op_nodes = []
    placeholder_index = 0
    output_node = None
    for node in traced.gm.graph.nodes:
        if node.op == "placeholder":
            b.placeholder(node, placeholder_index)
            placeholder_index += 1
        elif node.op == "get_attr":
            b.host.add(node)  # a constant the tracer lifted: lives on the host
        elif node.op == "call_function":
            if node.target is operator.getitem:
                continue  # projections of a multi-output op, handled with the op
            if not isinstance(node.target, torch._ops.OpOverload):
                raise RuntimeError(f"unexpected call to {node.target} in the trace")
            before = len(b.ops)
            b.call(node)
            if len(b.ops) > before:
                op_nodes.append(node)
        elif node.op == "output":
            output_node = node
        else:
            raise RuntimeError(f"unexpected fx node kind {node.op} ({node.name})")
    b.finish(output_node)
    graph = {
        "format": FORMAT,
        "name": traced.spec.name,
        "ops": b.ops,
        "tensors": b.tensors,
        "program_order": [op["id"] for op in b.ops],
    }
    return Export(graph=graph, report=b.report, op_nodes=op_nodes, tensor_of=b.tensor_of,
                  host=b.host)
