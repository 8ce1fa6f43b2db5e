#include "merge/merge.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "layout/layout.h"

namespace roam {
namespace {

size_t U(int i) { return static_cast<size_t>(i); }

bool ShareAStep(const Interval& a, const Interval& b) {
  return a.start <= b.end && b.start <= a.end;
}

bool Overlap(const Interval& a, Bytes oa, const Interval& b, Bytes ob) {
  return ShareAStep(a, b) && oa < ob + b.size && ob < oa + a.size;
}

// For each interval, the others sharing a step with it (sorted by start, swept once).
std::vector<std::vector<int>> TimeNeighbours(std::span<const Interval> intervals) {
  const int n = static_cast<int>(intervals.size());
  std::vector<int> by_start(U(n));
  std::iota(by_start.begin(), by_start.end(), 0);
  std::sort(by_start.begin(), by_start.end(),
            [&](int a, int b) { return intervals[U(a)].start < intervals[U(b)].start; });
  std::vector<std::vector<int>> nb(U(n));
  for (size_t i = 0; i < by_start.size(); ++i) {
    const int a = by_start[i];
    for (size_t j = i + 1; j < by_start.size(); ++j) {
      const int b = by_start[j];
      if (intervals[U(b)].start > intervals[U(a)].end) break;
      if (intervals[U(a)].size == 0 || intervals[U(b)].size == 0) continue;
      nb[U(a)].push_back(b);
      nb[U(b)].push_back(a);
    }
  }
  return nb;
}

// Lowest aligned offset >= floor where `size` bytes fit among the occupied ranges.
Bytes LowestGap(std::vector<std::pair<Bytes, Bytes>>& occupied, Bytes size, Bytes floor,
                Bytes alignment) {
  std::sort(occupied.begin(), occupied.end());
  Bytes candidate = AlignUp(floor, alignment);
  for (const auto& [lo, hi] : occupied) {
    if (hi <= candidate) continue;
    if (lo >= candidate + size) break;
    candidate = AlignUp(hi, alignment);
  }
  return candidate;
}

// The lifted buffers re-placed by the layout search, every buffer sharing a step with one of
// them fixed at its stacked offset (the others cannot interfere), best-fit's reassignment as
// the warm start. Empty when the search cannot be used (e.g. sizes or offsets that are not
// multiples of the alignment) or finds nothing lower.
std::vector<Bytes> SearchReassignment(std::span<const Interval> intervals,
                                      const std::vector<std::vector<int>>& nb,
                                      std::span<const int> lifted, std::span<const Bytes> stacked,
                                      std::span<const Bytes> best_fit, Bytes alignment,
                                      const MergeParams& params) {
  const int n = static_cast<int>(intervals.size());
  std::vector<int> local(U(n), -1), global;
  for (int b : lifted) local[U(b)] = static_cast<int>(global.size()), global.push_back(b);
  for (int b : lifted)
    for (int o : nb[U(b)])
      if (local[U(o)] < 0) local[U(o)] = static_cast<int>(global.size()), global.push_back(o);
  std::vector<Interval> sub;
  std::vector<Bytes> warm, fixed;
  for (size_t k = 0; k < global.size(); ++k) {
    const int b = global[k];
    sub.push_back(intervals[U(b)]);
    warm.push_back(best_fit[U(b)]);
    fixed.push_back(k < lifted.size() ? -1 : stacked[U(b)]);
  }
  layout::LayoutParams lp;
  lp.fixed_offsets = fixed;
  lp.max_nodes = params.search_max_nodes;
  lp.time_limit_s = params.search_time_limit_s;
  try {
    const layout::LayoutResult r = layout::SolveLayout(sub, alignment, lp, warm);
    if (r.call != layout::LayoutCall::kOk || r.height >= r.warm_start_height) return {};
    std::vector<Bytes> offsets(best_fit.begin(), best_fit.end());
    for (size_t k = 0; k < lifted.size(); ++k) offsets[U(global[k])] = r.offsets[k];
    return offsets;
  } catch (const std::invalid_argument&) {
    return {};  // not a problem the search takes (unaligned sizes or offsets): best-fit stands
  }
}

}  // namespace

std::vector<OpId> ConcatenateOrders(std::span<const std::vector<OpId>> leaf_orders, int num_ops) {
  std::vector<OpId> order;
  order.reserve(U(num_ops));
  std::vector<char> seen(U(num_ops), 0);
  for (const auto& part : leaf_orders) {
    for (OpId op : part) {
      if (op < 0 || op >= num_ops || seen[U(op)])
        throw std::logic_error("merge: op " + std::to_string(op) +
                               " is out of range or appears in two leaves");
      seen[U(op)] = 1;
      order.push_back(op);
    }
  }
  if (static_cast<int>(order.size()) != num_ops)
    throw std::logic_error("merge: the leaves hold " + std::to_string(order.size()) + " of " +
                           std::to_string(num_ops) + " ops");
  return order;
}

MergeResult MergeLayouts(std::span<const Interval> intervals, std::span<const LeafLayout> leaves,
                         Bytes alignment, const MergeParams& params) {
  const int n = static_cast<int>(intervals.size());
  std::vector<int> leaf_of(U(n), -1);
  for (int l = 0; l < static_cast<int>(leaves.size()); ++l) {
    const LeafLayout& leaf = leaves[U(l)];
    if (leaf.offsets.size() != leaf.buffers.size() || leaf.activation.size() != leaf.buffers.size())
      throw std::logic_error("merge: leaf " + std::to_string(l) + " has mismatched arrays");
    for (int b : leaf.buffers) {
      if (b < 0 || b >= n || leaf_of[U(b)] >= 0)
        throw std::logic_error("merge: buffer " + std::to_string(b) +
                               " is out of range or laid out by two leaves");
      leaf_of[U(b)] = l;
    }
  }
  for (int b = 0; b < n; ++b)
    if (leaf_of[U(b)] < 0)
      throw std::logic_error("merge: buffer " + std::to_string(b) + " is laid out by no leaf");

  // Eq 9: leaves whose activations live longest go lowest. A leaf's activations are all freed
  // in it, so the earliest-created one marks how long the stack under it must stay; a leaf with
  // none is placed where its own steps end.
  const int nl = static_cast<int>(leaves.size());
  std::vector<Step> key(U(nl), 0);
  for (int l = 0; l < nl; ++l) {
    Step first_activation = -1, last_end = 0;
    for (size_t k = 0; k < leaves[U(l)].buffers.size(); ++k) {
      const Interval& iv = intervals[U(leaves[U(l)].buffers[k])];
      last_end = std::max(last_end, iv.end);
      if (!leaves[U(l)].activation[k]) continue;
      first_activation = first_activation < 0 ? iv.start : std::min(first_activation, iv.start);
    }
    key[U(l)] = first_activation >= 0 ? first_activation : last_end;
  }
  std::vector<int> stack(U(nl));
  std::iota(stack.begin(), stack.end(), 0);
  std::stable_sort(stack.begin(), stack.end(), [&](int a, int b) { return key[U(a)] < key[U(b)]; });

  const auto nb = TimeNeighbours(intervals);
  MergeResult result;
  result.offsets.assign(U(n), 0);
  std::vector<char> placed(U(n), 0);
  // A leaf's base: the lowest offset at which its activations overlap no activation already
  // stacked (ROAM's base_i; with nested activations exactly the sum below it).
  std::vector<char> is_activation(U(n), 0);
  for (const LeafLayout& leaf : leaves)
    for (size_t k = 0; k < leaf.buffers.size(); ++k)
      is_activation[U(leaf.buffers[k])] = leaf.activation[k];
  for (int l : stack) {
    const LeafLayout& leaf = leaves[U(l)];
    std::vector<std::pair<Bytes, Bytes>> forbidden;  // bases that would make an overlap
    for (size_t k = 0; k < leaf.buffers.size(); ++k) {
      if (!leaf.activation[k]) continue;
      const int b = leaf.buffers[k];
      for (int o : nb[U(b)]) {
        if (!placed[U(o)] || !is_activation[U(o)]) continue;
        // base + off_k overlaps [off_o, off_o + size_o) unless it is clear of it.
        const Bytes lo = result.offsets[U(o)] - leaf.offsets[k] - intervals[U(b)].size + 1;
        const Bytes hi = result.offsets[U(o)] + intervals[U(o)].size - leaf.offsets[k];
        if (hi > 0) forbidden.emplace_back(std::max<Bytes>(lo, 0), hi);
      }
    }
    Bytes base = 0;
    if (!forbidden.empty()) {
      // Lowest aligned base outside every forbidden range [lo, hi).
      std::sort(forbidden.begin(), forbidden.end());
      for (const auto& [lo, hi] : forbidden) {
        if (hi <= base) continue;
        if (lo > base) break;
        base = AlignUp(hi, alignment);
      }
    }
    for (size_t k = 0; k < leaf.buffers.size(); ++k) {
      result.offsets[U(leaf.buffers[k])] = base + leaf.offsets[k];
      placed[U(leaf.buffers[k])] = 1;
    }
  }
  result.stats.stacked_height = LayoutHeight(intervals, result.offsets);

  // Conflicts: buffers of different leaves sharing a step and an address. Of each pair, the
  // temporary goes (activations stay at the bottom); between two temporaries the smaller and
  // shorter-lived one. The chosen ones are lifted out and re-placed best-fit, largest first.
  std::vector<char> lifted(U(n), 0);
  auto weight = [&](int b) {
    return std::pair(intervals[U(b)].size,
                     static_cast<Bytes>(intervals[U(b)].end - intervals[U(b)].start));
  };
  for (int a = 0; a < n; ++a) {
    for (int b : nb[U(a)]) {
      if (b <= a || leaf_of[U(a)] == leaf_of[U(b)] || lifted[U(a)] || lifted[U(b)]) continue;
      if (!Overlap(intervals[U(a)], result.offsets[U(a)], intervals[U(b)], result.offsets[U(b)]))
        continue;
      ++result.stats.conflicts;
      int move = weight(a) < weight(b) ? a : b;
      if (is_activation[U(a)] != is_activation[U(b)]) move = is_activation[U(a)] ? b : a;
      lifted[U(move)] = 1;
    }
  }
  std::vector<int> to_place;
  for (int b = 0; b < n; ++b)
    if (lifted[U(b)]) to_place.push_back(b);
  const std::vector<Bytes> stacked = result.offsets;  // lifted ones still where they conflict
  std::sort(to_place.begin(), to_place.end(), [&](int a, int b) { return weight(a) > weight(b); });
  for (int b : to_place) {
    std::vector<std::pair<Bytes, Bytes>> occupied;
    for (int o : nb[U(b)])
      if (!lifted[U(o)])
        occupied.emplace_back(result.offsets[U(o)], result.offsets[U(o)] + intervals[U(o)].size);
    result.offsets[U(b)] = LowestGap(occupied, intervals[U(b)].size, 0, alignment);
    lifted[U(b)] = 0;
  }
  result.stats.reassigned = static_cast<int>(to_place.size());
  std::vector<Bytes> searched;
  if (params.search_reassignment && !to_place.empty())
    searched =
        SearchReassignment(intervals, nb, to_place, stacked, result.offsets, alignment, params);
  if (params.slide_down) SlideDown(intervals, result.offsets, alignment);
  result.stats.height = result.stats.best_fit_height = LayoutHeight(intervals, result.offsets);
  if (!searched.empty()) {
    if (params.slide_down) SlideDown(intervals, searched, alignment);
    const Bytes height = LayoutHeight(intervals, searched);
    if (height < result.stats.height) {
      result.offsets = std::move(searched);
      result.stats.height = height;
      result.stats.by_search = true;
    }
  }
  return result;
}

void SlideDown(std::span<const Interval> intervals, std::vector<Bytes>& offsets, Bytes alignment) {
  const int n = static_cast<int>(intervals.size());
  const auto nb = TimeNeighbours(intervals);
  std::vector<int> by_offset(U(n));
  std::iota(by_offset.begin(), by_offset.end(), 0);
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [&](int a, int b) { return offsets[U(a)] < offsets[U(b)]; });
  for (int b : by_offset) {
    std::vector<std::pair<Bytes, Bytes>> occupied;
    for (int o : nb[U(b)])
      occupied.emplace_back(offsets[U(o)], offsets[U(o)] + intervals[U(o)].size);
    const Bytes lowest = LowestGap(occupied, intervals[U(b)].size, 0, alignment);
    if (lowest < offsets[U(b)]) offsets[U(b)] = lowest;
  }
}

}  // namespace roam
