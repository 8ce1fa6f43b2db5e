// The optimizer on every model preset (perf/RESULTS.md, section "Optimizer"): end-to-end time
// from generation to a validated plan (median of --repeat runs, in this process), the
// certified bound and the gap, fragmentation, and the plan against PyTorch and the best
// baseline. With --threads-scaling, the leaf solves with the bound shortcut off at 1 and 2
// threads on each config, median seconds and their ratio.
//
// Usage: optimizer_report [--repeat N] [--threads-scaling] [--set key=value ...] [CONFIG.yaml ...]
//        (default: every configs/*.yaml; the overrides apply to every config)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"
#include "gen/generate.h"
#include "optimizer/optimizer.h"
#include "perf/median.h"

namespace roam {
namespace {

using perf::Median;

double MiB(Bytes b) { return static_cast<double>(b) / (1 << 20); }

struct Run {
  OptimizeResult result;
  double seconds = 0;
};

Run Once(const std::string& path, const std::vector<std::string>& overrides,
         const OptimizerParams* override_params) {
  const auto started = std::chrono::steady_clock::now();
  const config::Config config = roam::config::LoadConfig(path, overrides);
  const Graph graph = gen::GenerateGraph(config);
  Run run;
  run.result = Optimize(graph, override_params ? *override_params : config.planner);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return run;
}

int Main(int argc, char** argv) {
  std::vector<std::string> overrides, configs;
  int repeat = 3;
  bool scaling = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--set" && i + 1 < argc) {
      overrides.push_back(argv[++i]);
    } else if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--threads-scaling") {
      scaling = true;
    } else {
      configs.push_back(arg);
    }
  }
  if (configs.empty()) {
    for (const auto& e : std::filesystem::directory_iterator(ROAM_CONFIGS_DIR))
      if (e.path().extension() == ".yaml") configs.push_back(e.path().string());
    std::sort(configs.begin(), configs.end());
  }
  if (scaling) {
    std::printf(
        "| config | leaves solved | 1 thread s | 2 threads s | speed-up "
        "|\n|---|---:|---:|---:|---:|\n");
    for (const std::string& path : configs) {
      OptimizerParams params = config::LoadConfig(path, overrides).planner;
      params.bound_shortcut = false;
      std::vector<double> one, two;
      int solved = 0;
      for (int r = 0; r < repeat; ++r) {
        params.threads = 1;
        one.push_back(Once(path, overrides, &params).seconds);
        params.threads = 2;
        Run run = Once(path, overrides, &params);
        two.push_back(run.seconds);
        solved = run.result.leaves.sent_to_solver;
      }
      std::printf("| %s | %d | %.2f | %.2f | %.2fx |\n", std::filesystem::path(path).stem().c_str(),
                  solved, Median(one), Median(two), Median(one) / Median(two));
    }
    return 0;
  }
  std::printf(
      "| config | ops | seconds (median) | PyTorch total MiB | heuristic th. MiB | roam th. MiB | "
      "bound MiB | gap | roam frag | heuristic frag | vs PyTorch | vs heuristic | order | "
      "layout | leaves solved/total |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|\n");
  for (const std::string& path : configs) {
    std::vector<double> seconds;
    Run run;
    for (int r = 0; r < repeat; ++r) {
      run = Once(path, overrides, nullptr);
      seconds.push_back(run.seconds);
    }
    const OptimizeResult& o = run.result;
    const PlanSummary& s = o.plan.summary;
    const PlanSummary& py = o.baselines[0].summary;
    const PlanSummary& h = o.baselines[1].summary;
    auto reduction = [&](const PlanSummary& b) {
      return 100.0 * (1.0 - static_cast<double>(s.total_peak) / static_cast<double>(b.total_peak));
    };
    std::printf(
        "| %s | %d | %.2f | %.1f | %.2f | %.2f | %.2f | %.2f%% | %.3f%% | %.3f%% | %.1f%% | %.2f%% "
        "| %s | %s | %d/%d |\n",
        std::filesystem::path(path).stem().c_str(), s.ops, Median(seconds), MiB(py.total_peak),
        MiB(h.theoretical_peak), MiB(s.theoretical_peak), MiB(o.lower_bound), 100.0 * o.gap,
        100.0 * s.fragmentation, 100.0 * h.fragmentation, reduction(py), reduction(h),
        std::string(ToString(o.order_outcome)).c_str(),
        std::string(ToString(o.layout_outcome)).c_str(), o.leaves.sent_to_solver, o.leaves.total);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace roam

int main(int argc, char** argv) { return roam::Main(argc, argv); }
