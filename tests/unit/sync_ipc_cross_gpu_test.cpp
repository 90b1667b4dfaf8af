// sync::import_into_cuda on the scripted driver modelling two GPUs: a buffer published from GPU 0
// imported by a subscriber whose device is GPU 1 maps the publisher's memory with access for GPU 1
// when peer access exists, and is refused naming both GPUs (nothing left reserved) when it does not.
// The received buffer is built as ipc::subscriber hands it over: the description and one fd per chunk.
#include "fake_driver_test.hpp"
#include "fd_leak_listener.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/sync/ipc_buffers.hpp>

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace {

using namespace membridge::literals;
using membridge::errc;
using membridge::cuda::device;
using membridge::cuda::growable_buffer;

class ipc_cross_gpu_test : public membridge::testing::fake_driver_test {
 protected:
  // What a subscriber receives for `buffer` published from `publisher_gpu` as "particles".
  membridge::ipc::received_buffer receive(const growable_buffer& buffer, const device& publisher_gpu) {
    membridge::ipc::received_buffer out;
    out.description = membridge::sync::describe(buffer, publisher_gpu, "particles", {}, 1);
    for (std::size_t i = 0; i < buffer.chunk_count(); ++i) {
      auto c = buffer.export_chunk(i);
      if (!c) {
        ADD_FAILURE() << c.error().message();
        return out;
      }
      out.fds.push_back(std::move(c->fd));
    }
    return out;
  }

  void TearDown() override {
    d0_ = {};
    d1_ = {};
    fake_driver_test::TearDown();
  }

  int gpus_ = (fake_.device_count = 2);  // before the devices below are opened
  device d0_ = open_device(0);
  device d1_ = open_device(1);
};

TEST_F(ipc_cross_gpu_test, a_subscriber_on_a_peer_gpu_maps_the_publishers_memory_with_access_for_its_own_gpu) {
  auto buffer = growable_buffer::create(d0_, {.size = 6_MiB, .max_size = 64_MiB,
                                              .chunks = {.growth_factor = 1.0, .max_chunk = 2_MiB}});
  ASSERT_TRUE(buffer) << buffer.error().message();
  const auto received = receive(*buffer, d0_);
  ASSERT_EQ(received.fds.size(), 3U);
  auto view = membridge::sync::import_into_cuda(d1_, received);
  ASSERT_TRUE(view) << view.error().message();
  EXPECT_EQ(view->chunk_count(), 3U);
  EXPECT_EQ(view->size(), 6_MiB);
  for (std::size_t i = 0; i < 3; ++i) {
    const CUdeviceptr mine = view->address() + buffer->chunk(i).offset;
    const CUdeviceptr theirs = buffer->address() + buffer->chunk(i).offset;
    const auto& m = fake_.mappings_.at(mine);
    EXPECT_EQ(m.physical_id, fake_.mappings_.at(theirs).physical_id) << "chunk " << i << " is the publisher's memory";
    EXPECT_EQ(fake_.physicals_.at(m.physical_id).prop.location.id, 0) << "it stays on the publisher's GPU";
    EXPECT_EQ(m.peers.at(1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE) << "the subscriber's GPU has access, chunk " << i;
  }
}

TEST_F(ipc_cross_gpu_test, without_peer_access_the_subscriber_is_refused_naming_both_gpus_and_nothing_stays) {
  fake_.no_peer_access = {{1, 0}};
  auto buffer = growable_buffer::create(d0_, {.size = 4_MiB, .max_size = 64_MiB});
  ASSERT_TRUE(buffer) << buffer.error().message();
  const auto received = receive(*buffer, d0_);
  const auto before = fake_.state();
  const auto fds_before = membridge::testing::open_fds();
  auto view = membridge::sync::import_into_cuda(d1_, received);
  ASSERT_FALSE(view);
  EXPECT_EQ(view.error().code(), errc::unsupported);
  const std::string text = view.error().message();
  EXPECT_NE(text.find("device 1"), std::string::npos) << text;
  EXPECT_NE(text.find("device 0"), std::string::npos) << text;
  EXPECT_NE(text.find("particles"), std::string::npos) << text;
  EXPECT_NE(text.find(d0_.uuid().to_string()), std::string::npos) << text;
  EXPECT_EQ(fake_.state(), before) << "no range reserved, nothing imported";
  EXPECT_EQ(membridge::testing::open_fds(), fds_before);
}

TEST_F(ipc_cross_gpu_test, a_buffer_from_a_gpu_this_process_cannot_see_is_refused_naming_its_uuid) {
  auto buffer = growable_buffer::create(d0_, {.size = 2_MiB, .max_size = 64_MiB});
  ASSERT_TRUE(buffer) << buffer.error().message();
  auto received = receive(*buffer, d0_);
  received.description.device.bytes.fill(0xab);  // no such GPU here
  const auto before = fake_.state();
  auto view = membridge::sync::import_into_cuda(d1_, received);
  ASSERT_FALSE(view);
  EXPECT_EQ(view.error().code(), errc::invalid_argument);
  EXPECT_NE(view.error().message().find(received.description.device.to_string()), std::string::npos)
      << view.error().message();
  EXPECT_NE(view.error().message().find("cannot see"), std::string::npos) << view.error().message();
  EXPECT_EQ(fake_.state(), before);
}

TEST_F(ipc_cross_gpu_test, following_growth_on_the_other_gpu_imports_the_new_chunks_there_too) {
  auto buffer = growable_buffer::create(d0_, {.size = 2_MiB, .max_size = 64_MiB,
                                              .chunks = {.growth_factor = 1.0, .max_chunk = 2_MiB}});
  ASSERT_TRUE(buffer) << buffer.error().message();
  auto view = membridge::sync::import_into_cuda(d1_, receive(*buffer, d0_));
  ASSERT_TRUE(view) << view.error().message();
  ASSERT_TRUE(buffer->grow(6_MiB));
  const auto grown = receive(*buffer, d0_);
  const auto changed = membridge::sync::follow_growth(*view, grown);
  ASSERT_TRUE(changed) << changed.error().message();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(view->chunk_count(), 3U);
  EXPECT_EQ(fake_.mappings_.at(view->address() + 4_MiB).peers.at(1), CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

}  // namespace
