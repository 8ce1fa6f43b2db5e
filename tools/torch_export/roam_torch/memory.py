"""Every byte a CPU step allocates, counted by PyTorch's own allocator.

The CPU allocator reports each allocation and free to the profiler when memory profiling is
on (c10's reportMemoryUsageToProfiler), kernels' internal scratch included, which a
dispatch-level count of op outputs would miss. peak_outside runs a function under the
profiler and returns the largest number of bytes allocated at once during it, above what was
allocated when it started (the arena, parameters and optimizer state are allocated before).
"""

from torch.profiler import ProfilerActivity, profile


def peak_outside(fn):
    """(fn(), peak bytes newly allocated at one time while fn ran)."""
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
