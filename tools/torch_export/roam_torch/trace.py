"""Records one training step (forward, cross-entropy loss, backward, optimizer step) at aten
level with make_fx's tracing machinery over fake tensors.

In: a StepSpec. Out: a TracedStep holding the fx GraphModule (nodes in eager dispatch order,
each with meta["val"], the fake value it produced, and meta["roam_phase"]) and the meaning of
each placeholder. No real memory is allocated for the model or the batch: parameters,
buffers, optimizer state and data are FakeTensors from the start, so GPT-2 XL traces in
a few hundred MiB of Python objects.

The same training_step() runs eagerly on real tensors, which is how the tests check that the
trace reproduces PyTorch's numbers.
"""

import contextlib
from dataclasses import dataclass, field

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.overrides import TorchFunctionMode

from . import compat, fx_trace, patches, segmentation
from .gpt2 import GPT2
from .llama import Llama
from .spec import StepSpec, UsageError

PHASES = ("forward", "backward", "optimizer")


class TraceError(Exception):
    """The step could not be traced; phase says where ("forward" failures are usually a
    model that rejects the requested input shape)."""

    def __init__(self, message, phase):
        super().__init__(message)
        self.phase = phase


# ---------------------------------------------------------------------------------------------
# Model, batch, optimizer state

def build_model(spec: StepSpec) -> nn.Module:
    """Builds the model in training mode; under a FakeTensorMode its tensors are fake."""
    if spec.family == "gpt2":
        model = GPT2(spec.gpt2)
    elif spec.family == "llama":
        model = Llama(spec.llama)
    elif spec.family == "torchvision":
        import torchvision.models

        kwargs = {"num_classes": spec.num_classes, **dict(spec.model_kwargs)}
        if spec.model == "vit":  # a ViT described by config keys
            from torchvision.models.vision_transformer import VisionTransformer

            model = VisionTransformer(image_size=spec.image_size, **kwargs)
        else:
            # Auxiliary classifiers only feed auxiliary losses, which a plain cross-entropy
            # step does not compute.
            if spec.model in ("googlenet", "inception_v3"):
                kwargs["aux_logits"] = False
                kwargs["init_weights"] = True
            if spec.model.startswith("vit_"):
                kwargs["image_size"] = spec.image_size
            model = torchvision.models.get_model(spec.model, **kwargs)
    elif spec.family == "segmentation":
        model = segmentation.build(spec.model, spec.num_classes, **dict(spec.model_kwargs))
    else:
        raise UsageError(f"unknown model family {spec.family!r}")
    # bf16-master: the model itself in bfloat16; its float32 masters are optimizer state.
    model = _cast_floating(model, torch.bfloat16 if spec.precision == "bf16-master"
                           else spec.torch_dtype)
    model.train()
    return model


def _replace_tensors(model, param, buffer):
    """Replaces every parameter p by param(p) and every buffer b by buffer(b), where they return
    a tensor (None keeps it); a tensor several modules share (tied weights) is replaced by one
    new tensor everywhere."""
    memo = {}
    for module in model.modules():
        for table, make in ((module._parameters, param), (module._buffers, buffer)):
            for name, t in list(table.items()):
                if t is None:
                    continue
                if id(t) not in memo:
                    memo[id(t)] = (t, make(t))  # t kept alive: its id stays its own
                if memo[id(t)][1] is not None:
                    table[name] = memo[id(t)][1]
    return model


def _cast_floating(model, dtype):
    """model.to(dtype) without Module._apply, which on PyTorch 2 swaps fake parameters in place
    (torch.utils.swap_tensors) and fails on the weak references fake tensors carry. Like
    Module.to, casts floating-point parameters and buffers only."""
    def cast(t):
        return t.to(dtype) if t.is_floating_point() and t.dtype != dtype else None

    def cast_param(p):
        t = cast(p.detach())
        return None if t is None else nn.Parameter(t, requires_grad=p.requires_grad)

    return _replace_tensors(model, cast_param, cast)


def make_batch(spec: StepSpec, generator=None):
    """The data of one step: (inputs, targets). Real values when called outside fake mode."""
    if spec.family == "gpt2":
        shape = (spec.batch, spec.gpt2.seq_len)
        idx = torch.randint(0, spec.gpt2.vocab, shape, generator=generator)
        targets = torch.randint(0, spec.gpt2.vocab, shape, generator=generator)
        return idx, targets
    if spec.family == "llama":
        shape = (spec.batch, spec.llama.seq_len)
        idx = torch.randint(0, spec.llama.vocab, shape, generator=generator)
        targets = torch.randint(0, spec.llama.vocab, shape, generator=generator)
        return idx, targets
    x = torch.randn(spec.batch, 3, spec.image_size, spec.image_size, generator=generator)
    # A class per image, or per pixel for a segmentation network.
    labels = (spec.batch, spec.image_size, spec.image_size) if spec.family == "segmentation" \
        else (spec.batch,)
    y = torch.randint(0, spec.num_classes, labels, generator=generator)
    return x.to(spec.torch_dtype), y


def optimizer_state_names(spec: StepSpec):
    """Per-parameter optimizer state tensors held on the device between steps."""
    master = ("master",) if spec.precision == "bf16-master" else ()
    if spec.optimizer.name in ("adam", "adamw"):
        return master + ("exp_avg", "exp_avg_sq")
    if spec.optimizer.name == "sgd" and spec.optimizer.momentum != 0:
        return master + ("momentum_buffer",)
    return master


def make_optimizer_state(spec: StepSpec, params, generator=None):
    """Steady-state optimizer tensors, one list per parameter (as after earlier steps).

    exp_avg_sq must be non-negative, so it is filled with squares; in fake mode the fill ops run
    on fake tensors and cost nothing.
    """
    state = []
    for p in params:
        entry = []
        for name in optimizer_state_names(spec):
            if name == "master":  # the float32 weight the bfloat16 one was rounded from
                entry.append(p.detach().to(torch.float32))
                continue
            dtype = torch.float32 if spec.precision == "bf16-master" else p.dtype
            t = torch.randn(p.shape, generator=generator, dtype=dtype)
            if name == "exp_avg_sq":
                t = t * t
            entry.append(t)
        state.append(entry)
    return state


@dataclass
class StepInputs:
    """Everything a step reads, flattened in placeholder order, with names and kinds."""
    model: nn.Module
    tensors: list
    names: list
    kinds: list
    num_params: int
    num_buffers: int
    num_state: int  # per parameter


def collect_inputs(spec: StepSpec, model, batch, opt_state) -> StepInputs:
    params = list(model.named_parameters())  # tied weights appear once
    buffers = list(model.named_buffers())
    tensors, names, kinds = [], [], []
    for name, p in params:
        tensors.append(p), names.append(name), kinds.append("weight")
    for name, b in buffers:
        # Buffers (batch-norm statistics, attention masks) are not trainable weights (they
        # must not count as parameters) nor optimizer state: inputs, as the C++ generator has
        # them.
        tensors.append(b), names.append(name), kinds.append("input")
    state_names = optimizer_state_names(spec)
    for (name, _), entry in zip(params, opt_state):
        for sname, t in zip(state_names, entry):
            tensors.append(t), names.append(f"{name}.{sname}"), kinds.append("optimizer_state")
    x, y = batch
    tensors += [x, y]
    names += ["inputs", "targets"]
    kinds += ["input", "input"]
    return StepInputs(model=model, tensors=tensors, names=names, kinds=kinds,
                      num_params=len(params), num_buffers=len(buffers),
                      num_state=len(state_names))


# ---------------------------------------------------------------------------------------------
# The step

def _optimizer(spec: StepSpec, params):
    o = spec.optimizer
    betas = (o.beta1, o.beta2)
    if o.name == "adam":
        return torch.optim.Adam(params, lr=o.lr, betas=betas, eps=o.eps,
                                weight_decay=o.weight_decay, foreach=False)
    if o.name == "adamw":
        return torch.optim.AdamW(params, lr=o.lr, betas=betas, eps=o.eps,
                                 weight_decay=o.weight_decay, foreach=False)
    if o.name == "sgd":
        return torch.optim.SGD(params, lr=o.lr, momentum=o.momentum, nesterov=o.nesterov,
                               weight_decay=o.weight_decay, foreach=False)
    raise UsageError(f"unknown optimizer {o.name!r}")


def training_step(spec: StepSpec, inputs: StepInputs, flat, set_phase=lambda phase: None):
    """One step over the tensors in flat (ordered like inputs.tensors); returns the loss.

    Parameters, buffers and optimizer state are updated in place, as torch.optim does.
    """
    model = inputs.model
    np_, nb, ns = inputs.num_params, inputs.num_buffers, inputs.num_state
    params = flat[:np_]
    state_flat = flat[np_ + nb:np_ + nb + np_ * ns]
    x, y = flat[-2], flat[-1]

    set_phase("forward")
    # bf16-mixed: autocast around the forward pass and the loss, as torch.autocast is used;
    # backward and the optimizer run outside it, on the float32 master weights.
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if spec.precision == "bf16-mixed" \
        else contextlib.nullcontext()
    with autocast:
        logits = model(x)
        if not isinstance(logits, torch.Tensor):  # models returning (logits, aux...) tuples
            logits = logits[0]
        if spec.precision == "bf16-master":  # the loss in float32, as `logits.float()`
            logits = logits.float()
        if spec.family == "segmentation":  # per pixel: logits [N, C, H, W], labels [N, H, W]
            loss = F.cross_entropy(logits, y)
        elif logits.dim() > 2:  # language models: nanoGPT flattens the tokens into the batch
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        else:
            loss = F.cross_entropy(logits, y)

    set_phase("backward")
    grads = torch.autograd.grad(loss, params, allow_unused=True)

    set_phase("optimizer")
    with torch.no_grad():
        trained = [(i, p, g) for i, (p, g) in enumerate(zip(params, grads)) if g is not None]
        state_names = optimizer_state_names(spec)

        def state_of(i):
            st = {name: state_flat[i * ns + k] for k, name in enumerate(state_names)}
            if spec.optimizer.name in ("adam", "adamw"):
                # A host tensor, as torch.optim keeps it when capturable=False: on a GPU the
                # counter update and .item() run on the CPU, outside the device's memory.
                st["step"] = torch.tensor(float(spec.optimizer.step))
            return st

        if spec.precision == "bf16-master":
            # Parameter by parameter: the gradient's float32 copy steps the master, which is
            # copied back into the bfloat16 weight; one float32 gradient alive at a time.
            for i, p, g in trained:
                st = state_of(i)
                master = st.pop("master")
                opt = _optimizer(spec, [master])
                master.grad = g.float()
                if st:
                    opt.state[master] = st
                opt.step()
                master.grad = None
                p.copy_(master)
            return loss
        opt = _optimizer(spec, [p for _, p, _ in trained])
        for i, p, g in trained:
            p.grad = g
            st = state_of(i)
            if st:
                opt.state[p] = st
        opt.step()
        for _, p, _ in trained:
            p.grad = None
    return loss


# ---------------------------------------------------------------------------------------------
# Tracing

class _TorchFunctionHooks(TorchFunctionMode):
    """The Python-level hooks of a trace, in one mode (each mode costs a Python call on every
    torch function): dropout in its CUDA form, and tags on explicit detach calls.

    Every aten.detach that Python code did not ask for (Tensor.detach, torch.detach) is an
    artifact: autograd shallow-copies the tensors it saves or passes on, and for a Python tensor
    subclass such as FakeTensor that copy is dispatched as aten.detach. Eager runs on plain
    tensors do not dispatch it (the autograd profiler records no aten::detach in an eager
    step), so export_graph drops the untagged ones.
    """

    def __init__(self, state, cuda_dropout):
        super().__init__()
        self.state = state
        self.cuda_dropout = cuda_dropout

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.detach or func is torch.detach:
            # Eager dispatches one aten.detach for the call; the trace may add artifacts.
            self.state.explicit_pending = True
            try:
                return func(*args, **kwargs)
            finally:
                self.state.explicit_pending = False
        if self.cuda_dropout:
            out = patches.native_dropout_for(func, args, kwargs)
            if out is not None:
                return out
        return func(*args, **kwargs)


@contextlib.contextmanager
def _profiler_on_host(state):
    """Marks the ops of torch.autograd.profiler.record_function as host ops.

    torch.optim wraps every step() in record_function, which allocates a CPU handle tensor
    (torch.zeros(1)) and a RecordFunction holder; on a GPU those live on the host.
    """
    profiler = torch.autograd.profiler
    original = profiler.record_function

    if compat.torch_release() >= (2, 0):
        # 2.x's handle is a ScriptObject, which the proxy mode cannot carry between the enter
        # and exit ops; the bookkeeping is host-only and left out of the graph either way.
        class HostRecordFunction(contextlib.nullcontext):
            def __init__(self, *args, **kwargs):
                super().__init__()
    else:
        class HostRecordFunction(original):
            def __init__(self, *args, **kwargs):
                with state.on_host():
                    super().__init__(*args, **kwargs)

            def __enter__(self):
                with state.on_host():
                    return super().__enter__()

            def __exit__(self, *exc):
                with state.on_host():
                    return super().__exit__(*exc)

    profiler.record_function = HostRecordFunction
    try:
        yield
    finally:
        profiler.record_function = original


@dataclass
class TracedStep:
    spec: StepSpec
    gm: fx.GraphModule
    names: list  # per placeholder
    kinds: list  # per placeholder: weight, optimizer_state or input (data and buffers)
    kept_whole: set = field(default_factory=set)  # ops kept at eager granularity


def trace_module_step(spec: StepSpec, inputs: StepInputs, fake_mode,
                      eager_granularity=True) -> TracedStep:
    """Traces training_step over inputs, whose tensors must belong to fake_mode.

    eager_granularity=False leaves make_fx's decompositions in place (tests show the pitfall).
    """
    patches.register_missing_meta_kernels()
    state = fx_trace.TraceState()

    def set_phase(phase):
        state.phase = phase

    def step(*flat):
        return training_step(spec, inputs, list(flat), set_phase)

    kept = set()
    granularity = patches.keep_eager_granularity(kept) if eager_granularity else \
        contextlib.nullcontext()
    hooks = _TorchFunctionHooks(state, cuda_dropout=spec.dropout_form == "cuda")
    try:
        gm = fx_trace.trace(step, inputs.tensors, state, fake_mode,
                            (granularity, hooks, _profiler_on_host(state)))
    except (RuntimeError, ValueError, AssertionError, NotImplementedError, TypeError) as e:
        raise TraceError(f"{type(e).__name__} in the {state.phase} pass: {e}",
                         state.phase) from e
    finally:
        state.progress.close()
    return TracedStep(spec=spec, gm=gm, names=inputs.names, kinds=inputs.kinds,
                      kept_whole=kept)


@contextlib.contextmanager
def _parameters_on_meta():
    """While active, new Parameters and registered buffers move to the meta device, so a model
    can be constructed with real arithmetic on its configuration but no real weights."""
    original_new = nn.Parameter.__new__
    original_register = nn.Module.register_buffer

    def new(cls, data=None, requires_grad=True):
        if data is not None and data.device.type != "meta":
            data = data.to("meta")
        return original_new(cls, data, requires_grad)

    def register_buffer(self, name, tensor, persistent=True):
        if tensor is not None and tensor.device.type != "meta":
            tensor = tensor.to("meta")
        return original_register(self, name, tensor, persistent)

    nn.Parameter.__new__ = staticmethod(new)
    nn.Module.register_buffer = register_buffer
    try:
        yield
    finally:
        nn.Parameter.__new__ = staticmethod(original_new)
        nn.Module.register_buffer = original_register


def _meta_to_fake(model, fake_mode):
    """Replaces meta parameters and buffers by fake ones (tied parameters stay tied)."""
    cpu = torch.device("cpu")

    def fake(t):
        return compat.meta_to_fake(fake_mode, t, cpu)

    return _replace_tensors(
        model, lambda p: nn.Parameter(fake(p.data), requires_grad=p.requires_grad), fake)


def build_fake_model(spec: StepSpec, fake_mode) -> nn.Module:
    """The model with fake parameters and buffers.

    Constructing under fake_mode is enough for most models. Some compute their structure from
    tensor values (RegNet derives its widths with torch ops and .tolist()), which fake tensors
    cannot provide; those are built with real arithmetic and meta weights, then faked.
    """
    try:
        with fake_mode:
            return build_model(spec)
    except RuntimeError as fake_error:
        try:
            with _parameters_on_meta():
                model = build_model(spec)
        except Exception:
            raise fake_error from None
        return _meta_to_fake(model, fake_mode)


def trace_step(spec: StepSpec) -> TracedStep:
    """Builds the model, batch and optimizer state as fake tensors and traces one step."""
    fake_mode = FakeTensorMode(allow_fallback_kernels=False)
    model = build_fake_model(spec, fake_mode)
    with fake_mode:
        batch = make_batch(spec)
        opt_state = make_optimizer_state(spec, [p for p in model.parameters()])
    inputs = collect_inputs(spec, model, batch, opt_state)
    return trace_module_step(spec, inputs, fake_mode)
