// Every setting of the optimizer in one place (docs/configs.md, "planner"). A config's planner
// section has the same nesting: planner.threads, planner.partition.node_limit,
// planner.leaf_order.time_limit, ... Command-line flags override single fields.
#pragma once

#include <string_view>

#include "core/types.h"
#include "layout/layout.h"
#include "merge/merge.h"
#include "partition/partition.h"

namespace roam {

enum class OptimizeMode : std::uint8_t {
  kRoam,   // ROAM: partition, solve the leaves concurrently, merge
  kModel,  // MODeL: the order ILP then the layout ILP on the whole graph
};
inline std::string_view ToString(OptimizeMode mode) {
  return mode == OptimizeMode::kModel ? "model" : "roam";
}
inline bool ParseOptimizeMode(std::string_view text, OptimizeMode* mode) {
  if (text != "roam" && text != "model") return false;
  *mode = text == "model" ? OptimizeMode::kModel : OptimizeMode::kRoam;
  return true;
}

// The scenario a plan is made for (docs/optimizer.md, "Multi-stream"): one op at a time, or
// several independent ops per step on concurrent streams (MODeL's only scenario; ROAM's
// figure 11c). Multi-stream plans carry steps (docs/formats.md, "Steps").
enum class Streams : std::uint8_t { kSingle, kMulti };
inline std::string_view ToString(Streams streams) {
  return streams == Streams::kMulti ? "multi" : "single";
}
inline bool ParseStreams(std::string_view text, Streams* streams) {
  if (text != "single" && text != "multi") return false;
  *streams = text == "multi" ? Streams::kMulti : Streams::kSingle;
  return true;
}

// The order ILP on each leaf (ilp/order_ilp.h).
struct LeafOrderParams {
  bool enabled = true;
  // Simplex iterations GLPK may spend on one leaf, its root LP's and every branch-and-bound
  // node's (0: no bound but the time limit): the bound that decides, so that the same input
  // gives the same plan on any machine. Iterations, not nodes: on the presets' leaves a node
  // cost up to 17 times more on one leaf than on another, an iteration up to 4 times. 20,000:
  // of the twelve presets' leaves GLPK closed in 2 s, all but one took at most 7,902 (that one
  // 20,544, its warm start already optimal); GLPK does 4,600-18,000 a second on them, so the
  // limit is 1-4 s where the 2 s time limit was (perf/RESULTS.md, "Leaf order ILPs bounded by
  // work").
  std::int64_t max_lp_iterations = 20'000;
  // Simplex work GLPK may spend on one leaf, in iterations times the nonzeros of its ILP
  // (ilp::SolveParams::max_lp_work; 0: none): the tighter of this and max_lp_iterations
  // decides. An iteration costs more on a larger leaf, so iterations alone let the largest
  // leaves reach the time limit on a busy machine: on a real ResNet-18 trace (9,201 nonzeros)
  // 20,000 took 7 s alone and over 10 s beside another build. 120 million leaves 20,000
  // iterations to leaves of up to 6,000 nonzeros, where every preset's leaf is (at most 5,456,
  // VGG-11), and is 3.2-4.7 s on any leaf at the measured 2.7-3.9e-8 s a unit (perf/RESULTS.md,
  // "Leaf order ILPs bounded by work").
  std::int64_t max_lp_work = 120'000'000;
  // Seconds for one leaf: an outer cap, for a machine much slower or busier than the one the
  // work limit was measured on; a leaf it stops is counted time-limited. 30 s, three times the
  // 10 s it was when iterations alone bounded the work: max_lp_work bounds a leaf's time at any
  // size, 3-5 s alone, and beside three busy loops on 2 cores a leaf took up to 14 s, so 10 s
  // stopped 4 leaves of a ResNet-18 trace by the clock (perf/RESULTS.md).
  double time_limit = 30.0;
  // The order ILP's exact reductions and its size cap (ilp/order_ilp.h, docs/ilp.md): switches
  // for comparisons; every combination is exact but the cap.
  bool contract = true;
  bool symmetry_breaking = true;
  std::int64_t max_nonzeros = 3'000'000;
};

// The layout of the storages each leaf owns (ROAM's rule, partition/partition.h), activations
// pinned at the bottom (ROAM eq 9).
enum class LayoutEngine : std::uint8_t {
  kSearch,  // layout/: exact combinatorial search (MiniMalloc's techniques)
  kIlp,     // ilp/: GLPK's big-M layout ILP
};

// The layout search's defaults without its bottom-left branching (see below).
inline layout::SearchParams WithoutBottomLeft() {
  layout::SearchParams search;
  search.bottom_left = false;
  return search;
}

struct LeafLayoutParams {
  bool enabled = true;
  LayoutEngine engine = LayoutEngine::kSearch;
  // Seconds for one leaf's layout solve: an outer cap, above what either engine's work limit
  // needs on a quiet machine (max_nodes: under 0.5 s; max_lp_work: up to 6 s).
  double time_limit = 10.0;
  // Nodes the search may spend on one leaf (0: no bound but the time limit). The bound that
  // decides, so that the same input gives the same plan on any machine.
  std::int64_t max_nodes = 20'000;
  // Engine ilp: simplex iterations times nonzeros for one leaf (ilp::SolveParams::max_lp_work; 0:
  // no bound but the time limit), the bound that decides. Every leaf ILP the engine improved on
  // the presets and five real traces needed at most 6 million; those it could not improve in 20
  // s spent 1-3e8 for nothing. At 1.2e-8 to 3.1e-7 s a unit (a root LP is cheap per unit, a
  // search of many small nodes dear), 20 million is 0.25-6 s (perf/RESULTS.md, "Leaf layout
  // ILPs bounded by work").
  std::int64_t max_lp_work = 20'000'000;
  // Leaves owning more storages than this keep the greedy layout (the ILP has a binary per
  // pair of time-overlapping buffers; the search is cheap per leaf at this size).
  int max_storages = 200;
  // The search's switches (layout/layout.h) for leaf layouts. Its bottom-left branching is
  // off: on leaves, whose activations are pinned and whose sections have slack, it only slowed
  // the search down (GPT-2 XL at batch 32: 15.7 s against 2.1 s end to end, the same plan;
  // perf/RESULTS.md, "Optimizer"). It pays on tight packings, not here.
  layout::SearchParams search = WithoutBottomLeft();
};

// One last layout of all planned storages under the final order, by the search engine, warm
// started from the best layout so far, when that layout is above max-live (fragmentation).
struct FinalLayoutParams {
  bool enabled = true;
  // 5 s: every preset's whole-graph lifetimes reached max-live within 1 s but GPT-2 XL at
  // batch 1 (perf/RESULTS.md, "Layout search").
  double time_limit = 5.0;
  // Nodes the pass may spend (0: no bound but the time limit): the bound that decides, so that
  // the same input gives the same plan on any machine; the time limit is an outer cap. Every
  // preset reaches max-live within 20,000, but graphs of irregular lifetimes need more: a
  // rewritten random layered graph of 1,000 nodes kept 17.6% fragmentation at 20,000 and 5.3% at
  // 300,000, in 0.4 s all told (perf/RESULTS.md, "The final layout pass on irregular lifetimes").
  std::int64_t max_nodes = 300'000;
  // Buffers and sections the search may visit (layout::LayoutParams::max_work; 0: no bound).
  // A node's cost grows with the buffers (3-304 us from 250 to 8,000, docs/layout.md, "Work
  // limits"), so on a whole graph of thousands of buffers 20,000 nodes could outlast the time
  // limit; at 5-17 ns a unit, 200 million are 1-3.4 s. Where the pass ran on the presets
  // (batch 1, 8 and 32) it visited at most 6 million, one node per buffer, in 0.04 s.
  std::int64_t max_work = 200'000'000;
  // The search's switches in this pass. Its bottom-left branching is off: every preset's
  // whole-graph layout reached max-live without it, and with it the pass took 1 s instead of
  // 0.07 s on ViT-B/16 at batch 1 (perf/RESULTS.md, "Optimizer").
  layout::SearchParams search = WithoutBottomLeft();
};

// Model mode's whole-graph ILPs (optimizer/whole_graph.h).
struct WholeGraphIlpParams {
  // Simplex work each of the two ILPs (the order's, then the layout's) may spend, in iterations
  // times the nonzeros of its model (ilp::SolveParams::max_lp_work; 0: none): the bound that
  // decides, so that MODeL's plans, too, are the same on any machine; the run's time limit,
  // split by order_share, is the outer cap. GLPK took 0.8-4.2e-8 s a unit on the
  // presets' whole-graph ILPs (12,690-615,618 nonzeros), so 2 billion is 15-85 s alone, a
  // fraction of the 300 s the default run's limit leaves each ILP (perf/RESULTS.md, "Model
  // mode bounded by work").
  std::int64_t max_lp_work = 2'000'000'000;
};

struct OptimizerParams {
  OptimizeMode mode = OptimizeMode::kRoam;
  Streams streams = Streams::kSingle;
  // Multi-stream: the most ops one step may run; 0 = unbounded, as in MODeL.
  int max_concurrency = 0;
  int threads = 0;                      // worker threads for leaf solves; 0 = all cores
  double time_limit = 600.0;            // seconds for the whole run; 0 = no limit
  Bytes alignment = kDefaultAlignment;  // bytes; sizes and offsets are rounded to it
  // Send a leaf to the order ILP only when it can lower the whole graph's peak: its warm-start
  // peak is above the certified bound and above the leaf's own forced residency.
  bool bound_shortcut = true;
  // Partition each weight-update placement (scheduled, when-ready, at-end) and keep the one
  // whose order has the lowest peak, so the placement never makes the start worse than needed.
  bool best_update_placement = true;
  // Also try every baseline order with the weight updates' temporary-making tails (Adam's
  // sqrt, div) moved after the activation peak (partition/partition.h, kSplit).
  bool defer_update_tails = true;
  // Seconds of the run kept back from GLPK: no leaf ILP starts with less than this left, and
  // model mode's ILPs end this much before the deadline. GLPK looks at its time limit between
  // branch-and-bound nodes and, in its root LP, between slices of 5,000 simplex iterations
  // (200 ms slices when this was measured): with 0.3 s ViT-B/16 at batch 1, VGG-11 at 32 and
  // MobileNetV2 at 1 with every leaf sent ended within 0.01 s of --time-limit 2, 3 and 5
  // (perf/RESULTS.md, "Deadlines"). Before the slices it overshot by up to 3 s, and this was 3 (no
  // leaf ever started under a 3 s limit).
  double solver_overshoot = 0.5;
  PartitionParams partition;
  LeafOrderParams leaf_order;
  LeafLayoutParams leaf_layout;
  FinalLayoutParams final_layout;
  // The merge of the leaf layouts (merge/merge.h); its time limit is also capped by the run's.
  MergeParams merge;
  // Model mode: the share of the run the whole-graph order ILP may use, the layout ILP the
  // rest (optimizer/whole_graph.h).
  double order_share = 0.5;
  WholeGraphIlpParams whole_graph;
};

}  // namespace roam
