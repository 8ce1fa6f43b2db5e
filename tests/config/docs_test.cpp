// docs/configs.md against the field descriptions: every planner and remat field has a row
// with its default as `roam config --defaults` prints it, and no row names a field that is
// not there; the model tables list exactly the keys some family reads.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "config/config.h"
#include "tests/support/test_data.h"

namespace roam::config {
namespace {

// The rows of the tables under the heading `## \`section\`` (up to the next "## "): the
// first cell's key (backticks dropped) and the second cell, trimmed.
std::map<std::string, std::string> TableRows(const std::string& section) {
  std::ifstream in(testing::SourceDir() + "/docs/configs.md");
  std::string line;
  bool inside = false;
  std::map<std::string, std::string> rows;
  auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(" `"));
    s.erase(s.find_last_not_of(" `") + 1);
    return s;
  };
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) inside = line == "## `" + section + "`";
    if (!inside || line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string cell; std::getline(ss, cell, '|');) cells.push_back(trim(cell));
    if (cells.size() >= 2) rows[cells[0]] = cells[1];
  }
  return rows;
}

void ExpectDocumented(const std::string& section, const std::vector<Field>& fields) {
  Planning defaults;
  defaults.remat.alignment = defaults.planner.alignment;
  std::map<std::string, std::string> rows = TableRows(section);
  ASSERT_FALSE(rows.empty()) << "no table under ## `" << section << "` in docs/configs.md";
  for (const Field& f : fields) {
    const std::string key = f.key.substr(section.size() + 1);
    auto row = rows.find(key);
    if (row == rows.end()) {
      ADD_FAILURE() << f.key << " is not documented in docs/configs.md";
      continue;
    }
    EXPECT_EQ(row->second, f.print(defaults)) << f.key << "'s default in docs/configs.md";
    rows.erase(row);
  }
  for (const auto& [key, value] : rows)
    ADD_FAILURE() << "docs/configs.md documents " << section << "." << key
                  << ", which is no field (config/" << section << "_fields.cpp)";
}

TEST(ConfigDocs, EveryPlannerFieldIsDocumentedWithItsDefault) {
  ExpectDocumented("planner", PlannerFields());
}

TEST(ConfigDocs, EveryRematFieldIsDocumentedWithItsDefault) {
  ExpectDocumented("remat", RematFields());
}

TEST(ConfigDocs, TheModelTablesListTheKeysTheFamiliesRead) {
  std::set<std::string> documented;
  for (const auto& [key, value] : TableRows("model")) documented.insert(key);
  const std::vector<std::string> keys = gen::AllModelKeys();
  EXPECT_EQ(documented, std::set<std::string>(keys.begin(), keys.end()));
}

}  // namespace
}  // namespace roam::config
