// Errors that cross stage boundaries. Bad input is the user's to fix (exit 2); anything else
// escaping a stage is an internal failure (exit 1).
#pragma once

#include <stdexcept>
#include <string>

namespace roam {

// Input the user gave us is wrong. The message names the file, the element and the problem.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace roam
