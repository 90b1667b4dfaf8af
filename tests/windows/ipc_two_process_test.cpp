// The Windows ipc tier's two-process test (under Wine): this binary is the publisher side (a
// listener on a per-user named pipe) and starts itself as the subscriber process. Sections stand in
// for CUDA memory: the publisher shares a buffer of three section chunks (a resource header, then a
// `chunks` message whose handles it duplicates into the verified subscriber process), its welcome, a
// frame and a goodbye, over ipc::channel (the wire as a raw publisher writes it; ipc::publisher
// itself is tested in ipc_publisher_test.cpp); the subscriber is
// ipc::subscriber (the Linux state machine and validator), maps the sections, checks the
// publisher's bytes and writes its own, which the publisher then reads. Both sides check
// that they end with the handles they started with.
#include "ipc_windows_test.hpp"

#include "detail/payload.hpp"

#include <membridge/ipc/channel.hpp>
#include <membridge/ipc/subscriber.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

namespace membridge::testing {

namespace {

using namespace std::chrono_literals;
namespace ipc = membridge::ipc;

constexpr std::size_t chunk_size = 64 * 1024;
constexpr std::size_t chunk_count = 3;
constexpr std::uint64_t frame_number = 41;
constexpr std::string_view child_marker = "written by the subscriber process";

/// The subscriber process (ipc::subscriber, the state machine Linux uses): exit code 0 when
/// everything arrived as expected, else a distinct code after a line on stderr saying what was wrong.
int subscriber_role(const std::string& pipe_name, std::uint32_t seed) {
  auto fail = [](int code, const std::string& what) {
    std::fprintf(stderr, "subscriber child: %s\n", what.c_str());
    return code;
  };
  const handle_snapshot handles_before = snapshot_handles();
  {
    auto sub = ipc::subscriber::connect({.path = pipe_name, .client_name = "wine-child", .timeout = 10s});
    if (!sub) return fail(10, "connect: " + sub.error().message());
    if (sub->publisher().user_sid != ipc::current_user_sid().value_or("")) return fail(11, "server SID not ours");
    if (sub->publisher_name() != "wine-publisher") return fail(12, "publisher name " + sub->publisher_name());
    const ipc::received_buffer* b = sub->buffer("particles");
    if (b == nullptr) return fail(13, "no buffer 'particles'");
    if (b->description.chunks.size() != chunk_count || b->fds.size() != chunk_count ||
        b->description.handles != ipc::handle_kind::opaque_win32)
      return fail(15, "unexpected buffer description");
    for (std::size_t c = 0; c < chunk_count; ++c) {
      auto* view = static_cast<std::uint8_t*>(::MapViewOfFile(b->fds[c].get(), FILE_MAP_ALL_ACCESS, 0, 0, 0));
      if (view == nullptr) return fail(19, "MapViewOfFile failed: " + std::to_string(::GetLastError()));
      for (std::size_t i = 0; i < b->description.chunks[c].size; ++i)
        if (view[i] != pattern_byte(seed, c, i)) {
          ::UnmapViewOfFile(view);
          return fail(20, "chunk " + std::to_string(c) + " differs at byte " + std::to_string(i));
        }
      std::memcpy(view, child_marker.data(), child_marker.size());
      view[child_marker.size()] = static_cast<std::uint8_t>(c);
      ::UnmapViewOfFile(view);
    }
    auto frame = sub->next_event(10s);
    if (!frame || frame->what != ipc::subscriber_event::kind::frame || frame->frame != frame_number)
      return fail(21, "no frame " + std::to_string(frame_number));
    auto bye = sub->next_event(10s);
    if (!bye || bye->what != ipc::subscriber_event::kind::disconnected || bye->reason.find("done") == std::string::npos)
      return fail(23, "no goodbye");
  }
  if (const ::testing::AssertionResult same = handles_changed_by(handles_before, 0); !same)
    return fail(25, same.message());
  return 0;
}

TEST(windows_ipc, publisher_and_subscriber_processes_share_sections_over_a_named_pipe) {
  const std::uint32_t seed = ::GetTickCount() | 1U;
  const handle_snapshot handles_before = snapshot_handles();
  ASSERT_GT(handles_before.count(), 0) << "NtQuerySystemInformation(SystemExtendedHandleInformation) must work under Wine";
  {
    auto listener = ipc::listener::listen({.name = test_pipe_tag("two-process")});
    ASSERT_TRUE(listener) << listener.error().message();

    std::vector<ipc::detail::shared_fd> sections;
    ipc::buffer_description d;
    d.name = "particles";
    d.handles = ipc::handle_kind::opaque_win32;
    d.format = {"points:float4", 16};
    for (std::size_t c = 0; c < chunk_count; ++c) {
      auto section = std::make_shared<const os::unique_handle>(make_section(chunk_size));
      ASSERT_TRUE(section->valid());
      auto* view = static_cast<std::uint8_t*>(::MapViewOfFile(section->get(), FILE_MAP_ALL_ACCESS, 0, 0, 0));
      ASSERT_NE(view, nullptr);
      for (std::size_t i = 0; i < chunk_size; ++i) view[i] = pattern_byte(seed, c, i);
      ::UnmapViewOfFile(view);
      d.chunks.push_back({c * chunk_size, chunk_size});
      sections.push_back(std::move(section));
    }
    d.size = d.reserved_size = chunk_count * chunk_size;
    d.generation = 1;
    ASSERT_EQ(ipc::check(d), "");

    const PROCESS_INFORMATION child = spawn_self("subscriber", {listener->path(), std::to_string(seed)});
    ASSERT_NE(child.hProcess, nullptr) << "CreateProcess failed: " << ::GetLastError();
    const os::unique_handle child_process(child.hProcess);

    auto ch = listener->accept(20s);
    ASSERT_TRUE(ch) << ch.error().message();
    EXPECT_EQ(ch->peer().pid, static_cast<std::int32_t>(child.dwProcessId)) << "GetNamedPipeClientProcessId";
    EXPECT_EQ(ch->peer().user_sid, ipc::current_user_sid().value_or("?"));
    auto hello = ch->receive(10s);
    ASSERT_TRUE(hello) << hello.error().message();
    ASSERT_EQ(hello->type, ipc::message_type::hello);
    const auto h = ipc::detail::decode_hello(hello->payload);
    ASSERT_TRUE(h) << h.error().message();
    EXPECT_EQ(h->client_name, "wine-child");

    for (const auto& m : ipc::detail::buffer_messages(ipc::message_type::resource, d, sections, 0)) {
      std::vector<os::borrowed_handle> handles;
      for (const auto& s : m->fds) handles.push_back(s->borrow());
      const auto sent = ch->send(m->type, m->payload, handles, 5s);
      ASSERT_TRUE(sent) << sent.error().message();
    }
    const ipc::detail::welcome_payload welcome{"wine-publisher", ipc::subscriber_role::observer, std::nullopt, 1};
    ASSERT_TRUE(ch->send(ipc::message_type::welcome, ipc::detail::encode(welcome), {}, 5s));
    ASSERT_TRUE(ch->send(ipc::message_type::frame, ipc::detail::encode_frame(frame_number), {}, 5s));
    ASSERT_TRUE(ch->send(ipc::message_type::goodbye, ipc::detail::encode_goodbye("done"), {}, 5s));
    ch->close();  // what was written stays readable: the child reads the goodbye, then the end

    ASSERT_EQ(::WaitForSingleObject(child_process.get(), 30000), WAIT_OBJECT_0) << "the child did not exit";
    DWORD code = 99;
    ASSERT_NE(::GetExitCodeProcess(child_process.get(), &code), 0);
    ASSERT_EQ(code, 0U) << "the subscriber process failed (its stderr says why)";

    // The child wrote into each section through the handle it received: the same memory.
    for (std::size_t c = 0; c < chunk_count; ++c) {
      auto* view = static_cast<std::uint8_t*>(::MapViewOfFile(sections[c]->get(), FILE_MAP_READ, 0, 0, 0));
      ASSERT_NE(view, nullptr);
      EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(view), child_marker.size()), child_marker);
      EXPECT_EQ(view[child_marker.size()], c);
      EXPECT_EQ(view[chunk_size - 1], pattern_byte(seed, c, chunk_size - 1)) << "the rest untouched";
      ::UnmapViewOfFile(view);
    }
  }
  EXPECT_TRUE(handles_changed_by(handles_before, 0)) << "every handle the test made is closed";
}

}  // namespace

int run_child_role(int argc, char** argv) {
  constexpr std::string_view flag = "--membridge-child=";
  if (argc < 2 || std::string_view(argv[1]).substr(0, flag.size()) != flag) return -1;
  const std::string_view role = std::string_view(argv[1]).substr(flag.size());
  if (role == "subscriber" && argc == 4)
    return subscriber_role(argv[2], static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10)));
  if (role == "publisher-subscriber" && argc == 4)
    return publisher_subscriber_role(argv[2], static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10)));
  std::fprintf(stderr, "unknown child role or arguments: %s\n", argv[1]);
  return 2;
}

}  // namespace membridge::testing
