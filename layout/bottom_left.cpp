// The bottom-left branching of the layout search (SearchParams::bottom_left, docs/layout.md).
//
// A pushed-down layout (every free buffer rests on a buffer below it or on 0, up to its
// alignment) is built from the bottom up. floor_[s] says how far section s is settled: every
// placed buffer covering s ends at or below it and every unplaced one will start at or above
// it. At the lowest floor h, take one section s at h: either some buffer starts at h covering
// s, and then all of its sections are at h (none is lower, none can be higher: the unplaced
// buffers there start at or above their floors), or none does, and s's floor can rise to the
// lowest offset a buffer covering it can still take. The branches are disjoint and together
// exhaustive, so every pushed-down layout is reached exactly once.
#include <algorithm>
#include <limits>

#include "layout/search.h"

namespace roam::layout::detail {
namespace {

size_t U(int i) { return static_cast<size_t>(i); }

constexpr Bytes kNever = std::numeric_limits<Bytes>::max();

}  // namespace

void Searcher::Queue(int b) {
  for (int s = in_.first[U(b)]; s < in_.last[U(b)]; ++s)
    if (!queued_[U(s)]) queued_[U(s)] = 1, queue_.push_back(s);
}

bool Searcher::Raise(int s, Bytes value, const std::vector<int>& unplaced) {
  floor_trail_.emplace_back(s, floor_[U(s)]);
  floor_[U(s)] = value;
  auto lift = [&](int c) {
    if (placed_[U(c)] || base_[U(c)] >= value) return;
    base_trail_.emplace_back(c, base_[U(c)]);
    base_[U(c)] = value;
    if (use_unallocated_floor_) Queue(c);
  };
  if (!section_buffers_.empty()) {
    for (int c : section_buffers_[U(s)]) lift(c);
  } else {
    for (int c : unplaced)
      if (in_.first[U(c)] <= s && s < in_.last[U(c)]) lift(c);
  }
  return !params_.section_inference || value + remaining_[U(s)] <= capacity_;
}

bool Searcher::Propagate(const std::vector<int>& unplaced) {
  bool ok = true;
  // Drained even after a failure, so that queued_ is clear for the next node.
  for (size_t k = 0; k < queue_.size(); ++k) {
    const int s = queue_[k];
    queued_[U(s)] = 0;
    if (!ok || remaining_[U(s)] == 0) continue;
    Bytes lowest = kNever;
    for (int c : section_buffers_[U(s)]) {
      if (placed_[U(c)]) continue;
      const Bytes f = in_.fixed[U(c)];
      lowest = std::min(lowest, f >= 0 ? f : AlignUp(base_[U(c)], in_.align[U(c)]));
    }
    if (lowest != kNever && lowest > floor_[U(s)]) ok = Raise(s, lowest, unplaced);
  }
  queue_.clear();
  return ok;
}

bool Searcher::BottomLeft(const std::vector<int>& unplaced) {
  int lo = in_.num_sections, hi = 0;  // the sections of this group
  for (int b : unplaced) {
    lo = std::min(lo, in_.first[U(b)]);
    hi = std::max(hi, in_.last[U(b)]);
  }
  const Mark entry = Marks();
  std::vector<int> candidates, branch, rest;
  rest.reserve(unplaced.size());
  // Each pass of the loop is one node: its buffer branches, then (the loop's next pass) the
  // branch that leaves the chosen section empty at the floor.
  for (;;) {
    Bytes h = kNever;
    for (int s = lo; s < hi; ++s)
      if (remaining_[U(s)] > 0) h = std::min(h, floor_[U(s)]);
    candidates.clear();
    bool dead = false;
    for (int b : unplaced) {
      const Bytes fixed = in_.fixed[U(b)];
      const Bytes offset = fixed >= 0 ? fixed : AlignUp(base_[U(b)], in_.align[U(b)]);
      if (offset + in_.size[U(b)] > capacity_ || base_[U(b)] > offset) {
        dead = true;  // no room left under the capacity, or a fixed place taken
        break;
      }
      if (offset == h && base_[U(b)] == h && Free(b)) candidates.push_back(b);
    }
    if (dead) break;
    // The section to branch on.
    int chosen = -1;
    if (params_.fewest_candidates) {
      std::fill(count_.begin() + lo, count_.begin() + hi + 1, 0);
      for (int b : candidates) ++count_[U(in_.first[U(b)])], --count_[U(in_.last[U(b)])];
      int running = 0, fewest = std::numeric_limits<int>::max();
      for (int s = lo; s < hi; ++s) {
        running += count_[U(s)];
        if (remaining_[U(s)] > 0 && floor_[U(s)] == h && running < fewest)
          fewest = running, chosen = s;
      }
    } else {
      for (int s = lo; s < hi && chosen < 0; ++s)
        if (remaining_[U(s)] > 0 && floor_[U(s)] == h) chosen = s;
    }
    branch.clear();
    bool forced = false;  // a fixed buffer starts here: nothing else can, nor can the gap
    for (int b : candidates)
      if (in_.first[U(b)] <= chosen && chosen < in_.last[U(b)]) {
        if (in_.fixed[U(b)] >= 0) forced = true;
        branch.push_back(b);
      }
    std::sort(branch.begin(), branch.end(), [&](int a, int b) {
      return std::pair(in_.fixed[U(a)] < 0, rank_[U(a)]) <
             std::pair(in_.fixed[U(b)] < 0, rank_[U(b)]);
    });
    if (forced) branch.resize(1);
    for (int b : branch) {
      if (Aborting()) return false;
      ++nodes_;
      const Bytes top = h + in_.size[U(b)];
      const Mark mark = Marks();
      Place(b, h);
      for (int s = in_.first[U(b)]; s < in_.last[U(b)]; ++s) {
        floor_trail_.emplace_back(s, floor_[U(s)]);
        floor_[U(s)] = top;  // floor + remaining unchanged: nothing to infer here
      }
      if (use_unallocated_floor_) Queue(b);
      rest.clear();
      for (int j : unplaced) {
        if (j == b) continue;
        rest.push_back(j);
        if (base_[U(j)] < top && Overlap(b, j)) {
          base_trail_.emplace_back(j, base_[U(j)]);
          base_[U(j)] = top;
          if (use_unallocated_floor_) Queue(j);
        }
      }
      const bool ok = !use_unallocated_floor_ || Propagate(rest);
      if (ok && Solve(rest, h, rank_[U(b)])) return true;
      Rollback(mark);
      if (aborted_) return false;
    }
    if (forced) break;
    // No buffer starts at h over the chosen section: its floor rises to the lowest offset one
    // covering it can still take. One that could rest at h now rests on a buffer that does not
    // cover the section (else that one would start at h over it), so it starts at or above
    // the lowest top such a buffer can reach.
    Bytes reach = kNever;
    for (int d : unplaced) {
      if (in_.first[U(d)] <= chosen && chosen < in_.last[U(d)]) continue;
      const Bytes fixed = in_.fixed[U(d)];
      reach = std::min(
          reach, (fixed >= 0 ? fixed : AlignUp(base_[U(d)], in_.align[U(d)])) + in_.size[U(d)]);
    }
    Bytes next = kNever;
    for (int c : unplaced) {
      if (in_.first[U(c)] > chosen || chosen >= in_.last[U(c)]) continue;
      const Bytes fixed = in_.fixed[U(c)];
      if (fixed >= 0) {
        if (fixed > h) next = std::min(next, fixed);
        continue;  // at h it was a candidate (forced above) or is dead
      }
      const Bytes offset = AlignUp(base_[U(c)], in_.align[U(c)]);
      if (offset > h) {
        next = std::min(next, offset);
      } else if (reach != kNever) {
        next = std::min(next, AlignUp(reach, in_.align[U(c)]));
      }
    }
    if (next == kNever) break;
    if (Aborting()) return false;
    ++nodes_;
    if (!Raise(chosen, next, unplaced)) {
      for (int s : queue_) queued_[U(s)] = 0;
      queue_.clear();
      break;
    }
    if (use_unallocated_floor_ && !Propagate(unplaced)) break;
  }
  Rollback(entry);
  return false;
}

}  // namespace roam::layout::detail
