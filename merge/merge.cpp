#include "merge/merge.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>

#include "core/placed_by_time.h"
#include "core/types.h"
#include "layout/layout.h"

namespace roam {
namespace {

// The intervals sharing a step with any of `of` (not themselves), by one sweep over the
// intervals sorted by start against the union of `of`'s lifetimes: O(n log n + output).
std::vector<int> TimeNeighboursOf(std::span<const Interval> intervals, std::span<const int> of) {
  std::vector<std::pair<Step, Step>> spans;
  for (int b : of) spans.emplace_back(intervals[U(b)].start, intervals[U(b)].end);
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<Step, Step>> merged;
  for (const auto& sp : spans) {
    if (!merged.empty() && sp.first <= merged.back().second)
      merged.back().second = std::max(merged.back().second, sp.second);
    else
      merged.push_back(sp);
  }
  std::vector<char> in(intervals.size(), 0);
  for (int b : of) in[U(b)] = 1;
  std::vector<int> out;
  for (size_t i = 0; i < intervals.size(); ++i) {
    if (in[i] || intervals[i].size == 0) continue;
    // The first merged span ending at or after this interval's start.
    auto it = std::lower_bound(merged.begin(), merged.end(), intervals[i].start,
                               [](const auto& sp, Step step) { return sp.second < step; });
    if (it != merged.end() && it->first <= intervals[i].end) out.push_back(static_cast<int>(i));
  }
  return out;
}

// The lifted buffers re-placed by the layout search, every buffer sharing a step with one of
// them fixed at its stacked offset (the others cannot interfere), best-fit's reassignment as
// the warm start. Empty when the search cannot be used (e.g. sizes or offsets that are not
// multiples of the alignment) or finds nothing lower.
std::vector<Bytes> SearchReassignment(std::span<const Interval> intervals,
                                      std::span<const int> lifted, std::span<const Bytes> stacked,
                                      std::span<const Bytes> best_fit, Bytes alignment,
                                      const MergeParams& params) {
  std::vector<int> global(lifted.begin(), lifted.end());
  const std::vector<int> neighbours = TimeNeighboursOf(intervals, lifted);
  if (global.size() + neighbours.size() > U(params.search_max_buffers)) return {};
  global.insert(global.end(), neighbours.begin(), neighbours.end());
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
  lp.stop = params.stop;
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

// Per interval, the most bytes live at any step of its lifetime (a sparse table of the memory
// profile's range maxima: O(steps log steps)).
std::vector<Bytes> BusiestStep(std::span<const Interval> intervals) {
  Step steps = 0;
  for (const Interval& in : intervals) steps = std::max(steps, in.end + 1);
  std::vector<Bytes> delta(U(steps) + 1, 0);
  for (const Interval& in : intervals) {
    delta[U(in.start)] += in.size;
    delta[U(in.end) + 1] -= in.size;
  }
  std::vector<std::vector<Bytes>> table(1, std::vector<Bytes>(U(steps)));
  Bytes live = 0;
  for (Step t = 0; t < steps; ++t) table[0][U(t)] = live += delta[U(t)];
  for (Step width = 2; width <= steps; width *= 2) {
    const std::vector<Bytes>& prev = table.back();
    std::vector<Bytes> next(U(steps - width + 1));
    for (Step t = 0; t + width <= steps; ++t)
      next[U(t)] = std::max(prev[U(t)], prev[U(t + width / 2)]);
    table.push_back(std::move(next));
  }
  std::vector<Bytes> out(intervals.size(), 0);
  for (size_t i = 0; i < intervals.size(); ++i) {
    const Step a = intervals[i].start, b = intervals[i].end;
    int level = 0;
    while ((Step{2} << level) <= b - a + 1) ++level;
    const Step width = Step{1} << level;
    out[i] = std::max(table[U(level)][U(a)], table[U(level)][U(b - width + 1)]);
  }
  return out;
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

  MergeResult result;
  result.offsets.assign(U(n), 0);
  std::vector<char> is_activation(U(n), 0);
  for (const LeafLayout& leaf : leaves)
    for (size_t k = 0; k < leaf.buffers.size(); ++k)
      is_activation[U(leaf.buffers[k])] = leaf.activation[k];
  // A leaf's base: the lowest offset at which none of its buffers overlaps an activation
  // already stacked (ROAM's base_i; with nested activations exactly the sum below it). A leaf
  // without activations (the forward's, the optimizer's) so sits on the activations live
  // during it instead of under them.
  PlacedByTime stacked_activations(intervals);
  std::vector<std::pair<Bytes, Bytes>> forbidden;  // bases that would make an overlap
  for (int l : stack) {
    const LeafLayout& leaf = leaves[U(l)];
    forbidden.clear();
    for (size_t k = 0; k < leaf.buffers.size(); ++k) {
      const Interval& in = intervals[U(leaf.buffers[k])];
      if (in.size == 0) continue;
      // base + off_k overlaps [lo, hi) unless it is clear of it.
      for (const auto& [lo, hi] : stacked_activations.Overlapping(in))
        if (hi - leaf.offsets[k] > 0)
          forbidden.emplace_back(std::max<Bytes>(lo - leaf.offsets[k] - in.size + 1, 0),
                                 hi - leaf.offsets[k]);
    }
    Bytes base = 0;
    std::sort(forbidden.begin(), forbidden.end());
    for (const auto& [lo, hi] : forbidden) {
      if (hi <= base) continue;
      if (lo > base) break;
      base = AlignUp(hi, alignment);
    }
    for (size_t k = 0; k < leaf.buffers.size(); ++k) {
      const int b = leaf.buffers[k];
      result.offsets[U(b)] = base + leaf.offsets[k];
      if (leaf.activation[k] && intervals[U(b)].size > 0)
        stacked_activations.Insert(intervals[U(b)], result.offsets[U(b)]);
    }
  }
  result.stats.stacked_height = LayoutHeight(intervals, result.offsets);

  // Conflicts: buffers of different leaves sharing a step and an address. Of each pair, the
  // temporary goes (activations stay at the bottom); between two temporaries the smaller and
  // shorter-lived one. One sweep over the buffers by start keeps the live ones that stay in an
  // address-ordered set, which never overlaps, so a newcomer meets at most its neighbours
  // there; the ones chosen are lifted out and re-placed, largest first, at the lowest gap.
  std::vector<char> lifted(U(n), 0);
  auto weight = [&](int b) {
    return std::pair(intervals[U(b)].size,
                     static_cast<Bytes>(intervals[U(b)].end - intervals[U(b)].start));
  };
  // A buffer live where the live bytes are highest has the least room to move: a hole it
  // leaves there is one nothing else can fill. So after activations, the busiest step of a
  // buffer's lifetime decides which of two stays.
  const std::vector<Bytes> busiest = BusiestStep(intervals);
  auto stronger = [&](int a, int b) {
    if (is_activation[U(a)] != is_activation[U(b)]) return is_activation[U(a)] != 0;
    if (busiest[U(a)] != busiest[U(b)]) return busiest[U(a)] > busiest[U(b)];
    return weight(a) > weight(b);
  };
  std::vector<int> by_start(U(n));
  std::iota(by_start.begin(), by_start.end(), 0);
  std::stable_sort(by_start.begin(), by_start.end(), [&](int a, int b) {
    if (intervals[U(a)].start != intervals[U(b)].start)
      return intervals[U(a)].start < intervals[U(b)].start;
    return stronger(a, b);
  });
  std::set<std::pair<Bytes, int>> live;  // kept and live: offset, buffer
  std::set<std::pair<Step, int>> ends;   // their last steps
  std::vector<int> hits;
  for (int b : by_start) {
    const Interval& in = intervals[U(b)];
    if (in.size == 0) continue;
    while (!ends.empty() && ends.begin()->first < in.start) {
      const int e = ends.begin()->second;
      live.erase({result.offsets[U(e)], e});
      ends.erase(ends.begin());
    }
    const Bytes lo = result.offsets[U(b)], hi = lo + in.size;
    hits.clear();
    auto it = live.lower_bound({lo, -1});
    if (it != live.begin()) {
      const auto prev = std::prev(it);
      if (result.offsets[U(prev->second)] + intervals[U(prev->second)].size > lo)
        hits.push_back(prev->second);
    }
    for (; it != live.end() && it->first < hi; ++it) hits.push_back(it->second);
    // Same leaf: the leaf's own layout is valid, so such a pair cannot overlap.
    bool keep = true;
    for (int o : hits) {
      ++result.stats.conflicts;
      if (leaf_of[U(o)] == leaf_of[U(b)])
        throw std::logic_error("merge: leaf " + std::to_string(leaf_of[U(b)]) +
                               " has overlapping buffers");
      if (!stronger(b, o)) keep = false;
    }
    if (!keep) {
      lifted[U(b)] = 1;
      continue;
    }
    for (int o : hits) {  // all weaker than the newcomer: they go
      lifted[U(o)] = 1;
      live.erase({result.offsets[U(o)], o});
      ends.erase({intervals[U(o)].end, o});
    }
    live.insert({lo, b});
    ends.insert({in.end, b});
  }
  std::vector<int> to_place;
  for (int b = 0; b < n; ++b)
    if (lifted[U(b)]) to_place.push_back(b);
  const std::vector<Bytes> stacked = result.offsets;  // lifted ones still where they conflict
  {
    PlacedByTime placed(intervals);
    for (int b = 0; b < n; ++b)
      if (!lifted[U(b)] && intervals[U(b)].size > 0) placed.Insert(intervals[U(b)], stacked[U(b)]);
    std::sort(to_place.begin(), to_place.end(),
              [&](int a, int b) { return weight(a) > weight(b); });
    for (int b : to_place) {
      result.offsets[U(b)] =
          LowestFit(placed.Overlapping(intervals[U(b)]), intervals[U(b)].size, 0, alignment);
      placed.Insert(intervals[U(b)], result.offsets[U(b)]);
    }
  }
  result.stats.reassigned = static_cast<int>(to_place.size());
  // The search starts from best-fit's reassignment as it was before sliding down; it runs only
  // when that, slid down, is above max-live (nothing can be lower than max-live).
  const std::vector<Bytes> best_fit = result.offsets;
  if (params.slide_down) SlideDown(intervals, result.offsets, alignment);
  result.stats.height = result.stats.best_fit_height = LayoutHeight(intervals, result.offsets);
  if (params.search_reassignment && !to_place.empty() &&
      result.stats.height > MaxLiveBytes(intervals)) {
    std::vector<Bytes> searched =
        SearchReassignment(intervals, to_place, stacked, best_fit, alignment, params);
    if (!searched.empty()) {
      if (params.slide_down) SlideDown(intervals, searched, alignment);
      const Bytes height = LayoutHeight(intervals, searched);
      if (height < result.stats.height) {
        result.offsets = std::move(searched);
        result.stats.height = height;
        result.stats.by_search = true;
      }
    }
  }
  return result;
}

// Buffers by rising offset, each at the lowest gap left by those already moved: a buffer not
// yet moved sits at or above this one's offset, so in a valid layout it cannot block a gap
// below it (it would have overlapped this buffer where it is).
void SlideDown(std::span<const Interval> intervals, std::vector<Bytes>& offsets, Bytes alignment) {
  const int n = static_cast<int>(intervals.size());
  std::vector<int> by_offset(U(n));
  std::iota(by_offset.begin(), by_offset.end(), 0);
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [&](int a, int b) { return offsets[U(a)] < offsets[U(b)]; });
  PlacedByTime placed(intervals);
  for (int b : by_offset) {
    if (intervals[U(b)].size == 0) continue;
    const Bytes lowest =
        LowestFit(placed.Overlapping(intervals[U(b)]), intervals[U(b)].size, 0, alignment);
    if (lowest < offsets[U(b)]) offsets[U(b)] = lowest;
    placed.Insert(intervals[U(b)], offsets[U(b)]);
  }
}

}  // namespace roam
