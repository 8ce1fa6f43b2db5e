// Internals of the layout search (docs/layout.md): the instance in sections, the time-disjoint
// decomposition and the depth-first search at one capacity. Not a public header: SolveLayout
// (layout.h) drives these; tests reach them to count nodes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <utility>
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
  // Per buffer: the previous (lower-indexed) free buffer of the same size, alignment and
  // lifetime, or -1 (SearchParams::identical_buffers).
  std::vector<int> twin;
  // Per buffer: its lifetime in the intervals' own steps (end - start + 1), MiniMalloc's width
  // (SearchParams::minimalloc_preorders); a count of sections instead ranks a short buffer
  // that crosses many others' starts and ends as long.
  std::vector<std::int64_t> duration;
  int num_sections = 0;
};

Instance MakeInstance(std::span<const Interval> intervals, std::span<const Bytes> align,
                      std::span<const Bytes> fixed);

// Groups of buffers no two of which share a section, each sorted by first section; buffers
// must come sorted by first section. A group covers a contiguous range of sections no other
// group touches.
std::vector<std::vector<int>> SplitByTime(const Instance& instance, std::span<const int> buffers);

// The preorders of the search (rank per buffer, lower = earlier), each breaking ties with the
// next keys, then by index. With minimalloc: MiniMalloc's three, by duration, area (size x
// duration) and section total (the largest load among the buffer's sections) in the orders
// WAT, TAW and TWA. Otherwise roam's four: by section total, by width in sections, by area
// (size x width), by size.
std::vector<std::vector<int>> Preorders(const Instance& instance, bool minimalloc);

enum class SearchOutcome { kFound, kInfeasible, kAborted };

// A state of the bottom-left branching (SearchParams::failure_cache): a 128-bit hash of the
// unplaced buffers of a time-disjoint group and the floors of the sections they cover.
using StateKey = std::pair<std::uint64_t, std::uint64_t>;

// The failed states with the largest capacity each failed at: open addressing with linear
// probing on the key's first half (random already). An unordered_map's node per entry and
// its pointer chase were a few percent of a search's time.
class FailureCache {
 public:
  // The largest capacity key failed at; -1: none.
  Bytes Find(const StateKey& key) const {
    return slots_.empty() ? -1 : slots_[Probe(key)].capacity;
  }
  // key failed at capacity (>= 0): its largest is kept; a new key only while fewer than
  // max_entries are.
  void Insert(const StateKey& key, Bytes capacity, std::int64_t max_entries);

 private:
  struct Slot {
    StateKey key{0, 0};
    Bytes capacity = -1;  // -1: empty
  };
  // Where key is, or else the empty slot it would take (slots_ not empty).
  size_t Probe(const StateKey& key) const {
    const size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>(key.first) & mask;
    while (slots_[i].capacity >= 0 && slots_[i].key != key) i = (i + 1) & mask;
    return i;
  }
  std::vector<Slot> slots_;  // a power of two, at most half full
  std::int64_t size_ = 0;
};

// SplitMix64's finaliser: a bijection that scatters nearby inputs.
inline std::uint64_t Mix(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Depth-first search for offsets of one group of buffers within a capacity (all other buffers
// are ignored). Not thread-safe itself; each SolveLayout call owns its searchers.
class Searcher {
 public:
  using Clock = std::chrono::steady_clock;
  Searcher(const Instance& instance, const SearchParams& params);

  // buffers: sorted by first section, positive sizes. On kFound, offsets[b] holds the offset of
  // every buffer b of the group. node_limit counts placements; work_limit the buffers and
  // sections the search's loops visit (LayoutParams::max_work).
  // candidate_branching: this run branches on candidates even if bottom_left is on
  // (SearchParams::portfolio).
  SearchOutcome Run(std::span<const int> buffers, std::span<const int> rank, Bytes capacity,
                    std::int64_t node_limit, std::int64_t work_limit,
                    std::optional<Clock::time_point> deadline, std::vector<Bytes>& offsets,
                    bool candidate_branching = false);
  std::int64_t nodes() const { return nodes_; }  // of the last Run
  std::int64_t work() const { return work_; }    // of the last Run
  // A flag another thread sets to end the search at the next node (an interrupt).
  void set_stop(const std::atomic<bool>* stop) { stop_ = stop; }

 private:
  struct Candidate {
    Bytes offset;
    int rank;
    int buffer;
  };
  bool Splits(const std::vector<int>& unplaced) const;  // into time-disjoint groups
  bool Solve(const std::vector<int>& unplaced, Bytes last_offset, int last_rank);
  bool Branch(const std::vector<int>& unplaced, Bytes last_offset, int last_rank);
  // SearchParams::bottom_left (bottom_left.cpp): floor_[s] is then a height below which
  // section s is settled (placed buffers covering it end at or below it, unplaced ones will
  // start at or above it) and base_[b] the highest floor among b's sections.
  bool BottomLeft(const std::vector<int>& unplaced);
  // BottomLeft's steps at a node whose lowest floor is h over sections [lo, hi): the section
  // to branch on (the first at h, or the one fewest candidates cover); the order its buffer
  // branches are tried in (fixed first, then by activity when ordering, then rank); and, when
  // no buffer starts at h over it, the lowest offset a buffer covering it can still take
  // (kNever: none).
  int ChooseSection(const std::vector<int>& candidates, Bytes h, int lo, int hi);
  void OrderBranch(std::vector<int>& branch, int level, bool ordering);
  Bytes RaisedFloor(const std::vector<int>& unplaced, int chosen, Bytes h) const;
  // Raises section s's floor to value and the bases of the unplaced buffers covering it (their
  // sections queued for the unallocated floor); false when the section no longer fits.
  // why (SearchParams::backjumping): the decisions the new floor rests on, added to s's column.
  bool Raise(int s, Bytes value, const std::vector<int>& unplaced,
             const std::uint64_t* why = nullptr);
  // The unallocated floor over the queued sections, raising until nothing changes.
  bool Propagate(const std::vector<int>& unplaced);
  void Queue(int b);  // b's sections, for Propagate
  bool Aborting();    // node, work or time limit reached (sets aborted_)
  // A node of a group whose unplaced buffers are these: its placement's bookkeeping visits each
  // of them. work_ counts what the search's loops visit (buffers and sections), here and where
  // they run, so that it grows with the group as the time does.
  void CountNode(const std::vector<int>& unplaced) {
    ++nodes_;
    work_ += static_cast<std::int64_t>(unplaced.size());
  }
  // SearchParams::failure_cache. The state at a node of BottomLeft is its group's unplaced
  // buffers and the floors of the sections they cover: every base is the highest floor among
  // the buffer's sections, and placed buffers end at or below the floors, so what can still be
  // done depends on nothing else. A state whose search failed at a capacity fails at every
  // capacity up to it.
  StateKey UnplacedKey(const std::vector<int>& unplaced) const;
  // The lowest floor of the sections in [lo, hi) that unplaced buffers cover (kNever: none)
  // and, when key is given, the state's key: *key (the unplaced buffers') with those floors.
  // One scan for both: a node needs both, and it is the search's most frequent loop.
  Bytes LowestFloor(int lo, int hi, StateKey* key) const;
  // Every floor is set here, so that floor_key_ follows it.
  void SetFloor(int s, Bytes value) {
    floor_[U(s)] = value;
    if (params_.failure_cache) floor_key_[U(s)] = SectionKey(s, value);
  }
  // Section s's part of a state's key. Here, not in a .cpp: SetFloor calls it at every floor.
  StateKey SectionKey(int s, Bytes floor) const {
    const auto f = static_cast<std::uint64_t>(floor);
    return {Mix(section_salt_[2 * U(s)] + f),
            Mix(section_salt_[2 * U(s) + 1] ^ (f * 0x9e3779b97f4a7c15ULL))};
  }
  bool Failed(const StateKey& key) const;  // proven to fail at capacity_
  void Remember(const StateKey& key);      // failed at capacity_ (unless aborted)
  // Everything a node changes is trailed, so that a node can undo what its subtree did.
  struct Mark {
    size_t placed, bases, floors, columns, reasons;
  };
  Mark Marks() const {
    return {placed_trail_.size(), base_trail_.size(), floor_trail_.size(), column_trail_.size(),
            reason_trail_.size()};
  }
  void Rollback(const Mark& mark);
  void Place(int b, Bytes offset);  // offset_, placed_ and remaining_, trailed
  // Lifts an unplaced buffer's base to value, settled by section s (trailed).
  void Lift(int c, Bytes value, int s);
  // The bookkeeping of a placement in either branching: places b at offset, raises its
  // sections' floors to its top and the bases of the unplaced buffers it overlaps (rest gets
  // unplaced less b), then the unallocated floor. False when a raised section no longer fits.
  bool PlaceAndRaise(int b, Bytes offset, const std::vector<int>& unplaced, std::vector<int>& rest,
                     int level = 0);
  // SearchParams::backjumping (bottom_left.cpp). A conflict set is words_ words, one bit per
  // decision level of the path (levels beyond the last bit share it). column_ holds one per
  // section: the decisions that settled it below its floor (the placements covering it and the
  // space declared empty there, with what that rested on); reason_[b] is a section whose floor
  // is at least b's base, so its column explains why b cannot start lower.
  int Bit(int level) const { return std::min(level, 64 * words_ - 1); }
  std::uint64_t* Column(int s) {
    return column_.data() + static_cast<size_t>(s) * static_cast<size_t>(words_);
  }
  void SetColumnBit(int s, int level);                           // trailed
  void OrIntoColumn(int s, const std::uint64_t* bits);           // trailed
  void OrColumn(std::vector<std::uint64_t>& into, int s) const;  // into |= column s
  void OrReason(std::vector<std::uint64_t>& into, int b) const;  // why b starts at its base
  bool Has(const std::vector<std::uint64_t>& bits, int level) const {
    const int k = Bit(level);
    return (bits[static_cast<size_t>(k / 64)] >> (k % 64)) & 1;
  }
  void Clear(std::vector<std::uint64_t>& bits, int level) const {  // the level's own decision
    if (level >= 64 * words_ - 1) return;                          // shared with deeper levels
    bits[static_cast<size_t>(level / 64)] &= ~(std::uint64_t{1} << (level % 64));
  }
  void AllBelow(std::vector<std::uint64_t>& bits, int level) const;  // bits |= levels < level
  bool Free(int b) const {  // a candidate under identical_buffers
    const int t = in_.twin[static_cast<size_t>(b)];
    return !params_.identical_buffers || t < 0 || placed_[static_cast<size_t>(t)];
  }
  bool Overlap(int a, int b) const {
    return in_.first[static_cast<size_t>(a)] < in_.last[static_cast<size_t>(b)] &&
           in_.first[static_cast<size_t>(b)] < in_.last[static_cast<size_t>(a)];
  }

  const Instance& in_;
  const SearchParams& params_;
  std::span<const int> rank_;
  Bytes capacity_ = 0;
  std::int64_t node_limit_ = 0;
  std::int64_t work_limit_ = 0;
  std::optional<Clock::time_point> deadline_;
  const std::atomic<bool>* stop_ = nullptr;
  std::int64_t nodes_ = 0;
  std::int64_t work_ = 0;
  bool aborted_ = false;
  std::vector<Bytes> base_;  // per buffer: highest top of placed buffers it overlaps
  // Per buffer: the lowest offset it can take now, its fixed one or its base aligned up (what
  // Propagate's scan reads, one load instead of three).
  std::vector<Bytes> start_;
  void SetBase(int b, Bytes value) {
    base_[U(b)] = value;
    const Bytes fixed = in_.fixed[U(b)];
    start_[U(b)] = fixed >= 0 ? fixed : AlignUp(value, in_.align[U(b)]);
  }
  std::vector<Bytes> remaining_;  // per section: sizes of the unplaced buffers covering it
  std::vector<Bytes> floor_;      // per section: no unplaced buffer covering it can go lower
  std::vector<char> placed_;
  // For the unallocated floor (when has_section_lists_): the buffers covering each section,
  // section s's at [section_start_[s], section_start_[s + 1]) of section_buffers_.
  bool has_section_lists_ = false;
  std::vector<int> section_buffers_, section_start_;
  std::span<const int> SectionBuffers(int s) const {
    return {section_buffers_.data() + section_start_[U(s)],
            section_buffers_.data() + section_start_[U(s) + 1]};
  }
  // Propagate's view of them: per section, a sparse set whose unplaced buffers come first
  // (section s's at [section_start_[s], section_start_[s] + unplaced_count_[s]) of
  // unplaced_at_), so that it scans those only. A placement swaps its buffer out of each of its
  // sections; undone in the reverse order, a count's increment brings it back. Kept only in
  // Runs that use the floor: each such Run rebuilds the counts from placed_ at its start.
  // Raise keeps section_buffers_, whose order sets the order it queues sections in.
  std::vector<int> unplaced_at_, unplaced_count_, slot_, slot_start_;
  // Where buffer b is in section s's part of unplaced_at_.
  int& Slot(int b, int s) { return slot_[U(slot_start_[U(b)] + s - in_.first[U(b)])]; }
  void Unplace(int b);                     // b leaves its sections' unplaced sets
  void SortUnplacedFirst(int lo, int hi);  // from placed_, at a Run's start
  bool use_unallocated_floor_ = false;     // in this Run
  bool use_bottom_left_ = false;           // in this Run
  std::vector<std::pair<int, Bytes>> floor_trail_;
  std::vector<Bytes> offset_;                      // per buffer, once placed
  std::vector<std::pair<int, Bytes>> base_trail_;  // (buffer, previous base) to undo
  std::vector<int> placed_trail_;                  // buffers in the order placed
  std::vector<int> queue_;                         // sections for Propagate
  std::vector<char> queued_;                       // per section
  std::vector<int> count_;                         // per section: candidates resting there
  std::vector<std::uint64_t> zobrist_;             // two per buffer, for UnplacedKey
  std::vector<std::uint64_t> section_salt_;        // two per section, for SectionKey
  std::vector<StateKey> floor_key_;                // per section: SectionKey of its floor
  // Failed states with the largest capacity each failed at; kept across Runs (preorders,
  // rounds and probes of one SolveLayout call).
  FailureCache failed_;
  bool use_backjumping_ = false;  // in this Run
  int words_ = 0;
  int depth_ = 0;  // decision level of the node being expanded
  std::vector<std::uint64_t> column_;
  std::vector<int> reason_;
  std::vector<std::pair<size_t, std::uint64_t>> column_trail_;  // (word, previous value)
  std::vector<std::pair<int, int>> reason_trail_;               // (buffer, previous reason)
  std::vector<std::uint64_t> conflict_;  // the decisions that explain the last failure
  std::vector<std::uint64_t> explain_;   // scratch for a raise's explanation
  // Per section: the explanation (an epoch of Propagate's) that already has its column, so
  // that buffers resting on the same section OR it in once.
  std::vector<std::int64_t> explained_in_;
  std::int64_t explanation_ = 0;
  // SearchParams::conflict_ordering: per buffer, how often its placement was part of a
  // failure's explanation at this capacity (kept across Runs; the other capacities' counts in
  // activities_); per level, the buffer placed there or -1.
  std::vector<std::int64_t> activity_;
  std::map<Bytes, std::vector<std::int64_t>> activities_;
  Bytes activity_capacity_ = -1;
  std::vector<int> decision_;
  void Bump(const std::vector<std::uint64_t>& conflict);
};

}  // namespace roam::layout::detail
