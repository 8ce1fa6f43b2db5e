// The memory model every number roam prints is computed from (docs/memory-model.md).
//
// A storage is an alias group; it is persistent when its root is a graph input, planned when
// it has a producer and a non-zero size. A planned storage lives, inclusively, from its root's
// producer step to the last step that produces or consumes any member (to the end for
// outputs).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/types.h"

namespace roam {

struct Storage {
  TensorId root = kNoTensor;
  Bytes size = 0;                 // root's size rounded up to the alignment
  bool persistent = false;        // root has no producer: resident all step, not in the arena
  bool output = false;            // some member must stay resident to the end
  std::vector<TensorId> members;  // root first, then aliases in id order
  bool planned() const { return !persistent && size > 0; }
};

struct MemoryModel {
  Bytes alignment = kDefaultAlignment;
  std::vector<StorageId> storage_of;  // per tensor
  std::vector<Storage> storages;
  std::vector<StorageId> planned;  // the storages placed in the arena, by root id
  Bytes persistent_bytes = 0;
  // For each op, the planned storages whose lifetime its step bounds (it produces or
  // consumes a member): CSR, deduplicated.
  std::vector<int> touch_begin;
  std::vector<StorageId> touches;

  std::span<const StorageId> Touches(OpId op) const {
    auto b = static_cast<size_t>(touch_begin[static_cast<size_t>(op)]);
    auto e = static_cast<size_t>(touch_begin[static_cast<size_t>(op) + 1]);
    return {touches.data() + b, e - b};
  }
};

// Alias chains must be acyclic and sizes in [0, kMaxBytes] (the loader guarantees both).
// Throws InputError, naming the graph and the tensor, when the alignment is not in
// [1, kMaxAlignment] or the aligned storages total more than kMaxBytes (core/bytes.h).
MemoryModel BuildMemoryModel(const Graph& graph, Bytes alignment = kDefaultAlignment);

// Inclusive range of steps a storage is resident; kNoStep for storages that are not planned.
struct Lifetime {
  Step start = kNoStep;
  Step end = kNoStep;
  bool operator==(const Lifetime&) const = default;
};

// Lifetimes of all storages (indexed by StorageId) under an order of all ops. `steps` is empty
// (single stream: order[k] runs at step k) or the step of each entry of `order` (multi-stream:
// several ops per step, docs/formats.md); a storage lives from its producer's step to the last
// step touching it, so everything a step reads or writes is resident during it.
std::vector<Lifetime> ComputeLifetimes(const Graph& graph, const MemoryModel& model,
                                       std::span<const OpId> order,
                                       std::span<const Step> steps = {});

// Steps an order takes: its length, or the last step + 1 when `steps` is given.
int NumSteps(std::span<const OpId> order, std::span<const Step> steps);

// Planned bytes resident at each step 0..num_steps-1.
std::vector<Bytes> MemoryProfile(const MemoryModel& model, std::span<const Lifetime> lifetimes,
                                 int num_steps);

// Maximum of MemoryProfile (0 for an empty graph).
Bytes TheoreticalPeak(const Graph& graph, const MemoryModel& model, std::span<const OpId> order,
                      std::span<const Step> steps = {});

// A layout problem: buffers with fixed sizes and inclusive step ranges, to be given offsets.
struct Interval {
  Bytes size = 0;
  Step start = 0;
  Step end = 0;  // inclusive
  bool operator==(const Interval&) const = default;
};

// The planned storages of a model as intervals, in model.planned order.
std::vector<Interval> PlannedIntervals(const MemoryModel& model,
                                       std::span<const Lifetime> lifetimes);

// Maximum over all intervals of offset + size.
Bytes LayoutHeight(std::span<const Interval> intervals, std::span<const Bytes> offsets);

// Maximum over steps of the summed sizes of live intervals: the lower bound of any layout.
Bytes MaxLiveBytes(std::span<const Interval> intervals);

// Empty when no two intervals sharing a step overlap in address, every offset is a
// non-negative multiple of alignment and every buffer ends within kMaxBytes; otherwise names
// the first violation by index.
std::string CheckLayout(std::span<const Interval> intervals, std::span<const Bytes> offsets,
                        Bytes alignment);

}  // namespace roam
