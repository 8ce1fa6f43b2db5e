// The window an op's own allocations are served from, shared by the CPU allocator wrapper
// (scratch_allocator.cpp) and the CUDA allocator (cuda_scratch_allocator.cpp): the op's
// planned temporary in the arena while the op runs (docs/torch-export.md, "Op scratch in the
// arena"), and the bytes the allocator got from elsewhere, for each op's overflow. Blocks are
// placed first-fit, in the lowest gap between the window's live blocks: kernels free and reallocate
// buffers as they go, and first fit keeps the window close to their peak. Not thread-safe: the
// allocators hold their lock around every call.
#ifndef ROAM_TORCH_SCRATCH_WINDOW_H_
#define ROAM_TORCH_SCRATCH_WINDOW_H_

#include <cstddef>
#include <map>
#include <mutex>

namespace roam_scratch {

// A live block of an allocator: its bytes, and for a window's block, where and in which
// opening it was served.
struct Block {
  std::size_t bytes;
  std::size_t offset;  // in the window; only for window blocks
  bool in_window;
  long window;  // which opening of a window served it
};

class Window {
 public:
  explicit Window(std::size_t align) : align_(align) {}

  // Opens a window of `size` bytes at `base` (size 0: closed, nothing is served). base_taken:
  // `base` is the address of a live block (the measuring buffer itself, or an arena whose
  // temporary is at offset 0), which must not be handed out again since blocks are known by
  // their address; its first aligned slot then stays unused, and the high-water mark counts it
  // only under a block.
  void Open(char* base, std::size_t size, bool base_taken) {
    ++opening_;
    base_ = size == 0 ? nullptr : base;
    size_ = size;
    blocks_.clear();
    if (base_ != nullptr && base_taken) blocks_[0] = align_;
    high_water_ = 0;
    live_ = 0;
    outside_at_open_ = outside_;
    outside_peak_ = outside_;
  }

  // Bytes the allocator got from elsewhere (the wrapped allocator, CUDA) while a window was
  // open or not: counted to report each op's overflow.
  void AddOutside(long long n) {
    outside_ += n;
    if (outside_ > outside_peak_) outside_peak_ = outside_;
  }
  void SubOutside(long long n) { outside_ -= n; }
  long long outside() const { return outside_; }

  // A block of n > 0 bytes in the open window, or nullptr where none is open or it does not
  // fit; *offset is its offset in the window.
  char* Place(std::size_t n, std::size_t* offset) {
    if (base_ == nullptr) return nullptr;
    std::size_t need = (n + align_ - 1) / align_ * align_;
    std::size_t at = 0;
    for (const auto& [start, bytes] : blocks_) {
      if (start - at >= need) break;
      at = start + bytes;
    }
    if (at + need > size_) return nullptr;
    blocks_[at] = need;
    if (at + need > high_water_) high_water_ = at + need;
    ++live_;
    *offset = at;
    return base_ + at;
  }

  // Frees the block at `offset` that opening `opening` served; a block of an earlier opening
  // (freed after its window closed) changes nothing.
  void Free(std::size_t offset, long opening) {
    if (opening != opening_) return;
    --live_;
    blocks_.erase(offset);
  }

  // Takes a freed block off the window or off the bytes outside; true for one from outside,
  // which its allocator must give back.
  bool Release(const Block& b) {
    if (b.in_window) {
      Free(b.offset, b.window);
      return false;
    }
    SubOutside(static_cast<long long>(b.bytes));
    return true;
  }

  // Closes the window: out[0] its high-water mark, out[1] the most bytes outside at once
  // above what was outside when it opened, out[2] its blocks still live.
  void Close(long long* out) {
    out[0] = static_cast<long long>(high_water_);
    out[1] = outside_peak_ - outside_at_open_;
    out[2] = live_;
    ++opening_;
    base_ = nullptr;
    size_ = 0;
    blocks_.clear();
  }

  bool open() const { return base_ != nullptr; }
  long opening() const { return opening_; }

 private:
  std::size_t align_;
  char* base_ = nullptr;
  std::size_t size_ = 0;
  std::map<std::size_t, std::size_t> blocks_;  // offset -> rounded size of live blocks
  std::size_t high_water_ = 0;
  long live_ = 0;
  long opening_ = 0;       // counts openings and closings
  long long outside_ = 0;  // bytes from elsewhere now live
  long long outside_at_open_ = 0;
  long long outside_peak_ = 0;  // largest outside_ since the window opened
};

// The two calls the runner makes around each op, for an allocator whose State has a mutex `mu`,
// a Window `window` and its live blocks by address, `blocks`.
template <typename State>
void OpenWindow(State& s, void* base, std::size_t size) {
  std::lock_guard<std::mutex> lock(s.mu);
  s.window.Open(static_cast<char*>(base), size, s.blocks.count(base) != 0);
}

template <typename State>
void CloseWindow(State& s, long long* out) {
  std::lock_guard<std::mutex> lock(s.mu);
  s.window.Close(out);
}

}  // namespace roam_scratch

#endif  // ROAM_TORCH_SCRATCH_WINDOW_H_
