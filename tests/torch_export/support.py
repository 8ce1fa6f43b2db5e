"""Shared helpers for the torch_export tests: small models, tracing them, running the traced
step on real tensors, and running the roam binary."""

import json
import operator
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
TOOL_DIR = os.path.join(SOURCE_DIR, "tools", "torch_export")
EXPORT_PY = os.path.join(TOOL_DIR, "export.py")
sys.path.insert(0, TOOL_DIR)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

from roam_torch import compat, export_graph, patches  # noqa: E402
from roam_torch import trace as tr  # noqa: E402
from roam_torch.gpt2 import GPT2Config  # noqa: E402
from roam_torch.spec import OptimizerSpec, StepSpec  # noqa: E402


# Tests of a 1.13-only behaviour (what its make_fx decomposes, the meta kernels it lacks, the
# dispatch sequence the C++ generator copies) are skipped on PyTorch 2.
ON_1_13 = compat.torch_release() < (2, 0)


def roam_binary():
    """The roam executable CTest passes in ROAM_BINARY; tests that need it fail without it."""
    path = os.environ.get("ROAM_BINARY")
    if not path or not os.access(path, os.X_OK):
        raise AssertionError("set ROAM_BINARY to the roam executable (CTest does this)")
    return path


# ---------------------------------------------------------------------------------------------
# Models

class ResidualBlock(nn.Module):
    """conv-bn-relu_-conv-bn, += identity (in-place add_), relu_: ResNet's BasicBlock."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return self.relu(out)


class SmallCNN(nn.Module):
    def __init__(self, num_classes=5, dropout=0.0, act=None):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=True), nn.BatchNorm2d(4),
                                  nn.ReLU(inplace=True))
        self.block = ResidualBlock(4)
        self.pool = nn.MaxPool2d(2)
        self.act = act if act is not None else nn.Identity()
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(dropout),
                                  nn.Linear(4, num_classes))

    def forward(self, x):
        return self.head(self.act(self.pool(self.block(self.stem(x)))))


def cnn_spec(optimizer="adam", dropout_form="cuda", momentum=0.0, batch=2):
    return StepSpec(name="small-cnn", family="custom", batch=batch, image_size=8, num_classes=5,
                    optimizer=OptimizerSpec(name=optimizer, momentum=momentum,
                                            weight_decay=0.01, lr=0.01),
                    dropout_form=dropout_form)


def gpt_spec(dropout=0.0, optimizer="adam", n_layer=2, dropout_form="cuda"):
    return StepSpec(name="tiny-gpt", family="gpt2",
                    gpt2=GPT2Config(n_layer=n_layer, n_embd=8, n_head=2, seq_len=5, vocab=13,
                                    dropout=dropout),
                    batch=2, optimizer=OptimizerSpec(name=optimizer, lr=0.01),
                    dropout_form=dropout_form)


def _model_fn(spec, model_fn):
    if model_fn is not None:
        return lambda: model_fn().train()
    return lambda: tr.build_model(spec)


def step_inputs(spec, model_fn=None, seed=0, fake_mode=None):
    """Model, batch and optimizer state: real tensors from `seed`, or fake ones."""
    build = _model_fn(spec, model_fn)

    def make():
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed + 1)
        model = build()
        batch = tr.make_batch(spec, generator=gen)
        state = tr.make_optimizer_state(spec, list(model.parameters()), generator=gen)
        return tr.collect_inputs(spec, model, batch, state)

    if fake_mode is None:
        return make()
    with fake_mode:
        return make()


def trace(spec, model_fn=None, **kwargs):
    """Traces the step over fake tensors; returns (TracedStep, graph dict, report, op_nodes)."""
    fake_mode = FakeTensorMode(allow_fallback_kernels=False)
    inputs = step_inputs(spec, model_fn, fake_mode=fake_mode)
    traced = tr.trace_module_step(spec, inputs, fake_mode, **kwargs)
    graph, report, op_nodes = export_graph.build(traced)
    return traced, graph, report, op_nodes


def eager_step(spec, inputs, seed=123):
    """Runs the step eagerly on real tensors (dropout in the same form as the trace)."""
    torch.manual_seed(seed)
    ctx = patches.cuda_dropout() if spec.dropout_form == "cuda" else _null()
    with ctx:
        return tr.training_step(spec, inputs, inputs.tensors)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def traced_step(traced, tensors, seed=123):
    """Runs the traced graph module on real tensors, in program order."""
    torch.manual_seed(seed)
    return traced.gm(*tensors)


# ---------------------------------------------------------------------------------------------
# Graph helpers

def dependencies(graph):
    """Op-to-op edges of a roam graph as core/graph.h defines them: consumers of a tensor
    follow its producer, and the producer of an alias follows the producer of its base."""
    tensors = {t["id"]: t for t in graph["tensors"]}
    succ = {op["id"]: set() for op in graph["ops"]}
    for t in graph["tensors"]:
        p = t["producer"]
        if p is not None:
            for c in t["consumers"]:
                if c != p:
                    succ[p].add(c)
        a = t.get("alias_of")
        if a is not None and p is not None:
            bp = tensors[a]["producer"]
            if bp is not None and bp != p:
                succ[bp].add(p)
    return succ


def is_topological(graph, order):
    pos = {op: i for i, op in enumerate(order)}
    if sorted(pos) != sorted(op["id"] for op in graph["ops"]):
        return False
    return all(pos[a] < pos[b] for a, bs in dependencies(graph).items() for b in bs)


def topological_order(graph, pick):
    """Kahn's algorithm; pick(ready list) chooses which ready op runs next."""
    succ = dependencies(graph)
    indeg = {op: 0 for op in succ}
    for a, bs in succ.items():
        for b in bs:
            indeg[b] += 1
    ready = [op for op, d in indeg.items() if d == 0]
    order = []
    while ready:
        op = pick(ready)
        ready.remove(op)
        order.append(op)
        for b in succ[op]:
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
    if len(order) != len(succ):
        raise AssertionError("dependency cycle")
    return order


def random_order(graph, seed):
    rng = random.Random(seed)
    return topological_order(graph, lambda ready: rng.choice(ready))


def latest_first_order(graph):
    """Runs, among the ready ops, the one latest in program order: delays every op as long as
    the dependencies allow, so a read that is not tied to precede a write slips past it."""
    pos = {op: i for i, op in enumerate(graph["program_order"])}
    return topological_order(graph, lambda ready: max(ready, key=pos.__getitem__))


def run_in_order(traced, op_nodes, order, tensors, seed=123):
    """Executes the traced graph on real tensors, running the ops in `order` (roam op ids).

    Placeholders, constants and host ops are evaluated first; getitem projections and dropped
    detach nodes lazily, when an op needs them. Returns the value of the graph's output.
    """
    torch.manual_seed(seed)
    gm = traced.gm
    env = {}
    op_set = set(op_nodes)
    nodes = list(gm.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    for n, t in zip(placeholders, tensors):
        env[n] = t

    def value(n):
        if n in env:
            return env[n]
        if n.op == "get_attr":
            env[n] = getattr(gm, n.target)
        elif n.op == "call_function" and n.target is operator.getitem:
            env[n] = value(n.args[0])[n.args[1]]
        elif n.op == "call_function" and n not in op_set:
            run(n)  # host op or dropped detach
        else:
            raise AssertionError(f"{n.name} needed before it ran")
        return env[n]

    def run(n):
        args = torch.fx.node.map_arg(n.args, value)
        kwargs = torch.fx.node.map_arg(n.kwargs, value)
        env[n] = n.target(*args, **kwargs)

    for n in nodes:  # host ops first: they only depend on constants
        if n.op == "call_function" and n not in op_set and n.target is not operator.getitem \
                and n.target is not torch.ops.aten.detach.default:
            run(n)
    for op in order:
        run(op_nodes[op])
    out = next(n for n in nodes if n.op == "output")
    return torch.fx.node.map_arg(out.args[0], value)


# ---------------------------------------------------------------------------------------------
# Processes

def run_export(args, **kwargs):
    """export.py in a child process: the real command line."""
    return subprocess.run([sys.executable, EXPORT_PY, *args], capture_output=True, text=True,
                          **kwargs)


def run_export_main(args):
    """export.py's main() in this process (no second torch import); returns a
    CompletedProcess-like object with returncode and stderr."""
    import contextlib
    import importlib.util
    import io

    global _export_module
    if _export_module is None:
        spec = importlib.util.spec_from_file_location("roam_export_cli", EXPORT_PY)
        _export_module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_export_module)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = _export_module.main(list(args))
        except SystemExit as e:  # argparse
            code = e.code
    return subprocess.CompletedProcess(args, code, "", err.getvalue())


_export_module = None


def run_roam(args):
    return subprocess.run([roam_binary(), *args], capture_output=True, text=True)


def write_json(directory, name, doc):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def temp_dir(test):
    d = tempfile.TemporaryDirectory(prefix="roam-torch-test-")
    test.addCleanup(d.cleanup)
    return d.name
