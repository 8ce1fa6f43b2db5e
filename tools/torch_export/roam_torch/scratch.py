"""Op scratch in the arena: the CPU allocator wrapper of scratch_allocator.cpp, built on first
use and loaded with ctypes (docs/torch-export.md, "Op scratch in the arena").

PyTorch 1.13 exposes no CPU allocator hook to Python, so a few lines of C++ wrap c10's CPU
allocator: while the runner has a window open (the planned temporary of the op now running),
the op's own allocations (kernels' scratch, results it cannot write into its planned outputs)
come from that window in the arena. Building needs g++ and PyTorch's C++ headers (Debian's
libtorch-dev); without them available() is False with the reason, and ops allocate outside the
arena as before.
"""

import ctypes
import hashlib
import os
import subprocess

import torch

from . import compat

_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scratch_allocator.cpp")
_LIB = None
_WHY = None


def _cache_dir():
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "roam_torch")


_HERE = os.path.dirname(os.path.abspath(__file__))
_SHARED_HEADERS = [os.path.join(_HERE, "scratch_window.h")]


def build_library(source, stem, flags, key_extra=b""):
    """`source` built with g++ (-shared plus `flags`) into roam_torch's cache directory as
    STEM-<hash>.so, unless already there; the hash covers the source, the headers the
    allocators share, the flags and key_extra. Returns the path; OSError naming the first error."""
    digest = hashlib.sha256(key_extra + " ".join(flags).encode())
    for path in [source] + _SHARED_HEADERS:
        with open(path, "rb") as f:
            digest.update(f.read())
    out = os.path.join(_cache_dir(), f"{stem}-{digest.hexdigest()[:16]}.so")
    if os.path.isfile(out):
        return out
    os.makedirs(_cache_dir(), exist_ok=True)
    tmp = f"{out}.{os.getpid()}.tmp"
    # The flags last: libraries must follow the source that uses them.
    cmd = ["g++", "-O2", "-std=c++17", "-shared", "-fPIC", source, "-o", tmp] + flags
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise OSError(f"cannot run g++: {e.strerror}") from None
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        first_error = next((line for line in lines if "error" in line),
                           lines[-1] if lines else "")
        raise OSError(f"g++ failed on {source}: {first_error}")
    os.replace(tmp, out)  # atomic: concurrent builders write the same file
    return out


def _build():
    torch_dir = os.path.dirname(torch.__file__)
    include, lib = os.path.join(torch_dir, "include"), os.path.join(torch_dir, "lib")
    if not os.path.isfile(os.path.join(include, "c10", "core", "CPUAllocator.h")):
        raise OSError(f"PyTorch's C++ headers are missing ({include}/c10: on Debian, install "
                      "libtorch-dev)")
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    major, minor = compat.torch_release()
    flags = [f"-D_GLIBCXX_USE_CXX11_ABI={abi}", f"-DROAM_TORCH_RELEASE={major * 100 + minor}",
             "-I", include, "-L", lib, "-lc10", f"-Wl,-rpath,{lib}"]
    return build_library(_SOURCE, "scratch_allocator", flags,
                         torch.__version__.encode() + bytes([abi]))


def available():
    """True when the allocator is built, loaded and installed; else False (why() says why)."""
    global _LIB, _WHY
    if _LIB is not None:
        return True
    if _WHY is not None:
        return False
    try:
        lib = ctypes.CDLL(_build())
        lib.roam_scratch_open.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.roam_scratch_close.argtypes = [ctypes.POINTER(ctypes.c_longlong)]
        if lib.roam_scratch_install() != 0:
            raise OSError("another CPU allocator of higher priority is installed")
    except OSError as e:
        _WHY = str(e)
        return False
    _LIB = lib
    return True


def why():
    return _WHY


def open_window(address, size, lib=None):
    """Serves this thread's and the op's allocations from [address, address + size); size 0
    only measures. lib: the allocator (this one's by default; cuda_scratch passes its own)."""
    (lib or _LIB).roam_scratch_open(ctypes.c_void_p(address), ctypes.c_size_t(size))


def close_window(lib=None):
    """(high-water mark of the window, most bytes allocated outside at once above the level at
    open, window blocks still live)."""
    out = (ctypes.c_longlong * 3)()
    (lib or _LIB).roam_scratch_close(out)
    return int(out[0]), int(out[1]), int(out[2])
