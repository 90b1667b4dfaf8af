// The command line of membridge_ipc_producer, parsed in process: the defaults (one GPU), the device
// options and their errors, and device_problem() (the check main() runs against the CUDA device count).
#include "particle_layout.hpp"
#include "producer_options.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace particles::ipc_producer {
namespace {

parsed_command_line parse(std::vector<const char*> args) {
  args.insert(args.begin(), "membridge_ipc_producer");
  return parse_command_line(static_cast<int>(args.size()), args.data());
}

TEST(ipc_producer_options, defaults_keep_one_gpu) {
  const auto p = parse({});
  ASSERT_TRUE(p.options);
  EXPECT_EQ(p.options->sim_device, 0);
  EXPECT_EQ(p.options->render_device, 0);
  EXPECT_EQ(p.options->name, "particles");
  EXPECT_EQ(p.options->particles, 1048576U);
  EXPECT_EQ(p.options->max_particles, 8U * 1048576U);
  EXPECT_EQ(p.options->slots, 3U);
  EXPECT_EQ(device_problem(*p.options, 1), "") << "the defaults run on a one-GPU machine";
}

TEST(ipc_producer_options, sim_and_render_devices_are_read) {
  const auto p = parse({"--sim-device", "1", "--render-device", "0"});
  ASSERT_TRUE(p.options);
  EXPECT_EQ(p.options->sim_device, 1);
  EXPECT_EQ(p.options->render_device, 0);
  const auto q = parse({"--render-device", "3", "--sim-device", "2", "--sim-device", "5"});
  ASSERT_TRUE(q.options);
  EXPECT_EQ(q.options->render_device, 3);
  EXPECT_EQ(q.options->sim_device, 5) << "a later option wins";
  const auto same = parse({"--sim-device", "1", "--render-device", "1"});
  ASSERT_TRUE(same.options) << "the same GPU given explicitly is one GPU";
  EXPECT_EQ(same.options->sim_device, 1);
  EXPECT_EQ(same.options->render_device, 1);
}

TEST(ipc_producer_options, bad_device_ordinals_are_usage_errors) {
  for (const char* flag : {"--sim-device", "--render-device"}) {
    for (const char* bad : {"-1", "x", "1.5", "2x", "1024"}) {
      const auto p = parse({flag, bad});
      EXPECT_FALSE(p.options) << flag << " '" << bad << "'";
      EXPECT_EQ(p.status, exit_status::usage_error) << flag << " '" << bad << "'";
    }
    const auto missing = parse({flag});
    EXPECT_FALSE(missing.options) << flag << " without a value";
    EXPECT_EQ(missing.status, exit_status::usage_error);
  }
}

TEST(ipc_producer_options, help_mentions_the_device_options) {
  ::testing::internal::CaptureStdout();
  const auto p = parse({"--help"});
  const std::string help = ::testing::internal::GetCapturedStdout();
  EXPECT_FALSE(p.options);
  EXPECT_EQ(p.status, exit_status::ok);
  EXPECT_NE(help.find("--sim-device"), std::string::npos) << help;
  EXPECT_NE(help.find("--render-device"), std::string::npos) << help;
  EXPECT_NE(help.find("membridge_ipc_viewer --render-device A"), std::string::npos) << help;
}

TEST(ipc_producer_options, devices_the_machine_lacks_are_named) {
  producer_options o;
  o.sim_device = 1;
  o.render_device = 0;
  EXPECT_EQ(device_problem(o, 2), "");
  EXPECT_EQ(device_problem(o, 1), "--sim-device 1: no such CUDA device (this machine has 1: 0)");
  o.sim_device = 0;
  o.render_device = 2;
  EXPECT_EQ(device_problem(o, 2), "--render-device 2: no such CUDA device (this machine has 2: 0 to 1)");
  o.sim_device = 7;
  EXPECT_EQ(device_problem(o, 3), "--sim-device 7: no such CUDA device (this machine has 3: 0 to 2)");
  EXPECT_EQ(device_problem(o, 2), "--render-device 2: no such CUDA device (this machine has 2: 0 to 1)")
      << "the render device first: it holds the published buffer";
  EXPECT_EQ(device_problem(o, 8), "");
  o.render_device = 0;
  o.sim_device = 0;
  EXPECT_EQ(device_problem(o, 0), "--render-device 0: no such CUDA device (this machine has none)");
}

TEST(ipc_producer_options, cross_gpu_counts_fill_whole_pages) {
  constexpr std::size_t page = std::size_t{2} << 20;
  EXPECT_EQ(ipc_layout::cross_gpu_count_alignment(page, 3), 65536U);
  EXPECT_EQ(ipc_layout::cross_gpu_count_alignment(page, 4), 16384U);
  EXPECT_EQ(ipc_layout::cross_gpu_count_alignment(page, 8), 8192U);
  EXPECT_EQ(ipc_layout::cross_gpu_count_alignment(page, 1), 65536U);
  EXPECT_EQ(ipc_layout::cross_gpu_count_alignment(64, 3), 8U) << "never below the layout's own 8";
  for (const std::uint32_t slots : {1U, 2U, 3U, 5U, 6U, 7U, 8U}) {
    const std::uint64_t a = ipc_layout::cross_gpu_count_alignment(page, slots);
    EXPECT_EQ(a % ipc_layout::count_alignment, 0U) << slots;
    EXPECT_EQ(ipc_layout::bytes_for(a, slots) % page, 0U) << slots << " slots: whole pages";
    EXPECT_NE(ipc_layout::bytes_for(a / 2, slots) % page, 0U) << slots << " slots: the smallest such count";
  }
  EXPECT_EQ((std::uint64_t{1} << 20) % ipc_layout::cross_gpu_count_alignment(page, 3), 0U)
      << "the default 1M needs no rounding with 3 slots";
}

}  // namespace
}  // namespace particles::ipc_producer
