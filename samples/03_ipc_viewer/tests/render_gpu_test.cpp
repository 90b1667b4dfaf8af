// membridge_ipc_viewer's --render-device check on the scripted driver with two GPUs: the ordinal's GPU
// when the published buffer lives there; a refusal naming both GPUs when it lives on the other one; an
// ordinal the machine lacks named with the devices it has.
#include "render_gpu.hpp"

#include "fake_driver_test.hpp"

#include <membridge/cuda/device.hpp>

#include <gtest/gtest.h>

#include <string>

namespace particles::ipc_viewer {
namespace {

using membridge::errc;

class render_gpu_test : public membridge::testing::fake_driver_test {
 protected:
  void SetUp() override { fake_.device_count = 2; }

  membridge::device_uuid uuid_of(int ordinal) {
    auto dev = membridge::cuda::device::open(fake_.driver(), ordinal);
    if (!dev) {
      ADD_FAILURE() << dev.error().message();
      return {};
    }
    return dev->uuid();
  }
};

TEST_F(render_gpu_test, the_buffers_gpu_is_accepted) {
  const membridge::device_uuid gpu0 = uuid_of(0);
  const membridge::device_uuid gpu1 = uuid_of(1);
  ASSERT_NE(gpu0, gpu1);
  auto picked = pick_render_gpu(fake_.driver(), 0, gpu0);
  ASSERT_TRUE(picked) << picked.error().message();
  EXPECT_EQ(*picked, gpu0);
  picked = pick_render_gpu(fake_.driver(), 1, gpu1);
  ASSERT_TRUE(picked) << picked.error().message();
  EXPECT_EQ(*picked, gpu1);
}

TEST_F(render_gpu_test, a_buffer_on_the_other_gpu_is_refused_naming_both) {
  const membridge::device_uuid gpu0 = uuid_of(0);
  const membridge::device_uuid gpu1 = uuid_of(1);
  auto picked = pick_render_gpu(fake_.driver(), 0, gpu1);
  ASSERT_FALSE(picked);
  EXPECT_EQ(picked.error().code(), errc::unsupported);
  const std::string m = picked.error().message();
  EXPECT_NE(m.find("the producer's buffer lives on CUDA device 1"), std::string::npos) << m;
  EXPECT_NE(m.find(gpu1.to_string()), std::string::npos) << m;
  EXPECT_NE(m.find("this viewer renders on CUDA device 0"), std::string::npos) << m;
  EXPECT_NE(m.find(gpu0.to_string()), std::string::npos) << m;
  EXPECT_NE(m.find("Start the producer with --render-device 0"), std::string::npos) << m;
}

TEST_F(render_gpu_test, a_buffer_on_a_gpu_this_process_does_not_see_is_named_by_uuid) {
  membridge::device_uuid elsewhere = uuid_of(0);
  elsewhere.bytes[15] = 0xee;
  auto picked = pick_render_gpu(fake_.driver(), 0, elsewhere);
  ASSERT_FALSE(picked);
  EXPECT_EQ(picked.error().code(), errc::unsupported);
  const std::string m = picked.error().message();
  EXPECT_NE(m.find("GPU " + elsewhere.to_string() + " (no CUDA device of this process)"), std::string::npos) << m;
}

TEST_F(render_gpu_test, a_missing_ordinal_names_the_devices_there_are) {
  const membridge::device_uuid gpu0 = uuid_of(0);
  auto picked = pick_render_gpu(fake_.driver(), 2, gpu0);
  ASSERT_FALSE(picked);
  EXPECT_EQ(picked.error().code(), errc::invalid_argument);
  EXPECT_NE(picked.error().message().find("2: no such CUDA device (this machine has 2: 0 to 1)"), std::string::npos)
      << picked.error().message();
}

}  // namespace
}  // namespace particles::ipc_viewer
