"""Which PyTorch this package can trace with.

The tracer (fx_trace.py) has two ways in: on PyTorch 1.13 it drives make_fx's private
machinery (PythonKeyTracer, ProxyTorchDispatchMode, dispatch_trace, wrap_key), which PyTorch 2
renamed or reshaped; from 2.1 on it calls the public make_fx, which 2.0 did not yet let trace
over the caller's fake tensors. Other releases fail deep inside the tracer with an
AttributeError, so this check fails first, with the reason.
"""

import re

import torch

OLDEST_2X = (2, 1)  # the first 2.x release whose make_fx the 2.x path is written against
SUPPORTED_TEXT = "1.13 or 2.1 and later"


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
    """Raises UnsupportedTorch naming the version unless the tracer supports it; returns the
    (major, minor) release."""
    version = torch.__version__ if version is None else str(version)
    release = torch_release(version)
    if release == (1, 13) or (release[0] == 2 and release >= OLDEST_2X):
        return release
    if release[0] == 2:
        raise UnsupportedTorch(
            f"PyTorch {version} is not supported: roam_torch traces training steps with "
            f"make_fx over fake tensors, which PyTorch 2.0 cannot do for a caller's fake mode; "
            f"use PyTorch {SUPPORTED_TEXT}")
    raise UnsupportedTorch(f"PyTorch {version} is not supported: roam_torch needs PyTorch "
                           f"{SUPPORTED_TEXT}")


def storage(t):
    """t's untyped storage: 2.x deprecates Tensor.storage() (TypedStorage) and warns on every
    call; where untyped_storage exists it is the same storage."""
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()


def meta_to_fake(fake_mode, t, device):
    """A fake tensor of fake_mode standing for meta tensor t on device."""
    converter = fake_mode.fake_tensor_converter
    if hasattr(converter, "from_meta_and_device"):  # 2.x
        return converter.from_meta_and_device(fake_mode, t, device)
    return converter(fake_mode, t, device)  # 1.13
