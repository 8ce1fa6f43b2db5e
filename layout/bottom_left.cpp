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

bool Searcher::BottomLeft(const std::vector<int>& unplaced) {
  int lo = in_.num_sections, hi = 0;  // the sections of this group
  for (int b : unplaced) {
    lo = std::min(lo, in_.first[U(b)]);
    hi = std::max(hi, in_.last[U(b)]);
  }
  const Mark entry = Marks();
  std::vector<int> candidates, branch, rest;
  std::vector<StateKey> visited;  // this call's states, failed if the call fails
  rest.reserve(unplaced.size());
  // Each pass of the loop is one node: its buffer branches, then (the loop's next pass) the
  // branch that leaves the chosen section empty at the floor.
  for (;;) {
    if (params_.failure_cache) {
      const StateKey key = Key(unplaced, lo, hi);
      if (Failed(key)) break;
      visited.push_back(key);
    }
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
      const Mark mark = Marks();
      // Floor plus remaining load is unchanged where b lies: only the unallocated floor can
      // infer anything here.
      const bool ok = PlaceAndRaise(b, h, unplaced, rest);
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
  for (const StateKey& key : visited) Remember(key);
  return false;
}

StateKey Searcher::Key(const std::vector<int>& unplaced, int lo, int hi) const {
  StateKey key{0, 0};
  for (int b : unplaced) {
    key.first ^= zobrist_[2 * U(b)];
    key.second ^= zobrist_[2 * U(b) + 1];
  }
  // Sections no unplaced buffer covers play no part in what is left to do.
  for (int s = lo; s < hi; ++s) {
    if (remaining_[U(s)] == 0) continue;
    const auto f = static_cast<std::uint64_t>(floor_[U(s)]);
    key.first ^= Mix(section_salt_[2 * U(s)] + f);
    key.second ^= Mix(section_salt_[2 * U(s) + 1] ^ (f * 0x9e3779b97f4a7c15ULL));
  }
  return key;
}

bool Searcher::Failed(const StateKey& key) const {
  const auto it = failed_.find(key);
  return it != failed_.end() && it->second >= capacity_;
}

void Searcher::Remember(const StateKey& key) {
  if (aborted_) return;  // the subtree was cut short: nothing is proven
  if (const auto it = failed_.find(key); it != failed_.end()) {
    it->second = std::max(it->second, capacity_);
  } else if (static_cast<std::int64_t>(failed_.size()) < params_.failure_cache_entries) {
    failed_.emplace(key, capacity_);
  }
}

}  // namespace roam::layout::detail
