// A subgraph that runs contiguously inside a full order (ROAM eq 3), with the planned memory
// crossing its boundary spelled out: the one description the partition's leaves, the order ILP
// and the optimizer share.
//
// Every op outside the subgraph runs either before or after all of its ops. A planned storage
// resident at some step of the subgraph is classified by where it is created and freed; a
// storage counts as freed when the last op touching it runs, and output storages are never
// freed (live at the exit of every subgraph from their creator on), as in core/memory_model.h.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/memory_model.h"
#include "core/types.h"

namespace roam {

enum class Crossing : std::uint8_t {
  kInner,                      // created and freed inside
  kCreatedInsideFreedOutside,  // ROAM's CIFO: live at exit
  kCreatedOutsideFreedInside,  // COFI: live at entry, resident until its last use inside
  kLiveThroughout,             // COFO: live at entry and exit, a constant inside
};
std::string_view ToString(Crossing crossing);

struct BoundaryStorage {
  StorageId storage = kNoStorage;
  Bytes size = 0;  // aligned, as in the MemoryModel
  Crossing crossing = Crossing::kInner;
  bool operator==(const BoundaryStorage&) const = default;
};

struct Subgraph {
  std::vector<OpId> ops;  // in the order being refined
  // Every planned storage resident at some step of the subgraph that one of its ops touches
  // (so every inner, created-inside and freed-inside one), sorted by storage id.
  std::vector<BoundaryStorage> storages;
  // Storages live at entry and at exit that no op of the subgraph touches: a constant inside,
  // counted rather than listed, so that the windows of a long order stay linear in size (in a
  // training graph most saved activations are live through most of the backward's windows).
  Bytes untouched_through_bytes = 0;
  int untouched_through_count = 0;
  // Bytes live at entry (COFI + COFO), at exit (CIFO + COFO) and throughout (COFO), the
  // untouched ones included.
  Bytes EntryBytes() const;
  Bytes ExitBytes() const;
  Bytes ThroughoutBytes() const;
};

// The whole graph: all ops in program order, every planned storage inner (outputs CIFO).
Subgraph WholeGraph(const Graph& graph, const MemoryModel& model);

// Steps [begin, end) of a full order, classified from the lifetimes under that order.
Subgraph OrderWindow(const Graph& graph, const MemoryModel& model, std::span<const OpId> order,
                     int begin, int end);

// The consecutive windows [cuts[w], cuts[w + 1]) of a full order, each as OrderWindow gives
// it, in O(ops + touches + storages + windows). `cuts` rises from 0 to order.size(); throws
// std::invalid_argument otherwise.
std::vector<Subgraph> OrderWindows(const Graph& graph, const MemoryModel& model,
                                   std::span<const OpId> order, std::span<const int> cuts);

// The theoretical peak of the subgraph's ops run in `order` (a permutation of sub.ops),
// boundary memory included: live-at-entry storages until their last use inside, CIFO ones
// until the end, COFO ones all along. For the windows of one full order the maximum over the
// windows is that order's TheoreticalPeak (ROAM eq 1). Throws std::invalid_argument when an op
// touches a storage the subgraph does not list or a listed storage has an empty lifetime.
Bytes SubgraphPeak(const Graph& graph, const MemoryModel& model, const Subgraph& sub,
                   std::span<const OpId> order);

}  // namespace roam
