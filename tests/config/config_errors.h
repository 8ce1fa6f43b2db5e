// What the config tests share: the error a YAML text and overrides give, and a check that a
// message names what it must.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/error.h"

namespace roam::gen::testing {

// The InputError message of parsing `yaml` as `file` with `overrides`; empty when it parses.
inline std::string ErrorOf(const std::string& yaml, const std::vector<std::string>& overrides = {},
                           const std::string& file = "conf.yaml") {
  try {
    config::ParseConfig(yaml, file, overrides);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

inline void ExpectMentions(const std::string& message, std::initializer_list<const char*> parts) {
  ASSERT_FALSE(message.empty()) << "no error raised";
  for (const char* p : parts)
    EXPECT_NE(message.find(p), std::string::npos) << p << " not in: " << message;
}

}  // namespace roam::gen::testing
