// ILP solve time and gap against problem size (perf/RESULTS.md, section "ILP").
//
// Order ILP: program-order windows of 20/50/100/200 ops of GPT-2 small's training step
// (configs/gpt2-small.yaml: forward, backward, Adam) at the start of the forward pass, the start
// of the backward pass and the end of the step (perf/ilp_leaves.cpp measures the partition's
// leaves instead). Layout ILP: 50..500 consecutive buffers (by start) of the same graph's
// lifetimes under program order, and random sets. Every solve is one iteration with the
// time limit ROAM_ILP_BENCH_LIMIT seconds (default 20).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <string>

#include "config/config.h"
#include "core/graph.h"
#include "core/memory_model.h"
#include "gen/generate.h"
#include "ilp/layout_ilp.h"
#include "ilp/order_ilp.h"

namespace roam {
namespace {

Graph Gpt2Small() {
  return gen::GenerateGraph(config::LoadConfig(std::string(ROAM_CONFIGS_DIR) + "/gpt2-small.yaml"));
}

double Limit() {
  const char* env = std::getenv("ROAM_ILP_BENCH_LIMIT");
  return env != nullptr ? std::atof(env) : 20.0;
}

struct Setup {
  Graph graph = Gpt2Small();
  MemoryModel model = BuildMemoryModel(graph);
  Dependencies deps = BuildDependencies(graph);
  int backward_start = 0;
  Setup() {
    for (OpId op : graph.program_order) {
      if (graph.ops[size_t(op)].phase == Phase::kBackward) break;
      ++backward_start;
    }
  }
};

const Setup& Shared() {
  static const Setup setup;
  return setup;
}

// where: 0 forward (from the second op), 1 backward start, 2 the last ops (backward + Adam).
void BM_OrderIlp(benchmark::State& state) {
  const Setup& s = Shared();
  const int size = static_cast<int>(state.range(0));
  const int n = s.graph.num_ops();
  const int where = static_cast<int>(state.range(1));
  const int begin = where == 0 ? 1 : where == 1 ? s.backward_start : n - size;
  ilp::Subgraph sub = OrderWindow(s.graph, s.model, s.graph.program_order, begin, begin + size);
  ilp::OrderIlpParams params;
  params.solve.time_limit_s = Limit();
  params.contract = params.symmetry_breaking = state.range(2) != 0;
  std::vector<OpId> warm(sub.ops);
  ilp::OrderIlpResult r;
  for (auto _ : state) r = ilp::SolveOrderIlp(s.graph, s.model, s.deps, sub, warm, params);
  state.counters["optimal"] = r.status == ilp::ModelStatus::kOptimal;
  // GLPK failed an internal check (trapped; the warm start is kept): docs/ilp.md.
  state.counters["glpk_error"] = r.status == ilp::ModelStatus::kError;
  state.counters["gap_pct"] = 100.0 * r.gap;
  state.counters["peak_vs_warm"] =
      static_cast<double>(r.peak) / static_cast<double>(std::max<Bytes>(1, r.warm_start_peak));
  state.counters["improved"] = r.peak < r.warm_start_peak;
  state.counters["nodes"] = r.nodes;
  state.counters["columns"] = r.columns;
  state.counters["rows"] = r.rows;
  state.counters["seconds"] = r.seconds;
}

// Random sets in the style of allocation benchmarks: lifetimes of 1..40 steps over 4n/3 steps,
// sizes 512 B times a power of two up to 64, so big and small buffers mix.
std::vector<Interval> RandomIntervals(int count) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(count));
  std::uniform_int_distribution<int> start(0, count * 4 / 3), length(0, 39), power(0, 6);
  std::vector<Interval> out;
  for (int i = 0; i < count; ++i) {
    Step s = start(rng);
    out.push_back({Bytes{512} << power(rng), s, s + length(rng)});
  }
  return out;
}

void Report(benchmark::State& state, const ilp::LayoutIlpResult& r) {
  state.counters["optimal"] = r.status == ilp::ModelStatus::kOptimal;
  state.counters["gap_pct"] = 100.0 * r.gap;
  state.counters["height_vs_greedy"] =
      static_cast<double>(r.height) / static_cast<double>(std::max<Bytes>(1, r.warm_start_height));
  state.counters["pairs"] = static_cast<double>(r.pairs);
  state.counters["built"] = r.model_built;
  state.counters["seconds"] = r.seconds;
}

void BM_LayoutIlpRandom(benchmark::State& state) {
  auto intervals = RandomIntervals(static_cast<int>(state.range(0)));
  ilp::LayoutIlpParams params;
  params.solve.time_limit_s = Limit();
  ilp::LayoutIlpResult r;
  for (auto _ : state) r = ilp::SolveLayoutIlp(intervals, 512, params);
  Report(state, r);
}

void BM_LayoutIlp(benchmark::State& state) {
  const Setup& s = Shared();
  auto intervals =
      PlannedIntervals(s.model, ComputeLifetimes(s.graph, s.model, s.graph.program_order));
  std::sort(intervals.begin(), intervals.end(), [](const Interval& a, const Interval& b) {
    return std::make_pair(a.start, a.end) < std::make_pair(b.start, b.end);
  });
  const size_t count = std::min(intervals.size(), static_cast<size_t>(state.range(0)));
  // Buffers around the turn from forward to backward, where most lifetimes overlap.
  const size_t first = std::min(intervals.size() - count, intervals.size() / 2 - count / 2);
  std::vector<Interval> window(intervals.begin() + long(first),
                               intervals.begin() + long(first + count));
  ilp::LayoutIlpParams params;
  params.solve.time_limit_s = Limit();
  ilp::LayoutIlpResult r;
  for (auto _ : state) r = ilp::SolveLayoutIlp(window, s.model.alignment, params);
  Report(state, r);
}

BENCHMARK(BM_OrderIlp)
    ->ArgsProduct({{20, 50, 100, 200}, {0, 1, 2}, {1}})
    ->Args({50, 1, 0})
    ->Args({50, 2, 0})
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK(BM_LayoutIlpRandom)
    ->Arg(10)
    ->Arg(20)
    ->Arg(30)
    ->Arg(50)
    ->Arg(100)
    ->Arg(200)
    ->Arg(500)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();
BENCHMARK(BM_LayoutIlp)
    ->Arg(50)
    ->Arg(100)
    ->Arg(200)
    ->Arg(500)
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
}  // namespace roam

BENCHMARK_MAIN();
