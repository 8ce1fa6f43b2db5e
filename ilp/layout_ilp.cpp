#include "ilp/layout_ilp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "core/deadline.h"
#include "core/placement.h"
#include "core/types.h"

namespace roam::ilp {
namespace {

// Pairs (i < j) of positive-size intervals sharing a step, stopping after limit + 1 pairs.
std::vector<std::pair<int, int>> OverlappingPairs(std::span<const Interval> intervals,
                                                  std::int64_t limit) {
  std::vector<int> by_start;
  for (int i = 0; i < static_cast<int>(intervals.size()); ++i)
    if (intervals[U(i)].size > 0) by_start.push_back(i);
  std::sort(by_start.begin(), by_start.end(), [&](int a, int b) {
    return std::tie(intervals[U(a)].start, a) < std::tie(intervals[U(b)].start, b);
  });
  std::vector<std::pair<int, int>> pairs;
  for (size_t x = 0; x < by_start.size(); ++x) {
    const Interval& a = intervals[U(by_start[x])];
    for (size_t y = x + 1; y < by_start.size() && intervals[U(by_start[y])].start <= a.end; ++y) {
      pairs.emplace_back(std::min(by_start[x], by_start[y]), std::max(by_start[x], by_start[y]));
      if (static_cast<std::int64_t>(pairs.size()) > limit) return pairs;
    }
  }
  return pairs;
}

// Pushes every buffer down as far as a "lies below" relation allows (longest path over it,
// pinned buffers staying where they are). The result is never higher than any layout with
// that relation, and every free offset becomes a sum of sizes: this is why offsets may be
// restricted to multiples of the sizes' GCD without losing optimality.
// i_below_j(p) tells, for pairs[p] = (i, j), whether i lies below j.
template <typename Below>
std::vector<std::int64_t> Compact(std::span<const Interval> units,
                                  std::span<const std::pair<int, int>> pairs, Below i_below_j,
                                  std::span<const std::int64_t> fixed) {
  const int n = static_cast<int>(units.size());
  std::vector<std::vector<int>> above(U(n));  // above[i]: buffers resting on i
  std::vector<int> missing(U(n), 0);
  for (size_t p = 0; p < pairs.size(); ++p) {
    auto [i, j] = pairs[p];
    if (!i_below_j(p)) std::swap(i, j);
    above[U(i)].push_back(j);
    ++missing[U(j)];
  }
  std::vector<std::int64_t> result(U(n), 0);
  std::vector<int> ready;
  for (int i = 0; i < n; ++i)
    if (missing[U(i)] == 0) ready.push_back(i);
  int processed = 0;
  while (!ready.empty()) {
    const int i = ready.back();
    ready.pop_back();
    ++processed;
    if (fixed[U(i)] >= 0) result[U(i)] = fixed[U(i)];
    for (int j : above[U(i)]) {
      result[U(j)] = std::max(result[U(j)], result[U(i)] + units[U(i)].size);
      if (--missing[U(j)] == 0) ready.push_back(j);
    }
  }
  if (processed != n) throw std::logic_error("layout ILP: cyclic below relation");
  return result;
}

std::int64_t Height(std::span<const Interval> units, std::span<const std::int64_t> offsets) {
  std::int64_t h = 0;
  for (size_t i = 0; i < units.size(); ++i)
    if (units[i].size > 0) h = std::max(h, offsets[i] + units[i].size);
  return h;
}

double Gap(Bytes height, Bytes bound) {
  return height == 0 ? 0.0 : static_cast<double>(height - bound) / static_cast<double>(height);
}

// Symmetry breaking. Identical free buffers (same size and lifetime) are ordered bottom-up by
// index; without pinned buffers one pair of free, non-identical overlapping buffers is ordered
// too (every layout has a mirror image of the same height).
struct Symmetry {
  std::vector<int> group;  // per buffer: its group of identical buffers, or -1
  std::vector<std::vector<int>> groups;
  std::optional<std::pair<int, int>> mirror_pair;
};

// The symmetries to break, with the incumbent `inc` (of height `upper`) brought into their
// canonical form: mirroring and permuting identical buffers keep it valid and keep its height.
Symmetry BreakSymmetry(std::span<const Interval> units, std::span<const std::pair<int, int>> pairs,
                       const std::vector<char>& is_pinned, const LayoutIlpParams& params,
                       std::int64_t upper, std::vector<std::int64_t>& inc) {
  const int n = static_cast<int>(units.size());
  Symmetry sym;
  sym.group.assign(U(n), -1);
  if (params.symmetry_breaking) {
    std::map<std::tuple<std::int64_t, Step, Step>, int> key_group;
    std::vector<std::vector<int>> members;
    for (int i = 0; i < n; ++i) {
      if (is_pinned[U(i)] || units[U(i)].size == 0) continue;
      auto [it, added] = key_group.try_emplace(
          {units[U(i)].size, units[U(i)].start, units[U(i)].end}, static_cast<int>(members.size()));
      if (added) members.emplace_back();
      members[U(it->second)].push_back(i);
    }
    for (auto& m : members) {
      if (m.size() < 2) continue;
      for (int i : m) sym.group[U(i)] = static_cast<int>(sym.groups.size());
      sym.groups.push_back(m);
    }
  }
  if (params.symmetry_breaking && params.pinned_bottom.empty()) {
    std::int64_t best = 0;
    for (auto [i, j] : pairs) {
      if (sym.group[U(i)] >= 0 || sym.group[U(j)] >= 0) continue;
      std::int64_t weight = std::min(units[U(i)].size, units[U(j)].size);
      if (weight > best) best = weight, sym.mirror_pair = {i, j};
    }
  }
  const auto& mirror_pair = sym.mirror_pair;
  if (mirror_pair && inc[U(mirror_pair->second)] < inc[U(mirror_pair->first)]) {
    for (int i = 0; i < n; ++i)
      if (units[U(i)].size > 0) inc[U(i)] = upper - inc[U(i)] - units[U(i)].size;
  }
  for (const auto& m : sym.groups) {
    std::vector<std::int64_t> slots;
    for (int i : m) slots.push_back(inc[U(i)]);
    std::sort(slots.begin(), slots.end());
    for (size_t k = 0; k < m.size(); ++k) inc[U(m[k])] = slots[k];
  }
  return sym;
}

// The MILP in units: an offset column per sized buffer (fixed ones pinned), the height, and
// per overlapping pair not both fixed a binary "i below j" with its two big-M rows; `values`
// is the incumbent `inc` in those columns.
struct Model {
  Problem lp;
  std::vector<int> col;                      // per buffer, -1 for zero size
  std::vector<std::pair<size_t, int>> z_of;  // (pair index, column)
  std::vector<double> values;
};

Model BuildModel(std::span<const Interval> units, std::span<const std::pair<int, int>> pairs,
                 std::span<const std::int64_t> fixed, const Symmetry& sym, std::int64_t lower,
                 std::int64_t upper, std::span<const std::int64_t> inc) {
  const int n = static_cast<int>(units.size());
  Model m;
  Problem& lp = m.lp;
  std::vector<int>& col = m.col;
  col.assign(U(n), -1);
  for (int i = 0; i < n; ++i) {
    if (units[U(i)].size == 0) continue;
    const double lo = fixed[U(i)] >= 0 ? static_cast<double>(fixed[U(i)]) : 0.0;
    const double hi = fixed[U(i)] >= 0 ? lo : static_cast<double>(upper - units[U(i)].size);
    col[U(i)] = lp.AddColumn(ColumnKind::kContinuous, lo, hi);
  }
  const int height_col = lp.AddColumn(ColumnKind::kInteger, static_cast<double>(lower),
                                      static_cast<double>(upper), 1.0);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (int i = 0; i < n; ++i) {
    if (col[U(i)] < 0) continue;
    const std::pair<int, double> terms[] = {{height_col, 1.0}, {col[U(i)], -1.0}};
    lp.AddRow(terms, static_cast<double>(units[U(i)].size), kInf);
  }
  const double big_m = static_cast<double>(upper);
  for (size_t p = 0; p < pairs.size(); ++p) {
    auto [i, j] = pairs[p];
    if (fixed[U(i)] >= 0 && fixed[U(j)] >= 0) continue;
    double lo = 0.0, hi = 1.0;
    if (sym.group[U(i)] >= 0 && sym.group[U(i)] == sym.group[U(j)]) lo = 1.0;  // i < j: i below j
    if (sym.mirror_pair && *sym.mirror_pair == pairs[p]) lo = 1.0;
    const int z = lp.AddColumn(ColumnKind::kBinary, lo, hi);
    m.z_of.emplace_back(p, z);
    const double si = static_cast<double>(units[U(i)].size);
    const double sj = static_cast<double>(units[U(j)].size);
    // z = 1: i ends below j's start; z = 0: j ends below i's start.
    const std::pair<int, double> below[] = {{col[U(i)], 1.0}, {col[U(j)], -1.0}, {z, big_m}};
    lp.AddRow(below, -kInf, big_m - si);
    const std::pair<int, double> above[] = {{col[U(j)], 1.0}, {col[U(i)], -1.0}, {z, -big_m}};
    lp.AddRow(above, -kInf, -sj);
  }
  m.values.assign(U(lp.num_columns()), 0.0);
  for (int i = 0; i < n; ++i)
    if (col[U(i)] >= 0) m.values[U(col[U(i)])] = static_cast<double>(inc[U(i)]);
  m.values[U(height_col)] = static_cast<double>(upper);
  for (auto [p, z] : m.z_of) {
    auto [i, j] = pairs[p];
    m.values[U(z)] = inc[U(i)] + units[U(i)].size <= inc[U(j)] ? 1.0 : 0.0;
  }
  return m;
}

}  // namespace

std::vector<int> RoamPinnedOrder(std::span<const Interval> intervals, std::span<const int> set) {
  std::vector<int> order(set.begin(), set.end());
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    const Interval& x = intervals[U(a)];
    const Interval& y = intervals[U(b)];
    return std::make_tuple(-(x.end - x.start), x.start, -x.size, a) <
           std::make_tuple(-(y.end - y.start), y.start, -y.size, b);
  });
  return order;
}

std::vector<Bytes> GreedyLayout(std::span<const Interval> intervals, Bytes alignment,
                                std::span<const int> pinned_bottom) {
  std::vector<Bytes> fixed(intervals.size(), -1);
  Bytes base = 0;
  for (int i : RoamPinnedOrder(intervals, pinned_bottom)) {
    fixed[U(i)] = base;
    base += AlignUp(intervals[U(i)].size, alignment);
  }
  return LargestFirstLayout(intervals, std::span<const Bytes>(&alignment, 1), fixed);
}

LayoutIlpResult SolveLayoutIlp(std::span<const Interval> intervals, Bytes alignment,
                               const LayoutIlpParams& params,
                               std::optional<std::span<const Bytes>> warm_start) {
  const auto started = std::chrono::steady_clock::now();
  const int n = static_cast<int>(intervals.size());
  if (alignment <= 0) throw std::invalid_argument("layout ILP: alignment must be positive");
  Bytes unit = 0;
  for (int i = 0; i < n; ++i) {
    const Interval& in = intervals[U(i)];
    if (in.size < 0 || in.size % alignment != 0 || in.start > in.end)
      throw std::invalid_argument("layout ILP: buffer " + std::to_string(i) +
                                  " has a negative or unaligned size or an empty lifetime");
    unit = std::gcd(unit, in.size);
  }
  std::vector<char> is_pinned(U(n), 0);
  for (int i : params.pinned_bottom) {
    if (i < 0 || i >= n || is_pinned[U(i)])
      throw std::invalid_argument("layout ILP: bad or repeated pinned buffer index " +
                                  std::to_string(i));
    is_pinned[U(i)] = 1;
  }

  LayoutIlpResult result;
  // Warm start: the caller's, or the greedy one; it must honour the pinned offsets.
  std::vector<Bytes> warm = warm_start ? std::vector<Bytes>(warm_start->begin(), warm_start->end())
                                       : GreedyLayout(intervals, alignment, params.pinned_bottom);
  if (!warm_start && params.pinned_bottom.empty()) {  // best-fit knows nothing of pins
    std::vector<Bytes> best_fit = BestFitLayout(intervals, alignment);
    if (LayoutHeight(intervals, best_fit) < LayoutHeight(intervals, warm)) warm = best_fit;
  }
  if (std::string problem = CheckLayout(intervals, warm, alignment); !problem.empty())
    throw std::invalid_argument("layout ILP: invalid warm start: " + problem);
  std::vector<std::int64_t> fixed(U(n), -1);  // pinned offsets, in units once unit is known
  {
    Bytes base = 0;
    for (int i : RoamPinnedOrder(intervals, params.pinned_bottom)) {
      if (warm[U(i)] != base)
        throw std::invalid_argument("layout ILP: warm start does not pin buffer " +
                                    std::to_string(i) + " at offset " + std::to_string(base));
      fixed[U(i)] = base;
      base += intervals[U(i)].size;
    }
  }
  result.warm_start_height = LayoutHeight(intervals, warm);
  if (unit == 0) {  // nothing occupies memory
    result.offsets.assign(U(n), 0);
    result.status = ModelStatus::kOptimal;
    result.note = "no buffer has a size";
    result.seconds = SecondsSince(started);
    return result;
  }

  // Everything below is in units of the sizes' GCD (a multiple of the alignment).
  std::vector<Interval> units(intervals.begin(), intervals.end());
  for (Interval& in : units) in.size /= unit;
  for (auto& f : fixed)
    if (f >= 0) f /= unit;
  const auto pairs = OverlappingPairs(units, params.max_pairs);
  result.pairs = static_cast<std::int64_t>(pairs.size());
  std::int64_t pinned_top = 0;
  for (int i = 0; i < n; ++i)
    if (fixed[U(i)] >= 0) pinned_top = std::max(pinned_top, fixed[U(i)] + units[U(i)].size);
  const std::int64_t lower = std::max(MaxLiveBytes(units), pinned_top);
  result.lower_bound = lower * unit;

  auto finish_with_warm = [&](ModelStatus status, std::string note) {
    result.offsets = warm;
    result.height = result.warm_start_height;
    result.status = result.height <= result.lower_bound ? ModelStatus::kOptimal : status;
    result.from_warm_start = true;
    result.note = std::move(note);
    result.gap = Gap(result.height, result.lower_bound);
    result.seconds = SecondsSince(started);
    return result;
  };
  if (result.pairs > params.max_pairs) {
    result.work_limited = true;  // a size limit: the same on any machine
    return finish_with_warm(ModelStatus::kFeasibleTimeLimit,
                            "more than " + std::to_string(params.max_pairs) +
                                " overlapping pairs: model not built, warm start kept");
  }

  // The warm start's offsets need not be multiples of unit: compacting fixes that and can
  // only lower it.
  std::vector<std::int64_t> inc = Compact(
      units, pairs,
      [&](size_t p) {
        auto [i, j] = pairs[p];
        return warm[U(i)] + intervals[U(i)].size <= warm[U(j)];
      },
      fixed);
  std::int64_t upper = Height(units, inc);
  if (upper * unit < result.warm_start_height) {
    for (int i = 0; i < n; ++i) warm[U(i)] = inc[U(i)] * unit;
    result.warm_start_height = upper * unit;
  }
  if (upper <= lower) {
    for (int i = 0; i < n; ++i) warm[U(i)] = inc[U(i)] * unit;
    result.warm_start_height = upper * unit;
    return finish_with_warm(ModelStatus::kOptimal, "warm start meets the lower bound");
  }

  const Symmetry symmetry = BreakSymmetry(units, pairs, is_pinned, params, upper, inc);
  Model model = BuildModel(units, pairs, fixed, symmetry, lower, upper, inc);
  Problem& lp = model.lp;
  result.rows = lp.num_rows();
  result.nonzeros = lp.num_nonzeros();
  result.model_built = true;

  SolveParams solve = params.solve;
  solve.time_limit_s = std::max(0.0, solve.time_limit_s - SecondsSince(started));
  if (solve.stop_at_objective) *solve.stop_at_objective /= static_cast<double>(unit);
  // A binary within 1/M of 1 lets a buffer of one unit overlap its neighbour.
  solve.integrality_tolerance =
      IntegralityToleranceFor(static_cast<double>(upper), solve.integrality_tolerance);
  SolveResult solved = lp.Solve(solve, std::span<const double>(model.values));
  result.status = solved.status;
  result.call = solved.call;
  result.from_warm_start = solved.from_incumbent;
  result.note = solved.message;
  result.lp_iterations = solved.lp_iterations;
  result.nodes = solved.nodes;
  result.work_limited = solved.work_limited;
  if (!solved.has_solution) throw std::logic_error("layout ILP: no solution despite warm start");
  // Decode from the binaries, not the continuous offsets, so tolerances cannot blur the
  // relation; pairs of pinned buffers have no binary and keep their fixed relation.
  std::vector<int> z_col(pairs.size(), -1);
  for (auto [p, z] : model.z_of) z_col[p] = z;
  std::vector<std::int64_t> decoded = Compact(
      units, pairs,
      [&](size_t p) {
        if (z_col[p] < 0) return fixed[U(pairs[p].first)] < fixed[U(pairs[p].second)];
        return solved.values[U(z_col[p])] > 0.5;
      },
      fixed);
  std::vector<Bytes> offsets(U(n));
  for (int i = 0; i < n; ++i) offsets[U(i)] = decoded[U(i)] * unit;
  const Bytes height = LayoutHeight(intervals, offsets);
  // A solution GLPK accepted within its tolerances may still not decode to what it claims:
  // then GLPK's bound is not trusted either, and the decoded layout is kept only if it is
  // valid and lower than the warm start.
  const std::string invalid = CheckLayout(intervals, offsets, alignment);
  std::string inexact = invalid;
  if (inexact.empty() &&
      static_cast<double>(height) > solved.objective * static_cast<double>(unit) + 0.5)
    inexact = "decoded height " + std::to_string(height) + " exceeds the objective";
  if (!inexact.empty()) {
    result.status = ModelStatus::kError;
    result.call = CallOutcome::kError;
    result.note += "; GLPK's solution is numerically inexact (" + inexact + ")";
    if (invalid.empty() && height < result.warm_start_height) {
      result.offsets = std::move(offsets);
      result.height = height;
      result.from_warm_start = false;
    } else {
      result.offsets = warm;
      result.height = result.warm_start_height;
      result.from_warm_start = true;
      result.note += "; kept the warm start";
    }
    // Our own bound (max-live) does not depend on GLPK and may still prove the result optimal.
    if (result.lower_bound >= result.height) result.status = ModelStatus::kOptimal;
    result.gap = Gap(result.height, result.lower_bound);
    result.seconds = SecondsSince(started);
    return result;
  }
  result.offsets = std::move(offsets);
  result.height = height;
  result.lower_bound =
      std::max(result.lower_bound, static_cast<Bytes>(std::ceil(solved.best_bound - 1e-6)) * unit);
  result.lower_bound = std::min(result.lower_bound, result.height);
  if (result.lower_bound == result.height) result.status = ModelStatus::kOptimal;
  result.gap = Gap(result.height, result.lower_bound);
  result.seconds = SecondsSince(started);
  return result;
}

}  // namespace roam::ilp
