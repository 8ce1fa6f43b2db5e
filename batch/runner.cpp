// Running many specs in parallel, one oneTBB arena per job, with resumable per-run outputs.
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "batch/batch.h"
#include "config/config.h"
#include "core/deadline.h"
#include "core/io.h"
#include "report/svg.h"

namespace roam::batch {
namespace {

namespace fs = std::filesystem;

std::string RecordPath(const std::string& dir, const RunSpec& s) {
  return dir + "/runs/" + s.name + ".json";
}
std::string PlanPath(const std::string& dir, const RunSpec& s) {
  return dir + "/plans/" + s.name + ".plan.json";
}

// A run's planner.threads override sizes its arena (the sweep's `threads` axis).
int ThreadsOf(const RunSpec& spec, int fallback) {
  int threads = fallback;
  for (const std::string& o : spec.overrides) {
    if (o.rfind("planner.threads=", 0) != 0) continue;
    try {
      int t = std::stoi(o.substr(16));
      threads = t > 0 ? t : fallback;
    } catch (const std::exception&) {
      // Left to the config loader, which names the key in its error.
    }
  }
  return threads;
}

// The earlier outputs of this run, when they are complete and the plan still validates
// against the input as it is now.
std::optional<RunRecord> Resume(const RunnerParams& params, const RunSpec& spec) {
  try {
    std::error_code ec;
    if (!fs::is_regular_file(RecordPath(params.out_dir, spec), ec)) return std::nullopt;
    RunRecord r = ParseRecord(ReadFile(RecordPath(params.out_dir, spec)), spec.name);
    if (!r.ok || r.spec.key != spec.key || r.spec.repeats != spec.repeats) return std::nullopt;
    if (params.write_plans) {
      config::Input input = config::LoadInput(spec.input, spec.overrides);
      Plan plan = LoadPlan(PlanPath(params.out_dir, spec), input.graph);
      if (!ValidatePlan(input.graph, plan).empty()) return std::nullopt;
    }
    r.spec = spec;
    r.resumed = true;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;  // anything unreadable is redone
  }
}

void WriteRunFiles(const RunnerParams& params, const RunRecord& r, const RunPlans& plans) {
  if (params.write_plans)
    WriteFileAtomically(PlanPath(params.out_dir, r.spec), PlanToJson(plans.graph, plans.plan));
  if (params.write_plots) {
    report::LayoutPlotParams lp;
    lp.theoretical_peak = plans.plan.summary.theoretical_peak;
    lp.lower_bound = plans.lower_bound;
    lp.title = r.spec.name + ": " + r.result.method + " layout";
    WriteFileAtomically(params.out_dir + "/plots/" + r.spec.name + ".layout.svg",
                        report::LayoutSvg(plans.graph, plans.plan, lp));
    // Each with its total peak (fragmentation included), the number the results table gives.
    std::vector<report::MemorySeries> series = {
        {r.result.method, MemoryOverTime(plans.graph, plans.plan), r.result.total_peak},
        {"pytorch", MemoryOverTime(plans.graph, plans.pytorch), r.pytorch.total_peak},
        {"best heuristic (" + r.heuristic.method + ")",
         MemoryOverTime(plans.graph, plans.heuristic), r.heuristic.total_peak}};
    WriteFileAtomically(params.out_dir + "/plots/" + r.spec.name + ".memory.svg",
                        report::MemorySvg(series, r.spec.name + ": memory over time"));
  }
}

RunRecord DoOne(const RunnerParams& params, const RunSpec& spec, int threads) {
  if (!params.force)
    if (std::optional<RunRecord> r = Resume(params, spec)) return *r;
  RunPlans plans;
  RunRecord r = ExecuteRun(spec, &plans, threads);
  try {
    if (r.ok) WriteRunFiles(params, r, plans);
  } catch (const std::exception& e) {
    r.ok = false;
    r.exit_code = 1;
    r.error = std::string("writing the outputs: ") + e.what();
  }
  // The record goes last: its presence says the run's other files are complete.
  WriteFileAtomically(RecordPath(params.out_dir, spec), RecordToJson(r));
  return r;
}

}  // namespace

std::pair<int, int> DivideCores(int jobs, int threads_per_job, int runs, int cores) {
  cores = std::max(1, cores);
  runs = std::max(1, runs);
  if (jobs <= 0 && threads_per_job <= 0) {
    jobs = std::min(runs, cores);
    threads_per_job = std::max(1, cores / jobs);
  } else if (jobs <= 0) {
    jobs = std::max(1, std::min(runs, cores / threads_per_job));
  } else if (threads_per_job <= 0) {
    threads_per_job = std::max(1, cores / jobs);
  }
  return {jobs, threads_per_job};
}

std::vector<RunRecord> RunAll(const std::vector<RunSpec>& specs, const RunnerParams& params,
                              const std::function<void(const Progress&)>& progress) {
  for (const char* sub : {"runs", "plans", "plots"}) {
    if (std::string(sub) == "plans" && !params.write_plans) continue;
    if (std::string(sub) == "plots" && !params.write_plots) continue;
    fs::create_directories(params.out_dir + "/" + sub);
  }
  const int n = static_cast<int>(specs.size());
  auto [jobs, threads] = DivideCores(params.jobs, params.threads_per_job, n,
                                     static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<RunRecord> records(specs.size());
  std::atomic<size_t> next{0};
  std::mutex mutex;  // guards state and serialises progress calls
  Progress state;
  state.total = n;
  const auto started = std::chrono::steady_clock::now();
  auto worker = [&, arena_threads = threads] {
    for (size_t i = next++; i < specs.size(); i = next++) {
      const int run_threads = ThreadsOf(specs[i], arena_threads);
      tbb::task_arena arena(run_threads);
      arena.execute([&] { records[i] = DoOne(params, specs[i], run_threads); });
      std::lock_guard lock(mutex);
      ++state.done;
      if (!records[i].ok) ++state.failed;
      state.elapsed_s = SecondsSince(started);
      if (progress) progress(state);
    }
  };
  std::vector<std::thread> pool;
  for (int j = 1; j < std::min(jobs, n); ++j) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  return records;
}

std::string FormatProgress(const Progress& p, int width) {
  auto hms = [](double s) {
    long long t = std::llround(std::max(0.0, s));
    char text[32];
    if (t >= 3600)
      std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
    else
      std::snprintf(text, sizeof text, "%lld:%02lld", t / 60, t % 60);
    return std::string(text);
  };
  int filled = p.total > 0 ? width * p.done / p.total : width;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(static_cast<size_t>(width), '.');
  std::string eta = p.done > 0 && p.done < p.total
                        ? hms(p.elapsed_s / p.done * (p.total - p.done))
                        : (p.done >= p.total ? hms(0) : std::string("?"));
  char text[256];
  std::snprintf(text, sizeof text, "[%s] %d/%d runs, %d failed, %s elapsed, ETA %s", bar.c_str(),
                p.done, p.total, p.failed, hms(p.elapsed_s).c_str(), eta.c_str());
  return text;
}

}  // namespace roam::batch
