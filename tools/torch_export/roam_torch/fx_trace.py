"""One fx trace of a training-step function over fake tensors, on PyTorch 1.13 or 2.x.

In: the step as a function of a flat list of fake tensors, the FakeTensorMode they belong to,
and the Python-level hooks of the trace. Out: an fx GraphModule whose nodes are in eager
dispatch order, each tagged by a TraceState (meta["roam_phase"], roam_host, roam_explicit).

The two releases differ only in how the proxy machinery is driven:
- 1.13: make_fx is a thin wrapper with no way to pass a tracer or a strict mode, so its
  private parts are driven directly (PythonKeyTracer, ProxyTorchDispatchMode, dispatch_trace,
  wrap_key, the mode's sym_mode).
- 2.x: those parts were reshaped (ProxyTorchDispatchMode takes the tracing mode, wrap_key the
  pre-dispatch flag, sym_mode is gone) and make_fx assembles them itself, so the public make_fx
  is called with no decompositions, in "real" mode over the caller's fake tensors (the fake
  mode stays the caller's), and nodes are tagged by wrapping PythonKeyTracer.create_node for
  the duration of the trace. This is AOTAutograd's joint-graph method: the forward, the
  autograd engine's backward and the optimizer, traced as one graph at aten level.

Everything else (eager granularity, CUDA-form dropout, host bookkeeping) is the caller's and
the same on both releases.
"""

import contextlib

import torch
import torch.fx as fx
from torch.fx.experimental import proxy_tensor

from . import compat, progress


class TraceState:
    """What the trace's hooks tell the node tagger: the phase of the step, whether Python code
    is inside host-only bookkeeping, and whether the next aten.detach is one Python asked for.
    """

    def __init__(self):
        self.phase = "forward"
        self.host_depth = 0
        self.explicit_pending = False
        self.progress = progress.Counter("fx nodes traced")

    def tag(self, node):
        self.progress.tick()
        node.meta["roam_phase"] = self.phase
        if self.host_depth:
            node.meta["roam_host"] = True
        if self.explicit_pending and node.target is torch.ops.aten.detach.default:
            node.meta["roam_explicit"] = True
            self.explicit_pending = False
        return node

    @contextlib.contextmanager
    def on_host(self):
        self.host_depth += 1
        try:
            yield
        finally:
            self.host_depth -= 1


def trace(step, flat, state, fake_mode, contexts=()):
    """The GraphModule of step(*flat), flat's tensors belonging to fake_mode, traced with every
    context manager in contexts entered (outermost first) and every node tagged by state."""
    release = compat.torch_release()
    fn = proxy_tensor.fake_signature(step, len(flat))
    with contextlib.ExitStack() as stack:
        for c in contexts:
            stack.enter_context(c)
        if release < (2, 0):
            return _trace_1_13(fn, flat, state, fake_mode)
        return _trace_2(fn, flat, state, fake_mode)


# ---------------------------------------------------------------------------------------------
# PyTorch 1.13

class _PhaseTracer(proxy_tensor.PythonKeyTracer):
    def __init__(self, state):
        super().__init__()
        self.state = state

    def create_node(self, *args, **kwargs):
        return self.state.tag(super().create_node(*args, **kwargs))


def _strict_proxy_mode(tracer):
    """make_fx's proxy mode, except that an op on a tensor the tracer does not know is an
    error: the stock mode returns NotImplemented and the op silently vanishes from the graph."""

    class StrictProxyMode(proxy_tensor.ProxyTorchDispatchMode):
        def inner_torch_dispatch(self, func, types, args=(), kwargs=None):
            out = super().inner_torch_dispatch(func, types, args, kwargs)
            if out is NotImplemented:
                raise RuntimeError(f"{func} received a tensor that is not an input of the "
                                   "traced step (created outside the trace?)")
            return out

    return StrictProxyMode(tracer)


def _trace_1_13(fn, flat, state, fake_mode):
    tracer = _PhaseTracer(state)
    mode = _strict_proxy_mode(tracer)
    with proxy_tensor.decompose({}), fake_mode, mode.sym_mode, mode, \
            proxy_tensor.disable_autocast_cache():
        return proxy_tensor.dispatch_trace(proxy_tensor.wrap_key(fn, flat, tracer),
                                           tracer=tracer,
                                           concrete_args=tuple(fx.PH for _ in flat))


# ---------------------------------------------------------------------------------------------
# PyTorch 2.x

@contextlib.contextmanager
def _tagging_nodes(state):
    cls = proxy_tensor.PythonKeyTracer
    original = cls.create_node

    def create_node(self, *args, **kwargs):
        return state.tag(original(self, *args, **kwargs))

    cls.create_node = create_node
    try:
        yield
    finally:
        cls.create_node = original


def _trace_2(fn, flat, state, fake_mode):
    with fake_mode, _tagging_nodes(state):
        gm = proxy_tensor.make_fx(fn, decomposition_table={}, tracing_mode="real")(*flat)
    # A tensor that is not an input of the step (made outside the trace) becomes a lifted
    # constant in 2.x; a fake one would stand for memory the plan never sees.
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = getattr(gm, node.target, None)
            if isinstance(value, torch.Tensor) and value.numel() > 1:
                raise RuntimeError(f"the step reads a tensor that is not one of its inputs "
                                   f"({node.target}, shape {tuple(value.shape)}): created "
                                   "outside the trace?")
    return gm
