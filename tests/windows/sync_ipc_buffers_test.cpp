// sync's ipc buffers on Windows (under Wine) with the scripted CUDA driver, whose exports are real NT
// section handles: sync::publish_buffer / publish_growth hand a growable buffer's chunks to a real
// ipc::publisher; an ipc::subscriber receives them over a named pipe (DuplicateHandle) and
// sync::import_into_cuda / follow_growth map them, which the driver model shows to be the
// exporter's physical memory; frames announced meanwhile arrive in order.
#include "open_device_test.hpp"

#include <membridge/core/units.hpp>
#include <membridge/cuda/growable_buffer.hpp>
#include <membridge/ipc/publisher.hpp>
#include <membridge/ipc/subscriber.hpp>
#include <membridge/sync/ipc_buffers.hpp>

#include <gtest/gtest.h>

#include <windows.h>

#include <string>

namespace {

using namespace membridge::literals;
using namespace std::chrono_literals;
namespace cuda = membridge::cuda;
namespace ipc = membridge::ipc;
namespace sync = membridge::sync;

class sync_ipc_buffers_win32_test : public membridge::testing::open_device_test {};

TEST_F(sync_ipc_buffers_win32_test, a_subscriber_maps_the_publishers_chunks_and_follows_growth) {
  auto buffer = cuda::growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB});
  ASSERT_TRUE(buffer) << buffer.error().message();
  const std::string name = "sync-buffers-" + std::to_string(::GetCurrentProcessId());
  auto pub = ipc::publisher::start({.listen = {.name = name}, .publisher_name = "sync"});
  ASSERT_TRUE(pub) << pub.error().message();
  ASSERT_TRUE(sync::publish_buffer(*pub, "particles", *buffer, dev_, {"points:float4", 16}));

  auto sub = ipc::subscriber::connect({.name = name, .client_name = "sync-test", .timeout = 10s});
  ASSERT_TRUE(sub) << sub.error().message();
  const ipc::received_buffer* received = sub->buffer("particles");
  ASSERT_NE(received, nullptr);
  EXPECT_EQ(received->description.handles, ipc::handle_kind::opaque_win32);
  auto view = sync::import_into_cuda(dev_, *received);
  ASSERT_TRUE(view) << view.error().message();

  // The producer grows; the subscriber follows; a frame comes after the growth.
  ASSERT_TRUE(buffer->grow(192_MiB));
  ASSERT_TRUE(sync::publish_growth(*pub, "particles", *buffer, dev_));
  ASSERT_TRUE(pub->announce_frame(1));
  auto grew = sub->next_event(10s);
  ASSERT_TRUE(grew) << grew.error().message();
  ASSERT_EQ(grew->what, ipc::subscriber_event::kind::buffer_changed);
  received = sub->buffer("particles");
  ASSERT_NE(received, nullptr);
  auto changed = sync::follow_growth(*view, *received);
  ASSERT_TRUE(changed) << changed.error().message();
  EXPECT_TRUE(*changed);
  auto frame = sub->next_event(10s);
  ASSERT_TRUE(frame) << frame.error().message();
  EXPECT_EQ(frame->what, ipc::subscriber_event::kind::frame);
  EXPECT_EQ(frame->frame, 1U);

  // Every chunk the subscriber mapped is the publisher's physical memory in the driver model.
  ASSERT_EQ(view->capacity(), buffer->capacity());
  ASSERT_EQ(received->description.chunks.size(), buffer->chunk_count());
  const auto state = fake_.state();
  for (const auto& chunk : received->description.chunks) {
    const auto mine = state.mappings.find(view->address() + chunk.offset);
    const auto theirs = state.mappings.find(buffer->address() + chunk.offset);
    ASSERT_NE(mine, state.mappings.end());
    ASSERT_NE(theirs, state.mappings.end());
    EXPECT_EQ(mine->second.physical_id, theirs->second.physical_id) << "chunk at " << chunk.offset;
  }
  view = cuda::imported_buffer();
  sub = ipc::subscriber();
  pub->stop();
}

}  // namespace
