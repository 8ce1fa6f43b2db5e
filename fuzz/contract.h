// The contract every fuzz target asserts: bad input is refused with InputError; anything else
// (another exception, a crash, a sanitizer report, a plan the validator rejects) is a finding.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace roam::fuzz {

// Aborts, which libFuzzer reports as a crash and saves the input, with the broken promise.
[[noreturn]] inline void Violated(std::string_view what, const std::string& detail) {
  std::fprintf(stderr, "contract violated: %.*s: %s\n", static_cast<int>(what.size()), what.data(),
               detail.c_str());
  std::abort();
}

inline void Require(bool ok, std::string_view what, const std::string& detail = {}) {
  if (!ok) Violated(what, detail);
}

inline std::string_view Text(const unsigned char* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace roam::fuzz
