// Layout ILP (docs/ilp.md): offsets for buffers with fixed lifetimes, minimising the height.
//
// In: intervals (sizes that are multiples of the alignment, inclusive step ranges), the
// alignment, optional warm-start offsets, optional storages pinned at the bottom. Out: one
// offset per interval (a multiple of the alignment; intervals sharing a step never overlap),
// the height, the proven lower bound and the solver status.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/memory_model.h"
#include "core/types.h"
#include "ilp/glpk.h"

namespace roam::ilp {

struct LayoutIlpParams {
  SolveParams solve;
  // Indices of intervals (e.g. a subgraph's activations) placed contiguously from offset 0 in
  // RoamPinnedOrder, for ROAM's concatenation of sub-layouts (eq 9). Their offsets are fixed;
  // the other buffers may still use that space at steps where the pinned ones are dead.
  std::vector<int> pinned_bottom;
  // Fix the order of identical buffers and one mirror image: exact, shrinks the search.
  bool symmetry_breaking = true;
  // Models with more pairs of time-overlapping buffers are not built: the warm start is
  // returned as is (each pair costs a binary and two big-M rows).
  std::int64_t max_pairs = 200'000;
};

struct LayoutIlpResult {
  std::vector<Bytes> offsets;
  Bytes height = 0;
  Bytes lower_bound = 0;  // proven: no layout is lower
  Bytes warm_start_height = 0;
  double gap = 0.0;  // (height - lower_bound) / height
  ModelStatus status = ModelStatus::kError;
  CallOutcome call = CallOutcome::kOk;
  bool model_built = false;      // false: solved without GLPK, or too large to build
  bool from_warm_start = false;  // GLPK found nothing better than the warm start
  std::int64_t pairs = 0;        // overlapping pairs, i.e. binaries before fixing
  int rows = 0;
  std::int64_t nonzeros = 0;
  // GLPK's work (SolveResult); work_limited: a work limit, not the clock, ended the search, so
  // the answer is the same on any machine.
  std::int64_t lp_iterations = 0;
  std::int64_t nodes = 0;
  bool work_limited = false;
  double seconds = 0.0;
  std::string note;
};

// ROAM's order for activations at the bottom (Fig. 5, eq 9): longest-lived first, so that
// buffers freed earlier sit higher; ties by earlier start, larger size, then index.
std::vector<int> RoamPinnedOrder(std::span<const Interval> intervals, std::span<const int> set);

// Greedy warm start: pinned buffers first, then the rest by decreasing size (longer lifetime
// first on ties), each at the lowest offset free over its whole lifetime.
std::vector<Bytes> GreedyLayout(std::span<const Interval> intervals, Bytes alignment,
                                std::span<const int> pinned_bottom = {});

// Without a warm start, the lower of GreedyLayout and best-fit (core/placement.h; GreedyLayout
// alone with pinned buffers) is used. Throws std::invalid_argument when a size is not a multiple of
// alignment or a warm start is invalid (wrong size, overlapping, or not honouring
// pinned_bottom).
LayoutIlpResult SolveLayoutIlp(std::span<const Interval> intervals, Bytes alignment,
                               const LayoutIlpParams& params,
                               std::optional<std::span<const Bytes>> warm_start = std::nullopt);

}  // namespace roam::ilp
