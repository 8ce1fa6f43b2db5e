// Generating training graphs from configs: GPT-2 XL (13k ops) and a 96-layer GPT (26k ops)
// must take well under a second.
#include <benchmark/benchmark.h>

#include <string>

#include "config/config.h"
#include "gen/generate.h"

namespace {

roam::gen::Config Preset(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return roam::config::LoadConfig(std::string(ROAM_CONFIGS_DIR) + "/" + name + ".yaml", overrides);
}

void Generate(benchmark::State& state, const roam::gen::Config& config) {
  int ops = 0;
  for (auto _ : state) {
    roam::Graph g = roam::gen::GenerateGraph(config);
    ops = g.num_ops();
    benchmark::DoNotOptimize(g);
  }
  state.counters["ops"] = ops;
}

void BM_GenerateGpt2Xl(benchmark::State& state) { Generate(state, Preset("gpt2-xl")); }
void BM_GenerateGpt96Layers(benchmark::State& state) {
  Generate(state, Preset("gpt2-xl", {"model.n_layer=96"}));
}
void BM_GenerateResnet50(benchmark::State& state) { Generate(state, Preset("resnet50")); }
void BM_GenerateBertLarge(benchmark::State& state) { Generate(state, Preset("bert-large")); }

BENCHMARK(BM_GenerateGpt2Xl)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GenerateGpt96Layers)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GenerateResnet50)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GenerateBertLarge)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
