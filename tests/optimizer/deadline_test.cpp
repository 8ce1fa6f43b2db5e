// One deadline for the whole run (docs/optimizer.md, "Anytime, deadlines and interrupts"): every
// stage looks at it, an interrupt ends the run with a valid plan at once, and the labels stay
// true when a solver's answer only ties its start.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/lower_bound.h"
#include "optimizer/optimizer.h"
#include "tests/optimizer/support.h"

namespace roam {
namespace {

using testing::ExpectTruthful;
using testing::Preset;

// The stages a run reports, in order (optimizer.h, Progress).
const std::vector<std::string> kStages = {"baselines",         "lower bound",  "partition",
                                          "leaf orders",       "leaf layouts", "merge",
                                          "whole-graph layout"};

size_t StageIndex(const std::string& stage) {
  return static_cast<size_t>(std::find(kStages.begin(), kStages.end(), stage) - kStages.begin());
}

// A graph where, without a deadline, every stage does work: all leaves go to GLPK (no bound
// shortcut), leaf layouts to the search, the merge repairs conflicts and the final pass runs.
// MobileNetV2 at batch 1 is one.
Graph EveryStageWorks() { return Preset("mobilenet_v2.yaml", {"model.batch=1"}); }

OptimizerParams Quick() {
  OptimizerParams params;
  params.bound_shortcut = false;
  params.leaf_order.time_limit = 0.2;
  params.leaf_layout.time_limit = 0.2;
  params.final_layout.time_limit = 0.5;
  return params;
}

// A run whose clock jumps past the deadline the moment `stage` is first reported: from then on
// no solver starts (no leaf ILP, no leaf layout search, no final pass), and the plan is valid.
TEST(Deadline, EveryStageObservesTheDeadline) {
  const Graph graph = EveryStageWorks();
  // Which stages this graph reaches without a deadline: the cases below must cut each short.
  std::set<std::string> reached;
  {
    std::mutex mutex;
    RunControl control;
    control.progress = [&](const Progress& p) {
      std::lock_guard<std::mutex> lock(mutex);
      reached.insert(p.stage);
    };
    OptimizerParams params = Quick();
    params.time_limit = 0;
    const OptimizeResult r = Optimize(graph, params, control);
    ExpectTruthful(graph, r);
    EXPECT_GT(r.leaves.sent_to_solver, 0);
    EXPECT_GT(r.leaves.layouts_solved, 0);
  }
  for (const std::string& stage : kStages) ASSERT_EQ(reached.count(stage), 1u) << stage;

  for (const std::string& stage : kStages) {
    SCOPED_TRACE("deadline at " + stage);
    OptimizerParams params = Quick();
    params.time_limit = 10;
    std::atomic<std::int64_t> fake_ns{0};
    std::mutex mutex;
    std::vector<std::string> after;  // stages reported once the clock has jumped
    RunControl control;
    control.now = [&] {
      return Deadline::Clock::time_point(std::chrono::nanoseconds(fake_ns.load()));
    };
    control.progress = [&](const Progress& p) {
      std::lock_guard<std::mutex> lock(mutex);
      if (fake_ns.load() > 0) {
        if (after.empty() || after.back() != p.stage) after.push_back(p.stage);
      } else if (p.stage == stage) {
        fake_ns = 3600LL * 1'000'000'000;  // an hour later: far past the deadline
        after.push_back(p.stage);
      }
    };
    const OptimizeResult r = Optimize(graph, params, control);
    ExpectTruthful(graph, r);
    EXPECT_TRUE(r.time_limit_hit);
    EXPECT_FALSE(r.interrupted);
    const size_t at = StageIndex(stage);
    if (at <= StageIndex("leaf orders")) {
      EXPECT_EQ(r.leaves.sent_to_solver, 0);
    }
    if (at <= StageIndex("leaf layouts")) {
      EXPECT_EQ(r.leaves.layouts_solved, 0);
    }
    EXPECT_EQ(r.pipeline.layout.find("whole-graph search"), std::string::npos);
    // What may still run: the cheap assembly of what exists (one pass of the bound, the leaf
    // layouts' greedy starts, the merge without its search) and validation.
    ASSERT_FALSE(after.empty());
    for (size_t i = 1; i < after.size(); ++i)
      EXPECT_TRUE(after[i] == "lower bound" || after[i] == "leaf orders" ||
                  after[i] == "leaf layouts" || after[i] == "merge" || after[i] == "validate")
          << after[i];
  }
}

// Optimize with the stop flag set `delay_ms` after the start (0: already set), as a first
// Ctrl-C does; with the seconds from the flag to Optimize's return.
struct InterruptedRun {
  OptimizeResult result;
  double after_signal = 0;
};
InterruptedRun RunInterruptedAfter(const Graph& graph, const OptimizerParams& params,
                                   int delay_ms) {
  std::atomic<bool> stop{delay_ms == 0};
  std::atomic<std::int64_t> stopped_at_ns{0};
  RunControl control;
  control.stop = &stop;
  std::thread interrupter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    stopped_at_ns = std::chrono::steady_clock::now().time_since_epoch().count();
    stop = true;
  });
  InterruptedRun run;
  run.result = Optimize(graph, params, control);
  const auto returned = std::chrono::steady_clock::now().time_since_epoch().count();
  interrupter.join();
  run.after_signal =
      static_cast<double>(returned - std::max<std::int64_t>(stopped_at_ns.load(), 0)) / 1e9;
  return run;
}

// An interrupt on a graph where every stage of the old pipeline took seconds: a valid plan,
// marked interrupted, soon after the signal (docs/optimizer.md: within a second on the command
// line; the bound here leaves room for sanitizer builds and a loaded machine).
TEST(Deadline, AnInterruptOnALargeGraphEndsTheRunAtOnce) {
  const Graph graph = Preset("gpt2-xl.yaml", {"model.n_layer=96"});
  for (int delay_ms : {0, 50, 200}) {
    SCOPED_TRACE("interrupt after " + std::to_string(delay_ms) + " ms");
    OptimizerParams params;
    params.time_limit = 0;
    const InterruptedRun run = RunInterruptedAfter(graph, params, delay_ms);
    ExpectTruthful(graph, run.result);
    if (delay_ms == 0) {
      EXPECT_TRUE(run.result.interrupted);
    }
    // A run that finished before the signal is not interrupted, and has nothing to answer.
    if (!run.result.interrupted) continue;
    EXPECT_LT(run.after_signal, 3.0) << "the run must end soon after the interrupt";
  }
}

// Model mode: the whole-graph order ILP of ViT-B/16 takes seconds to build before GLPK ever
// looks at a flag; the solve runs on a worker, so the interrupt is answered at once and the
// best baseline plan returned (the old code took 21 s to answer one on AlexNet).
TEST(Deadline, AnInterruptInModelModeEndsTheRunAtOnce) {
  const Graph graph = Preset("vit-b16.yaml", {"model.batch=1"});
  OptimizerParams params;
  params.mode = OptimizeMode::kModel;
  params.time_limit = 0;
  const InterruptedRun run = RunInterruptedAfter(graph, params, 300);
  ExpectTruthful(graph, run.result);
  ASSERT_TRUE(run.result.interrupted);
  EXPECT_LT(run.after_signal, 3.0);
}

// A leaf solver that runs out of time with an order no better than its warm start (a
// different order at the same peak) improved nothing: the order is not "time-limited".
TEST(Labels, AnEqualPeakSolutionIsNoImprovement) {
  const Graph graph = EveryStageWorks();
  OptimizerParams params = Quick();
  params.time_limit = 0;
  int calls = 0;
  std::mutex mutex;
  RunControl control;
  control.leaf_order_solver = [&](const Graph& g, const MemoryModel& model, const Dependencies&,
                                  const Subgraph& leaf, std::span<const OpId> warm,
                                  const ilp::OrderIlpParams&) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++calls;
    }
    ilp::OrderIlpResult r;
    r.order.assign(warm.begin(), warm.end());
    r.peak = r.warm_start_peak = SubgraphPeak(g, model, leaf, warm);
    r.status = ilp::ModelStatus::kFeasibleTimeLimit;
    r.model_built = true;
    r.from_warm_start = false;  // "GLPK's own solution", at the same peak
    return r;
  };
  const OptimizeResult r = Optimize(graph, params, control);
  ExpectTruthful(graph, r);
  EXPECT_GT(calls, 0);
  EXPECT_GT(r.leaves.time_limited, 0);                // the solver did run out of time ...
  EXPECT_NE(r.order_outcome, Outcome::kTimeLimited);  // ... but improved nothing
}

// The pipeline's own plan reaches max-live on a mid-size GPT by leaf layouts, stacking and
// local repair, not by the baseline fallback or the whole-graph search (docs/optimizer.md,
// "Merge"): a forward temporary crossing into the next forward leaf must not be pinned under
// the activations, and of two conflicting temporaries the one at the busier step stays.
// LLaMA too (bf16-mixed, fused attention, GQA): its subgraph tree must not peak above the input
// order, or the optimizer falls back to windows, whose merge left llama-70b 0.76% fragmented.
TEST(Merge, ThePipelinesOwnLayoutOfADecoderHasNoFragmentation) {
  const std::pair<const char*, const char*> cases[] = {{"gpt2-xl.yaml", "model.n_layer=6"},
                                                       {"gpt2-xl.yaml", "model.n_layer=24"},
                                                       {"llama-70b.yaml", "model.n_layer=4"}};
  for (const auto& [preset, layers] : cases) {
    SCOPED_TRACE(std::string(preset) + " " + layers);
    const Graph graph = Preset(preset, {layers});
    OptimizerParams params;
    params.final_layout.enabled = false;
    const OptimizeResult r = Optimize(graph, params);
    ExpectTruthful(graph, r);
    EXPECT_FALSE(r.baseline_won);
    EXPECT_EQ(r.pipeline.layout, "leaf layouts merged");
    EXPECT_EQ(r.pipeline.summary.actual_peak, r.pipeline.summary.theoretical_peak);
    EXPECT_EQ(r.layout_outcome, Outcome::kOptimal);
    for (const std::string& note : r.notes)
      EXPECT_EQ(note.find("cut into windows"), std::string::npos) << note;
  }
}

}  // namespace
}  // namespace roam
