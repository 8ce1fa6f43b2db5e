// Test support: a well-formedness check for the XML (SVG) roam writes.
#pragma once

#include <string>

namespace roam::testing {

// Empty when every element is closed in order and no '&' or '<' is stray; else the problem.
std::string XmlProblem(const std::string& svg);

}  // namespace roam::testing
