// Batch runs and benchmark sweeps (docs/batch.md): many inputs and settings planned in
// parallel, their figures collected into one result set, split deterministically across
// machines and merged back.
//
// In: run specs (from `roam batch` inputs or a sweep file expanded into its grid), runner
// parameters (jobs, threads per job, output directory). Out: one RunRecord per run, with every
// figure of the plan, the PyTorch and best-heuristic baselines and the certified bound; per run
// a plan and pictures in the output directory; for the set summary.csv, summary.json and
// report.html. A failing run is a record with its error; it never stops the others.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/memory_model.h"
#include "core/plan.h"
#include "core/types.h"
#include "optimizer/params.h"

namespace roam::batch {

// ---- Runs ----

// How a run plans its input. The baselines are computed for every run whatever the mode.
enum class Mode : std::uint8_t {
  kHeuristic,  // the best heuristic order and layout (cheap; what tests and smoke sweeps use)
  kModel,      // MODeL: whole-graph order ILP then layout ILP (roam optimize --mode model)
  kRoam,       // ROAM: partition, leaf ILPs, merge (roam optimize --mode roam)
};
std::string_view ToString(Mode mode);
std::optional<Mode> ParseMode(std::string_view text);

struct RunSpec {
  std::string key;    // stable identity (input, overrides, mode); sharding hashes it
  std::string name;   // file stem of the run's outputs, unique within a result set
  std::string input;  // a roam-graph-v1 file or a YAML model config
  std::vector<std::string> overrides;  // "model.batch=4", applied in order (configs only)
  Mode mode = Mode::kRoam;
  int repeats = 1;  // the mode is timed this many times; figures come from the last
  // The swept settings of this run, in the sweep's axis order ("model.batch" -> "32").
  std::vector<std::pair<std::string, std::string>> params;
};

// The key of a run: its input, its settings and its mode, spelled the same on every machine.
std::string RunKey(std::string_view input, const std::vector<std::string>& overrides, Mode mode);

// Specs for `roam batch`: one per input, names from the file stems (disambiguated by a hash of
// the key when two inputs share a stem).
std::vector<RunSpec> BatchSpecs(const std::vector<std::string>& inputs,
                                const std::vector<std::string>& overrides, Mode mode);

struct MethodFigures {
  std::string method;  // "pytorch", e.g. "lescea+best-fit", or the mode
  Bytes theoretical_peak = 0;
  Bytes actual_peak = 0;
  Bytes total_peak = 0;  // persistent + actual
};

struct RunRecord {
  RunSpec spec;
  bool ok = false;
  int exit_code = 0;  // of a failed run: 2 bad input, 1 anything else
  std::string error;
  std::string graph;
  int ops = 0;
  int storages = 0;
  Bytes persistent_bytes = 0;
  MethodFigures result;  // the mode's plan
  double fragmentation = 0.0;
  MethodFigures pytorch;        // program order, PyTorch caching allocator
  MethodFigures heuristic;      // best baseline order x layout by total peak
  Bytes lower_bound = 0;        // certified lower bound of the theoretical peak of any order
  std::vector<double> seconds;  // the mode's planning time, per repeat
  double baseline_seconds = 0.0;
  std::string outcome;  // the mode's own account (optimal / time-limited parts)
  // The mode's own figures, as CSV columns named with their unit ("order_gap [ratio]"), in
  // the order the mode reports them; a result set's CSV has the union of its runs' columns.
  std::vector<std::pair<std::string, std::string>> figures;
  bool resumed = false;  // taken from a previous run's outputs, not recomputed
};

// Median and spread of a run's timings (0 for none).
double Median(std::vector<double> values);

// The plans a run produced, for writing and drawing.
struct RunPlans {
  Graph graph;
  Plan plan;
  Plan pytorch;
  Plan heuristic;
  Bytes lower_bound = 0;
};

// Loads the input, plans the baselines and the mode, validates every plan. Never throws: a
// failure is a record with ok false. plans (optional) receives the plans of a successful run.
// threads: the leaf-solve threads the mode may use when the input's planner.threads is 0 (the
// caller's arena size; 0 = the machine's cores).
RunRecord ExecuteRun(const RunSpec& spec, RunPlans* plans = nullptr, int threads = 0);

// The PyTorch baseline (program order, caching-allocator layout) and the best heuristic: the
// baseline order and layout with the lowest total peak. With planner.streams multi, each order
// runs with as-soon-as-possible steps (core/steps.h), as the optimizer's baselines do.
struct Baselines {
  Plan pytorch;
  Plan heuristic;
  std::string heuristic_name;  // "order+layout"
};
Baselines PlanBaselines(const Graph& graph, const MemoryModel& model,
                        const OptimizerParams& planner = {});

// The certified lower bound on the theoretical peak of every topological order
// (core/lower_bound.h: the storages forced live at some op in every order).
Bytes CertifiedLowerBound(const Graph& graph, const MemoryModel& model);

// Memory in use (persistent + live planned bytes) at every step of a plan.
std::vector<Bytes> MemoryOverTime(const Graph& graph, const Plan& plan);

// ---- Sharding ----

struct Shard {
  int index = 0;
  int count = 1;
};
// "i/N" with 0 <= i < N; throws InputError naming the flag otherwise.
Shard ParseShard(std::string_view text);
std::string ToString(Shard shard);
// 64-bit FNV-1a: the same on every machine and build.
std::uint64_t StableHash(std::string_view text);
bool InShard(std::string_view key, Shard shard);

// ---- Sweeps ----

struct SweepAxis {
  std::string key;  // "mode", "threads" (= planner.threads) or a config key like "model.batch"
  std::vector<std::string> values;
};

// The most runs one sweep file may expand to, and the most repeats of each: refused up front,
// before any run is made.
inline constexpr std::int64_t kMaxSweepRuns = 100000;
inline constexpr int kMaxRepeats = 1000;

struct Sweep {
  std::string source;
  std::string name;
  std::vector<std::string> inputs;       // resolved against the sweep file's directory
  std::vector<std::string> input_names;  // as the sweep file spells them: the runs' keys use
                                         // these, so keys do not depend on the checkout's path
  std::vector<std::string> overrides;    // applied to every run before the grid's
  std::vector<SweepAxis> grid;           // the product of all axes, in this order
  int repeats = 1;
};

// Throws InputError naming the file and the field for any problem.
Sweep ParseSweep(std::string_view text, std::string_view source);
Sweep LoadSweep(const std::string& path);
// Every run of the sweep: inputs x grid, in a fixed order.
std::vector<RunSpec> ExpandSweep(const Sweep& sweep);

// ---- Results ----

struct ResultSet {
  std::string kind = "batch";  // "batch" or "bench"
  std::string title;
  Shard shard;
  std::vector<std::string> axes;      // the swept keys (bench)
  std::vector<std::string> all_keys;  // every run of the whole batch or sweep, all shards
  std::vector<RunRecord> runs;        // this shard's runs, in all_keys order
};

// summary.csv: one row per run, units in the header ("total_peak [B]"); the swept axes
// (mode excepted: it has its column) and then the modes' own figures as extra columns.
std::vector<std::string> FigureColumns(const std::vector<RunRecord>& runs);
std::vector<std::string> CsvHeader(const std::vector<std::string>& axes,
                                   const std::vector<std::string>& figures = {});
std::vector<std::string> CsvRow(const RunRecord& r, const std::vector<std::string>& axes,
                                const std::vector<std::string>& figures = {});
std::string ResultsToCsv(const ResultSet& set);
// summary.json ("roam-results-v1"): everything needed to merge and re-plot.
std::string ResultsToJson(const ResultSet& set);
ResultSet ParseResults(std::string_view text, std::string_view source);
std::string RecordToJson(const RunRecord& r);
RunRecord ParseRecord(std::string_view text, std::string_view source);

// Combines shard outputs; throws InputError on a missing or duplicated shard or run, or on
// shards of different batches.
ResultSet MergeResults(const std::vector<ResultSet>& sets, const std::vector<std::string>& sources);

// ---- Running ----

struct RunnerParams {
  int jobs = 0;             // runs in parallel; 0 = fill the machine (see docs/batch.md)
  int threads_per_job = 0;  // threads of each run's task arena; 0 = cores / jobs
  bool force = false;       // redo runs whose outputs are already there
  std::string out_dir;      // per-run outputs go to plans/, runs/, plots/ under it
  bool write_plans = true;  // plans/NAME.plan.json (batch yes, bench no)
  bool write_plots = true;  // plots/NAME.layout.svg and NAME.memory.svg
};

struct Progress {
  int done = 0;
  int total = 0;
  int failed = 0;
  double elapsed_s = 0.0;
};

// jobs x threads for n runs on `cores` hardware threads, after the defaults are filled.
std::pair<int, int> DivideCores(int jobs, int threads_per_job, int runs, int cores);

// Runs every spec, `jobs` at a time, each inside its own oneTBB arena, writing each run's files
// as it finishes (so a killed batch resumes: a run whose record, and plan when plans are
// written, is there and valid is taken as done unless force). progress is called, from one
// thread at a time, after each run. Records come back in spec order.
std::vector<RunRecord> RunAll(const std::vector<RunSpec>& specs, const RunnerParams& params,
                              const std::function<void(const Progress&)>& progress = {});

// A one-line progress bar: runs done of total, failures, elapsed, ETA.
std::string FormatProgress(const Progress& p, int width = 30);

// The shard's part of specs (set.shard; every key goes into set.all_keys), run with RunAll into
// params.out_dir (created), and the set's files written there with WriteResults.
ResultSet RunShard(std::vector<RunSpec> specs, ResultSet set, const RunnerParams& params,
                   const std::function<void(const Progress&)>& progress = {});

// merge-results: reads DIR/summary.json of every shard directory, merges them (MergeResults,
// so nothing is written when a shard or run is missing or duplicated), copies the shards'
// plans, records and pictures into out_dir and writes the merged set's files there.
ResultSet MergeDirectories(const std::vector<std::string>& dirs, const std::string& out_dir);

// ---- Outputs ----

// summary.csv, summary.json and report.html in dir (each written atomically). The report
// inlines the per-run pictures found under dir/plots and, for sweeps, memory and time charts
// against every swept parameter (written to dir/plots too).
void WriteResults(const std::string& dir, const ResultSet& set);

// 0 when every run succeeded; else 1 when any failed internally, else 2 (bad input).
int ExitStatus(const std::vector<RunRecord>& runs);

}  // namespace roam::batch
