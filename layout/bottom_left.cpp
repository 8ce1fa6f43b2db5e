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
#include <bit>
#include <limits>
#include <tuple>

#include "core/types.h"
#include "layout/search.h"

namespace roam::layout::detail {
namespace {

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
  // SearchParams::backjumping: each pass of the loop below is a node one level deeper than the
  // last (the previous one's empty-space branch led to it). accs holds, per pass whose
  // empty-space branch was taken, what explains the failure of its other branches and why they
  // were the only ones; conflict_ the explanation of the failure that ended the loop.
  const int first_level = depth_;
  const bool ordering = use_backjumping_ && params_.conflict_ordering;
  std::vector<std::uint64_t> accs, acc;
  int level = first_level;
  // Each pass of the loop is one node: its buffer branches, then (the loop's next pass) the
  // branch that leaves the chosen section empty at the floor.
  // The passes below change floors only, never which buffers are unplaced.
  const StateKey unplaced_key = params_.failure_cache ? UnplacedKey(unplaced) : StateKey{0, 0};
  for (;; ++level) {
    StateKey key = unplaced_key;
    const Bytes h = LowestFloor(lo, hi, params_.failure_cache ? &key : nullptr);
    work_ += (hi - lo) + static_cast<std::int64_t>(unplaced.size());  // and the scan below
    if (params_.failure_cache) {
      if (Failed(key)) {
        if (use_backjumping_) {
          // The state is fixed by what settled its sections.
          std::fill(conflict_.begin(), conflict_.end(), 0);
          for (int s = lo; s < hi; ++s)
            if (remaining_[U(s)] > 0) OrColumn(conflict_, s);
        }
        break;
      }
      visited.push_back(key);
    }
    candidates.clear();
    bool dead = false;
    for (int b : unplaced) {
      const Bytes fixed = in_.fixed[U(b)];
      const Bytes offset = fixed >= 0 ? fixed : AlignUp(base_[U(b)], in_.align[U(b)]);
      if (offset + in_.size[U(b)] > capacity_ || base_[U(b)] > offset) {
        dead = true;  // no room left under the capacity, or a fixed place taken
        if (use_backjumping_) {
          std::fill(conflict_.begin(), conflict_.end(), 0);
          OrReason(conflict_, b);
        }
        break;
      }
      if (offset == h && base_[U(b)] == h && Free(b)) candidates.push_back(b);
    }
    if (dead) break;
    const int chosen = ChooseSection(candidates, h, lo, hi);
    branch.clear();
    bool forced = false;  // a fixed buffer starts here: nothing else can, nor can the gap
    for (int b : candidates)
      if (in_.first[U(b)] <= chosen && chosen < in_.last[U(b)]) {
        if (in_.fixed[U(b)] >= 0) forced = true;
        branch.push_back(b);
      }
    OrderBranch(branch, level, ordering);
    if (forced) branch.resize(1);
    if (use_backjumping_) acc.assign(U(words_), 0);
    bool jumped = false;
    for (int b : branch) {
      if (Aborting()) return false;
      CountNode(unplaced);
      const Mark mark = Marks();
      // Floor plus remaining load is unchanged where b lies: only the unallocated floor can
      // infer anything here.
      const bool ok = PlaceAndRaise(b, h, unplaced, rest, level);
      if (ordering) decision_[U(level)] = b;
      depth_ = level + 1;
      if (ok && Solve(rest, h, rank_[U(b)])) return true;
      depth_ = first_level;
      Rollback(mark);
      if (aborted_) return false;
      if (use_backjumping_) {
        if (ordering) Bump(conflict_);
        if (!Has(conflict_, level)) {
          jumped = true;  // the failure does not rest on b here: no other branch can fix it
          break;
        }
        Clear(conflict_, level);
        for (int k = 0; k < words_; ++k) acc[U(k)] |= conflict_[U(k)];
      }
    }
    if (jumped) break;
    if (use_backjumping_) {
      // Why the branches tried were the only ones: the section is settled below h, and every
      // other unplaced buffer covering it rests higher (twins of a candidate are the same
      // branch; a fixed one starts where it is fixed).
      OrColumn(acc, chosen);
      for (int c : unplaced)
        if (in_.first[U(c)] <= chosen && chosen < in_.last[U(c)] && in_.fixed[U(c)] < 0 &&
            base_[U(c)] > h)
          OrReason(acc, c);
    }
    if (forced) {
      if (use_backjumping_) conflict_ = acc;
      break;
    }
    // No buffer starts at h over the chosen section: its floor rises to the lowest offset one
    // covering it can still take.
    const Bytes next = RaisedFloor(unplaced, chosen, h);
    if (use_backjumping_) {
      std::fill(explain_.begin(), explain_.end(), 0);
      if (params_.section_inference && floor_[U(chosen)] + remaining_[U(chosen)] >= capacity_) {
        // The section is full: space left empty at h is lost, so this branch fails whatever
        // the floor rises to, because of what settled the section and this decision.
        OrColumn(explain_, chosen);
        explain_[U(Bit(level) / 64)] |= std::uint64_t{1} << (Bit(level) % 64);
      } else {
        // The raise rests on the bases of every unplaced buffer (through reach): taken as
        // the whole path, this decision included.
        AllBelow(explain_, level + 1);
      }
    }
    if (next == kNever) {
      if (use_backjumping_) {
        conflict_ = explain_;
        Clear(conflict_, level);
        for (int k = 0; k < words_; ++k) conflict_[U(k)] |= acc[U(k)];
      }
      break;
    }
    if (Aborting()) return false;
    CountNode(unplaced);
    if (use_backjumping_) accs.insert(accs.end(), acc.begin(), acc.end());
    if (!Raise(chosen, next, unplaced, explain_.data())) {
      for (int s : queue_) queued_[U(s)] = 0;
      queue_.clear();
      ++level;
      break;
    }
    if (use_unallocated_floor_ && !Propagate(unplaced)) {
      ++level;
      break;
    }
  }
  depth_ = first_level;
  Rollback(entry);
  if (use_backjumping_) {
    // The failure ended at pass level - first_level; fold it back through the passes whose
    // empty-space branch led there.
    for (int pass = level - first_level - 1; pass >= 0; --pass) {
      const int at = first_level + pass;
      if (!Has(conflict_, at)) continue;  // that pass fails with it too: nothing else to try
      Clear(conflict_, at);
      for (int k = 0; k < words_; ++k) conflict_[U(k)] |= accs[U(pass * words_ + k)];
    }
  }
  for (const StateKey& key : visited) Remember(key);
  return false;
}

int Searcher::ChooseSection(const std::vector<int>& candidates, Bytes h, int lo, int hi) {
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
  return chosen;
}

void Searcher::OrderBranch(std::vector<int>& branch, int level, bool ordering) {
  if (ordering) {
    // Succeed first: the buffers least often part of a failure's explanation so far first.
    if (activity_.empty()) activity_.assign(in_.size.size(), 0);
    if (decision_.size() <= U(level)) decision_.resize(U(level) + 1, -1);
    decision_[U(level)] = -1;
    std::sort(branch.begin(), branch.end(), [&](int a, int b) {
      return std::tuple(in_.fixed[U(a)] < 0, activity_[U(a)], rank_[U(a)]) <
             std::tuple(in_.fixed[U(b)] < 0, activity_[U(b)], rank_[U(b)]);
    });
  } else {
    std::sort(branch.begin(), branch.end(), [&](int a, int b) {
      return std::pair(in_.fixed[U(a)] < 0, rank_[U(a)]) <
             std::pair(in_.fixed[U(b)] < 0, rank_[U(b)]);
    });
  }
}

Bytes Searcher::RaisedFloor(const std::vector<int>& unplaced, int chosen, Bytes h) const {
  // One that could rest at h now rests on a buffer that does not cover the section (else that
  // one would start at h over it), so it starts at or above the lowest top such a buffer can
  // reach.
  Bytes reach = kNever;
  for (int d : unplaced) {
    if (in_.first[U(d)] <= chosen && chosen < in_.last[U(d)]) continue;
    const Bytes fixed = in_.fixed[U(d)];
    reach = std::min(reach,
                     (fixed >= 0 ? fixed : AlignUp(base_[U(d)], in_.align[U(d)])) + in_.size[U(d)]);
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
  return next;
}

void Searcher::Bump(const std::vector<std::uint64_t>& conflict) {
  for (int w = 0; w < words_; ++w)
    for (std::uint64_t bits = conflict[U(w)]; bits; bits &= bits - 1) {
      const int level = 64 * w + std::countr_zero(bits);
      if (U(level) < decision_.size() && decision_[U(level)] >= 0 && Bit(level) == level) {
        const int b = decision_[U(level)];
        if (placed_[U(b)]) ++activity_[U(b)];
      }
    }
}

StateKey Searcher::UnplacedKey(const std::vector<int>& unplaced) const {
  std::uint64_t first = 0, second = 0;  // locals, not the pair: kept in registers
  for (int b : unplaced) {
    first ^= zobrist_[2 * U(b)];
    second ^= zobrist_[2 * U(b) + 1];
  }
  return {first, second};
}

Bytes Searcher::LowestFloor(int lo, int hi, StateKey* key) const {
  // Sections no unplaced buffer covers play no part in what is left to do.
  Bytes h = kNever;
  if (key == nullptr) {
    for (int s = lo; s < hi; ++s)
      if (remaining_[U(s)] > 0) h = std::min(h, floor_[U(s)]);
    return h;
  }
  std::uint64_t first = key->first, second = key->second;
  for (int s = lo; s < hi; ++s) {
    if (remaining_[U(s)] == 0) continue;
    h = std::min(h, floor_[U(s)]);
    first ^= floor_key_[U(s)].first;
    second ^= floor_key_[U(s)].second;
  }
  *key = {first, second};
  return h;
}

bool Searcher::Failed(const StateKey& key) const { return failed_.Find(key) >= capacity_; }

void Searcher::Remember(const StateKey& key) {
  if (aborted_) return;  // the subtree was cut short: nothing is proven
  failed_.Insert(key, capacity_, params_.failure_cache_entries);
}

void FailureCache::Insert(const StateKey& key, Bytes capacity, std::int64_t max_entries) {
  if (!slots_.empty()) {
    Slot& slot = slots_[Probe(key)];
    if (slot.capacity >= 0) {
      slot.capacity = std::max(slot.capacity, capacity);
      return;
    }
  }
  if (size_ >= max_entries) return;
  if (2 * static_cast<size_t>(size_ + 1) > slots_.size()) {
    std::vector<Slot> old(std::max<size_t>(1024, 2 * slots_.size()));
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.capacity >= 0) slots_[Probe(s.key)] = s;
  }
  slots_[Probe(key)] = {key, capacity};
  ++size_;
}

}  // namespace roam::layout::detail
