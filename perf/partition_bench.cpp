// Partition time on GPT-2 XL (configs/gpt2-xl.yaml, generated through gen) and on a 25,000-op
// training-like graph (perf/RESULTS.md, section "Partitioning").
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "config/config.h"
#include "gen/generate.h"
#include "partition/partition.h"
#include "tests/support/training_graph.h"

namespace roam {
namespace {

struct Input {
  Graph graph;
  MemoryModel model;
};

const Input& Gpt2Xl() {
  static const Input input = [] {
    Input in;
    in.graph =
        gen::GenerateGraph(config::LoadConfig(std::string(ROAM_CONFIGS_DIR) + "/gpt2-xl.yaml"));
    in.model = BuildMemoryModel(in.graph);
    return in;
  }();
  return input;
}

// 850 layers of the training-like generator, seed 7: 25,988 ops (Adam).
const Input& TrainingLike25k() {
  static const Input input = [] {
    std::mt19937_64 rng(7);
    Input in;
    in.graph = testing::TrainingLikeGraph(rng, {.layers = 850});
    in.model = BuildMemoryModel(in.graph);
    return in;
  }();
  return input;
}

void Partition(benchmark::State& state, const Input& in) {
  PartitionParams params;
  params.node_limit = static_cast<int>(state.range(0));
  size_t leaves = 0, insensitive = 0;
  for (auto _ : state) {
    SubgraphTree tree = PartitionGraph(in.graph, in.model, in.graph.program_order, params);
    leaves = tree.leaves.size();
    insensitive = tree.insensitive.size();
    benchmark::DoNotOptimize(tree);
  }
  state.counters["ops"] = in.graph.num_ops();
  state.counters["leaves"] = static_cast<double>(leaves);
  state.counters["insensitive"] = static_cast<double>(insensitive);
}

void BM_PartitionGpt2Xl(benchmark::State& state) { Partition(state, Gpt2Xl()); }
BENCHMARK(BM_PartitionGpt2Xl)->Arg(40)->Arg(100)->Unit(benchmark::kMillisecond);

void BM_PartitionTrainingLike25k(benchmark::State& state) { Partition(state, TrainingLike25k()); }
BENCHMARK(BM_PartitionTrainingLike25k)->Arg(40)->Arg(100)->Unit(benchmark::kMillisecond);

void BM_MemoryInsensitiveGpt2Xl(benchmark::State& state) {
  const Input& in = Gpt2Xl();
  Dependencies deps = BuildDependencies(in.graph);
  for (auto _ : state) {
    auto mi = MemoryInsensitivePositions(deps, in.graph.program_order, in.graph.num_ops());
    benchmark::DoNotOptimize(mi);
  }
  state.counters["ops"] = in.graph.num_ops();
}
BENCHMARK(BM_MemoryInsensitiveGpt2Xl)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace roam

BENCHMARK_MAIN();
