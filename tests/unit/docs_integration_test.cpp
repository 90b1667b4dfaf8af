// docs/integration.md tells an engine which device extensions to enable; this keeps that list equal
// to what the library checks (vulkan::required_device_extensions()), in the same order.
#include <membridge/vulkan/device_context.hpp>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr const char* begin_marker = "<!-- required-device-extensions: begin -->";
constexpr const char* end_marker = "<!-- required-device-extensions: end -->";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The names of the "- `NAME`" items between the markers; every other non-blank line is an error.
std::vector<std::string> marked_list(const std::string& doc, std::string& problem) {
  const auto begin = doc.find(begin_marker);
  const auto end = doc.find(end_marker);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    problem = "the markers are missing or out of order";
    return {};
  }
  std::istringstream lines(doc.substr(begin + std::string(begin_marker).size(), end - begin - std::string(begin_marker).size()));
  std::vector<std::string> names;
  for (std::string line; std::getline(lines, line);) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto open = line.find("- `");
    const auto close = open == std::string::npos ? std::string::npos : line.find('`', open + 3);
    if (open != 0 || close == std::string::npos || close + 1 != line.size()) {
      problem = "not a '- `NAME`' item: " + line;
      return {};
    }
    names.push_back(line.substr(3, close - 3));
  }
  return names;
}

TEST(docs_integration, required_device_extensions_match_the_library) {
  const std::string doc = read_file(MEMBRIDGE_INTEGRATION_DOC);
  ASSERT_FALSE(doc.empty()) << "cannot read " << MEMBRIDGE_INTEGRATION_DOC;
  std::string problem;
  const auto listed = marked_list(doc, problem);
  ASSERT_TRUE(problem.empty()) << MEMBRIDGE_INTEGRATION_DOC << ": " << problem;
  EXPECT_EQ(listed, membridge::vulkan::required_device_extensions())
      << "docs/integration.md section 2 must list exactly vulkan::required_device_extensions(), in order";
  // The list is not empty and names real extensions (a parse that found nothing must not pass).
  ASSERT_FALSE(listed.empty());
  for (const auto& name : listed) EXPECT_EQ(name.rfind("VK_", 0), 0U) << name;
}

TEST(docs_integration, the_list_parser_refuses_stray_lines) {
  std::string problem;
  const std::string doc = std::string(begin_marker) + "\n- `VK_KHR_a`\nVK_KHR_b\n" + end_marker + "\n";
  EXPECT_TRUE(marked_list(doc, problem).empty());
  EXPECT_NE(problem.find("VK_KHR_b"), std::string::npos) << problem;
  problem.clear();
  const auto names = marked_list(std::string(begin_marker) + "\n\n- `VK_KHR_a`\n- `VK_KHR_b`\n" + end_marker, problem);
  EXPECT_TRUE(problem.empty()) << problem;
  EXPECT_EQ(names, (std::vector<std::string>{"VK_KHR_a", "VK_KHR_b"}));
  marked_list("no markers here", problem);
  EXPECT_EQ(problem, "the markers are missing or out of order");
}

}  // namespace
