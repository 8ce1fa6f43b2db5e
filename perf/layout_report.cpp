// Layout search figures (perf/RESULTS.md, section "Layout search"), one row per instance.
//
//   roam_perf_layout tight [TIME_LIMIT_S] [CSV_DIR]
//     Perfect packings of 1 MiB x 1024 time steps cut into 150..450 buffers (sizes in
//     multiples of 32 B), 3 seeds each: best-fit's height, then the search as a feasibility
//     question at 1 MiB (MiniMalloc's mode) and as a minimisation. With CSV_DIR, each instance
//     is also written there as a MiniMalloc CSV (tight-N-SEED.csv) for `roam layout` or
//     MiniMalloc itself.
//   roam_perf_layout suite [TIME_LIMIT_S] [CSV_DIR]
//     The same cuts in multiples of 1 KiB, as in MiniMalloc's public suite (its instances A, B
//     and K: sizes 1 KiB to 838 KiB, capacity 1 MiB, times on a 1,024-step grid).
//   roam_perf_layout work [NODES]
//     What a node costs as its group grows (LayoutParams::max_work): perfect packings of 250 to
//     8,000 buffers in one group, searched for NODES nodes (default 20,000) with the default
//     switches and with the bottom-left branching and unallocated floor in groups of any size
//     (remat's wide search): microseconds per node and nanoseconds per unit of work.
//   roam_perf_layout presets [TIME_LIMIT_S]
//     Every preset config at batch 1 and 32: whole-graph lifetimes under the heuristic order
//     (as `roam evaluate --order heuristic`), max-live, best-fit's height, and the search from
//     best-fit's layout.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>

#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "config/config.h"
#include "core/memory_model.h"
#include "gen/generate.h"
#include "layout/layout.h"
#include "tests/layout/instances.h"

namespace roam {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

void Tight(double limit, const std::string& csv_dir, Bytes unit) {
  std::printf(
      "| buffers | seed | best-fit over optimum | fit at 1 MiB | nodes | minimise | nodes |\n");
  std::printf("|---:|---:|---:|---|---:|---|---:|\n");
  const Bytes capacity = Bytes{1} << 20;
  for (int n : {150, 200, 300, 450}) {
    for (int seed = 1; seed <= 3; ++seed) {
      std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
      auto in = testing::PerfectPacking(rng, n, capacity, 1024, unit);
      if (!csv_dir.empty()) {
        std::ofstream out(csv_dir + (unit == 32 ? "/tight-" : "/suite-") + std::to_string(n) + "-" +
                          std::to_string(seed) + ".csv");
        out << "id,lower,upper,size\n";
        for (size_t i = 0; i < in.size(); ++i)
          out << i << ',' << in[i].start << ',' << in[i].end + 1 << ',' << in[i].size << '\n';
      }
      const Bytes best_fit = LayoutHeight(in, PlaceBuffers("best-fit", in, unit));
      layout::LayoutParams params;
      params.time_limit_s = limit;
      params.capacity = capacity;
      const layout::LayoutResult fit = layout::SolveLayout(in, unit, params);
      params.capacity.reset();
      const layout::LayoutResult min = layout::SolveLayout(in, unit, params);
      auto describe = [&](const layout::LayoutResult& r) {
        char text[128];
        if (r.height == capacity)
          std::snprintf(text, sizeof text, "optimal, %.2f s", r.seconds);
        else
          std::snprintf(
              text, sizeof text, "%s, +%.1f%% at %.0f s",
              std::string(layout::ToString(r.status)).c_str(),
              100.0 * static_cast<double>(r.height - capacity) / static_cast<double>(capacity),
              r.seconds);
        return std::string(text);
      };
      std::printf("| %d | %d | +%.1f%% | %s | %lld | %s | %lld |\n", n, seed,
                  100.0 * static_cast<double>(best_fit - capacity) / static_cast<double>(capacity),
                  describe(fit).c_str(), static_cast<long long>(fit.nodes), describe(min).c_str(),
                  static_cast<long long>(min.nodes));
      std::fflush(stdout);
    }
  }
}

void Work(std::int64_t nodes) {
  std::printf(
      "| buffers | search | nodes | work | work per node | seconds | us per node | ns per "
      "unit of work |\n");
  std::printf("|---:|---|---:|---:|---:|---:|---:|---:|\n");
  for (const bool wide : {false, true}) {
    for (int n : {250, 500, 1000, 2000, 4000, 8000}) {
      std::mt19937_64 rng(1);
      const auto in = testing::PerfectPacking(rng, n, Bytes{1} << 20, 4 * n, 32);
      const auto best_fit = PlaceBuffers("best-fit", in, 32);
      layout::LayoutParams params;
      params.time_limit_s = 0;
      params.max_nodes = nodes;
      params.search.static_decomposition = false;
      if (wide) {
        params.search.bottom_left_max_buffers = std::numeric_limits<int>::max();
        params.search.unallocated_floor_max_buffers = std::numeric_limits<int>::max();
      }
      const auto started = Clock::now();
      const layout::LayoutResult r =
          layout::SolveLayout(in, 32, params, std::span<const Bytes>(best_fit));
      const double seconds = Seconds(started);
      const double count = static_cast<double>(std::max<std::int64_t>(1, r.nodes));
      std::printf("| %d | %s | %lld | %lld | %.0f | %.2f | %.1f | %.2f |\n", n,
                  wide ? "wide" : "default", static_cast<long long>(r.nodes),
                  static_cast<long long>(r.work), static_cast<double>(r.work) / count, seconds,
                  1e6 * seconds / count,
                  1e9 * seconds / static_cast<double>(std::max<std::int64_t>(1, r.work)));
      std::fflush(stdout);
    }
  }
}

void Presets(double limit) {
  std::printf(
      "| config | batch | buffers | max-live (MiB) | best-fit over max-live | search | over "
      "max-live | partitions | wall (s) | CPU (s) |\n");
  std::printf("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|\n");
  std::vector<std::string> configs;
  for (const auto& entry : std::filesystem::directory_iterator(ROAM_CONFIGS_DIR))
    if (entry.path().extension() == ".yaml") configs.push_back(entry.path().string());
  std::sort(configs.begin(), configs.end());
  for (const std::string& path : configs) {
    for (int batch : {1, 32}) {
      const Graph graph =
          gen::GenerateGraph(config::LoadConfig(path, {"model.batch=" + std::to_string(batch)}));
      const MemoryModel model = BuildMemoryModel(graph);
      const auto order = ScheduleOrder("heuristic", graph, model);
      const auto in = PlannedIntervals(model, ComputeLifetimes(graph, model, order));
      const Bytes live = MaxLiveBytes(in);
      const auto best_fit = PlaceBuffers("best-fit", in, model.alignment);
      const Bytes bf = LayoutHeight(in, best_fit);
      layout::LayoutParams params;
      params.time_limit_s = limit;
      const auto started = Clock::now();
      const std::clock_t cpu_started = std::clock();
      const layout::LayoutResult r =
          layout::SolveLayout(in, model.alignment, params, std::span<const Bytes>(best_fit));
      const double seconds = Seconds(started);
      const double cpu = static_cast<double>(std::clock() - cpu_started) / CLOCKS_PER_SEC;
      auto over = [&](Bytes h) {
        return 100.0 * static_cast<double>(h - live) / static_cast<double>(live);
      };
      std::printf("| %s | %d | %zu | %.1f | %+.3f%% | %s | %+.3f%% | %d | %.2f | %.2f |\n",
                  std::filesystem::path(path).stem().c_str(), batch, in.size(),
                  static_cast<double>(live) / (1 << 20), over(bf),
                  std::string(layout::ToString(r.status)).c_str(), over(r.height), r.partitions,
                  seconds, cpu);
      std::fflush(stdout);
    }
  }
}

}  // namespace
}  // namespace roam

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "tight";
  const double limit = argc > 2 ? std::atof(argv[2]) : 10.0;
  if (what == "tight" || what == "suite") {
    roam::Tight(limit, argc > 3 ? argv[3] : "", what == "tight" ? 32 : 1024);
  } else if (what == "work") {
    roam::Work(argc > 2 ? std::atoll(argv[2]) : 20'000);
  } else if (what == "presets") {
    roam::Presets(limit);
  } else {
    std::fprintf(
        stderr,
        "usage: roam_perf_layout tight|suite|presets [TIME_LIMIT_S] [CSV_DIR], or work [NODES]\n");
    return 2;
  }
  return 0;
}
