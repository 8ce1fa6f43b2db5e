"""Traces a user's own training step: `loss_fn(model(inputs), targets)`, the gradients of the
parameters the optimizer trains, and the user's optimizer's own step() code.

In: the user's model, optimizer, loss function and an example batch (real tensors). Out: a
trace.TracedStep over fake copies of them, and the flat list of the real tensors each
placeholder stands for (parameters, buffers, optimizer state, batch), so a planned step can
run on the user's objects and update them in place.

Nothing real is touched while tracing: the model is deep-copied with every parameter and
buffer replaced by a fake tensor (the real ones are never copied), and the optimizer is a
shallow copy whose param_groups and state refer to the fakes. Its step() is the user's
optimizer class's own code, so whatever hyperparameters (lr, betas, momentum, foreach ...) the
user set are traced as they are.

torch.optim keeps some state on the host (Adam's `step`, a 0-dim CPU tensor whose .item() feeds
Python floats such as the bias corrections into the device ops). Those floats change every
step, so OptimizerScalars reruns the optimizer's step() over meta tensors before each planned
step, on the real host state (which it advances exactly as eager does), and hands the runner
the scalar arguments of this step's device ops.
"""

import copy
import types
from collections import defaultdict

import torch
import torch.nn as nn
import torch.utils._pytree as pytree
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

from . import fx_trace, patches
from . import trace as tr


class UserStepError(Exception):
    """The user's model, optimizer, loss or batch cannot be planned (a ValueError-like
    usage problem); the message names the argument."""


def is_host_state(t):
    """torch.optim's host-side state: a 0-dim CPU tensor (Adam's `step` when not
    capturable), read with .item() into Python floats."""
    return isinstance(t, torch.Tensor) and t.dim() == 0 and t.device.type == "cpu"


def trained_parameters(optimizer):
    """The parameters the optimizer updates, in param_groups order, each once."""
    seen, out = set(), []
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


def init_adam_state(optimizer):
    """Creates Adam's/AdamW's per-parameter state before the first step exactly as its step()
    would (torch/optim/adam.py: zeros and a step counter of 0), so the first planned step has
    the same state structure as every later one. Other optimizers are left alone."""
    if type(optimizer) not in (torch.optim.Adam, torch.optim.AdamW):
        return
    d = optimizer.defaults
    for group in optimizer.param_groups:
        for p in group["params"]:
            state = optimizer.state[p]
            if len(state) != 0:
                continue
            state["step"] = (torch.zeros((1,), dtype=torch.float, device=p.device)
                             if d.get("capturable") or d.get("fused") else torch.tensor(0.))
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            if group.get("amsgrad"):
                state["max_exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)


def future_state(optimizer):
    """The state SGD's first step will create (momentum buffers like their parameters, on the
    meta device: only their shapes are traced), with the existing state kept."""
    state = {p: dict(st) for p, st in optimizer.state.items()}
    for group in optimizer.param_groups:
        if group.get("momentum", 0) != 0:
            for p in group["params"]:
                st = state.setdefault(p, {})
                if "momentum_buffer" not in st:
                    st["momentum_buffer"] = torch.empty_like(p, device="meta")
    return state


def missing_state(optimizer):
    """Why the optimizer's state is not yet what every step reads, or None.

    SGD with momentum creates its momentum buffers in the first step with other arithmetic
    (a clone of the gradient) than later steps: that step runs eagerly."""
    if isinstance(optimizer, torch.optim.SGD):
        for group in optimizer.param_groups:
            if group.get("momentum", 0) != 0:
                for p in group["params"]:
                    if "momentum_buffer" not in optimizer.state.get(p, {}):
                        return "SGD's momentum buffers are created by its first step"
        return None
    for p in trained_parameters(optimizer):
        if p.requires_grad and not optimizer.state.get(p):
            return f"{type(optimizer).__name__} has no state yet"
    return None


class _Layout:
    """Where each real tensor of the step goes in the placeholder list, and its kind."""

    def __init__(self, model, optimizer, inputs, targets):
        self.params = list(model.parameters())  # tied weights appear once
        self.param_names = [n for n, _ in model.named_parameters()]
        self.buffers = list(model.buffers())
        self.buffer_names = [n for n, _ in model.named_buffers()]
        ids = {id(p) for p in self.params}
        self.trained = [p for p in trained_parameters(optimizer) if p.requires_grad]
        for p in self.trained:
            if id(p) not in ids:
                raise UserStepError("optimizer: it trains a parameter that is not one of the "
                                    "model's (model.parameters())")
        self.input_leaves, self.input_spec = pytree.tree_flatten(inputs)
        self.target_leaves, self.target_spec = pytree.tree_flatten(targets)
        for what, leaves in (("example_inputs", self.input_leaves),
                             ("example_targets", self.target_leaves)):
            if not leaves or not all(isinstance(t, torch.Tensor) for t in leaves):
                raise UserStepError(f"{what}: must be a tensor or a (nested) tuple/list of "
                                    "tensors")

    def state_keys(self, state):
        """Per trained parameter: [(key, tensor)] of its device state (host state apart);
        state maps parameters to their state dicts (optimizer.state)."""
        out = []
        for p in self.trained:
            st = state.get(p, {})
            out.append([(k, v) for k, v in st.items()
                        if isinstance(v, torch.Tensor) and not is_host_state(v)])
        return out

    def flat(self, state, inputs, targets):
        """The tensors in placeholder order, with names and kinds; state maps parameters to
        their state dicts (optimizer.state)."""
        tensors, names, kinds = [], [], []
        for name, p in zip(self.param_names, self.params):
            tensors.append(p.detach()), names.append(name), kinds.append("weight")
        for name, b in zip(self.buffer_names, self.buffers):
            tensors.append(b), names.append(name), kinds.append("input")
        index = {id(p): i for i, p in enumerate(self.params)}
        for p, entry in zip(self.trained, self.state_keys(state)):
            for key, v in entry:
                tensors.append(v), names.append(f"{self.param_names[index[id(p)]]}.{key}")
                kinds.append("optimizer_state")
        ins, _ = pytree.tree_flatten(inputs)
        tgs, _ = pytree.tree_flatten(targets)
        for i, t in enumerate(ins):
            tensors.append(t), names.append(f"inputs[{i}]"), kinds.append("input")
        for i, t in enumerate(tgs):
            tensors.append(t), names.append(f"targets[{i}]"), kinds.append("input")
        return tensors, names, kinds


def _fake_model(model, fake_mode):
    """A deep copy of model whose parameters and buffers are fakes of the real ones; the real
    tensors are put in deepcopy's memo, so they are never copied."""
    memo, fakes = {}, {}
    for p in model.parameters():
        fakes[id(p)] = nn.Parameter(fake_mode.from_tensor(p.detach()),
                                    requires_grad=p.requires_grad)
        memo[id(p)] = fakes[id(p)]
    for b in model.buffers():
        fakes[id(b)] = fake_mode.from_tensor(b)
        memo[id(b)] = fakes[id(b)]
    clone = copy.deepcopy(model, memo)
    clone.train(model.training)
    return clone, fakes


def _shadow_optimizer(optimizer, param_map, state_map, real_state=None):
    """A shallow copy of the optimizer whose groups hold param_map's tensors and whose state is
    state_map(real param, real state dict) -> state dict for the copy; real_state stands for
    optimizer.state when given."""
    real_state = optimizer.state if real_state is None else real_state
    shadow = copy.copy(optimizer)
    shadow.param_groups = [{**g, "params": [param_map[id(p)] for p in g["params"]]}
                           for g in optimizer.param_groups]
    state = defaultdict(dict)
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p in real_state:
                state[param_map[id(p)]] = state_map(p, real_state[p])
    shadow.state = state
    return shadow


def trace_user_step(model, optimizer, loss_fn, inputs, targets, name="user-step",
                    state=None):
    """Traces one training step of the user's objects; state (future_state) stands for the
    optimizer's state when given. Returns (TracedStep, _Layout)."""
    state = optimizer.state if state is None else state
    layout = _Layout(model, optimizer, inputs, targets)
    fake_mode = FakeTensorMode(allow_fallback_kernels=False)
    fmodel, fakes = _fake_model(model, fake_mode)
    trained_ids = {id(p) for p in layout.trained}

    flat_real, names, kinds = layout.flat(state, inputs, targets)
    flat_fake = [fakes[id(p)] for p in layout.params] + [fakes[id(b)] for b in layout.buffers]
    state_fakes = {}  # id(real state tensor) -> fake
    for p, entry in zip(layout.trained, layout.state_keys(state)):
        for _, v in entry:
            if v.device.type == "meta":  # future_state's: a tensor the first step creates
                with fake_mode:
                    state_fakes[id(v)] = torch.empty_strided(v.shape, v.stride(),
                                                             dtype=v.dtype, device=p.device)
            else:
                state_fakes[id(v)] = fake_mode.from_tensor(v)
            flat_fake.append(state_fakes[id(v)])
    batch_fakes = [fake_mode.from_tensor(t) for t in layout.input_leaves + layout.target_leaves]
    flat_fake += batch_fakes
    n_in = len(layout.input_leaves)

    def state_map(p, st):
        """The traced optimizer's state for parameter p; called inside the trace, where the
        host state becomes a lifted constant (a host op the export leaves out)."""
        out = {}
        for k, v in st.items():
            if is_host_state(v):
                out[k] = torch.tensor(v.item(), dtype=v.dtype)
            elif isinstance(v, torch.Tensor):
                out[k] = state_fakes[id(v)]
            else:
                out[k] = v
        return out

    def step(*flat):
        set_phase("forward")
        batch = list(flat[len(flat) - len(batch_fakes):])
        xs = pytree.tree_unflatten(batch[:n_in], layout.input_spec)
        ys = pytree.tree_unflatten(batch[n_in:], layout.target_spec)
        loss = loss_fn(fmodel(xs), ys)
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            raise UserStepError("loss_fn: must return a 0-dim tensor (the loss), got "
                                f"{type(loss).__name__}"
                                + (f" of shape {tuple(loss.shape)}"
                                   if isinstance(loss, torch.Tensor) else ""))
        set_phase("backward")
        trained = [fakes[id(p)] for p in layout.trained]
        grads = torch.autograd.grad(loss, trained, allow_unused=True)
        set_phase("optimizer")
        with torch.no_grad():
            shadow = _shadow_optimizer(optimizer, fakes, state_map, state)
            for p, g in zip(trained, grads):
                p.grad = g
            shadow.step()
            for p in trained:
                p.grad = None
        return loss

    patches.register_missing_meta_kernels()
    trace_state = fx_trace.TraceState()

    def set_phase(phase):
        trace_state.phase = phase

    kept = set()
    # CPU dropout is traced in its CPU form: the planned run must draw what eager draws.
    hooks = tr._TorchFunctionHooks(trace_state, cuda_dropout=False)
    try:
        gm = fx_trace.trace(step, flat_fake, trace_state, fake_mode,
                            (patches.keep_eager_granularity(kept), hooks,
                             tr._profiler_on_host(trace_state)))
    except UserStepError:
        raise
    except Exception as e:  # noqa: BLE001 (fake tensors raise plain Exception for gaps)
        raise tr.TraceError(f"{type(e).__name__} in the {trace_state.phase} pass: {e}",
                            trace_state.phase) from e
    finally:
        trace_state.progress.close()
    traced = tr.TracedStep(spec=types.SimpleNamespace(name=name), gm=gm, names=names,
                           kinds=kinds, kept_whole=kept)
    assert len(flat_real) == len(flat_fake)
    return traced, layout


# ---------------------------------------------------------------------------------------------
# The optimizer's per-step scalars

class _RecordDeviceOps(TorchDispatchMode):
    """Records every aten call on meta tensors (the device ops of a replay), in order."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        leaves = pytree.tree_flatten((args, kwargs, out))[0]
        if any(isinstance(t, torch.Tensor) and t.device.type == "meta" for t in leaves):
            self.calls.append((func, args, kwargs))
        return out


def _with_scalars(template, recorded):
    """template (an fx node's args) with every non-node leaf taken from recorded (the same
    call's real args): fx nodes stay, floats and ints become this step's values."""
    if isinstance(template, torch.fx.Node):
        return template
    if isinstance(template, (list, tuple)) and isinstance(recorded, (list, tuple)) \
            and len(template) == len(recorded):
        return type(template)(_with_scalars(t, r) for t, r in zip(template, recorded))
    if isinstance(template, dict) and isinstance(recorded, dict):
        return {k: _with_scalars(v, recorded.get(k, v)) for k, v in template.items()}
    if isinstance(recorded, torch.Tensor):
        return template
    return recorded


class OptimizerScalars:
    """Reruns the optimizer's step() over meta tensors on the real host state, and returns the
    scalar arguments of the traced optimizer ops for this step: {fx node: (args, kwargs)}.

    The host state (Adam's step counter) is advanced as eager's step() advances it, so after a
    planned step the user's optimizer is in the state eager would leave it in."""

    def __init__(self, layout, optimizer, op_nodes, host_nodes):
        self.layout = layout
        self.optimizer = optimizer
        self.nodes = [n for n in op_nodes if n.meta.get("roam_phase") == "optimizer"
                      and n not in host_nodes]

    def refresh(self):
        opt = self.optimizer
        metas = {id(p): torch.empty_like(p, device="meta") for p in self.layout.params}

        def state_map(p, st):
            return {k: (v if not isinstance(v, torch.Tensor) or is_host_state(v)
                        else torch.empty_like(v, device="meta")) for k, v in st.items()}

        shadow = _shadow_optimizer(opt, metas, state_map)
        for p in self.layout.trained:
            metas[id(p)].grad = torch.empty_like(metas[id(p)])
        recorder = _RecordDeviceOps()
        with torch.no_grad(), recorder:
            shadow.step()
        calls = recorder.calls
        if len(calls) != len(self.nodes) or any(
                c[0] is not n.target for c, n in zip(calls, self.nodes)):
            first = next((i for i, (c, n) in enumerate(zip(calls, self.nodes))
                          if c[0] is not n.target), min(len(calls), len(self.nodes)))
            raise UserStepError(
                f"optimizer: {type(opt).__name__}.step() now runs other ops than when the step "
                f"was planned (op {first} of its step: "
                f"{calls[first][0] if first < len(calls) else 'none'} instead of "
                f"{self.nodes[first].target if first < len(self.nodes) else 'none'}): plan "
                "the step again")
        return {n: (_with_scalars(n.args, c[1]), _with_scalars(n.kwargs, c[2]))
                for c, n in zip(calls, self.nodes)}
