// The command line of membridge_ipc_viewer, parsed in process: --render-device (absent by default: the
// buffer's own GPU) and its errors.
#include "viewer_options.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace particles::ipc_viewer {
namespace {

parsed_command_line parse(std::vector<const char*> args) {
  args.insert(args.begin(), "membridge_ipc_viewer");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

TEST(ipc_viewer_options, defaults_render_on_the_buffers_gpu) {
  const auto p = parse({});
  ASSERT_TRUE(p.options);
  EXPECT_FALSE(p.options->render_device.has_value()) << "no CUDA needed unless --render-device is given";
  EXPECT_EQ(p.options->name, "particles");
  EXPECT_FALSE(p.options->observer);
  EXPECT_EQ(p.options->reconnect_ms, 5000U);
}

TEST(ipc_viewer_options, render_device_is_read) {
  const auto p = parse({"--render-device", "0", "--headless", "--frames", "300"});
  ASSERT_TRUE(p.options);
  ASSERT_TRUE(p.options->render_device.has_value());
  EXPECT_EQ(*p.options->render_device, 0);
  EXPECT_TRUE(p.options->headless);
  EXPECT_EQ(p.options->frames, 300U);
  const auto q = parse({"--render-device", "1", "--render-device", "3"});
  ASSERT_TRUE(q.options);
  EXPECT_EQ(q.options->render_device, 3) << "a later option wins";
}

TEST(ipc_viewer_options, bad_render_devices_are_usage_errors) {
  for (const char* bad : {"-1", "one", "0.5", "1x", "1024"}) {
    const auto p = parse({"--render-device", bad});
    EXPECT_FALSE(p.options) << "'" << bad << "'";
    EXPECT_EQ(p.status, exit_status::usage_error) << "'" << bad << "'";
  }
  const auto missing = parse({"--render-device"});
  EXPECT_FALSE(missing.options);
  EXPECT_EQ(missing.status, exit_status::usage_error);
}

TEST(ipc_viewer_options, help_mentions_render_device) {
  ::testing::internal::CaptureStdout();
  const auto p = parse({"--help"});
  const std::string help = ::testing::internal::GetCapturedStdout();
  EXPECT_FALSE(p.options);
  EXPECT_EQ(p.status, exit_status::ok);
  EXPECT_NE(help.find("--render-device"), std::string::npos) << help;
  EXPECT_NE(help.find("--sim-device B --render-device A"), std::string::npos) << help;
}

}  // namespace
}  // namespace particles::ipc_viewer
