"""Op scratch in the arena on CUDA: cuda_scratch_allocator.cpp as the process's CUDA allocator
(torch.cuda.memory.CUDAPluggableAllocator), built on first use with g++ and loaded with
ctypes (docs/torch-export.md, "Op scratch on CUDA").

It has the interface of scratch.py (open_window, close_window) plus counters of every byte
CUDA allocated, which stand in for torch.cuda.max_memory_allocated (a pluggable allocator has
no statistics). PyTorch lets a process change its CUDA allocator only before the first CUDA
allocation, so install() must run before the model is moved to the GPU; afterwards
available() is False with that reason, and a planned step allocates its ops' own memory
outside the arena as before.
"""

import ctypes
import os

import torch

from . import scratch

_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_scratch_allocator.cpp")
_PATH = None  # the built library
_LIB = None  # loaded (for tests, with any backend)
_INSTALLED = False


class NotInstalled(RuntimeError):
    """roam's CUDA allocator cannot be (or was not) installed; the message says why."""


def build():
    """The library's path, built with g++ into roam_torch's cache directory if needed."""
    global _PATH
    if _PATH is None:
        _PATH = scratch.build_library(_SOURCE, "cuda_scratch_allocator", [])
    return _PATH


def load():
    """The library loaded with ctypes (no backend set: tests set their own)."""
    global _LIB
    if _LIB is None:
        lib = ctypes.CDLL(build())
        lib.roam_cuda_set_backend.argtypes = [ctypes.c_void_p] * 4
        lib.roam_cuda_malloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
        lib.roam_cuda_malloc.restype = ctypes.c_void_p
        lib.roam_cuda_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                       ctypes.c_void_p]
        lib.roam_scratch_open.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.roam_scratch_close.argtypes = [ctypes.POINTER(ctypes.c_longlong)]
        lib.roam_cuda_counters.argtypes = [ctypes.POINTER(ctypes.c_longlong)]
        _LIB = lib
    return _LIB


def _cuda_runtime():
    """The CUDA runtime library this process's PyTorch loaded (its path, from /proc/self/maps),
    so the allocator calls the same runtime as PyTorch's kernels."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = {line.split()[-1] for line in f if "libcudart" in line}
    except OSError:
        paths = set()
    for path in sorted(paths):
        if os.path.isfile(path):
            return ctypes.CDLL(path)
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise NotInstalled("cannot find the CUDA runtime PyTorch uses (libcudart)")


# cudaDeviceAttr's cudaDevAttrMemoryPoolsSupported (CUDA 11.2 and later).
_MEMORY_POOLS_SUPPORTED = 115


def _has_memory_pools(cudart):
    """Whether the current device supports cudaMallocAsync."""
    device, value = ctypes.c_int(0), ctypes.c_int(0)
    if cudart.cudaGetDevice(ctypes.byref(device)) != 0:
        return False
    status = cudart.cudaDeviceGetAttribute(ctypes.byref(value), _MEMORY_POOLS_SUPPORTED, device)
    return status == 0 and value.value == 1


def install():
    """Makes roam's allocator the process's CUDA allocator. Raises NotInstalled saying why when
    it cannot be: no CUDA, no g++, or CUDA memory already allocated through PyTorch's own
    allocator (call this before the first CUDA tensor)."""
    global _INSTALLED
    if _INSTALLED:
        return
    if not torch.cuda.is_available():
        raise NotInstalled(f"this PyTorch ({torch.__version__}) has no CUDA device")
    pluggable = getattr(torch.cuda.memory, "CUDAPluggableAllocator", None)
    if pluggable is None:
        raise NotInstalled(f"PyTorch {torch.__version__} has no CUDAPluggableAllocator")
    try:
        lib = load()
    except OSError as e:
        raise NotInstalled(str(e)) from None
    cudart = _cuda_runtime()
    if not _has_memory_pools(cudart):
        raise NotInstalled("this CUDA device or driver has no stream-ordered allocator "
                           "(cudaMallocAsync), which roam's CUDA allocator needs")
    lib.roam_cuda_set_backend(*(ctypes.cast(getattr(cudart, name), ctypes.c_void_p)
                                for name in ("cudaMallocAsync", "cudaFreeAsync",
                                             "cudaGetDevice", "cudaSetDevice")))
    allocator = pluggable(build(), "roam_cuda_malloc", "roam_cuda_free")
    try:
        torch.cuda.memory.change_current_allocator(allocator)
    except RuntimeError as e:
        raise NotInstalled(
            f"PyTorch's CUDA allocator is already in use ({e}): call "
            "roam_torch.install_cuda_allocator() before the first CUDA tensor") from None
    _INSTALLED = True


# Public as roam_torch.install_cuda_allocator (docs/torch-export.md, "Op scratch on CUDA").
install_cuda_allocator = install


def installed():
    return _INSTALLED


def available():
    """True when roam's allocator is the CUDA allocator (install() ran); else False, why()
    says why."""
    return _INSTALLED


def why():
    if _INSTALLED:
        return None
    return ("roam's CUDA allocator is not installed: call roam_torch.install_cuda_allocator() "
            "before the first CUDA tensor")


def open_window(address, size):
    """Serves the op's CUDA allocations from [address, address + size); size 0 only
    measures."""
    scratch.open_window(address, size, _LIB)


def close_window():
    """As scratch.close_window, for CUDA's bytes."""
    return scratch.close_window(_LIB)


def counters():
    """(bytes CUDA allocated now live, the most at once since reset_peak(), refusals)."""
    out = (ctypes.c_longlong * 3)()
    _LIB.roam_cuda_counters(out)
    return int(out[0]), int(out[1]), int(out[2])


def reset_peak():
    _LIB.roam_cuda_reset_peak()
