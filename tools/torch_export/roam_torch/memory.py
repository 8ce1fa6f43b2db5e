"""Every byte a step allocates: on the CPU counted by PyTorch's own allocator, on CUDA by roam's
CUDA allocator where it is installed (cuda_scratch.py), else by PyTorch's caching allocator.

The CPU allocator reports each allocation and free to the profiler when memory profiling is
on (c10's reportMemoryUsageToProfiler), kernels' internal scratch included, which a
dispatch-level count of op outputs would miss. peak_outside runs a function under the
profiler and returns the largest number of bytes allocated at once during it, above what was
allocated when it started (the arena, parameters and optimizer state are allocated before).
"""

import torch
from torch.profiler import ProfilerActivity, profile

from . import cuda_scratch


def peak_outside(fn, device=None):
    """(fn(), peak bytes newly allocated at one time while fn ran) on `device` (default the
    CPU)."""
    if device is not None and torch.device(device).type == "cuda":
        return _cuda_peak_outside(torch.device(device), fn)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                 record_shapes=False, with_stack=False) as prof:
        result = fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    # Stable: events of one timestamp keep their order. 2.x counts in ns, 1.13 in us.
    events.sort(key=lambda e: e.start_ns() if hasattr(e, "start_ns") else e.start_us())
    current = peak = 0
    for e in events:
        current += e.nbytes()
        peak = max(peak, current)
    return result, peak


def _cuda_peak_outside(device, fn):
    """Counted by roam's allocator where it is installed, else by PyTorch's caching allocator
    (its allocated bytes, rounded to its 512-byte blocks)."""
    if cuda_scratch.installed():
        before = cuda_scratch.counters()[0]
        cuda_scratch.reset_peak()
        result = fn()
        return result, cuda_scratch.counters()[1] - before
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    result = fn()
    torch.cuda.synchronize(device)
    return result, torch.cuda.max_memory_allocated(device) - before


def cuda_live_bytes(device):
    """Bytes allocated on CUDA now, by the allocator _cuda_peak_outside counts with."""
    if cuda_scratch.installed():
        return cuda_scratch.counters()[0]
    return torch.cuda.memory_allocated(device)
