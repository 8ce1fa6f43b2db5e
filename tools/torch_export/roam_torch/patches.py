"""Corrections to PyTorch 1.13's fake-tensor tracing so a trace matches an eager CUDA step.

Each function here fixes one known difference between what make_fx records on a CPU-only
Debian build and what eager PyTorch runs on a GPU (docs/torch-export.md, "Pitfalls"):

- register_missing_meta_kernels(): 1.13 has no meta kernel for aten.convolution_backward (nor
  _adaptive_avg_pool2d_backward, max_unpool2d, nll_loss2d_forward), so fake tracing either
  fails or, with fallback kernels, runs real convolutions on zeros.
- keep_eager_granularity(): make_fx calls OpOverload.decompose() on every op that also has a
  CompositeImplicitAutograd kernel, splitting ops such as silu_backward that eager runs as one
  kernel.
- cuda_dropout(): on CPU, F.dropout runs bernoulli_ on a float mask; CUDA runs the fused
  native_dropout with a bool mask.
- UNDECLARED_WRITES: ops that mutate inputs their schema does not mark as written.
"""

import contextlib
import threading

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

aten = torch.ops.aten

_has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key

# ---------------------------------------------------------------------------------------------
# Missing meta kernels

_META_LIB = None
_META_LOCK = threading.Lock()


def _convolution_backward_meta(grad_output, input, weight, bias_sizes, stride, padding,
                               dilation, transposed, output_padding, groups, output_mask):
    # Gradients have the shapes (and, like the CUDA kernels, the memory format) of what they
    # differentiate; outputs not asked for are undefined, as in eager.
    grad_input = torch.empty_like(input) if output_mask[0] else None
    grad_weight = torch.empty_like(weight) if output_mask[1] else None
    grad_bias = None
    if output_mask[2]:
        if bias_sizes is None:
            raise RuntimeError("convolution_backward: output_mask asks for a bias gradient "
                               "but bias_sizes is None")
        grad_bias = grad_output.new_empty([int(s) for s in bias_sizes])
    return grad_input, grad_weight, grad_bias


def _suggested_format(self):
    """Tensor.suggest_memory_format: channels-last where the tensor is laid out so."""
    channels_last = (self.dim() == 4 and not self.is_contiguous() and
                     self.is_contiguous(memory_format=torch.channels_last))
    return torch.channels_last if channels_last else torch.contiguous_format


def _adaptive_avg_pool2d_backward_meta(grad_output, self):
    # The CPU and CUDA kernels allocate the gradient like the input, in the input's suggested
    # memory format (channels-last when it is laid out so, else contiguous).
    return torch.empty_like(self, memory_format=_suggested_format(self))


def _max_unpool2d_meta(self, indices, output_size):
    # The CPU kernel resizes its output to [N, C, *output_size] in the input's suggested
    # memory format (SegNet's decoder, roam_torch/segmentation.py).
    if len(output_size) != 2 or self.dim() != 4 or indices.shape != self.shape:
        raise RuntimeError("max_unpool2d: a 4-D input, indices of its shape and a 2-D "
                           "output_size expected")
    shape = [self.shape[0], self.shape[1], int(output_size[0]), int(output_size[1])]
    return torch.empty(shape, dtype=self.dtype, device=self.device,
                       memory_format=_suggested_format(self))


def _nll_loss2d_forward_meta(self, target, weight, reduction, ignore_index):
    # A per-pixel loss: [N, H, W] without reduction, else a scalar; total_weight a scalar.
    output = self.new_empty(target.shape if reduction == 0 else [])
    return output, self.new_empty([])


# aten op name -> meta kernel, for ops PyTorch 1.13 ships without one. Found by tracing every
# torchvision classification model and roam_torch/segmentation.py's models with fallback
# kernels allowed and recording the fallbacks.
MISSING_META_KERNELS = {
    "convolution_backward": _convolution_backward_meta,
    "_adaptive_avg_pool2d_backward": _adaptive_avg_pool2d_backward_meta,
    "max_unpool2d": _max_unpool2d_meta,
    "nll_loss2d_forward": _nll_loss2d_forward_meta,
}


def register_missing_meta_kernels():
    """Registers a Meta kernel for each op in MISSING_META_KERNELS that lacks one, once per
    process. Returns the names registered by this call (none when a later PyTorch has them,
    or after the first call)."""
    global _META_LIB
    registered = []
    with _META_LOCK:
        for name, kernel in MISSING_META_KERNELS.items():
            if _has_kernel(f"aten::{name}", "Meta"):
                continue
            if _META_LIB is None:
                _META_LIB = torch.library.Library("aten", "IMPL", "Meta")
            _META_LIB.impl(name, kernel)  # lives as long as the Library object
            registered.append(name)
    return registered


# ---------------------------------------------------------------------------------------------
# Eager granularity

def runs_as_one_kernel(op):
    """True when eager runs op as its own backend kernel even though it also has a
    CompositeImplicitAutograd decomposition (e.g. aten.silu_backward).

    Debian's PyTorch is CPU-only, so the CPU registration stands in for CUDA's: the two are
    generated together for structured kernels.
    """
    name = op.name()
    return _has_kernel(name, "CPU") or _has_kernel(name, "CUDA")


@contextlib.contextmanager
def keep_eager_granularity(kept=None):
    """While active, OpOverload.decompose() declines ops that eager runs as one kernel.

    make_fx's proxy_call decomposes every op that has a CompositeImplicitAutograd kernel. An op
    only reaches the tracer with such a kernel when autograd did not already decompose it, i.e.
    when it has a backend kernel that eager would run whole. Ops in `kept` (a set, optional)
    collect the names that were kept whole.
    """
    original = torch._ops.OpOverload.decompose

    def decompose(self, *args, **kwargs):
        would_split = (torch._C.DispatchKey.CompositeImplicitAutograd in self.py_kernels or
                       _has_kernel(self.name(), "CompositeImplicitAutograd"))
        if would_split and runs_as_one_kernel(self):
            if kept is not None:
                kept.add(str(self))
            return NotImplemented
        return original(self, *args, **kwargs)

    torch._ops.OpOverload.decompose = decompose
    try:
        yield
    finally:
        torch._ops.OpOverload.decompose = original


# ---------------------------------------------------------------------------------------------
# Dropout in its CUDA form

def _dropout_args(input, p=0.5, training=True, inplace=False):
    return input, p, training, inplace


def native_dropout_for(func, args, kwargs):
    """If func(*args, **kwargs) is an F.dropout call that eager CUDA runs as the fused kernel,
    returns its result computed with aten.native_dropout; otherwise None.

    ATen's dropout() calls native_dropout when the input is on CUDA, 0 < p < 1, the input is
    non-empty and the call is not in place (dropout_ always takes the bernoulli_ path); on CPU
    it multiplies by a bernoulli_ float mask instead. This reproduces the CUDA decision.
    """
    if func is not F.dropout:
        return None
    x, p, training, inplace = _dropout_args(*args, **kwargs)
    if training and not inplace and 0.0 < p < 1.0 and x.numel() > 0:
        return aten.native_dropout.default(x, p, True)[0]
    return None


class CudaDropout(TorchFunctionMode):
    """Routes F.dropout to aten.native_dropout, the fused kernel eager CUDA runs."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = native_dropout_for(func, args, kwargs)
        return func(*args, **kwargs) if out is None else out


def cuda_dropout():
    return CudaDropout()


# ---------------------------------------------------------------------------------------------
# Writes a schema does not declare

def _batch_norm_writes(args, kwargs):
    # native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
    training = args[5] if len(args) > 5 else kwargs.get("training")
    if not training:
        return []
    return [args[i] for i in (3, 4) if len(args) > i and args[i] is not None]


# op -> function(args, kwargs) returning the tensor arguments the op writes although its
# schema has no Tensor(a!) annotation for them. tests/torch_export checks every entry against
# a real run, and audits whole traced steps for writes missing from this table.
UNDECLARED_WRITES = {
    aten.native_batch_norm.default: _batch_norm_writes,
}


def _batch_norm_without_running_stats(args, kwargs):
    # In training mode the output and the saved statistics come from the batch alone; without
    # running statistics native_batch_norm computes them the same way and updates nothing.
    args = list(args)
    for i, name in ((3, "running_mean"), (4, "running_var")):
        if i < len(args):
            args[i] = None
        elif name in kwargs:
            kwargs = {**kwargs, name: None}
    return tuple(args), kwargs


# op -> function(args, kwargs) returning the arguments with which a recomputation (a copy that
# `roam remat` made) computes the op's values without its UNDECLARED_WRITES state update. roam
# recomputes these ops and leaves the update out of the copy (docs/remat.md, "Recomputable
# ops"); the names are remat/model.cpp's UpdatesStateOnTheSide.
STATE_UPDATE_SKIPPED = {
    aten.native_batch_norm.default: _batch_norm_without_running_stats,
}
STATE_UPDATE_SKIPPED_NAMES = {"aten.native_batch_norm"}


def written_arguments(op, args, kwargs):
    """The arguments (tensors, or fx Nodes standing for them) that op writes: those its schema
    marks Tensor(a!) plus the known undeclared writes. None arguments are skipped."""
    out = []
    for i, arg in enumerate(op._schema.arguments):
        info = arg.alias_info
        if info is None or not info.is_write:
            continue
        value = args[i] if i < len(args) else kwargs.get(arg.name)
        if isinstance(value, (list, tuple)):
            out.extend(v for v in value if v is not None)
        elif value is not None:
            out.append(value)
    extra = UNDECLARED_WRITES.get(op)
    if extra is not None:
        for value in extra(args, kwargs):
            if not any(value is v for v in out):
                out.append(value)
    return out
