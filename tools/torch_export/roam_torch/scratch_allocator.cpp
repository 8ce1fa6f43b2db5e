// PyTorch's CPU allocator, wrapped so that the planned runner can serve an op's own allocations
// (kernels' scratch, results it cannot write in place) from the op's planned temporary in the
// arena (roam_torch/scratch.py, docs/torch-export.md "Op scratch in the arena").
//
// While a window is open (roam_scratch_open), allocations are placed first-fit in it, 64-byte
// aligned, in the lowest gap between its live blocks (kernels free and reallocate buffers as
// they go; first fit keeps the window close to their peak). An allocation that does not fit
// goes to the wrapped allocator and is counted as outside. roam_scratch_close reports the window's
// high-water mark, the largest number of outside bytes at once since the window opened, and how
// many window blocks are still live (an op that keeps scratch alive past its step would be a bug of
// the runner's model). Built by scratch.py with g++ against Debian's libtorch-dev headers, loaded
// with ctypes.
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "scratch_window.h"

// PyTorch 2.3 made c10::Allocator::allocate non-const and added the pure virtual copy_data
// (for clone()); scratch.py passes the release as ROAM_TORCH_RELEASE (major * 100 + minor).
#if ROAM_TORCH_RELEASE >= 203
#define ROAM_ALLOCATE_CONST
#else
#define ROAM_ALLOCATE_CONST const
#endif

namespace {

constexpr std::size_t kAlign = 64;

// A block and, for one from the wrapped allocator, how to give it back.
struct Block : roam_scratch::Block {
  void* inner_ctx;
  c10::DeleterFnPtr inner_deleter;
};

struct State {
  std::mutex mu;
  c10::Allocator* inner = nullptr;
  roam_scratch::Window window{kAlign};
  // Every block by its address: the context is the data pointer, as raw_allocate() (which
  // oneDNN and others call) requires.
  std::unordered_map<void*, Block> blocks;
};

State& S() {
  static State s;
  return s;
}

void Delete(void* ptr) {
  State& s = S();
  Block b;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.blocks.find(ptr);
    if (it == s.blocks.end()) return;
    b = it->second;
    s.blocks.erase(it);
    s.window.Release(b);
  }
  if (!b.in_window && b.inner_deleter != nullptr) b.inner_deleter(b.inner_ctx);
}

class ScratchAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(std::size_t n) ROAM_ALLOCATE_CONST override {
    State& s = S();
    {
      std::lock_guard<std::mutex> lock(s.mu);
      std::size_t offset = 0;
      // Empty tensors (batch norm's empty reserve) hold no bytes and may outlive the op:
      // they go to the wrapped allocator.
      char* p = n > 0 ? s.window.Place(n, &offset) : nullptr;
      if (p != nullptr) {
        s.blocks[p] = Block{{n, offset, true, s.window.opening()}, nullptr, nullptr};
        return {p, p, &Delete, c10::Device(c10::DeviceType::CPU)};
      }
    }
    c10::DataPtr inner = s.inner->allocate(n);
    void* data = inner.get();
    c10::DeleterFnPtr deleter = inner.get_deleter();
    void* ctx = inner.release_context();
    {
      std::lock_guard<std::mutex> lock(s.mu);
      s.blocks[data] = Block{{n, 0, false, 0}, ctx, deleter};
      s.window.AddOutside(static_cast<long long>(n));
    }
    return {data, data, &Delete, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Delete; }

#if ROAM_TORCH_RELEASE >= 203
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
#endif
};

ScratchAllocator g_allocator;

}  // namespace

extern "C" {

// Installs the wrapper over the current CPU allocator; idempotent.
int roam_scratch_install() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.inner == nullptr) {
    s.inner = c10::GetCPUAllocator();
    c10::SetCPUAllocator(&g_allocator, /*priority=*/100);
  }
  return c10::GetCPUAllocator() == &g_allocator ? 0 : -1;
}

// Opens a window of `size` bytes at `base` (size 0: measure only, everything goes outside).
void roam_scratch_open(void* base, std::size_t size) { roam_scratch::OpenWindow(S(), base, size); }

// Closes the window: out[0] its high-water mark, out[1] the most outside bytes at once above
// what was outside when it opened, out[2] window blocks still live.
void roam_scratch_close(long long* out) { roam_scratch::CloseWindow(S(), out); }

}  // extern "C"
