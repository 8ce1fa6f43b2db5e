// SolveLayout: warm start, time-disjoint partitions, and the capacity search over the
// depth-first search of search.cpp (docs/layout.md).
#include "layout/layout.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <new>
#include <numeric>
#include <random>
#include <stdexcept>
#include <tuple>

#include "core/deadline.h"
#include "core/placement.h"
#include "core/types.h"
#include "layout/search.h"

namespace roam::layout {
namespace {

using Clock = std::chrono::steady_clock;

// Empty when valid; otherwise names the first problem.
std::string CheckOffsets(std::span<const Interval> intervals, std::span<const Bytes> offsets,
                         std::span<const Bytes> align, std::span<const Bytes> fixed) {
  if (offsets.size() != intervals.size())
    return std::to_string(offsets.size()) + " offsets for " + std::to_string(intervals.size()) +
           " buffers";
  for (size_t i = 0; i < intervals.size(); ++i) {
    if (offsets[i] < 0 || offsets[i] % align[i] != 0)
      return "buffer " + std::to_string(i) + " has a negative or unaligned offset";
    if (fixed[i] >= 0 && intervals[i].size > 0 && offsets[i] != fixed[i])
      return "buffer " + std::to_string(i) + " is not at its fixed offset " +
             std::to_string(fixed[i]);
  }
  // Sweep by start: only buffers live at the same time can collide.
  std::vector<int> order;
  for (size_t i = 0; i < intervals.size(); ++i)
    if (intervals[i].size > 0) order.push_back(static_cast<int>(i));
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return intervals[U(a)].start < intervals[U(b)].start; });
  std::vector<int> live;
  for (int b : order) {
    std::erase_if(live, [&](int a) { return intervals[U(a)].end < intervals[U(b)].start; });
    for (int a : live)
      if (offsets[U(a)] < offsets[U(b)] + intervals[U(b)].size &&
          offsets[U(b)] < offsets[U(a)] + intervals[U(a)].size)
        return "buffers " + std::to_string(a) + " and " + std::to_string(b) + " overlap";
    live.push_back(b);
  }
  return "";
}

Bytes Height(std::span<const Interval> intervals, std::span<const Bytes> offsets,
             std::span<const int> buffers) {
  Bytes h = 0;
  for (int b : buffers) h = std::max(h, offsets[U(b)] + intervals[U(b)].size);
  return h;
}

// One time-disjoint group with its best layout so far and what is proven about it.
struct Partition {
  std::vector<int> buffers;  // sorted by first section
  Bytes height = 0;          // of the best layout found (in SolveLayout's `best`)
  Bytes infeasible_at = -1;  // the largest capacity proven too small
};

enum class Probe { kFits, kInfeasible, kUnknown };

// One alignment per buffer (the common one unless the params give each its own), after
// checking every size and lifetime against them.
std::vector<Bytes> Alignments(std::span<const Interval> intervals, Bytes alignment,
                              const LayoutParams& params) {
  const int n = static_cast<int>(intervals.size());
  if (alignment <= 0) throw std::invalid_argument("layout: alignment must be positive");
  std::vector<Bytes> align(U(n), alignment);
  if (!params.buffer_alignments.empty()) {
    if (params.buffer_alignments.size() != U(n))
      throw std::invalid_argument("layout: " + std::to_string(params.buffer_alignments.size()) +
                                  " alignments for " + std::to_string(n) + " buffers");
    for (int i = 0; i < n; ++i) {
      if (params.buffer_alignments[U(i)] <= 0)
        throw std::invalid_argument("layout: buffer " + std::to_string(i) +
                                    " has a non-positive alignment");
      align[U(i)] = params.buffer_alignments[U(i)];
    }
  }
  for (int i = 0; i < n; ++i) {
    const Interval& in = intervals[U(i)];
    if (in.size < 0 || in.start > in.end ||
        (params.buffer_alignments.empty() && in.size % alignment != 0))
      throw std::invalid_argument("layout: buffer " + std::to_string(i) +
                                  " has a negative or unaligned size or an empty lifetime");
  }
  return align;
}

// The layout the search improves on: the caller's warm start (checked), else the lower of the
// largest-first greedy honouring the fixed offsets and, where nothing is fixed or aligned on
// its own, best-fit. Zero-size buffers sit at their fixed offset or 0.
std::vector<Bytes> StartLayout(std::span<const Interval> intervals, Bytes alignment,
                               std::span<const Bytes> align, std::span<const Bytes> fixed,
                               std::optional<std::span<const Bytes>> warm_start) {
  std::vector<Bytes> best;
  if (warm_start) {
    best.assign(warm_start->begin(), warm_start->end());
    if (std::string problem = CheckOffsets(intervals, best, align, fixed); !problem.empty())
      throw std::invalid_argument("layout: invalid warm start: " + problem);
  } else {
    best = LargestFirstLayout(intervals, align, fixed);
    if (std::string problem = CheckOffsets(intervals, best, align, fixed); !problem.empty())
      throw std::invalid_argument("layout: fixed offsets collide: " + problem);
    const bool uniform =
        std::all_of(align.begin(), align.end(), [&](Bytes a) { return a == alignment; });
    if (uniform && std::all_of(fixed.begin(), fixed.end(), [](Bytes f) { return f < 0; })) {
      std::vector<Bytes> best_fit = BestFitLayout(intervals, alignment);
      if (LayoutHeight(intervals, best_fit) < LayoutHeight(intervals, best)) best = best_fit;
    }
  }
  for (size_t i = 0; i < intervals.size(); ++i)
    if (intervals[i].size == 0) best[i] = std::max<Bytes>(fixed[i], 0);
  return best;
}

// The search's preorders: MiniMalloc's (or the first only), then the restarts, the first
// preorder with its ranks shuffled within a window, seeded by position so that the call stays
// deterministic.
std::vector<std::vector<int>> AllPreorders(const detail::Instance& instance,
                                           const SearchParams& search, int n) {
  std::vector<std::vector<int>> preorders =
      detail::Preorders(instance, search.minimalloc_preorders);
  if (!search.multiple_preorders) preorders.resize(1);
  for (int k = 0; k < search.random_preorders; ++k) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(k) + 1);
    const std::vector<int>& first = preorders.front();
    std::uniform_real_distribution<double> noise(0.0, std::max(4.0, 0.25 * n));
    std::vector<std::pair<double, int>> keyed;
    for (int b = 0; b < n; ++b) keyed.emplace_back(first[U(b)] + noise(rng), b);
    std::sort(keyed.begin(), keyed.end());
    std::vector<int> rank(U(n));
    for (int r = 0; r < n; ++r) rank[U(keyed[U(r)].second)] = r;
    preorders.push_back(std::move(rank));
  }
  return preorders;
}

}  // namespace

std::string_view ToString(LayoutStatus status) {
  switch (status) {
    case LayoutStatus::kOptimal:
      return "optimal";
    case LayoutStatus::kFeasible:
      return "feasible";
    case LayoutStatus::kInfeasible:
      return "infeasible";
    case LayoutStatus::kTimeLimit:
      return "time limit";
  }
  return "?";
}

std::string_view ToString(LayoutCall call) { return call == LayoutCall::kOk ? "ok" : "error"; }

std::vector<Bytes> FixedOffsets(std::span<const Interval> intervals, const LayoutParams& params) {
  const int n = static_cast<int>(intervals.size());
  std::vector<Bytes> fixed(U(n), -1);
  if (!params.fixed_offsets.empty()) {
    if (params.fixed_offsets.size() != U(n))
      throw std::invalid_argument("layout: " + std::to_string(params.fixed_offsets.size()) +
                                  " fixed offsets for " + std::to_string(n) + " buffers");
    for (int i = 0; i < n; ++i) {
      if (params.fixed_offsets[U(i)] < -1)
        throw std::invalid_argument("layout: buffer " + std::to_string(i) +
                                    " has a negative fixed offset");
      fixed[U(i)] = params.fixed_offsets[U(i)];
    }
  }
  Bytes base = 0;
  std::vector<char> pinned(U(n), 0);
  for (int i : params.pinned_bottom) {
    if (i < 0 || i >= n || pinned[U(i)])
      throw std::invalid_argument("layout: bad or repeated pinned buffer index " +
                                  std::to_string(i));
    if (fixed[U(i)] >= 0 && fixed[U(i)] != base)
      throw std::invalid_argument("layout: buffer " + std::to_string(i) +
                                  " is both pinned and fixed elsewhere");
    pinned[U(i)] = 1;
    fixed[U(i)] = base;
    base += intervals[U(i)].size;
  }
  return fixed;
}

LayoutResult SolveLayout(std::span<const Interval> intervals, Bytes alignment,
                         const LayoutParams& params,
                         std::optional<std::span<const Bytes>> warm_start) {
  const auto started = Clock::now();
  std::optional<Clock::time_point> deadline;
  if (params.time_limit_s > 0)
    deadline = started + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(params.time_limit_s));
  auto out_of_time = [&] {
    return (deadline && Clock::now() >= *deadline) ||
           (params.stop != nullptr && params.stop->load(std::memory_order_relaxed));
  };

  const int n = static_cast<int>(intervals.size());
  const std::vector<Bytes> align = Alignments(intervals, alignment, params);
  const std::vector<Bytes> fixed = FixedOffsets(intervals, params);
  for (int i = 0; i < n; ++i)
    if (fixed[U(i)] >= 0 && fixed[U(i)] % align[U(i)] != 0)
      throw std::invalid_argument("layout: buffer " + std::to_string(i) +
                                  " has a fixed offset that is not a multiple of its alignment");

  LayoutResult result;
  std::vector<Bytes> best = StartLayout(intervals, alignment, align, fixed, warm_start);
  result.warm_start_height = LayoutHeight(intervals, best);

  const detail::Instance instance = detail::MakeInstance(intervals, align, fixed);
  std::vector<int> sized;
  for (int i = 0; i < n; ++i)
    if (intervals[U(i)].size > 0) sized.push_back(i);
  std::stable_sort(sized.begin(), sized.end(),
                   [&](int a, int b) { return instance.first[U(a)] < instance.first[U(b)]; });
  std::vector<Partition> parts;
  if (params.search.static_decomposition) {
    for (auto& g : detail::SplitByTime(instance, sized)) parts.push_back({std::move(g)});
  } else if (!sized.empty()) {
    parts.push_back({sized});
  }
  Bytes lo = MaxLiveBytes(intervals);
  for (int i = 0; i < n; ++i)
    if (fixed[U(i)] >= 0) lo = std::max(lo, fixed[U(i)] + intervals[U(i)].size);
  for (Partition& p : parts) p.height = Height(intervals, best, p.buffers);
  result.partitions = static_cast<int>(parts.size());

  auto hi = [&] {
    Bytes h = 0;
    for (const Partition& p : parts) h = std::max(h, p.height);
    return h;
  };
  auto finish = [&](LayoutStatus status, std::string note) {
    result.offsets = best;
    result.height = LayoutHeight(intervals, best);
    result.lower_bound = std::min(lo, result.height);
    if (status == LayoutStatus::kTimeLimit && result.height <= lo) status = LayoutStatus::kOptimal;
    if (status == LayoutStatus::kFeasible && result.height <= lo) status = LayoutStatus::kOptimal;
    result.status = status;
    result.work_limited = result.work_limited && status == LayoutStatus::kTimeLimit;
    result.note = std::move(note);
    result.seconds = SecondsSince(started);
    return result;
  };
  const std::optional<Bytes> capacity = params.capacity;
  if (hi() <= lo) return finish(LayoutStatus::kOptimal, "the warm start meets the lower bound");
  if (capacity && hi() <= *capacity)
    return finish(LayoutStatus::kFeasible, "the warm start fits the capacity");
  if (capacity && *capacity < lo) {
    lo = std::max(lo, *capacity + 1);
    return finish(LayoutStatus::kInfeasible, "the capacity is below max-live or the pinned top");
  }

  try {
    const std::vector<std::vector<int>> preorders = AllPreorders(instance, params.search, n);
    // The round-robin's entries: a preorder each, and the portfolio's extra entry, the
    // candidate branching over the first preorder.
    struct Entry {
      size_t preorder;
      bool candidate_branching;
    };
    std::vector<Entry> entries;  // in the first round; portfolio_first reorders the later ones
    for (size_t k = 0; k < preorders.size(); ++k) entries.push_back({k, false});
    std::vector<Entry> later = entries;
    if (params.search.bottom_left && params.search.portfolio) {
      entries.push_back({0, true});
      later.insert(params.search.portfolio_first ? later.begin() : later.end(), {0, true});
    }
    detail::Searcher searcher(instance, params.search);
    searcher.set_stop(params.stop);
    std::vector<Bytes> found(U(n), 0);
    bool budget_spent = false;
    auto probe = [&](Bytes cap, std::int64_t node_limit, int round) {
      ++result.probes;
      const std::vector<Entry>& order = round == 0 ? entries : later;
      Probe answer = Probe::kFits;
      for (Partition& p : parts) {
        if (p.height <= cap) continue;
        if (cap <= p.infeasible_at) return Probe::kInfeasible;
        Probe part = Probe::kUnknown;
        for (size_t k = 0; k < order.size() && part == Probe::kUnknown; ++k) {
          const Entry& entry = order[k];
          // A group too large for the bottom-left branching runs the candidate branching over
          // every preorder: the portfolio's entry would repeat the first one's run.
          if (entry.candidate_branching &&
              static_cast<std::int64_t>(p.buffers.size()) > params.search.bottom_left_max_buffers)
            continue;
          std::int64_t limit = node_limit + static_cast<std::int64_t>(p.buffers.size());
          if (params.max_nodes > 0) limit = std::min(limit, params.max_nodes - result.nodes);
          const std::int64_t work_limit = params.max_work > 0
                                              ? params.max_work - result.work
                                              : std::numeric_limits<std::int64_t>::max();
          if (limit <= 0 || work_limit <= 0) {
            budget_spent = true;
            return Probe::kUnknown;
          }
          const detail::SearchOutcome outcome =
              searcher.Run(p.buffers, preorders[entry.preorder], cap, limit, work_limit, deadline,
                           found, entry.candidate_branching);
          result.nodes += searcher.nodes();
          result.work += searcher.work();
          if (outcome == detail::SearchOutcome::kFound) {
            for (int b : p.buffers) best[U(b)] = found[U(b)];
            p.height = Height(intervals, best, p.buffers);
            part = Probe::kFits;
          } else if (outcome == detail::SearchOutcome::kInfeasible) {
            p.infeasible_at = std::max(p.infeasible_at, cap);
            return Probe::kInfeasible;
          }
          if (out_of_time()) return part == Probe::kFits ? answer : Probe::kUnknown;
        }
        if (part == Probe::kUnknown) answer = Probe::kUnknown;
      }
      return answer;
    };

    const SearchParams& sp = params.search;
    for (int round = 0;; ++round) {
      const std::int64_t node_limit = sp.initial_node_limit
                                      << std::min(round, 40);  // doubles; capped against overflow
      if (capacity) {
        const Probe answer = probe(*capacity, node_limit, round);
        if (answer == Probe::kFits)
          return finish(LayoutStatus::kFeasible, "a layout within the capacity was found");
        if (answer == Probe::kInfeasible) {
          lo = std::max(lo, *capacity + 1);
          return finish(LayoutStatus::kInfeasible, "no layout fits the capacity (proven)");
        }
      } else {
        // Binary search over capacities; an unanswered probe only moves this round's floor.
        Bytes floor = lo;
        bool first = true;
        int unanswered = 0;
        while (floor < hi()) {
          const Bytes cap = !sp.capacity_search ? hi() - 1
                            : first             ? floor
                                                : floor + (hi() - 1 - floor) / 2;
          // Probes above the bound improve the incumbent (anytime); the bound's own probe gets
          // the full budget, as tight instances are won or lost there.
          const Probe answer = probe(
              cap, first ? node_limit : std::max(sp.initial_node_limit, node_limit / 4), round);
          first = false;
          if (answer == Probe::kInfeasible) {
            lo = std::max(lo, cap + 1);
            floor = std::max(floor, cap + 1);
          } else if (answer == Probe::kUnknown) {
            if (!sp.capacity_search) break;
            floor = cap + 1;
            // The bound's probe is the first and is not counted.
            if (sp.unanswered_bisections > 0 && cap > lo &&
                ++unanswered >= sp.unanswered_bisections)
              break;
          }
          if (out_of_time() || budget_spent) break;
        }
        if (lo >= hi()) return finish(LayoutStatus::kOptimal, "proven minimal");
      }
      if (out_of_time()) return finish(LayoutStatus::kTimeLimit, "the time limit struck");
      if (budget_spent) {
        result.work_limited = true;
        return finish(LayoutStatus::kTimeLimit, "the node or work limit struck");
      }
    }
  } catch (const std::bad_alloc&) {
    result.call = LayoutCall::kError;
    return finish(LayoutStatus::kTimeLimit, "out of memory: the best layout so far is kept");
  }
}

}  // namespace roam::layout
