// networkx node-link import (Checkmate's and MOCCASIN's graphs) on arbitrary bytes, then the
// baseline planners and the validator on the imported graph: every size is range-checked and
// totalled (no wrapped conversion), every cost finite, or the input is refused.
#include <cmath>

#include "core/bytes.h"
#include "core/error.h"
#include "core/io.h"
#include "fuzz/contract.h"
#include "fuzz/plan_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  using namespace roam;
  Graph graph;
  try {
    graph = ParseNodeLink(fuzz::Text(data, size), "fuzz.nodelink.json");
  } catch (const InputError&) {
    return 0;
  }
  ByteSum total;
  for (const Tensor& t : graph.tensors) {
    fuzz::Require(InByteRange(t.size), "imported size in range", std::to_string(t.size));
    if (t.alias_of == kNoTensor) total.Add(t.size);
  }
  fuzz::Require(!total.overflowed(), "imported sizes total at most 2^50");
  double cost = 0;
  for (const auto& c : graph.op_costs) cost += c.value_or(0.0);
  fuzz::Require(std::isfinite(cost), "imported costs sum to a finite number");
  static constexpr Bytes kAlignments[] = {1};
  fuzz::CheckPlansOf(graph, /*orders_limit=*/2, kAlignments);
  return 0;
}
