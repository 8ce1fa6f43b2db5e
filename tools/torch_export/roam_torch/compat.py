"""Which PyTorch this package can trace with.

The tracer (trace.py) drives make_fx's private machinery of PyTorch 1.13 (PythonKeyTracer,
ProxyTorchDispatchMode, dispatch_trace, wrap_key, FakeTensorMode's constructor, the
OpOverload.decompose hook); PyTorch 2.x renamed or reshaped all of them, and fails deep inside
the tracer with an AttributeError. This check fails first, with the reason.
"""

import re

import torch

SUPPORTED = ((1, 13),)  # (major, minor) releases the tracer is written against


class UnsupportedTorch(RuntimeError):
    """This PyTorch is not one the tracer supports."""


def torch_release(version=None):
    """(major, minor) of a PyTorch version string such as '1.13.0a0' or '2.1.0+cu121'."""
    version = torch.__version__ if version is None else str(version)
    m = re.match(r"(\d+)\.(\d+)", version)
    if m is None:
        raise UnsupportedTorch(f"cannot read the PyTorch version {version!r}")
    return int(m.group(1)), int(m.group(2))


def check_torch_version(version=None):
    """Raises UnsupportedTorch naming the version unless the tracer supports it."""
    version = torch.__version__ if version is None else str(version)
    release = torch_release(version)
    if release in SUPPORTED:
        return release
    supported = ", ".join(f"{a}.{b}" for a, b in SUPPORTED)
    if release[0] >= 2:
        raise UnsupportedTorch(
            f"PyTorch {version} is not supported yet: roam_torch traces training steps with "
            f"the make_fx internals of PyTorch {supported} (Debian 12's python3-torch), which "
            "PyTorch 2 changed; the torch.export/AOTAutograd path is not written yet. Use "
            f"PyTorch {supported}.")
    raise UnsupportedTorch(f"PyTorch {version} is not supported: roam_torch needs PyTorch "
                           f"{supported}")
