// The README's backend table says what each backend provides; the backend says it too, as
// data (session::capabilities()). This keeps the two the same: a cell whose first word is
// "yes" or "no" must match the capability (qualified cells such as "not across masters" are
// prose, not checked).
#include <dlock/dlock.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "conformance/suite.hpp"

namespace dlock::test {
namespace {

std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::stringstream in(row);
  std::string cell;
  std::getline(in, cell, '|');  // before the first bar
  while (std::getline(in, cell, '|')) {
    auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
    out.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
  }
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

std::optional<bool> yes_no(const std::string& cell) {
  auto word = cell.substr(0, cell.find_first_of(" ,;("));
  if (word == "yes") return true;
  if (word == "no") return false;
  return std::nullopt;
}

}  // namespace

TEST_P(conformance, the_readme_backend_table_states_these_capabilities) {
  static const std::map<std::string, std::string> rows{
      {"memory", "memory"},         {"sqlite", "SQLite (default)"},
      {"zookeeper", "ZooKeeper"},   {"etcd", "etcd"},
      {"redis", "Redis"},           {"redlock", "Redlock"},
      {"postgres", "PostgreSQL"},   {"postgres_advisory", "PostgreSQL advisory"},
      {"mysql", "MySQL / MariaDB"}, {"mysql_advisory", "MariaDB advisory"}};
  auto row_name = rows.find(GetParam().name);
  ASSERT_NE(row_name, rows.end()) << "a backend missing from this test: " << GetParam().name;
  std::ifstream readme(DLOCK_SOURCE_DIR "/README.md");
  ASSERT_TRUE(readme) << "README.md not found";
  std::vector<std::string> header, row;
  for (std::string line; std::getline(readme, line);) {
    auto c = cells(line);
    if (c.size() > 2 && c[0] == "backend" && c[1] == "URL") header = c;
    if (!header.empty() && !c.empty() && c[0] == row_name->second) {
      row = c;
      break;
    }
  }
  ASSERT_FALSE(header.empty()) << "no backend table in README.md";
  ASSERT_EQ(row.size(), header.size()) << "no row, or a ragged one, for " << row_name->second;
  const std::map<std::string, bool> caps_by_column{
      {"FIFO", caps().fifo},
      {"shared locks", caps().shared_locks},
      {"semaphores", caps().permits},
      {"elections", caps().values},
      {"`unlock --force`", caps().ends_other_sessions},
      {"token survives a server restart", caps().durable_tokens}};
  int checked = 0;
  for (const auto& [column, value] : caps_by_column) {
    auto at = std::find(header.begin(), header.end(), column);
    ASSERT_NE(at, header.end()) << "README table has no column " << column;
    auto cell = row[static_cast<std::size_t>(at - header.begin())];
    auto said = yes_no(cell);
    if (!said) continue;
    ++checked;
    EXPECT_EQ(*said, value) << row_name->second << ", column " << column << ": README says '"
                            << cell << "', the backend's capabilities say " << value;
  }
  // "a dead process is freed": "at once (...)" is the capability; a cell that depends on the
  // route ("at once on a direct connection; ...") is not checked.
  auto dead = std::find(header.begin(), header.end(), "a dead process is freed");
  ASSERT_NE(dead, header.end()) << "README table has no column 'a dead process is freed'";
  auto dead_cell = row[static_cast<std::size_t>(dead - header.begin())];
  if (dead_cell.find(';') == std::string::npos) {
    ++checked;
    EXPECT_EQ(dead_cell.starts_with("at once"), caps().frees_dead_process_at_once)
        << row_name->second << ": README says '" << dead_cell
        << "', the backend's capabilities say " << caps().frees_dead_process_at_once;
  }
  EXPECT_GE(checked, 3);
}

}  // namespace dlock::test
