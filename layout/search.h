// Internals of the layout search (docs/layout.md): the instance in sections, the time-disjoint
// decomposition and the depth-first search at one capacity. Not a public header: SolveLayout
// (layout.h) drives these; tests reach them to count nodes.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/memory_model.h"
#include "core/types.h"
#include "layout/layout.h"

namespace roam::layout::detail {

// Time cut at every start and end: section k is [times[k], times[k+1]); a buffer covers the
// sections [first, last), so two buffers share a step exactly when their ranges intersect.
struct Instance {
  // Every buffer is in the list of each section it covers when that costs at most this many
  // entries (the unallocated floor needs them); beyond it the unallocated floor is skipped.
  static constexpr std::int64_t kMaxSectionEntries = 20'000'000;
  std::vector<Bytes> size;
  std::vector<Bytes> align;  // per buffer, at least 1
  std::vector<Bytes> fixed;  // per buffer, -1 when free
  std::vector<int> first;    // first section
  std::vector<int> last;     // one past the last section
  std::vector<Bytes> load;   // per section: summed sizes of the buffers covering it
  int num_sections = 0;
};

Instance MakeInstance(std::span<const Interval> intervals, std::span<const Bytes> align,
                      std::span<const Bytes> fixed);

// Groups of buffers no two of which share a section, each sorted by first section; buffers
// must come sorted by first section. A group covers a contiguous range of sections no other
// group touches.
std::vector<std::vector<int>> SplitByTime(const Instance& instance, std::span<const int> buffers);

// The preorders of the search (rank per buffer, lower = earlier): by the largest section total
// the buffer covers, by lifetime width, by area (size x width), each breaking ties with the
// others, then by index.
std::vector<std::vector<int>> Preorders(const Instance& instance);

enum class SearchOutcome { kFound, kInfeasible, kAborted };

// Depth-first search for offsets of one group of buffers within a capacity (all other buffers
// are ignored). Not thread-safe itself; each SolveLayout call owns its searchers.
class Searcher {
 public:
  using Clock = std::chrono::steady_clock;
  Searcher(const Instance& instance, const SearchParams& params);

  // buffers: sorted by first section, positive sizes. On kFound, offsets[b] holds the offset of
  // every buffer b of the group. node_limit counts placements.
  SearchOutcome Run(std::span<const int> buffers, std::span<const int> rank, Bytes capacity,
                    std::int64_t node_limit, std::optional<Clock::time_point> deadline,
                    std::vector<Bytes>& offsets);
  std::int64_t nodes() const { return nodes_; }  // of the last Run

 private:
  struct Candidate {
    Bytes offset;
    int rank;
    int buffer;
  };
  bool Splits(const std::vector<int>& unplaced) const;  // into time-disjoint groups
  bool Solve(const std::vector<int>& unplaced, Bytes last_offset, int last_rank);
  bool Branch(const std::vector<int>& unplaced, Bytes last_offset, int last_rank);
  bool Overlap(int a, int b) const {
    return in_.first[static_cast<size_t>(a)] < in_.last[static_cast<size_t>(b)] &&
           in_.first[static_cast<size_t>(b)] < in_.last[static_cast<size_t>(a)];
  }

  const Instance& in_;
  const SearchParams& params_;
  std::span<const int> rank_;
  Bytes capacity_ = 0;
  std::int64_t node_limit_ = 0;
  std::optional<Clock::time_point> deadline_;
  std::int64_t nodes_ = 0;
  bool aborted_ = false;
  std::vector<Bytes> base_;       // per buffer: highest top of placed buffers it overlaps
  std::vector<Bytes> remaining_;  // per section: sizes of the unplaced buffers covering it
  std::vector<Bytes> floor_;      // per section: no unplaced buffer covering it can go lower
  std::vector<char> placed_;
  std::vector<std::vector<int>> section_buffers_;  // for the unallocated floor
  std::vector<int> mark_;                          // per section: last node that touched it
  bool use_unallocated_floor_ = false;             // in this Run
  int epoch_ = 0;
  std::vector<std::pair<int, Bytes>> floor_trail_;
  std::vector<Bytes> offset_;                      // per buffer, once placed
  std::vector<std::pair<int, Bytes>> base_trail_;  // (buffer, previous base) to undo
};

}  // namespace roam::layout::detail
