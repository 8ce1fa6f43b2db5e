"""roam's CUDA allocator (roam_torch/cuda_scratch_allocator.cpp) on host stand-ins for the CUDA
runtime: which allocations a window serves and where, what goes to CUDA, the byte counters a
CUDA step's measured peak is read from, and install()'s refusal without CUDA. On a GPU the same
allocator runs under PyTorch's CUDAPluggableAllocator (perf/torch_cuda_api.py)."""

import ctypes
import unittest

import support  # noqa: F401  (puts tools/torch_export on sys.path)

import torch

from roam_torch import cuda_scratch

MALLOC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
                          ctypes.c_void_p)
FREE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class HostCuda:
    """cudaMallocAsync and cudaFreeAsync on host buffers, recording each call's stream."""

    def __init__(self, refuse_above=None):
        self.buffers, self.calls = {}, []
        self.refuse_above = refuse_above

        def malloc(out, n, stream):
            if self.refuse_above is not None and n > self.refuse_above:
                return 2  # cudaErrorMemoryAllocation
            buf = ctypes.create_string_buffer(n)
            address = ctypes.addressof(buf)
            self.buffers[address] = buf
            self.calls.append(("malloc", n, stream))
            out[0] = address
            return 0

        def free(ptr, stream):
            self.buffers.pop(ptr)
            self.calls.append(("free", ptr, stream))
            return 0

        self.malloc, self.free = MALLOC(malloc), FREE(free)  # kept alive with self

    def bind(self, lib):
        lib.roam_cuda_set_backend(ctypes.cast(self.malloc, ctypes.c_void_p),
                                  ctypes.cast(self.free, ctypes.c_void_p), None, None)


class CudaScratchAllocator(unittest.TestCase):
    def setUp(self):
        try:
            self.lib = cuda_scratch.load()
        except OSError as e:
            self.fail(f"cannot build the allocator: {e}")
        self.cuda = HostCuda()
        self.cuda.bind(self.lib)
        self.window = ctypes.create_string_buffer(4096)
        self.base = ctypes.addressof(self.window)

    def tearDown(self):
        self.lib.roam_cuda_set_backend(None, None, None, None)

    def malloc(self, n, stream=7):
        return self.lib.roam_cuda_malloc(n, 0, stream)

    def free(self, p, stream=7):
        self.lib.roam_cuda_free(p, 0, 0, stream)

    def test_a_window_serves_first_fit_in_512_byte_blocks(self):
        cuda_scratch.open_window(self.base, 4096)
        a = self.malloc(100)
        b = self.malloc(1000)
        self.assertEqual(a - self.base, 0)
        self.assertEqual(b - self.base, 512)  # 100 bytes take one 512-byte block
        self.free(a)
        c = self.malloc(512)  # the lowest gap that fits: where a was
        self.assertEqual(c, a)
        d = self.malloc(3000)  # does not fit after b: from CUDA
        self.assertFalse(self.base <= d < self.base + 4096)
        self.free(b)
        self.free(c)
        high, outside, live = cuda_scratch.close_window()
        self.assertEqual((high, outside, live), (1536, 3000, 0))
        self.assertEqual(self.cuda.calls, [("malloc", 3000, 7)])
        self.free(d)
        self.assertEqual(self.cuda.calls[-1], ("free", d, 7))

    def test_a_window_at_a_buffers_start_never_hands_out_the_buffers_address(self):
        buffer = self.malloc(4096)  # the measuring buffer, or an arena with a temporary at 0
        cuda_scratch.open_window(buffer, 4096)
        self.assertEqual(cuda_scratch.close_window(), (0, 0, 0))  # nothing allocated: 0
        cuda_scratch.open_window(buffer, 4096)
        a = self.malloc(100)
        self.assertEqual(a - buffer, 512)
        self.free(a)
        self.assertEqual(cuda_scratch.close_window(), (1024, 0, 0))
        self.free(buffer)  # still the buffer: back to CUDA
        self.assertEqual(self.cuda.calls[-1], ("free", buffer, 7))

    def test_a_block_left_live_is_reported_and_its_later_free_changes_nothing(self):
        cuda_scratch.open_window(self.base, 4096)
        kept = self.malloc(64)
        self.assertEqual(cuda_scratch.close_window(), (512, 0, 1))
        cuda_scratch.open_window(self.base, 4096)
        e = self.malloc(64)  # not at the kept block's address, which is still taken
        self.assertEqual(e - self.base, 512)
        self.free(kept)  # served by the last window: not this one's
        self.assertEqual(cuda_scratch.close_window(), (1024, 0, 1))
        self.free(e)
        self.assertEqual(self.cuda.calls, [])

    def test_measuring_only_sends_everything_to_cuda_and_reports_its_peak(self):
        cuda_scratch.open_window(self.base, 0)
        a, b = self.malloc(300), self.malloc(700)
        self.free(a)
        c = self.malloc(200)
        self.free(b)
        self.free(c)
        self.assertEqual(cuda_scratch.close_window(), (0, 1000, 0))
        self.assertEqual([c[0] for c in self.cuda.calls],
                         ["malloc", "malloc", "free", "malloc", "free", "free"])

    def test_counters_count_every_byte_from_cuda_and_the_peak_since_reset(self):
        live0 = cuda_scratch.counters()[0]
        cuda_scratch.reset_peak()
        a = self.malloc(1 << 20)
        b = self.malloc(1 << 10)
        self.free(a)
        live, peak, _ = cuda_scratch.counters()
        self.assertEqual(live - live0, 1 << 10)
        self.assertEqual(peak - live0, (1 << 20) + (1 << 10))
        cuda_scratch.reset_peak()
        self.assertEqual(cuda_scratch.counters()[1], live)
        cuda_scratch.open_window(self.base, 4096)
        w = self.malloc(2048)  # in the arena's window: not new bytes from CUDA
        self.assertEqual(cuda_scratch.counters()[:2], (live, live))
        self.free(w)
        cuda_scratch.close_window()
        self.free(b)
        self.assertEqual(cuda_scratch.counters()[0], live0)

    def test_zero_bytes_and_refusals_return_null(self):
        self.assertIsNone(self.malloc(0))
        self.free(None)
        refusing = HostCuda(refuse_above=100)
        refusing.bind(self.lib)
        failures = cuda_scratch.counters()[2]
        self.assertIsNone(self.malloc(1000))
        self.assertEqual(cuda_scratch.counters()[2], failures + 1)
        p = self.malloc(50)
        self.assertIsNotNone(p)
        self.free(p)
        self.cuda.bind(self.lib)


class Install(unittest.TestCase):
    @unittest.skipIf(torch.cuda.is_available(), "this PyTorch has CUDA")
    def test_without_cuda_install_says_why(self):
        import roam_torch
        with self.assertRaisesRegex(roam_torch.NotInstalled, "has no CUDA device"):
            roam_torch.install_cuda_allocator()
        self.assertFalse(cuda_scratch.available())
        self.assertIn("install_cuda_allocator() before the first CUDA tensor",
                      cuda_scratch.why())


if __name__ == "__main__":
    unittest.main()
