#include "tests/support/run_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace roam::testing {
namespace {

std::string Quote(const std::string& arg) {
  std::string quoted = "'";
  for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string MakeTempDir(const std::string& stem) {
  static std::atomic<int> counter{0};
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() /
                 (stem + "." + std::to_string(::getpid()) + "." + std::to_string(counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

CommandResult RunCommand(const std::string& binary, const std::vector<std::string>& args) {
  std::string dir = MakeTempDir("roam_cmd");
  std::string out = dir + "/out", err = dir + "/err";
  std::string command = Quote(binary);
  for (const std::string& a : args) {
    command += ' ';  // not " " + ...: GCC 12 -O3 raises a false -Wrestrict on it
    command += Quote(a);
  }
  command += " </dev/null >" + Quote(out) + " 2>" + Quote(err);
  int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = Slurp(out);
  result.err = Slurp(err);
  std::filesystem::remove_all(dir);
  return result;
}

void TempDirTest::SetUp() { dir_ = MakeTempDir("roam_test"); }

void TempDirTest::TearDown() { std::filesystem::remove_all(dir_); }

std::string TempDirTest::Write(const std::string& name, const std::string& text) const {
  std::ofstream(Path(name)) << text;
  return Path(name);
}

CommandResult RunRoam(const std::vector<std::string>& args) {
#ifdef ROAM_BINARY
  return RunCommand(ROAM_BINARY, args);
#else
  throw std::logic_error("ROAM_BINARY is not defined for this test target");
#endif
}

}  // namespace roam::testing
