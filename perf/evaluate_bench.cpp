// Loading, evaluating (baseline orders and layouts) and validating a 15,000-op training graph.
//
// The graph is GPT-2 XL's training step (configs/gpt2-xl.yaml) at a depth that gives about
// 15,000 ops, generated once, written to a JSON file in the temporary directory; every
// benchmark starts from that file's text or its parsed graph.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "config/config.h"
#include "core/io.h"
#include "core/plan.h"
#include "gen/generate.h"

namespace roam::perf {
namespace {

// GPT-2 XL has 48 layers and 11,493 ops; each layer adds 236 ops.
constexpr int kLayersFor15000Ops = 63;
constexpr int kLayersForLargeLayout = 96;  // 22,917 ops

Graph GeneratedGpt2Xl(int layers) {
  return gen::GenerateGraph(config::LoadConfig(std::string(ROAM_CONFIGS_DIR) + "/gpt2-xl.yaml",
                                               {"model.n_layer=" + std::to_string(layers)}));
}

struct Fixture {
  std::string path;
  std::string json;
  Graph graph;
  MemoryModel model;
  std::vector<Interval> program_intervals;  // the layout problem of the program order
  Plan plan;                                // program order + pytorch layout
};

const Fixture& Get() {
  static const Fixture fixture = [] {
    Fixture f;
    f.path = (std::filesystem::temp_directory_path() / "roam_perf_gpt2.graph.json").string();
    WriteFileAtomically(f.path, GraphToJson(GeneratedGpt2Xl(kLayersFor15000Ops)));
    f.json = ReadFile(f.path);
    f.graph = ParseGraph(f.json, f.path);
    f.model = BuildMemoryModel(f.graph);
    f.program_intervals =
        PlannedIntervals(f.model, ComputeLifetimes(f.graph, f.model, f.graph.program_order));
    f.plan = AssemblePlan(f.graph, f.model, f.graph.program_order,
                          PlaceBuffers("pytorch", f.program_intervals, f.model.alignment), 0.0);
    return f;
  }();
  return fixture;
}

void Counters(benchmark::State& state) {
  state.counters["ops"] = Get().graph.num_ops();
  state.counters["buffers"] = static_cast<double>(Get().model.planned.size());
}

void BM_ParseGraph(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ParseGraph(Get().json, Get().path));
  Counters(state);
}

void BM_BuildMemoryModel(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(BuildMemoryModel(Get().graph));
  Counters(state);
}

void BM_Order(benchmark::State& state, std::string_view name) {
  std::vector<OpId> order;
  for (auto _ : state) {
    order = ScheduleOrder(name, Get().graph, Get().model);
    benchmark::DoNotOptimize(order);
  }
  Counters(state);
  state.counters["theoretical_MiB"] =
      static_cast<double>(TheoreticalPeak(Get().graph, Get().model, order)) / (1 << 20);
}

void BM_Layout(benchmark::State& state, std::string_view name) {
  const auto& intervals = Get().program_intervals;
  Bytes height = 0;
  for (auto _ : state) {
    auto offsets = PlaceBuffers(name, intervals, Get().model.alignment);
    height = LayoutHeight(intervals, offsets);
    benchmark::DoNotOptimize(offsets);
  }
  Counters(state);
  state.counters["actual_MiB"] = static_cast<double>(height) / (1 << 20);
  state.counters["live_MiB"] = static_cast<double>(MaxLiveBytes(intervals)) / (1 << 20);
}

// The layout problem of a twice-as-deep GPT-2 XL training step, program order.
const std::vector<Interval>& LargeIntervals() {
  static const std::vector<Interval> intervals = [] {
    Graph graph = GeneratedGpt2Xl(kLayersForLargeLayout);
    MemoryModel model = BuildMemoryModel(graph);
    return PlannedIntervals(model, ComputeLifetimes(graph, model, graph.program_order));
  }();
  return intervals;
}

void BM_LargeLayout(benchmark::State& state, std::string_view name) {
  const auto& intervals = LargeIntervals();
  Bytes height = 0;
  for (auto _ : state) {
    auto offsets = PlaceBuffers(name, intervals, kDefaultAlignment);
    height = LayoutHeight(intervals, offsets);
    benchmark::DoNotOptimize(offsets);
  }
  state.counters["buffers"] = static_cast<double>(intervals.size());
  state.counters["actual_MiB"] = static_cast<double>(height) / (1 << 20);
  state.counters["live_MiB"] = static_cast<double>(MaxLiveBytes(intervals)) / (1 << 20);
}

void BM_ValidatePlan(benchmark::State& state) {
  for (auto _ : state) {
    std::string problem = ValidatePlan(Get().graph, Get().plan);
    if (!problem.empty()) state.SkipWithError(problem.c_str());
    benchmark::DoNotOptimize(problem);
  }
  Counters(state);
}

// What `roam evaluate FILE --order O --layout L` does: read and parse the file, build the
// model, order, lay out, assemble and validate the plan.
void BM_EndToEnd(benchmark::State& state, std::string_view order_name,
                 std::string_view layout_name) {
  for (auto _ : state) {
    Graph graph = LoadGraph(Get().path);
    MemoryModel model = BuildMemoryModel(graph);
    std::vector<OpId> order = ScheduleOrder(order_name, graph, model);
    auto intervals = PlannedIntervals(model, ComputeLifetimes(graph, model, order));
    auto offsets = PlaceBuffers(layout_name, intervals, model.alignment);
    Plan plan = AssemblePlan(graph, model, std::move(order), offsets, 0.0);
    std::string problem = ValidatePlan(graph, plan);
    if (!problem.empty()) state.SkipWithError(problem.c_str());
    benchmark::DoNotOptimize(plan);
  }
  Counters(state);
}

void Register() {
  Get();  // generate, write and parse the graphs before any timing starts
  LargeIntervals();
  benchmark::RegisterBenchmark("ParseGraph", BM_ParseGraph)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BuildMemoryModel", BM_BuildMemoryModel)
      ->Unit(benchmark::kMillisecond);
  for (std::string_view name : OrderNames())
    benchmark::RegisterBenchmark(("Order/" + std::string(name)).c_str(), BM_Order, name)
        ->Unit(benchmark::kMillisecond);
  for (std::string_view name : LayoutNames())
    benchmark::RegisterBenchmark(("Layout/" + std::string(name)).c_str(), BM_Layout, name)
        ->Unit(benchmark::kMillisecond);
  for (std::string_view name : LayoutNames())
    benchmark::RegisterBenchmark(("LargeLayout/" + std::string(name)).c_str(), BM_LargeLayout, name)
        ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("ValidatePlan", BM_ValidatePlan)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("EndToEnd/program/pytorch", BM_EndToEnd, "program", "pytorch")
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("EndToEnd/heuristic/llfb", BM_EndToEnd, "heuristic", "llfb")
      ->Unit(benchmark::kMillisecond);
}

}  // namespace
}  // namespace roam::perf

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  roam::perf::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
