#include <membridge/core/result.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <string>

namespace {

using membridge::errc;
using membridge::error;
using membridge::result;

result<int> parse_positive(int v) {
  if (v <= 0) return error(errc::invalid_argument, "parse_positive", "not positive: " + std::to_string(v));
  return v;
}

result<int> doubled(int v) {
  MEMBRIDGE_TRY_ASSIGN(const int parsed, parse_positive(v));
  return 2 * parsed;
}

result<void> check_even(int v) {
  MEMBRIDGE_TRY_ASSIGN(const int d, doubled(v));
  if (d % 4 != 0) return error(errc::invalid_argument, "check_even", "not a multiple of 4");
  return membridge::ok();
}

result<void> chain(int v) {
  MEMBRIDGE_TRY(check_even(v).with_context("checking " + std::to_string(v)));
  return membridge::ok();
}

TEST(result, holds_a_value_or_an_error) {
  const result<int> good = parse_positive(7);
  ASSERT_TRUE(good.has_value());
  EXPECT_TRUE(static_cast<bool>(good));
  EXPECT_EQ(*good, 7);
  EXPECT_EQ(good.value(), 7);
  EXPECT_EQ(good.value_or(-1), 7);

  const result<int> bad = parse_positive(-3);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), errc::invalid_argument);
  EXPECT_EQ(bad.error().context(), "not positive: -3");
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(result, try_macros_propagate_errors_and_values) {
  EXPECT_EQ(*doubled(5), 10);
  const auto failed = doubled(0);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().call(), "parse_positive");

  EXPECT_TRUE(check_even(2).has_value());
  EXPECT_EQ(check_even(3).error().call(), "check_even");
  EXPECT_EQ(check_even(-1).error().call(), "parse_positive");
}

TEST(result, with_context_adds_context_only_to_errors) {
  const auto failed = chain(3);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().context(), "not a multiple of 4: checking 3");
  EXPECT_TRUE(chain(2).has_value());
  auto value = parse_positive(4).with_context("unused");
  EXPECT_EQ(*value, 4);
}

TEST(result, holds_move_only_values) {
  result<std::unique_ptr<int>> r = std::make_unique<int>(42);
  ASSERT_TRUE(r);
  std::unique_ptr<int> taken = std::move(r).value();
  EXPECT_EQ(*taken, 42);
}

TEST(result, value_on_an_error_aborts_with_the_message) {
  EXPECT_DEATH(
      {
        const result<int> bad = parse_positive(-1);
        (void)bad.value();
      },
      "value\\(\\) called on a result that holds an error");
  EXPECT_DEATH({ chain(3).value(); }, "not a multiple of 4");
}

}  // namespace

namespace {

TEST(result, a_default_constructed_result_is_not_set_until_a_thread_assigns_it) {
  membridge::result<int> carried;
  ASSERT_FALSE(carried);
  EXPECT_EQ(carried.error().code(), membridge::errc::internal);
  EXPECT_NE(carried.error().message().find("not set"), std::string::npos) << carried.error().message();
  std::thread worker([&] { carried = 42; });
  worker.join();
  ASSERT_TRUE(carried);
  EXPECT_EQ(*carried, 42);
  membridge::result<std::string> failed;
  std::thread fails([&] { failed = membridge::error(membridge::errc::timeout, "wait", "10 s"); });
  fails.join();
  EXPECT_EQ(failed.error().code(), membridge::errc::timeout);
}

}  // namespace
