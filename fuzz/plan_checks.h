// Plans a loaded graph with the baseline orders and layouts and checks what every stage
// promises: a plan the validator accepts, and files that read back to the same plan.
#pragma once

#include <span>

#include "core/graph.h"
#include "core/types.h"

namespace roam::fuzz {

// orders_limit: how many of the baseline orders to try (the first ones of OrderNames()), each
// with every layout, at each alignment.
void CheckPlansOf(const Graph& graph, size_t orders_limit, std::span<const Bytes> alignments);

}  // namespace roam::fuzz
