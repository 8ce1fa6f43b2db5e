// The budget split's options (blocks_dp_options.cpp): the ways one group of blocks may
// recompute its activations, each measured alone on the base schedule (the incumbent without
// any group's copies) by the greedy's incremental state. In: the base with its groups and
// regions, a group's rank, the incumbent's own copies of it and the step its evictions are
// taken at. Out: the group's options, summarised for the dynamic programme over the groups
// (blocks_dp.cpp), which picks one per group. Not part of the stage's interface.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "remat/greedy_state.h"

namespace roam::remat::detail {

// Copies attached to the base schedule: (run before base position x, op), in order.
using Attached = std::vector<std::pair<Step, OpId>>;

// One way a group may recompute its activations, measured alone on the base.
struct GroupOption {
  Attached copies;
  double cost = 0;
  // Bytes it frees at every step of the groups two or more deeper (the least there).
  Bytes kept_off = 0;
  // What it frees at each step of its own group's region and of the next deeper group's,
  // where the backward of neighbours interleaves (per base step; 0 elsewhere).
  std::vector<Bytes> freed;
  // The ops it recomputes (sorted), and the storages of the previous group its copies read
  // from the original computations (by producer op). An option of the previous group that
  // recomputes such a producer frees nothing until that read: the pair conflicts.
  std::vector<OpId> recomputed;
  std::vector<std::pair<OpId, Bytes>> reads;
};

// The greedy state with a tag per step: the base position of an original step, -1 for a copy.
struct Tracked {
  GreedyState state;
  std::vector<Step> tag;

  bool Insert(Step at, const std::vector<OpId>& ops);
  bool Remove(Step at, Step k);  // the inverse of Insert
  // The copies in base coordinates: each attached to the next base step after it.
  Attached Copies() const;
  // Per base step: the most live bytes at it and at the copies attached to it.
  std::vector<Bytes> Held(size_t base_steps);
};

// The base with the parts' copies; tag (when given) gets the base position of every original
// step, -1 for a copy.
Schedule Assemble(const Schedule& base, const std::vector<const Attached*>& parts,
                  std::vector<Step>* tag = nullptr);

// The schedule every option is measured on, and where the groups lie on it.
struct GroupedBase {
  Schedule schedule;
  std::vector<Bytes> profile;    // live bytes per step, then 0 for the end
  std::vector<int> group_of_op;  // -1 outside the forward
  std::vector<int> order;        // the groups in forward order: a group's rank is its index
  // Per step and the end: the rank of the innermost group whose span holds it (-1: none).
  std::vector<int> region;
};

// Measures the options of the groups of one base. greedy and base must outlive it.
class OptionMeasurer {
 public:
  OptionMeasurer(const Graph& graph, const RematParams& params, const GreedyTools& greedy,
                 const GroupedBase& base);

  // The options of the group of rank i: none, own (the incumbent's copies of it), and every
  // subset of its best blocks_dp_targets evictions at step split (none when split < 0); an
  // option is dropped when one measured before it frees the same bytes everywhere for no more.
  std::vector<GroupOption> Measure(size_t i, const Attached& own, Step split);

  // The measurer's scratch state, as last left, for a caller that resets it; and the same
  // set to the base's (an assignment, cheaper than a Reset). Valid until the next call.
  Tracked& Scratch();
  Tracked& Fresh() { return Scratch() = Base(); }
  // Steps of the schedules its options were recorded on, in all: the measure of its work.
  std::int64_t measured_steps() const { return measured_steps_; }

 private:
  Tracked& Base();
  void MeasureOne(size_t i, const Attached& copies, std::vector<GroupOption>& options);
  void Record(size_t i, Tracked& t, std::vector<GroupOption>& options);
  void Subsets(size_t i, Step split, std::vector<GroupOption>& options);

  const Graph& graph_;
  const RematParams& params_;
  const GreedyTools& greedy_;
  const GroupedBase& base_;
  std::optional<Tracked> base_state_;  // built once, on first use
  std::optional<Tracked> scratch_;
  std::int64_t measured_steps_ = 0;
};

}  // namespace roam::remat::detail
