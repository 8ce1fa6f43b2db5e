// YAML config loader and graph generator on arbitrary bytes, then the baseline planners and the
// validator on the generated graph. Deep models are skipped (not refused): generating
// hundreds of layers per input would leave no time for the rest of the input space.
#include "config/config.h"
#include "core/error.h"
#include "fuzz/contract.h"
#include "fuzz/plan_checks.h"
#include "gen/generate.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  using namespace roam;
  config::Config config;
  try {
    config = roam::config::ParseConfig(fuzz::Text(data, size), "fuzz.yaml");
  } catch (const InputError&) {
    return 0;
  }
  const gen::ModelConfig& m = config.model;
  const bool transformer = m.family == gen::Family::kGpt2 || m.family == gen::Family::kBert ||
                           m.family == gen::Family::kVit || m.family == gen::Family::kLlama;
  if ((transformer && m.n_layer > 2) || (m.family == gen::Family::kResnet && m.depth > 50))
    return 0;
  Graph graph;
  try {
    graph = gen::GenerateGraph(config);
  } catch (const InputError&) {
    return 0;  // sizes beyond kMaxBytes, named
  }
  // The planners on generated graphs are the test suite's job (tests/baseline); here they
  // check what the generator made, at the config's alignment, while that stays quick.
  if (graph.num_ops() <= 2000) {
    const Bytes alignments[] = {config.planner.alignment};
    fuzz::CheckPlansOf(graph, /*orders_limit=*/1, alignments);
  }
  return 0;
}
