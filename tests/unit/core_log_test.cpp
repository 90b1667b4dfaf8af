#include <membridge/core/log.hpp>

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace {

using membridge::log_level;

struct captured {
  std::vector<std::pair<log_level, std::string>> messages;
};

void capture(log_level level, std::string_view message, void* user) noexcept {
  static_cast<captured*>(user)->messages.emplace_back(level, std::string(message));
}

class log_test : public ::testing::Test {
 protected:
  void SetUp() override { membridge::set_log_sink(&capture, &sink_); }
  void TearDown() override {
    membridge::set_log_sink(nullptr);
    membridge::set_log_level(log_level::warning);
  }
  captured sink_;
};

TEST_F(log_test, sink_receives_messages_at_or_above_the_minimum) {
  membridge::set_log_level(log_level::warning);
  membridge::log(log_level::debug, "dropped");
  membridge::log(log_level::info, "dropped too");
  membridge::log(log_level::warning, "kept");
  membridge::log(log_level::error, "also kept");
  ASSERT_EQ(sink_.messages.size(), 2u);
  EXPECT_EQ(sink_.messages[0], std::make_pair(log_level::warning, std::string("kept")));
  EXPECT_EQ(sink_.messages[1], std::make_pair(log_level::error, std::string("also kept")));
}

TEST_F(log_test, lowering_the_level_lets_debug_through) {
  membridge::set_log_level(log_level::debug);
  EXPECT_EQ(membridge::get_log_level(), log_level::debug);
  membridge::log(log_level::debug, "details");
  ASSERT_EQ(sink_.messages.size(), 1u);
  EXPECT_EQ(sink_.messages[0].second, "details");
}

TEST_F(log_test, null_sink_restores_the_default_and_detaches_the_old_one) {
  membridge::set_log_sink(nullptr);
  testing::internal::CaptureStderr();
  membridge::log(log_level::error, "to stderr");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("membridge [error] to stderr"), std::string::npos) << err;
  EXPECT_TRUE(sink_.messages.empty());
}

TEST(log_level_names, every_level_has_a_name) {
  EXPECT_EQ(membridge::to_string(log_level::debug), "debug");
  EXPECT_EQ(membridge::to_string(log_level::info), "info");
  EXPECT_EQ(membridge::to_string(log_level::warning), "warning");
  EXPECT_EQ(membridge::to_string(log_level::error), "error");
}

}  // namespace
