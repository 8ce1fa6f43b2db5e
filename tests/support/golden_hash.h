// Test support: one hash for golden values that pin what a search returns (a schedule, a
// layout's offsets), so that a test fails where the search's choices change.
#pragma once

#include <cstdint>
#include <vector>

namespace roam::testing {

// FNV-1a's xor-and-multiply step over whole values (not bytes), from the seed the recorded
// values were made with; the same on every machine and build. Its seed is not FNV-1a's offset
// basis, and changing either constant changes every recorded value.
template <class T>
std::uint64_t GoldenHash(const std::vector<T>& values) {
  std::uint64_t h = 1469598103934665603u;
  for (const T& v : values) h = (h ^ static_cast<std::uint64_t>(v)) * std::uint64_t{1099511628211u};
  return h;
}

}  // namespace roam::testing
