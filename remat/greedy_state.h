// The greedy's incremental view of a remat schedule: what Rewrite + BuildMemoryModel +
// ComputeLifetimes + MemoryProfile would say about it (which value every computation reads,
// each storage's members, readers, in-place writers and lifetime, the live bytes per step),
// kept up to date as recomputations are inserted instead of rebuilt per eviction.
// Not part of the stage's interface.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/memory_model.h"
#include "remat/params.h"
#include "remat/remat.h"

namespace roam::remat::detail {

// The op overwrites a storage in place (an in-place name and an output aliasing a tensor).
bool IsInPlaceWrite(const Graph& graph, OpId op);

// Copyable and assignable; an assignment reuses the buffers of the state assigned to, so a
// search that measures many variants of one base assigns the base to a few scratch states
// rather than copying it afresh (most of a copy's time is allocation).
class GreedyState {
 public:
  // model: BuildMemoryModel(graph, alignment) of the original graph; costs: OpCost per op;
  // all three must outlive the state and its copies.
  GreedyState(const Graph& graph, const MemoryModel& model, const std::vector<double>& costs,
              const RecomputeRule& rule);

  // Rebuilds everything from a schedule. False (and the state unusable until the next Reset)
  // when CheckSchedule would reject it.
  bool Reset(std::span<const OpId> schedule);

  // Inserts copies of ops (original ops, in order) before step at, rewiring the later readers
  // as Rewrite would, and updates only the storages whose members, readers or lifetimes that
  // changes. False when the result is a schedule CheckSchedule rejects; the state is then
  // unusable until the next Reset.
  bool Insert(Step at, std::span<const OpId> ops);
  // Removes the copies at steps [at, at + k), their readers reading the computations before
  // them again, as Rewrite would; the inverse of Insert. False when a step there is not a
  // copy (nothing changed) or when the result is a schedule CheckSchedule rejects (the state
  // is then unusable until the next Reset).
  bool Remove(Step at, Step k);
  // A cheap necessary condition for Insert to succeed, checked without changing anything:
  // every value the copies read from before step at is still unwritten there.
  bool CanInsert(Step at, std::span<const OpId> ops) const;

  // ---- Queries (value = one computation of one original tensor) ----
  Step NumSteps() const { return static_cast<Step>(order_.size()); }
  const Schedule& schedule() const { return schedule_; }
  // Live planned bytes per step, and its maximum (first step at it).
  const std::vector<Bytes>& Profile();
  Bytes Peak();
  Step PeakStep();
  double RecomputeCost() const;  // summed in schedule order, as detail::RecomputeCost

  OpId OriginAt(Step s) const { return op_of_[Index(order_[Index(s)])]; }
  std::span<const int> InputsAt(Step s) const { return in_values_[Index(order_[Index(s)])]; }
  std::span<const int> OutputsAt(Step s) const { return out_values_[Index(order_[Index(s)])]; }
  int StorageOf(int value) const { return values_[Index(value)].storage; }
  Step ProducerStep(int value) const;  // -1 for graph inputs
  OpId ProducerOrigin(int value) const;
  // Reader steps, unsorted.
  template <class F>
  void ForEachReaderStep(int value, F f) const {
    for (int r : values_[Index(value)].readers) f(pos_[Index(r)]);
  }
  int NumStorages() const { return num_stores_; }
  bool Planned(int storage) const { return stores_[Index(storage)].planned; }
  bool Output(int storage) const { return stores_[Index(storage)].output; }
  Bytes Size(int storage) const { return stores_[Index(storage)].size; }
  Step Start(int storage) const { return stores_[Index(storage)].start; }
  Step End(int storage) const;  // the last step for outputs
  std::span<const int> Members(int storage) const { return stores_[Index(storage)].members; }

 private:
  static size_t Index(int i) { return static_cast<size_t>(i); }
  struct Value {
    TensorId tensor = kNoTensor;
    int producer = -1;  // instance; -1 for graph inputs
    int storage = -1;
    std::vector<int> readers;  // instances
  };
  struct Store {
    Bytes size = 0;
    bool planned = false;
    bool output = false;
    bool original = true;      // a storage of the original graph (not made by a copy)
    std::vector<int> members;  // values, the root first
    std::vector<int> writers;  // instances writing it in place
    Step start = kNoStep, end = kNoStep;
  };
  Step PosOf(int instance) const { return instance < 0 ? -1 : pos_[Index(instance)]; }
  // The latest computation of tensor t produced before step (at or before it when inclusive).
  int Latest(TensorId t, Step step, bool inclusive) const;
  void AddValue(int value);  // into computations_, kept in step order
  // A copy's fresh storage for (a recomputation of) root tensor t, and a copy's value of t in
  // storage (a member of it, no producer yet, not in computations_).
  int NewCopyStore(TensorId t);
  int NewCopyValue(TensorId t, int storage);
  int NewInstance(OpId op, Step pos, bool copy);  // its input and output lists empty
  // Element i of list, grown into when past its end (the lists are never shrunk).
  template <class T>
  static T& Slot(std::vector<T>& list, size_t i);
  // Makes value a member of storage `to` instead of its own (a view or in-place write of a
  // tensor whose latest computation is a copy shares the copy's storage).
  void MoveValue(int value, int to);
  // Computations of views and in-place writes of each queued value's tensor made after it,
  // before its next computation, take its storage (Walker resolves a base to the latest
  // computation), and so do theirs, in turn; originals that are graph outputs keep theirs.
  // False when a copy's in-place write lands on an original storage.
  bool Rehome(std::vector<int> queue, std::vector<int>& affected);
  // Every read of the storages' members sees its value unwritten since it was made, as
  // Walker's versions check.
  bool ReadsUnwritten(const std::vector<int>& storages) const;
  // Lifetime from the members and readers; moves the storage's interval in the profile.
  void Relife(int storage);
  void Account(int storage, int sign);
  // Moves the steps at or after from, of instances and of storages' lifetimes, by `by`.
  void ShiftSteps(Step from, Step by);
  // Some writer of storage lies strictly between steps from and to.
  bool WrittenBetween(int storage, Step from, Step to) const;

  // What depends on the graph alone, shared by copies of a state.
  struct PerGraph {
    std::vector<char> in_place;                         // per original op
    std::vector<char> recomputable;                     // per original op
    std::vector<std::vector<TensorId>> alias_children;  // per original tensor: its direct views
  };
  const Graph* graph_;
  const MemoryModel* model_;
  const std::vector<double>* costs_;
  RecomputeRule rule_;
  std::shared_ptr<const PerGraph> per_graph_;

  Schedule schedule_;
  std::vector<int> order_;  // per step: instance
  std::vector<OpId> op_of_;
  std::vector<Step> pos_;
  std::vector<char> copy_;  // per instance: not the op's first computation
  // Per instance, value and storage; the first op_of_.size(), num_values_ and num_stores_
  // entries are in use, the rest kept for their buffers.
  std::vector<std::vector<int>> in_values_, out_values_;
  std::vector<Value> values_;
  std::vector<Store> stores_;
  int num_values_ = 0, num_stores_ = 0;
  std::vector<std::vector<int>> computations_;  // per original tensor: values in step order
  // Live bytes as two difference arrays: +size at a start, -size after an end.
  std::vector<Bytes> start_delta_, end_delta_;
  std::vector<Bytes> profile_;
  bool profile_dirty_ = true;
  Bytes peak_ = 0;
  Step peak_step_ = 0;
};

// One eviction: copies of ops inserted before step at, freeing a storage between its last use
// before a split step and its first use after it.
struct Candidate {
  double score = 0;
  double cost = 0;        // of the copies
  Step at = 0;            // insert the copies before this step
  std::vector<OpId> ops;  // original ops to recompute, in order
};

// Per original op: what the candidates need to know of it.
struct OpFlags {
  std::vector<char> recomputable;
  std::vector<char> in_place;  // IsInPlaceWrite
};
OpFlags MakeOpFlags(const Graph& graph, const RematParams& params);

// The greedy's evictions of the storages live across step sp (not used by its op), best first
// by params.greedy.score per unit of cost; the greedy itself splits at the peak step.
std::vector<Candidate> CandidatesAt(GreedyState& state, Step sp, const std::vector<double>& costs,
                                    const OpFlags& flags, const RematParams& params);

// The copies of a schedule in runs: maximal stretches of consecutive repeats, each what one
// or more evictions inserted at one point (what the swap search and ruin and recreate drop).
struct CopyRun {
  size_t begin = 0, end = 0;  // positions in the schedule
  double cost = 0;
};
std::vector<CopyRun> CopyRuns(const Graph& graph, const std::vector<double>& costs,
                              const Schedule& schedule);

// The greedy's evictions at the peak, one at a time, each taken only while the summed cost
// stays below allowance, until the peak is within budget or no eviction applies (at most
// params.greedy.swap_repair_steps): how the block passes close a small excess that their
// additive estimates missed.
void RepairAtPeak(GreedyState& state, Bytes budget, double allowance,
                  const std::vector<double>& costs, const OpFlags& flags,
                  const RematParams& params);

// What the block passes (blocks.cpp, blocks_dp.cpp) measure with on one graph: its memory
// model, the per-op costs and flags the greedy's evictions are ranked by, and one incremental
// state over them. Not copyable: the state refers to the model and the costs.
struct GreedyTools {
  GreedyTools(const Graph& graph, const RematParams& params);
  GreedyTools(const GreedyTools&) = delete;
  GreedyTools& operator=(const GreedyTools&) = delete;

  MemoryModel model;          // BuildMemoryModel of the original graph
  std::vector<double> costs;  // OpCosts
  OpFlags flags;
  GreedyState state;
};

}  // namespace roam::remat::detail
