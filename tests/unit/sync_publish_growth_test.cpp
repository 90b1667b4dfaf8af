// sync::publish_buffer / publish_growth on the scripted driver and a real ipc::publisher (memfds
// stand in for the chunk fds): growth sends only the new chunks, and a shrink (fewer chunks) is
// published too (the GPU soak found that a shrink made publish_growth export a negative range).
#include "fake_driver_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/sync/ipc_buffers.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

using namespace membridge::literals;
using membridge::cuda::growable_buffer;

class publish_growth_test : public membridge::testing::fake_driver_test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/membridge-publish-growth-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    ::unlink((dir_ + "/p.sock").c_str());
    ::rmdir(dir_.c_str());
    fake_driver_test::TearDown();
  }
  std::string dir_;
};

TEST_F(publish_growth_test, growth_and_shrink_are_published_with_only_new_chunks) {
  const auto dev = open_device();
  // One 2 MiB chunk per 2 MiB of growth, so chunk counts follow the size.
  auto buffer = growable_buffer::create(dev, {.size = 4_MiB, .max_size = 64_MiB, .chunks = {.growth_factor = 1.0, .max_chunk = 2_MiB}});
  ASSERT_TRUE(buffer) << buffer.error().message();
  membridge::ipc::publisher_options options;
  options.listen.path = dir_ + "/p.sock";
  auto pub = membridge::ipc::publisher::start(options);
  ASSERT_TRUE(pub) << pub.error().message();
  ASSERT_TRUE(membridge::sync::publish_buffer(*pub, "data", *buffer, dev));
  EXPECT_EQ(pub->find_buffer("data")->chunks.size(), buffer->chunk_count());

  ASSERT_TRUE(buffer->resize(10_MiB));
  const std::size_t grown_chunks = buffer->chunk_count();
  ASSERT_GT(grown_chunks, 2U);
  ASSERT_TRUE(membridge::sync::publish_growth(*pub, "data", *buffer, dev));
  EXPECT_EQ(pub->find_buffer("data")->chunks.size(), grown_chunks);
  EXPECT_EQ(pub->find_buffer("data")->size, 10_MiB);
  EXPECT_EQ(pub->find_buffer("data")->generation, 2U);

  ASSERT_TRUE(buffer->resize(4_MiB));  // a shrink: fewer chunks
  ASSERT_LT(buffer->chunk_count(), grown_chunks);
  const auto shrunk = membridge::sync::publish_growth(*pub, "data", *buffer, dev);
  ASSERT_TRUE(shrunk) << shrunk.error().message();
  EXPECT_EQ(pub->find_buffer("data")->chunks.size(), buffer->chunk_count());
  EXPECT_EQ(pub->find_buffer("data")->size, 4_MiB);
  EXPECT_EQ(pub->find_buffer("data")->generation, 3U);

  ASSERT_TRUE(buffer->resize(8_MiB));  // and back up: the dropped chunks' places get new ones
  ASSERT_TRUE(membridge::sync::publish_growth(*pub, "data", *buffer, dev));
  EXPECT_EQ(pub->find_buffer("data")->chunks.size(), buffer->chunk_count());
}

}  // namespace
