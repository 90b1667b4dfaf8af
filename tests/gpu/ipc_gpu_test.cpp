// gpu tier, ipc: CUDA memory and frame timelines shared with other processes through membridge's
// publisher/subscriber, on a real GPU, data checked every time:
//  1. a subscriber process imports a published growable buffer, follows two growths, and writes
//     into it for the publisher to read (both directions);
//  2. a consumer process takes >= 200 frames ordered only by the shared timeline semaphores;
//  3. a consumer killed with SIGKILL mid-stream stalls neither the producer nor leaks its fds, and a
//     new consumer joins and reads correct frames;
//  4. a producer killed with SIGKILL: the subscriber hears `disconnected`, its imported memory still
//     holds the data, and a new producer on the same path is reached by a new subscriber;
//  5. a buffer from "another GPU" (its description's UUID changed) is refused, naming both UUIDs.
// Child processes are this binary re-executed in a role (tests/support/child_process.hpp); each test
// listens on its own socket in its own temporary directory.
#include "ipc_gpu_test.hpp"

namespace membridge::testing {
namespace {

// ------------------------------------------------------------------------------- child roles ---

/// Fills `r` with the state of `view` and the words of its first `bytes` that differ from pattern `seed`.
void check_view(const cuda::imported_buffer& view, std::uint64_t bytes, std::uint32_t seed, reply& r) {
  r.size = view.size();
  r.chunks = view.chunk_count();
  r.address = view.address();
  if (view.size() != bytes) {
    r = failure(10, "the view holds " + std::to_string(view.size()) + " bytes, expected " + std::to_string(bytes));
    return;
  }
  if (const cudaError_t rc = gpu::count_mismatches(view.data(), bytes, seed, r.wrong_words); rc != cudaSuccess)
    r = failure(11, std::string("count_mismatches: ") + cudaGetErrorName(rc));
}

/// Role "ipc_growth_subscriber" (args: socket path): a subscriber process that imports buffer
/// "data", follows its growth and writes into it, as the parent's commands say.
int growth_subscriber_child(const std::vector<std::string>& args) {
  if (args.size() != 1) return 20;
  auto dev = open_gpu();
  if (!dev) return send_reply(failure(1, dev.error().message())) ? 0 : 21;
  auto sub = ipc::subscriber::connect({.path = args[0],
                                       .role = ipc::subscriber_role::observer,
                                       .client_name = "gpu-test growth subscriber",
                                       .timeout = 10s});
  if (!sub) return send_reply(failure(2, sub.error().message())) ? 0 : 21;
  cuda::imported_buffer view;
  for (;;) {
    auto in = receive_message(child_socket(), sizeof(command), 120s);
    if (!in || in->payload.size() != sizeof(command)) return 22;
    command c;
    std::memcpy(&c, in->payload.data(), sizeof c);
    reply r;
    switch (c.what) {
      case op::check: {
        const ipc::received_buffer* b = sub->buffer(data_name);
        if (b == nullptr) {
          r = failure(3, "the subscriber received no buffer 'data'");
          break;
        }
        auto imported = sync::import_into_cuda(*dev, *b);
        if (!imported) {
          r = failure(4, imported.error().message());
          break;
        }
        view = std::move(imported).value();
        check_view(view, c.size, c.seed, r);
        break;
      }
      case op::follow: {
        // The parent published the growth before asking: wait for its event (skip anything else).
        std::optional<ipc::subscriber_event> changed;
        while (!changed) {
          auto event = sub->next_event(10s);
          if (!event) {
            r = failure(5, "waiting for buffer_changed: " + event.error().message());
            break;
          }
          if (event->what == ipc::subscriber_event::kind::disconnected) {
            r = failure(6, "the publisher went away: " + event->reason);
            break;
          }
          if (event->what == ipc::subscriber_event::kind::buffer_changed && event->name == data_name) changed = *event;
        }
        if (!changed) break;
        auto followed = sync::follow_growth(view, *sub->buffer(data_name));
        if (!followed) {
          r = failure(7, followed.error().message());
          break;
        }
        if (!*followed) {
          r = failure(8, "follow_growth changed nothing after a buffer_changed event");
          break;
        }
        check_view(view, c.size, c.seed, r);
        break;
      }
      case op::write: {
        if (c.offset + c.bytes > view.size()) {
          r = failure(9, "write past the view's size");
          break;
        }
        const cudaError_t rc = gpu::fill_pattern(view.data<char>() + c.offset, c.bytes, c.seed, c.offset / 4);
        const cudaError_t synced = cudaDeviceSynchronize();
        if (rc != cudaSuccess || synced != cudaSuccess)
          r = failure(12, std::string("fill_pattern: ") + cudaGetErrorName(rc != cudaSuccess ? rc : synced));
        break;
      }
      case op::quit:
        return send_reply(r) ? 0 : 23;
    }
    if (!send_reply(r)) return 23;
  }
}
const child_role growth_subscriber_role("ipc_growth_subscriber", &growth_subscriber_child);

/// Role "ipc_frame_consumer" (args: socket path, frames to consume (0: until killed; "until-goodbye":
/// until the publisher says goodbye, then the final answer), progress after N frames (0: none)):
/// subscribes as a consumer of a sync::frame_publisher, imports buffer "slots", the shared semaphore
/// "frames.produced" and its own "frames.consumed" into CUDA, and for every frame m
/// announced after frame_at_join: its stream waits produced >= m + 1, a kernel counts the words of
/// slot m % slots that are not m, and the stream signals consumed = m + 1. No host wait in the loop.
/// Answers once ready (with frame_at_join), once after `progress` frames (if asked) and at the end.
int frame_consumer_child(const std::vector<std::string>& args) {
  if (args.size() != 3) return 20;
  const bool until_goodbye = args[1] == "until-goodbye";
  const std::uint64_t count = until_goodbye ? 0 : std::strtoull(args[1].c_str(), nullptr, 10);
  const std::uint64_t progress = std::strtoull(args[2].c_str(), nullptr, 10);
  auto dev = open_gpu();
  if (!dev) return send_reply(failure(1, dev.error().message())) ? 0 : 21;
  auto sub = ipc::subscriber::connect({.path = args[0],
                                       .role = ipc::subscriber_role::consumer,
                                       .client_name = "gpu-test frame consumer",
                                       .timeout = 10s});
  if (!sub) return send_reply(failure(2, sub.error().message())) ? 0 : 21;
  if (sub->role() != ipc::subscriber_role::consumer)
    return send_reply(failure(3, "the publisher did not grant the consumer role")) ? 0 : 21;
  const ipc::received_buffer* slots_buffer = sub->buffer(slots_name);
  const ipc::received_semaphore* produced_fd = sub->semaphore("frames.produced");
  const ipc::received_semaphore* consumed_fd = sub->semaphore("frames.consumed");
  if (slots_buffer == nullptr || produced_fd == nullptr || consumed_fd == nullptr)
    return send_reply(failure(4, "the subscriber did not receive 'slots', 'frames.produced' and 'frames.consumed'")) ? 0
                                                                                                                        : 21;
  const std::uint64_t slots = produced_fd->description.parameter;
  auto view = sync::import_into_cuda(*dev, *slots_buffer);
  if (!view) return send_reply(failure(5, view.error().message())) ? 0 : 21;
  if (slots == 0 || view->size() < slots * slot_bytes)
    return send_reply(failure(6, "the slots buffer is smaller than " + std::to_string(slots) + " slots")) ? 0 : 21;
  auto produced = cuda::external_semaphore::import_timeline(*dev, produced_fd->fd);
  auto consumed = cuda::external_semaphore::import_timeline(*dev, consumed_fd->fd);
  if (!produced || !consumed)
    return send_reply(failure(7, (!produced ? produced.error() : consumed.error()).message())) ? 0 : 21;

  cudaStream_t stream = nullptr;
  unsigned long long* errors = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc(&errors, sizeof *errors) != cudaSuccess || cudaMemset(errors, 0, sizeof *errors) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess)
    return send_reply(failure(8, "CUDA setup failed")) ? 0 : 21;

  const std::uint64_t first = sub->frame_at_join() ? *sub->frame_at_join() + 1 : 0;
  reply state;
  state.role = static_cast<std::int32_t>(sub->role());
  state.frame_at_join = sub->frame_at_join() ? static_cast<std::int64_t>(*sub->frame_at_join()) : -1;
  if (!send_reply(state)) return 23;  // ready

  const auto read_errors = [&](reply& r) -> bool {
    if (cudaStreamSynchronize(stream) != cudaSuccess ||
        cudaMemcpy(&r.wrong_words, errors, sizeof r.wrong_words, cudaMemcpyDeviceToHost) != cudaSuccess) {
      r = failure(9, "waiting for the consumer's stream failed");
      return false;
    }
    return true;
  };
  while (count == 0 || state.frames_seen < count) {
    auto event = sub->next_event(10s);
    if (!event) return send_reply(failure(10, "waiting for a frame: " + event.error().message())) ? 0 : 23;
    if (event->what == ipc::subscriber_event::kind::disconnected) {
      if (!until_goodbye) return send_reply(failure(11, "the producer went away: " + event->reason)) ? 0 : 23;
      break;
    }
    if (event->what != ipc::subscriber_event::kind::frame || event->frame < first) continue;
    const std::uint64_t m = event->frame;
    if (state.last_frame >= 0 && m <= static_cast<std::uint64_t>(state.last_frame)) state.increasing = 0;
    const auto* slot = view->data<char>() + (m % slots) * slot_bytes;
    if (auto waited = produced->wait(stream, m + 1); !waited) return send_reply(failure(12, waited.error().message())) ? 0 : 23;
    if (gpu::accumulate_not_equal(slot, slot_bytes, static_cast<std::uint32_t>(m), errors, stream) != cudaSuccess)
      return send_reply(failure(13, "the check kernel failed to launch")) ? 0 : 23;
    if (auto signalled = consumed->signal(stream, m + 1); !signalled)
      return send_reply(failure(14, signalled.error().message())) ? 0 : 23;
    if (state.first_frame < 0) state.first_frame = static_cast<std::int64_t>(m);
    state.last_frame = static_cast<std::int64_t>(m);
    ++state.frames_seen;
    if (progress != 0 && state.frames_seen == progress) {
      if (!read_errors(state)) return send_reply(state) ? 0 : 23;
      if (!send_reply(state)) return 23;
    }
  }
  if (!read_errors(state)) return send_reply(state) ? 0 : 23;
  cudaStreamDestroy(stream);
  cudaFree(errors);
  return send_reply(state) ? 0 : 23;  // the subscriber says goodbye when it goes, after the stream is idle
}
const child_role frame_consumer_role("ipc_frame_consumer", &frame_consumer_child);

/// Role "ipc_buffer_producer" (args: socket path, seed, bytes): publishes a growable buffer of
/// `bytes` holding pattern `seed` as "data", answers, then waits for op::quit (or SIGKILL).
int buffer_producer_child(const std::vector<std::string>& args) {
  if (args.size() != 3) return 20;
  const auto seed = static_cast<std::uint32_t>(std::strtoul(args[1].c_str(), nullptr, 10));
  const std::size_t bytes = std::strtoull(args[2].c_str(), nullptr, 10);
  auto dev = open_gpu();
  if (!dev) return send_reply(failure(1, dev.error().message())) ? 0 : 21;
  auto buffer = cuda::growable_buffer::create(*dev, {.size = bytes, .max_size = 2 * bytes});
  if (!buffer) return send_reply(failure(2, buffer.error().message())) ? 0 : 21;
  if (gpu::fill_pattern(buffer->data(), bytes, seed) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
    return send_reply(failure(3, "fill_pattern failed")) ? 0 : 21;
  auto pub = ipc::publisher::start({.listen = {.path = args[0]}, .publisher_name = "gpu-test producer"});
  if (!pub) return send_reply(failure(4, pub.error().message())) ? 0 : 21;
  if (auto published = sync::publish_buffer(*pub, data_name, *buffer, *dev); !published)
    return send_reply(failure(5, published.error().message())) ? 0 : 21;
  if (!send_reply(reply{})) return 23;
  for (;;) {
    auto in = receive_message(child_socket(), sizeof(command), 120s);
    if (!in || in->payload.size() != sizeof(command)) return 22;
    command c;
    std::memcpy(&c, in->payload.data(), sizeof c);
    if (c.what == op::quit) {
      pub->stop();  // subscribers hear goodbye before the answer
      return send_reply(reply{}) ? 0 : 23;
    }
    if (!send_reply(failure(30, "unexpected command"))) return 23;
  }
}
const child_role buffer_producer_role("ipc_buffer_producer", &buffer_producer_child);

// -------------------------------------------------------------------------------------- tests ---

TEST_F(ipc_gpu_test, a_subscriber_process_follows_two_growths_and_both_sides_see_each_others_writes) {
  cuda::chunk_policy policy;
  policy.min_chunk = 64_MiB;  // every growth below maps new chunks the subscriber must import
  auto buffer = cuda::growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 1_GiB, .chunks = policy});
  MB_OK(buffer);
  const std::uint32_t seed = fresh_seed();
  MB_CUDA_OK(gpu::fill_pattern(buffer->data(), buffer->size(), seed));
  MB_CUDA_OK(cudaDeviceSynchronize());
  auto pub = ipc::publisher::start({.listen = {.path = socket_path("growth")}, .publisher_name = "gpu-test growth"});
  MB_OK(pub);
  MB_OK(sync::publish_buffer(*pub, data_name, *buffer, dev_, {.name = "u32", .stride = 4}));

  auto child = spawn_child("ipc_growth_subscriber", {pub->path()});
  MB_OK(child);
  reply r = ask(*child, {.what = op::check, .seed = seed, .size = buffer->size()});
  ASSERT_EQ(r.status, 0) << r.message;
  EXPECT_EQ(r.wrong_words, 0U) << "the subscriber does not see the publisher's pattern";
  EXPECT_EQ(r.chunks, buffer->chunk_count());
  ASSERT_TRUE(eventually([&] { return pub->subscriber_count() == 1; }, 5s));
  const std::uint64_t address = r.address;

  for (const std::size_t size : {256_MiB, 640_MiB}) {
    const std::size_t old_size = buffer->size();
    const std::size_t old_chunks = buffer->chunk_count();
    MB_OK(buffer->grow(size));
    ASSERT_GT(buffer->chunk_count(), old_chunks);
    // The new part continues the same pattern (word offsets), so the whole buffer holds one pattern.
    MB_CUDA_OK(gpu::fill_pattern(buffer->data<char>() + old_size, size - old_size, seed, old_size / 4));
    MB_CUDA_OK(cudaDeviceSynchronize());
    MB_OK(sync::publish_growth(*pub, data_name, *buffer, dev_));
    r = ask(*child, {.what = op::follow, .seed = seed, .size = size});
    ASSERT_EQ(r.status, 0) << "growing to " << size << ": " << r.message;
    EXPECT_EQ(r.wrong_words, 0U) << "after growing to " << size << " bytes the subscriber sees wrong data";
    EXPECT_EQ(r.size, size);
    EXPECT_EQ(r.chunks, buffer->chunk_count());
    EXPECT_EQ(r.address, address) << "the subscriber's view moved";
  }

  // The subscriber writes across the first chunk boundary; the publisher reads it, and the rest is intact.
  const std::size_t offset = buffer->chunk(1).offset - 1_MiB;
  const std::size_t bytes = 4_MiB;
  const std::uint32_t child_seed = fresh_seed() ^ seed;
  r = ask(*child, {.what = op::write, .seed = child_seed, .offset = offset, .bytes = bytes});
  ASSERT_EQ(r.status, 0) << r.message;
  EXPECT_EQ(mismatches(buffer->data<char>() + offset, bytes, child_seed, offset / 4), 0U)
      << "the subscriber's writes are not in the publisher's memory";
  EXPECT_EQ(mismatches(buffer->data(), offset, seed), 0U);
  EXPECT_EQ(mismatches(buffer->data<char>() + offset + bytes, buffer->size() - offset - bytes, seed,
                       (offset + bytes) / 4),
            0U);

  r = ask(*child, {.what = op::quit});
  EXPECT_EQ(r.status, 0) << r.message;
  auto status = child->wait(30s);
  MB_OK(status);
  EXPECT_EQ(*status, 0);
  EXPECT_TRUE(eventually([&] { return pub->subscriber_count() == 0; }, 5s));
}

TEST_F(ipc_frames_gpu_test, a_consumer_process_reads_every_frame_in_timeline_order) {
  ASSERT_NO_FATAL_FAILURE(start_frames(socket_path("frames")));
  constexpr std::uint64_t frames = 300;
  auto child = spawn_child("ipc_frame_consumer", {frames_.publisher().path(), std::to_string(frames), "0"});
  MB_OK(child);
  const reply ready = receive_reply(*child);
  ASSERT_EQ(ready.status, 0) << ready.message;
  EXPECT_EQ(ready.role, static_cast<std::int32_t>(ipc::subscriber_role::consumer));
  EXPECT_EQ(ready.frame_at_join, -1) << "no frame was announced before the consumer joined";
  ASSERT_TRUE(eventually([&] { return frames_.publisher().has_consumer(); }, 5s));

  cudaStream_t stream = nullptr;
  MB_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (std::uint64_t n = 0; n < frames; ++n) MB_OK(produce(stream, n));
  MB_OK(frames_.timeline().wait_consumed(frames - 1, 30s));
  const reply done = receive_reply(*child);
  ASSERT_EQ(done.status, 0) << done.message;
  EXPECT_EQ(done.wrong_words, 0U) << "the consumer read a slot that did not hold its frame";
  EXPECT_GE(done.frames_seen, 200U);
  EXPECT_EQ(done.first_frame, 0);
  EXPECT_EQ(done.last_frame, static_cast<std::int64_t>(frames - 1));
  EXPECT_EQ(done.increasing, 1) << "frames arrived out of order";
  auto status = child->wait(30s);
  MB_OK(status);
  EXPECT_EQ(*status, 0);
  MB_CUDA_OK(cudaStreamSynchronize(stream));
  MB_CUDA_OK(cudaStreamDestroy(stream));
}

TEST_F(ipc_frames_gpu_test, a_consumer_killed_mid_stream_stalls_nothing_leaks_nothing_and_a_new_one_reads_correctly) {
  ASSERT_NO_FATAL_FAILURE(start_frames(socket_path("kill-consumer")));
  cudaStream_t stream = nullptr;
  MB_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // The producer runs on its own thread the whole time; every 16 frames it waits (with a time
  // limit) for its stream, so it never runs far ahead and a stall shows as an error.
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> produced{0};
  std::mutex producer_lock;
  std::string producer_error;
  std::thread producer([&] {
    for (std::uint64_t n = 0; !stop.load(); ++n) {
      auto made = produce(stream, n);
      cudaError_t rc = cudaSuccess;
      if (made && n % 16 == 15) rc = wait_stream(stream, 10s);
      if (!made || rc != cudaSuccess) {
        const std::lock_guard guard(producer_lock);
        producer_error = !made ? made.error().message()
                               : std::string("the producer's stream did not finish frame ") + std::to_string(n) +
                                     " within 10 s: " + cudaGetErrorName(rc);
        return;
      }
      produced.store(n + 1);
    }
  });
  const auto producer_failed = [&] {
    const std::lock_guard guard(producer_lock);
    return producer_error;
  };
  const auto stop_producer = [&] {
    stop.store(true);
    if (producer.joinable()) producer.join();
  };
  const scope_exit join_producer{stop_producer};  // also when an assertion returns early

  ASSERT_TRUE(eventually([&] { return produced.load() >= 32 || !producer_failed().empty(); }, 10s));
  const std::map<int, std::string> fds_before = open_fds();
  {
    auto child = spawn_child("ipc_frame_consumer", {frames_.publisher().path(), "0", "50"});
    ASSERT_TRUE(child) << child.error().message();
    const reply ready = receive_reply(*child);
    const reply progress = receive_reply(*child);
    ASSERT_EQ(ready.status, 0) << ready.message;
    ASSERT_EQ(progress.status, 0) << progress.message;
    EXPECT_EQ(progress.wrong_words, 0U);
    EXPECT_EQ(progress.frames_seen, 50U);
    EXPECT_TRUE(frames_.publisher().has_consumer());

    // kill -9 in the middle of its stream of waits, checks and signals.
    ASSERT_EQ(::kill(child->pid(), SIGKILL), 0);
    auto status = child->wait(10s);
    MB_OK(status);
    EXPECT_EQ(*status, 128 + SIGKILL);
  }  // the child's socketpair end is closed here
  const std::uint64_t at_kill = produced.load();
  const auto killed_at = std::chrono::steady_clock::now();
  EXPECT_TRUE(eventually([&] { return frames_.publisher().subscriber_count() == 0; }, 2s))
      << "the publisher still counts the killed consumer";
  EXPECT_FALSE(frames_.publisher().has_consumer());
  const auto dropped_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - killed_at).count();
  EXPECT_TRUE(eventually([&] { return produced.load() >= at_kill + 64 || !producer_failed().empty(); }, 10s))
      << "the producer stalled after its consumer died (frame " << produced.load() << ")";
  EXPECT_EQ(producer_failed(), "");
  std::printf("[ IPC      ] killed consumer dropped after ~%lld ms; producer at frame %llu then %llu\n",
              static_cast<long long>(dropped_ms), static_cast<unsigned long long>(at_kill),
              static_cast<unsigned long long>(produced.load()));

  // Every fd the consumer's connection used in this process is closed again.
  std::map<int, std::string> fds_after;
  const bool same = eventually(
      [&] {
        fds_after = open_fds();
        return fds_after.size() == fds_before.size();
      },
      3s);
  if (!same) {
    std::string extra;
    for (const auto& [fd, target] : fds_after)
      if (fds_before.count(fd) == 0) extra += " " + std::to_string(fd) + " -> " + target + ";";
    ADD_FAILURE() << "the parent had " << fds_before.size() << " fds before the consumer, " << fds_after.size()
                  << " after it was killed:" << extra;
  }

  // A new consumer joins the running stream and reads correct frames.
  {
    auto child = spawn_child("ipc_frame_consumer", {frames_.publisher().path(), "100", "0"});
    ASSERT_TRUE(child) << child.error().message();
    const reply ready = receive_reply(*child);
    const reply done = receive_reply(*child);
    ASSERT_EQ(ready.status, 0) << ready.message;
    EXPECT_EQ(ready.role, static_cast<std::int32_t>(ipc::subscriber_role::consumer)) << "the dead consumer's role was not freed";
    EXPECT_GE(ready.frame_at_join, 0);
    ASSERT_EQ(done.status, 0) << done.message;
    EXPECT_EQ(done.wrong_words, 0U) << "the new consumer read a slot that did not hold its frame";
    EXPECT_EQ(done.frames_seen, 100U);
    EXPECT_GT(done.first_frame, ready.frame_at_join);
    EXPECT_EQ(done.increasing, 1);
    auto status = child->wait(30s);
    MB_OK(status);
    EXPECT_EQ(*status, 0);
  }
  stop_producer();
  EXPECT_EQ(producer_failed(), "");
  EXPECT_EQ(wait_stream(stream, 10s), cudaSuccess);
  MB_CUDA_OK(cudaStreamDestroy(stream));
}

TEST_F(ipc_gpu_test, a_killed_producer_leaves_the_imported_memory_readable_and_a_new_producer_is_reached) {
  const std::string path = socket_path("kill-producer");
  constexpr std::size_t bytes = 128_MiB;
  const std::uint32_t first_seed = fresh_seed();
  cuda::imported_buffer first_view;
  {
    auto producer = spawn_child("ipc_buffer_producer", {path, std::to_string(first_seed), std::to_string(bytes)});
    MB_OK(producer);
    const reply ready = receive_reply(*producer);
    ASSERT_EQ(ready.status, 0) << ready.message;
    auto sub = ipc::subscriber::connect({.path = path, .client_name = "gpu-test", .timeout = 10s});
    MB_OK(sub);
    const ipc::received_buffer* b = sub->buffer(data_name);
    ASSERT_NE(b, nullptr);
    auto view = sync::import_into_cuda(dev_, *b);
    MB_OK(view);
    first_view = std::move(view).value();
    ASSERT_EQ(first_view.size(), bytes);
    EXPECT_EQ(mismatches(first_view.data(), bytes, first_seed), 0U);

    ASSERT_EQ(::kill(producer->pid(), SIGKILL), 0);
    auto status = producer->wait(10s);
    MB_OK(status);
    EXPECT_EQ(*status, 128 + SIGKILL);
    std::optional<ipc::subscriber_event> gone;
    for (int i = 0; i < 20 && !gone; ++i) {
      auto event = sub->next_event(1s);
      if (event && event->what == ipc::subscriber_event::kind::disconnected) {
        gone = *event;
      } else if (!event && event.error().code() != errc::timeout) {
        FAIL() << event.error().message();
      }
    }
    ASSERT_TRUE(gone) << "no disconnected event within 20 s of the producer's death";
    EXPECT_FALSE(gone->reason.empty());
    EXPECT_FALSE(sub->connected());
    EXPECT_NE(sub->buffer(data_name), nullptr) << "the received state is kept after disconnection";
  }
  // The producer process is gone; the memory it exported lives on in this process's import.
  EXPECT_EQ(mismatches(first_view.data(), bytes, first_seed), 0U) << "the imported memory lost the dead producer's data";

  // A new producer on the same path (the dead one's socket file is replaced), a new subscriber.
  const std::uint32_t second_seed = fresh_seed() ^ first_seed;
  auto producer = spawn_child("ipc_buffer_producer", {path, std::to_string(second_seed), std::to_string(bytes)});
  MB_OK(producer);
  const reply ready = receive_reply(*producer);
  ASSERT_EQ(ready.status, 0) << ready.message;
  auto sub = ipc::subscriber::connect({.path = path, .client_name = "gpu-test", .timeout = 10s});
  MB_OK(sub);
  ASSERT_NE(sub->buffer(data_name), nullptr);
  auto view = sync::import_into_cuda(dev_, *sub->buffer(data_name));
  MB_OK(view);
  EXPECT_EQ(mismatches(view->data(), bytes, second_seed), 0U) << "the new subscriber does not see the new producer's data";
  EXPECT_EQ(mismatches(first_view.data(), bytes, first_seed), 0U);

  const reply bye = ask(*producer, {.what = op::quit});
  EXPECT_EQ(bye.status, 0) << bye.message;
  auto status = producer->wait(30s);
  MB_OK(status);
  EXPECT_EQ(*status, 0);
  auto event = sub->next_event(5s);
  MB_OK(event);
  EXPECT_EQ(event->what, ipc::subscriber_event::kind::disconnected) << "a producer that stops says goodbye";
}

TEST_F(ipc_gpu_test, a_buffer_from_another_gpu_is_refused_naming_both_uuids) {
  auto buffer = cuda::growable_buffer::create(dev_, {.size = 64_MiB, .max_size = 256_MiB});
  MB_OK(buffer);
  const std::uint32_t seed = fresh_seed();
  MB_CUDA_OK(gpu::fill_pattern(buffer->data(), buffer->size(), seed));
  MB_CUDA_OK(cudaDeviceSynchronize());
  auto pub = ipc::publisher::start({.listen = {.path = socket_path("other-gpu")}, .publisher_name = "gpu-test"});
  MB_OK(pub);
  MB_OK(sync::publish_buffer(*pub, data_name, *buffer, dev_));
  auto sub = ipc::subscriber::connect({.path = pub->path(), .client_name = "gpu-test", .timeout = 10s});
  MB_OK(sub);
  const ipc::received_buffer* got = sub->buffer(data_name);
  ASSERT_NE(got, nullptr);
  ASSERT_EQ(got->description.device, dev_.uuid());

  {  // The buffer as received imports (the control case).
    auto view = sync::import_into_cuda(dev_, *got);
    MB_OK(view);
    EXPECT_EQ(mismatches(view->data(), buffer->size(), seed), 0U);
  }

  // The same chunks described as living on another GPU.
  ipc::received_buffer elsewhere;
  elsewhere.description = got->description;
  elsewhere.description.device.bytes[5] ^= 0x5AU;
  for (const os::unique_fd& fd : got->fds) {
    auto copy = os::borrowed_fd(fd).duplicate();
    MB_OK(copy);
    elsewhere.fds.push_back(std::move(copy).value());
  }
  auto refused = sync::import_into_cuda(dev_, elsewhere);
  ASSERT_FALSE(refused) << "a buffer of another GPU was imported";
  EXPECT_EQ(refused.error().code(), errc::invalid_argument) << refused.error().message();
  const std::string message = refused.error().message();
  EXPECT_NE(message.find(dev_.uuid().to_string()), std::string::npos) << "this GPU's UUID is not named: " << message;
  EXPECT_NE(message.find(elsewhere.description.device.to_string()), std::string::npos)
      << "the publisher's GPU UUID is not named: " << message;
}

}  // namespace
}  // namespace membridge::testing
