// Sweep files (batch's YAML: inputs, set, grid, repeats) on arbitrary bytes: parsed as if they
// lay in perf/sweeps/ (so the repository's configs resolve as inputs), then expanded. A sweep
// is refused with InputError or expands to exactly the runs its grid names, within the limits.
#include <cstdint>
#include <string>

#include "batch/batch.h"
#include "core/error.h"
#include "fuzz/contract.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  using namespace roam;
  batch::Sweep sweep;
  try {
    sweep = batch::ParseSweep(fuzz::Text(data, size), ROAM_FUZZ_SWEEP_SOURCE);
  } catch (const InputError&) {
    return 0;
  }
  std::int64_t runs = static_cast<std::int64_t>(sweep.inputs.size());
  for (const batch::SweepAxis& axis : sweep.grid)
    runs *= static_cast<std::int64_t>(axis.values.size());
  fuzz::Require(runs <= batch::kMaxSweepRuns, "the grid is within the run limit",
                std::to_string(runs));
  fuzz::Require(sweep.repeats >= 1 && sweep.repeats <= batch::kMaxRepeats, "repeats in range");
  const std::vector<batch::RunSpec> specs = batch::ExpandSweep(sweep);
  fuzz::Require(static_cast<std::int64_t>(specs.size()) == runs, "one spec per grid point",
                std::to_string(specs.size()) + " != " + std::to_string(runs));
  return 0;
}
