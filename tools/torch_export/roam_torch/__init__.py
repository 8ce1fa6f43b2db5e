"""roam_torch: trace PyTorch training steps into roam graphs, and run roam's plans.

The public API (docs/torch-export.md, "Planning your own training step"):
plan_training_step(model, optimizer, loss_fn, example_inputs, example_targets,
budget_ratio=None) -> PlannedTrainingStep, whose step(inputs, targets) runs one step in the
planned arena and memory() reports its bytes. Errors: UserStepError (bad arguments),
TraceError (the step cannot be traced over fake tensors), PlanningError (roam missing or
failing), UnsupportedTorch (a PyTorch the tracer does not support). On CUDA,
install_cuda_allocator() (before the first CUDA tensor) lets a planned step serve its ops' own
allocations from the arena; NotInstalled says why it cannot.
"""

_API = {"plan_training_step": "training", "PlannedTrainingStep": "training",
        "PlanningError": "training", "UserStepError": "user_trace",
        "UnsupportedTorch": "compat", "check_torch_version": "compat",
        "TraceError": "trace", "install_cuda_allocator": "cuda_scratch",
        "NotInstalled": "cuda_scratch"}


def __getattr__(name):
    # Imported on first use: the exporter's modules import this package without the runner.
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'roam_torch' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = sorted(_API)
