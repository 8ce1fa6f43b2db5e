// roam-graph-v1 loader, memory model, baseline planners and validator on arbitrary bytes.
#include "core/error.h"
#include "core/io.h"
#include "fuzz/contract.h"
#include "fuzz/plan_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  using namespace roam;
  Graph graph;
  try {
    graph = ParseGraph(fuzz::Text(data, size), "fuzz.graph.json");
  } catch (const InputError&) {
    return 0;
  }
  // Unaligned and the default: sizes that are not multiples of the alignment take other paths.
  static constexpr Bytes kAlignments[] = {1, kDefaultAlignment};
  fuzz::CheckPlansOf(graph, /*orders_limit=*/5, kAlignments);
  return 0;
}
