// roam batch, roam bench and roam merge-results: many runs, their results and reports.
#include <unistd.h>

#include <iostream>

#include "apps/cli.h"
#include "batch/batch.h"

namespace roam::cli {
namespace {

struct RunOptions {
  std::string out_dir;
  std::string shard = "0/1";
  int jobs = 0;
  int threads_per_job = 0;
  bool force = false;
  bool quiet = false;
};

void AddRunOptions(CLI::App& cmd, RunOptions& o, const char* default_dir, const char* jobs_help) {
  o.out_dir = default_dir;
  MarkOutput(cmd.add_option("-o,--output", o.out_dir, "Output directory (created if missing)")
                 ->check(OutputDirectoryPath())
                 ->capture_default_str());
  cmd.add_option("--jobs", o.jobs, jobs_help)->check(ThreadCount());
  cmd.add_option("--threads-per-job", o.threads_per_job,
                 "Threads of each job's oneTBB arena (0: cores / jobs)")
      ->check(ThreadCount());
  cmd.add_option("--shard", o.shard,
                 "Run only slice i of N (i/N), chosen by a stable hash of each run's key")
      ->capture_default_str();
  cmd.add_flag("--force", o.force, "Redo runs whose outputs are already in the directory");
  cmd.add_flag("--quiet", o.quiet, "No progress bar");
}

// Runs the shard's part of specs and writes the result set; prints failures and a summary.
int RunAndReport(std::vector<batch::RunSpec> specs, batch::ResultSet set, const RunOptions& o,
                 bool write_plans_and_plots) {
  set.shard = batch::ParseShard(o.shard);
  batch::RunnerParams params;
  params.jobs = o.jobs;
  params.threads_per_job = o.threads_per_job;
  params.force = o.force;
  params.out_dir = o.out_dir;
  params.write_plans = write_plans_and_plots;
  params.write_plots = write_plans_and_plots;
  const bool bar = !o.quiet && ::isatty(STDERR_FILENO) == 1;
  std::function<void(const batch::Progress&)> progress;
  if (bar)
    progress = [](const batch::Progress& p) {
      std::cerr << "\r" << batch::FormatProgress(p) << "\x1b[K" << std::flush;
    };
  set = batch::RunShard(std::move(specs), std::move(set), params, progress);
  if (bar) std::cerr << "\n";
  int failed = 0, resumed = 0;
  for (const batch::RunRecord& r : set.runs) {
    resumed += r.resumed ? 1 : 0;
    if (r.ok) continue;
    ++failed;
    std::cerr << "roam: " << r.spec.name << " (" << r.spec.input << ") failed: " << r.error << "\n";
  }
  std::cout << set.runs.size() << " runs (shard " << batch::ToString(set.shard) << " of "
            << set.all_keys.size() << "), " << failed << " failed, " << resumed
            << " resumed; results in " << o.out_dir
            << " (summary.csv, summary.json, report.html)\n";
  return batch::ExitStatus(set.runs);
}

struct BatchOptions {
  std::vector<std::string> inputs;
  std::vector<std::string> overrides;
  std::string mode = "roam";
  RunOptions run;
};

struct BenchOptions {
  std::string sweep;
  RunOptions run;
};

struct MergeOptions {
  std::vector<std::string> dirs;
  std::string out_dir;
};

int RunMerge(const MergeOptions& o) {
  batch::ResultSet merged = batch::MergeDirectories(o.dirs, o.out_dir);
  std::cout << "merged " << o.dirs.size() << " shards, " << merged.runs.size() << " runs into "
            << o.out_dir << "\n";
  return kOk;
}

}  // namespace

void AddBatchCommand(CLI::App& app, Action& action) {
  auto o = std::make_shared<BatchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "batch",
      "Optimize many configs or graphs in parallel; writes each plan, summary.csv, "
      "summary.json and report.html");
  cmd->add_option("inputs", o->inputs, "Graphs (roam-graph-v1) or YAML model configs")->required();
  cmd->add_option("--set", o->overrides, "Override a config key for every input (repeatable)");
  cmd->add_option("--mode", o->mode, "heuristic, model or roam")
      ->check(CLI::IsMember({"heuristic", "model", "roam"}))
      ->capture_default_str();
  AddRunOptions(*cmd, o->run, "roam-batch", "Inputs planned at once (0: fill the cores)");
  cmd->callback([o, &action] {
    action = [o] {
      std::vector<batch::RunSpec> specs =
          batch::BatchSpecs(o->inputs, o->overrides, *batch::ParseMode(o->mode));
      batch::ResultSet set;
      set.kind = "batch";
      return RunAndReport(std::move(specs), std::move(set), o->run, true);
    };
  });
}

void AddBenchCommand(CLI::App& app, Action& action) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Run a sweep file's grid; writes one CSV row per run, plots and report.html");
  cmd->add_option("sweep", o->sweep, "Sweep file (YAML, docs/batch.md)")->required();
  AddRunOptions(*cmd, o->run, "roam-bench", "Runs at once (default 1, so timings do not compete)");
  o->run.jobs = 1;
  cmd->callback([o, &action] {
    action = [o] {
      batch::Sweep sweep = batch::LoadSweep(o->sweep);
      batch::ResultSet set;
      set.kind = "bench";
      set.title = sweep.name;
      for (const batch::SweepAxis& a : sweep.grid) set.axes.push_back(a.key);
      return RunAndReport(batch::ExpandSweep(sweep), std::move(set), o->run, false);
    };
  });
}

void AddMergeResultsCommand(CLI::App& app, Action& action) {
  auto o = std::make_shared<MergeOptions>();
  CLI::App* cmd =
      app.add_subcommand("merge-results",
                         "Combine the output directories of the shards of one batch or sweep; "
                         "fails on a missing or duplicated shard or run");
  cmd->add_option("dirs", o->dirs, "Shard output directories")->required();
  MarkOutput(cmd->add_option("-o,--output", o->out_dir, "Merged output directory")
                 ->required()
                 ->check(OutputDirectoryPath()));
  cmd->callback([o, &action] { action = [o] { return RunMerge(*o); }; });
}

}  // namespace roam::cli
