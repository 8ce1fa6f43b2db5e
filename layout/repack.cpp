#include "layout/repack.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <stdexcept>
#include <string>

#include "core/types.h"
#include "layout/layout.h"

namespace roam::layout {
namespace {

// Spans are kept in 64 bits: a margin of up to INT_MAX steps must not overflow a Step.
bool Meet(const Interval& a, std::int64_t lo, std::int64_t hi) {
  return a.start <= hi && lo <= a.end;
}

// The buffers a window frees, marked among all, and the time span their lifetimes cover.
struct Window {
  std::vector<int> freed;
  std::vector<char> is_freed;
  std::int64_t lo = 0, hi = 0;
};

// The window around `chosen`: the buffers alive within its lifetime widened by `margin`, and,
// until none is left, every buffer alive within the freed ones' span whose top is above the
// target (as a fixed obstacle it would make the target unreachable). Empty when that grows
// beyond max_free.
Window Around(std::span<const Interval> intervals, std::span<const Bytes> offsets, int chosen,
              std::int64_t margin, Bytes target, int max_free) {
  const int n = static_cast<int>(intervals.size());
  Window w;
  w.lo = intervals[U(chosen)].start - margin;
  w.hi = intervals[U(chosen)].end + margin;
  w.is_freed.assign(U(n), 0);
  auto take = [&](int b) {
    w.is_freed[U(b)] = 1;
    w.freed.push_back(b);
  };
  for (int b = 0; b < n; ++b)
    if (intervals[U(b)].size > 0 && Meet(intervals[U(b)], w.lo, w.hi)) take(b);
  // Every freed buffer meets [lo, hi], so their lifetimes cover one span: a buffer meets one of
  // them exactly when it meets the span.
  for (bool grown = true; grown && static_cast<int>(w.freed.size()) <= max_free;) {
    grown = false;
    for (int b : w.freed) {
      w.lo = std::min<std::int64_t>(w.lo, intervals[U(b)].start);
      w.hi = std::max<std::int64_t>(w.hi, intervals[U(b)].end);
    }
    for (int b = 0; b < n; ++b)
      if (!w.is_freed[U(b)] && intervals[U(b)].size > 0 && Meet(intervals[U(b)], w.lo, w.hi) &&
          offsets[U(b)] + intervals[U(b)].size > target) {
        take(b);
        grown = true;
      }
  }
  if (static_cast<int>(w.freed.size()) > max_free) return {};
  return w;
}

// Lays the window's buffers out again within target around the others alive in its span
// (fixed where they are); true, with offsets updated, when the search finds such a layout.
bool Resolve(std::span<const Interval> intervals, Bytes alignment, std::vector<Bytes>& offsets,
             const Window& w, Bytes target, const RepackParams& params, const Deadline& deadline) {
  std::vector<Interval> sub;
  std::vector<Bytes> warm;
  LayoutParams lp;
  lp.search = params.search;
  for (int b : w.freed) {
    sub.push_back(intervals[U(b)]);
    warm.push_back(offsets[U(b)]);
    lp.fixed_offsets.push_back(-1);
  }
  for (int b = 0; b < static_cast<int>(intervals.size()); ++b)
    if (!w.is_freed[U(b)] && intervals[U(b)].size > 0 && Meet(intervals[U(b)], w.lo, w.hi)) {
      sub.push_back(intervals[U(b)]);
      warm.push_back(offsets[U(b)]);
      lp.fixed_offsets.push_back(offsets[U(b)]);
    }
  lp.capacity = target;
  lp.max_nodes = params.subproblem_max_nodes;
  lp.time_limit_s = deadline.Limited() ? std::max(0.001, deadline.Remaining()) : 0.0;
  lp.stop = deadline.stop();  // an interrupt ends the subproblem at its next node
  const LayoutResult r = SolveLayout(sub, alignment, lp, std::span<const Bytes>(warm));
  if (r.call != LayoutCall::kOk || r.height > target) return false;
  for (size_t i = 0; i < w.freed.size(); ++i) offsets[U(w.freed[i])] = r.offsets[i];
  return true;
}

// The layout both searches start from, checked: a result that has spent nothing yet.
RepackResult Given(std::span<const Interval> intervals, Bytes alignment,
                   std::span<const Bytes> offsets) {
  if (std::string problem = CheckLayout(intervals, offsets, alignment); !problem.empty())
    throw std::invalid_argument("repack: invalid layout: " + problem);
  RepackResult result;
  result.offsets.assign(offsets.begin(), offsets.end());
  result.height = LayoutHeight(intervals, result.offsets);
  return result;
}

}  // namespace

RepackResult Repack(std::span<const Interval> intervals, Bytes alignment,
                    std::span<const Bytes> offsets, Bytes capacity, const RepackParams& params,
                    const Deadline& deadline) {
  if (alignment <= 0) throw std::invalid_argument("repack: alignment must be positive");
  if (params.max_subproblems < 0 || params.max_failures_in_a_row < 1 ||
      params.max_free_buffers < 1 || params.max_margin_steps < 0 ||
      params.subproblem_max_nodes < 1 || params.seed < 0)
    throw std::invalid_argument(
        "repack: max_subproblems, max_margin_steps and seed must be at least 0, the other limits "
        "at least 1");
  RepackResult result = Given(intervals, alignment, offsets);
  std::mt19937_64 rng(static_cast<std::uint64_t>(params.seed));
  int failures = 0;
  // The windows that failed since the layout last changed, each as its sorted freed buffers:
  // the layout and the target are the same until a window succeeds, so a window drawn again
  // (another margin often frees the same buffers) is the same subproblem and fails again.
  std::set<std::vector<int>> failed;
  while (result.height > capacity && result.subproblems < params.max_subproblems &&
         failures < params.max_failures_in_a_row && !deadline.Expired()) {
    // One alignment lower at a time: only the buffers at the top are then in the way, so the
    // windows stay small; each success takes at least one of them below the target.
    const Bytes target = result.height - alignment;
    std::vector<int> above;
    for (int b = 0; b < static_cast<int>(intervals.size()); ++b)
      if (intervals[U(b)].size > 0 && result.offsets[U(b)] + intervals[U(b)].size > target)
        above.push_back(b);
    const int chosen = above[U(static_cast<int>(rng() % above.size()))];
    const auto margin = static_cast<std::int64_t>(
        rng() % (static_cast<std::uint64_t>(params.max_margin_steps) + 1));
    Window w = Around(intervals, result.offsets, chosen, margin, target, params.max_free_buffers);
    // Too wide: the chosen buffer's neighbours alone may still fit the limit.
    if (w.freed.empty() && margin > 0)
      w = Around(intervals, result.offsets, chosen, 0, target, params.max_free_buffers);
    if (w.freed.empty()) {
      ++failures;
      continue;
    }
    // Counted as solved either way, so that a repeat spends no search but leaves every later
    // window, and the layout, as they were.
    ++result.subproblems;
    std::vector<int> freed = w.freed;
    std::sort(freed.begin(), freed.end());
    const bool repeat = failed.contains(freed);
    if (repeat) ++result.repeated;
    if (repeat || !Resolve(intervals, alignment, result.offsets, w, target, params, deadline)) {
      failed.insert(std::move(freed));
      ++failures;
      continue;
    }
    ++result.improved;
    failures = 0;
    failed.clear();
    result.height = LayoutHeight(intervals, result.offsets);
  }
  return result;
}

RepackResult RepackAround(std::span<const Interval> intervals, Bytes alignment,
                          std::span<const Bytes> offsets, Bytes capacity, int buffer,
                          std::span<const int> margins, const RepackParams& params,
                          const Deadline& deadline) {
  if (alignment <= 0) throw std::invalid_argument("repack: alignment must be positive");
  if (buffer < 0 || static_cast<size_t>(buffer) >= intervals.size())
    throw std::invalid_argument("repack: the buffer to repair is not one of the layout's");
  if (params.max_free_buffers < 1 || params.subproblem_max_nodes < 1 ||
      std::any_of(margins.begin(), margins.end(), [](int m) { return m < 0; }))
    throw std::invalid_argument(
        "repack: margins must be at least 0, max_free_buffers and subproblem_max_nodes at least 1");
  RepackResult result = Given(intervals, alignment, offsets);
  if (result.height <= capacity) return result;
  std::set<std::vector<int>> tried;  // margins that free the same buffers are one subproblem
  for (int margin : margins) {
    if (deadline.Expired()) break;
    const Window w =
        Around(intervals, result.offsets, buffer, margin, capacity, params.max_free_buffers);
    if (w.freed.empty()) break;  // wider margins free more still
    std::vector<int> freed = w.freed;
    std::sort(freed.begin(), freed.end());
    if (!tried.insert(std::move(freed)).second) continue;
    ++result.subproblems;
    if (Resolve(intervals, alignment, result.offsets, w, capacity, params, deadline)) {
      ++result.improved;
      result.height = LayoutHeight(intervals, result.offsets);
      break;
    }
  }
  return result;
}

}  // namespace roam::layout
