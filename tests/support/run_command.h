// Test support: running the roam binary end to end and capturing what it says.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace roam::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // standard output
  std::string err;  // standard error
};

// Runs `binary args...` through /bin/sh with every argument single-quoted.
CommandResult RunCommand(const std::string& binary, const std::vector<std::string>& args);

// The roam binary built alongside the tests (ROAM_BINARY, set by CMake).
CommandResult RunRoam(const std::vector<std::string>& args);

// A fresh, empty directory under the system temp dir, unique to this test process.
std::string MakeTempDir(const std::string& stem);

// Fixture for end-to-end tests: a scratch directory per test, removed afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // Writes text to a file in the scratch directory and returns its path.
  std::string Write(const std::string& name, const std::string& text) const;
  std::string dir_;
};

}  // namespace roam::testing
