// The prune in the arena (internal.h, PruneInArena): repeats dropped from a plan that fits by
// its arena, each kept only where the plan's own layout, moved at the buffers that now live
// longer and around them, still fits the budget.
#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include "core/memory_model.h"
#include "layout/repack.h"
#include "remat/greedy_state.h"
#include "remat/internal.h"

namespace roam::remat::detail {

namespace {

// What names a planned storage in every rewrite of one graph: the original op whose
// computation produces its root, which computation of that op (0: the original, k: its k-th
// copy in schedule order) and which output.
using StorageKey = std::tuple<OpId, int, int>;

// Per planned storage (model.planned order), its key.
std::vector<StorageKey> KeysOf(const Rewritten& rw, const MemoryModel& model) {
  std::vector<int> computation(rw.graph.ops.size(), 0);
  std::vector<int> seen(rw.recompute_count.size(), 0);
  for (OpId op : rw.order) computation[U(op)] = seen[U(rw.origin[U(op)])]++;
  std::vector<StorageKey> keys;
  keys.reserve(model.planned.size());
  for (StorageId s : model.planned) {
    const TensorId root = model.storages[U(s)].root;
    const OpId producer = rw.graph.tensors[U(root)].producer;
    const auto& outputs = rw.graph.ops[U(producer)].outputs;
    const auto out = std::find(outputs.begin(), outputs.end(), root) - outputs.begin();
    keys.emplace_back(rw.origin[U(producer)], computation[U(producer)], static_cast<int>(out));
  }
  return keys;
}

// The lowest offset, a multiple of alignment, at which a buffer live over `at` overlaps none of
// the placed buffers it meets in time.
Bytes LowestFree(std::span<const Interval> intervals, std::span<const Bytes> offsets,
                 std::span<const char> placed, const Interval& at, Bytes alignment) {
  std::vector<std::pair<Bytes, Bytes>> taken;  // [begin, end) of the buffers live with it
  for (size_t i = 0; i < intervals.size(); ++i)
    if (placed[i] && intervals[i].size > 0 && intervals[i].start <= at.end &&
        at.start <= intervals[i].end)
      taken.emplace_back(offsets[i], offsets[i] + intervals[i].size);
  std::sort(taken.begin(), taken.end());
  Bytes candidate = 0;
  for (const auto& [begin, end] : taken) {
    if (begin >= candidate + at.size) break;
    candidate = std::max(candidate, (end + alignment - 1) / alignment * alignment);
  }
  return candidate;
}

// Brings a layout back within the budget where buffers that now live longer (`longer`, each at
// its lowest free offset) top it: first each such buffer's own window, searched at the budget
// at once at each of fit.prune.repair_margins; where that is not enough, the whole layout
// repacked one alignment at a time towards it (fit.prune.repack_windows). The first is cheap
// and often enough; the second climbs down where no single window reaches the budget. Every
// window comes out of the prune's allowance and is searched with fit.prune.search. True, with
// offsets within the budget, on a fit.
bool Repair(std::span<const Interval> intervals, std::span<const size_t> longer, Bytes budget,
            const RematParams& params, const Deadline& deadline, std::vector<Bytes>& offsets,
            int& windows_left) {
  const ArenaPruneParams& prune = params.fit.prune;
  layout::RepackParams repack = params.fit.repack;
  repack.search = prune.search;
  for (size_t k : longer) {
    if (offsets[k] + intervals[k].size <= budget) continue;
    const size_t margins = std::min(prune.repair_margins.size(), U(std::max(windows_left, 0)));
    layout::RepackResult r = layout::RepackAround(
        intervals, params.alignment, offsets, budget, static_cast<int>(k),
        std::span<const int>(prune.repair_margins).first(margins), repack, deadline);
    windows_left -= r.subproblems;
    offsets = std::move(r.offsets);
  }
  if (LayoutHeight(intervals, offsets) <= budget) return true;
  const int windows = std::min(prune.repack_windows, windows_left);
  if (windows <= 0) return false;
  repack.max_subproblems = windows;
  layout::RepackResult r =
      layout::Repack(intervals, params.alignment, offsets, budget, repack, deadline);
  windows_left -= r.subproblems;
  if (r.height > budget) return false;
  offsets = std::move(r.offsets);
  return true;
}

}  // namespace

int PruneInArena(const Graph& graph, Bytes budget, const RematParams& params,
                 const Deadline& deadline, MethodResult& method, Evaluated& eval,
                 std::vector<Bytes>& offsets, int& windows_left) {
  const std::vector<double> costs = OpCosts(graph);
  // Most trials raise the theoretical peak above the budget; the greedy's incremental state
  // says so without the rewrite and the lifetimes a full evaluation builds.
  const MemoryModel model = BuildMemoryModel(graph, params.alignment);
  GreedyState base(graph, model, costs, params.rule), trial(base);
  if (!base.Reset(method.schedule)) throw std::logic_error("remat: pruning an invalid schedule");
  int trials = 0, dropped = 0;
  for (bool improved = true; improved;) {
    improved = false;
    const std::vector<std::pair<double, size_t>> repeats =
        RepeatsDearestFirst(method.schedule, costs);
    const std::vector<StorageKey> old_keys = KeysOf(eval.rewritten, eval.model);
    const std::vector<Interval> old_intervals = PlannedIntervals(eval.model, eval.lifetimes);
    std::map<StorageKey, size_t> old_index;
    for (size_t k = 0; k < old_keys.size(); ++k) old_index.emplace(old_keys[k], k);
    for (const auto& repeat : repeats) {
      if (repeat.first <= 0) break;  // dropping a free copy saves nothing
      const size_t at = repeat.second;
      if (trials >= params.fit.prune.max_trials || deadline.Expired()) return dropped;
      ++trials;
      const OpId op = method.schedule[at];
      // Which computation of op the dropped one is: later ones keep their keys one lower.
      const auto dropped_computation = static_cast<int>(
          std::count(method.schedule.begin(), method.schedule.begin() + static_cast<long>(at), op));
      trial = base;
      if (!trial.Remove(static_cast<Step>(at), 1) || trial.Peak() > budget) continue;
      Schedule schedule = method.schedule;
      schedule.erase(schedule.begin() + static_cast<long>(at));
      Evaluated e = Evaluate(graph, schedule, params);
      if (e.peak != trial.Peak())
        throw std::logic_error("remat: the incremental and the full peak differ");
      const std::vector<Interval> intervals = PlannedIntervals(e.model, e.lifetimes);
      const std::vector<StorageKey> keys = KeysOf(e.rewritten, e.model);
      // Steps after the dropped one move one earlier; a storage whose lifetime, so mapped
      // back, is not within its old one lives longer and is placed again.
      auto old_step = [&](Step s) { return s >= static_cast<Step>(at) ? s + 1 : s; };
      std::vector<Bytes> placed_at(keys.size(), 0);
      std::vector<char> placed(keys.size(), 0);
      std::vector<size_t> longer;
      for (size_t k = 0; k < keys.size(); ++k) {
        auto [origin, computation, output] = keys[k];
        if (origin == op && computation >= dropped_computation) ++computation;
        const auto it = old_index.find({origin, computation, output});
        if (it == old_index.end())
          throw std::logic_error("remat: a storage the pruned schedule has and the plan had not");
        const Interval& was = old_intervals[it->second];
        placed_at[k] = offsets[it->second];
        if (old_step(intervals[k].start) >= was.start && old_step(intervals[k].end) <= was.end)
          placed[k] = 1;
        else
          longer.push_back(k);
      }
      // Each at the lowest offset free over its new lifetime, above the budget if need be.
      bool fits = true;
      for (size_t k : longer) {
        placed_at[k] = LowestFree(intervals, placed_at, placed, intervals[k], params.alignment);
        placed[k] = 1;
        fits = fits && placed_at[k] + intervals[k].size <= budget;
      }
      if (!fits && !Repair(intervals, longer, budget, params, deadline, placed_at, windows_left))
        continue;
      base = trial;
      method.schedule = std::move(schedule);
      method.peak = e.peak;
      method.recompute_cost = e.recompute_cost;
      eval = std::move(e);
      offsets = std::move(placed_at);
      ++dropped;
      improved = true;
      break;  // positions and keys moved: list the repeats again
    }
  }
  return dropped;
}

}  // namespace roam::remat::detail
