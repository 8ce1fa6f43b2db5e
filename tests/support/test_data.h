// Test support: locating the files under tests/data.
#pragma once

#include <cstdlib>
#include <string>

namespace roam::testing {

// ROAM_SOURCE_DIR is set by CTest; running a test binary by hand from the source tree works
// too.
inline std::string SourceDir() {
  const char* dir = std::getenv("ROAM_SOURCE_DIR");
  return dir != nullptr ? dir : ".";
}
inline std::string DataPath(const std::string& name) { return SourceDir() + "/tests/data/" + name; }

}  // namespace roam::testing
