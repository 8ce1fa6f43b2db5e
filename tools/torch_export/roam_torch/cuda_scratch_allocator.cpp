// A CUDA allocator for PyTorch's CUDAPluggableAllocator that serves an op's own allocations
// (kernels' workspaces, results it cannot write in place) from the op's planned temporary in
// the arena, and counts every byte a step allocates (roam_torch/cuda_scratch.py,
// docs/torch-export.md "Op scratch on CUDA").
//
// PyTorch's caching allocator cannot be pointed at a window: it asks for whole segments
// (2 MiB for any allocation up to 1 MiB, 20 MiB up to 10 MiB) and caches them across ops. So
// this allocator replaces it for the process (torch.cuda.memory.change_current_allocator,
// before the first CUDA tensor). While a window is open, allocations are placed first-fit in
// it, 512-byte aligned like the caching allocator's blocks, in the lowest gap between its
// live blocks; the rest go to CUDA's stream-ordered allocator (cudaMallocAsync on the
// allocation's stream, which reuses freed memory in stream order as the caching allocator
// does). Window blocks are freed in stream order too: the next op's kernels, on the same
// stream, run after the last kernel that used them.
//
// Every byte from CUDA is counted (live, and the peak since the last reset), so a step's real
// peak is read here: under a pluggable allocator torch.cuda.max_memory_allocated is not
// available. No CUDA header or library is needed to build it: the CUDA runtime's entry points
// are handed in by the loader (roam_cuda_set_backend), and tests hand in host stand-ins.
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "scratch_window.h"

namespace {

constexpr std::size_t kAlign = 512;

// The CUDA runtime's cudaMallocAsync, cudaFreeAsync, cudaGetDevice and cudaSetDevice.
using MallocFn = int (*)(void**, std::size_t, void*);
using FreeFn = int (*)(void*, void*);
using GetDeviceFn = int (*)(int*);
using SetDeviceFn = int (*)(int);

using roam_scratch::Block;

struct State {
  std::mutex mu;
  MallocFn cuda_malloc = nullptr;
  FreeFn cuda_free = nullptr;
  GetDeviceFn get_device = nullptr;
  SetDeviceFn set_device = nullptr;
  roam_scratch::Window window{kAlign};
  long long peak = 0;      // most bytes from CUDA at once since roam_cuda_reset_peak
  long long failures = 0;  // allocations CUDA refused
  std::unordered_map<void*, Block> blocks;
};

State& S() {
  static State s;
  return s;
}

// Runs f with `device` current, as the caching allocator does for an allocation on another
// device than the calling thread's.
template <typename F>
int OnDevice(State& s, int device, F f) {
  int current = device;
  if (s.get_device != nullptr && s.get_device(&current) == 0 && current != device &&
      s.set_device != nullptr) {
    s.set_device(device);
    int r = f();
    s.set_device(current);
    return r;
  }
  return f();
}

}  // namespace

extern "C" {

// The CUDA runtime's entry points (or a test's stand-ins); get/set device may be null.
void roam_cuda_set_backend(void* cuda_malloc, void* cuda_free, void* get_device, void* set_device) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.cuda_malloc = reinterpret_cast<MallocFn>(cuda_malloc);
  s.cuda_free = reinterpret_cast<FreeFn>(cuda_free);
  s.get_device = reinterpret_cast<GetDeviceFn>(get_device);
  s.set_device = reinterpret_cast<SetDeviceFn>(set_device);
}

// CUDAPluggableAllocator's allocation function. nullptr for 0 bytes (nothing to point at) and
// when CUDA refuses, which PyTorch reports as out of memory.
void* roam_cuda_malloc(ssize_t size, int device, void* stream) {
  if (size <= 0) return nullptr;
  auto n = static_cast<std::size_t>(size);
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  std::size_t offset = 0;
  if (char* p = s.window.Place(n, &offset)) {
    s.blocks[p] = Block{n, offset, true, s.window.opening()};
    return p;
  }
  if (s.cuda_malloc == nullptr) return nullptr;
  void* p = nullptr;
  int r = OnDevice(s, device, [&] { return s.cuda_malloc(&p, n, stream); });
  if (r != 0 || p == nullptr) {
    ++s.failures;
    return nullptr;
  }
  s.blocks[p] = Block{n, 0, false, 0};
  s.window.AddOutside(static_cast<long long>(n));
  if (s.window.outside() > s.peak) s.peak = s.window.outside();
  return p;
}

// CUDAPluggableAllocator's free function.
void roam_cuda_free(void* ptr, ssize_t /*size*/, int device, void* stream) {
  if (ptr == nullptr) return;
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.blocks.find(ptr);
  if (it == s.blocks.end()) return;
  Block b = it->second;
  s.blocks.erase(it);
  if (!s.window.Release(b)) return;
  OnDevice(s, device, [&] { return s.cuda_free(ptr, stream); });
}

// Opens a window of `size` bytes at `base` (size 0: measure only, everything goes to CUDA).
void roam_scratch_open(void* base, std::size_t size) { roam_scratch::OpenWindow(S(), base, size); }

// Closes the window: out[0] its high-water mark, out[1] the most bytes from CUDA at once above
// what was live when it opened, out[2] window blocks still live.
void roam_scratch_close(long long* out) { roam_scratch::CloseWindow(S(), out); }

// out[0] bytes from CUDA now live, out[1] the most at once since the last reset, out[2]
// allocations CUDA refused.
void roam_cuda_counters(long long* out) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  out[0] = s.window.outside();
  out[1] = s.peak;
  out[2] = s.failures;
}

void roam_cuda_reset_peak() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  s.peak = s.window.outside();
}

}  // extern "C"
