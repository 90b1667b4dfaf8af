// The Windows transport in one process (under Wine): per-user pipe names, the handle table codec,
// malformed messages refused with every handle they carried closed, a client whose SID is not
// allowed refused (Wine runs every process as one user, so "another user" is a SID the listener does
// not allow: the check runs on the real client's token, compared with a forged allowed list), a
// failed send closing what it duplicated, timeouts. Leaks are counted with
// NtQuerySystemInformation(SystemExtendedHandleInformation) (os_handle_count.hpp).
#include "ipc_windows_test.hpp"

#include "detail/payload.hpp"

#include <membridge/ipc/channel.hpp>

#include <gtest/gtest.h>

#include <array>
#include <thread>

namespace membridge::testing {

namespace {

using namespace std::chrono_literals;
namespace ipc = membridge::ipc;

constexpr const char* forged_sid = "S-1-5-21-1111111111-2222222222-3333333333-1001";

/// A raw server instance on a fresh pipe name and an ipc::channel connected to it.
struct raw_pair {
  os::unique_handle server;
  ipc::channel client;
};

raw_pair connect_raw(const std::string& tag) {
  raw_pair out;
  const auto name = ipc::pipe_name_for(test_pipe_tag(tag));
  if (!name) return out;
  out.server = os::unique_handle(raw_server(*name));
  if (!out.server.valid()) return out;
  auto ch = ipc::channel::connect(*name, 5s);
  if (ch) out.client = std::move(*ch);
  return out;
}

/// An unnamed event: a handle value to put into a handle table.
os::unique_handle make_event() { return os::unique_handle(::CreateEventA(nullptr, TRUE, FALSE, nullptr)); }

ipc::message_header header_for(ipc::message_type type, std::size_t payload, std::size_t handles) {
  ipc::message_header h;
  h.type = type;
  h.payload_size = static_cast<std::uint32_t>(payload);
  h.fd_count = static_cast<std::uint16_t>(handles);
  return h;
}

TEST(windows_ipc, pipe_names_are_per_user) {
  const auto sid = ipc::current_user_sid();
  ASSERT_TRUE(sid) << sid.error().message();
  EXPECT_EQ(sid->rfind("S-1-", 0), 0U) << *sid;
  const auto name = ipc::pipe_name_for("viewer.1");
  ASSERT_TRUE(name) << name.error().message();
  EXPECT_EQ(*name, "\\\\.\\pipe\\membridge-" + *sid + "-viewer.1");
  for (const char* bad : {"", "a/b", "a\\b", "..", "sp ace"}) {
    const auto refused = ipc::pipe_name_for(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().code(), errc::invalid_argument);
  }
}

TEST(windows_ipc, the_handle_table_codec_splits_from_the_end_and_checks_the_count) {
  const std::vector<std::uint64_t> values{0x44, 0x1'0000'0048ULL};
  const std::vector<std::byte> payload{std::byte{1}, std::byte{2}, std::byte{3}};
  const auto bytes = raw_message(header_for(ipc::message_type::chunks, payload.size(), 2), payload, values);
  const auto split = ipc::split_handle_table(bytes);
  ASSERT_TRUE(split) << split.error().message();
  EXPECT_EQ(split->handle_values, values);
  EXPECT_EQ(split->message.size(), ipc::header_size + payload.size());
  EXPECT_TRUE(ipc::decode_header(split->message, 2));

  const auto too_many = raw_message(header_for(ipc::message_type::chunks, 0, 17), {}, std::vector<std::uint64_t>(17, 4));
  ASSERT_FALSE(ipc::split_handle_table(too_many));
  EXPECT_EQ(ipc::split_handle_table(too_many).error().code(), errc::protocol_error);
  auto short_table = raw_message(header_for(ipc::message_type::chunks, 0, 2), {}, {0x44});
  EXPECT_FALSE(ipc::split_handle_table(short_table)) << "2 handles claimed, 8 bytes follow";
  EXPECT_FALSE(ipc::split_handle_table(std::span(bytes).first(10))) << "shorter than a header";
}

TEST(windows_ipc, malformed_messages_are_refused_and_the_handles_they_carried_closed) {
  struct bad_case {
    const char* what;
    ipc::message_header header;
    std::size_t payload;
    int handles;
  };
  ipc::message_header bad_magic = header_for(ipc::message_type::chunks, 4, 2);
  bad_magic.magic = 0x12345678U;
  ipc::message_header bad_version = header_for(ipc::message_type::chunks, 4, 2);
  bad_version.version = ipc::wire_version + 1;
  ipc::message_header bad_reserved = header_for(ipc::message_type::chunks, 4, 2);
  bad_reserved.reserved = 1;
  ipc::message_header bad_type = header_for(ipc::message_type::chunks, 4, 2);
  bad_type.type = static_cast<ipc::message_type>(99);
  ipc::message_header wrong_size = header_for(ipc::message_type::chunks, 5, 2);  // 4 bytes follow
  const std::array<bad_case, 5> cases{{{"bad magic", bad_magic, 4, 2},
                                       {"another protocol version", bad_version, 4, 2},
                                       {"reserved field set", bad_reserved, 4, 2},
                                       {"unknown type", bad_type, 4, 2},
                                       {"payload size mismatch", wrong_size, 4, 2}}};
  const handle_snapshot before = snapshot_handles();
  ASSERT_GT(before.count(), 0);
  int n = 0;
  for (const bad_case& c : cases) {
    // No SCOPED_TRACE: under Windows its first use starts GoogleTest's thread-local watcher thread,
    // whose handle the count would see.
    auto pair = connect_raw("malformed-" + std::to_string(n++));
    ASSERT_TRUE(pair.client.valid()) << c.what;
    // The "publisher" duplicated two handles into this process: their values travel in the table.
    std::vector<std::uint64_t> table;
    std::vector<HANDLE> raw;
    for (int i = 0; i < c.handles; ++i) {
      HANDLE h = make_event().release();
      raw.push_back(h);
      table.push_back(reinterpret_cast<std::uintptr_t>(h));
    }
    ASSERT_TRUE(raw_write(pair.server.get(), raw_message(c.header, std::vector<std::byte>(c.payload), table))) << c.what;
    const auto got = pair.client.receive(5s);
    ASSERT_FALSE(got) << c.what;
    EXPECT_EQ(got.error().code(), errc::protocol_error) << c.what << ": " << got.error().message();
    EXPECT_FALSE(pair.client.valid()) << c.what << ": a peer that sent garbage is not trusted further";
    for (HANDLE h : raw) EXPECT_FALSE(is_open(h)) << c.what << ": the client closes the handles of a message it refuses";
  }
  EXPECT_TRUE(handles_changed_by(before, 0));
}

TEST(windows_ipc, a_valid_header_with_a_bad_payload_is_refused_by_the_shared_validator) {
  const handle_snapshot before = snapshot_handles();
  {
    auto pair = connect_raw("bad-payload");
    ASSERT_TRUE(pair.client.valid());
    // A `chunks` message that lists three chunks but carries two handles.
    ipc::detail::chunk_batch batch{0, {{0, 4096}, {4096, 4096}, {8192, 4096}}};
    const auto payload = ipc::detail::encode(batch);
    std::vector<HANDLE> raw{make_event().release(), make_event().release()};
    const std::vector<std::uint64_t> table{reinterpret_cast<std::uintptr_t>(raw[0]), reinterpret_cast<std::uintptr_t>(raw[1])};
    ASSERT_TRUE(raw_write(pair.server.get(), raw_message(header_for(ipc::message_type::chunks, payload.size(), 2), payload, table)));
    auto m = pair.client.receive(5s);
    ASSERT_TRUE(m) << "the header is valid: " << m.error().message();
    ASSERT_EQ(m->fds.size(), 2U);
    const auto decoded = ipc::detail::decode_chunk_batch(m->payload, m->fds.size());
    ASSERT_FALSE(decoded);
    EXPECT_EQ(decoded.error().code(), errc::protocol_error);
    m = ipc::message{};  // the refused message's handles close with it
    for (HANDLE h : raw) EXPECT_FALSE(is_open(h));
  }
  EXPECT_TRUE(handles_changed_by(before, 0));
}

TEST(windows_ipc, handle_tables_that_cannot_be_trusted_are_refused) {
  const handle_snapshot before = snapshot_handles();
  {
    // A value named twice: one distinct handle, closed once.
    auto pair = connect_raw("twice");
    ASSERT_TRUE(pair.client.valid());
    HANDLE h = make_event().release();
    const auto v = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(h));
    ASSERT_TRUE(raw_write(pair.server.get(), raw_message(header_for(ipc::message_type::frame, 8, 2), std::vector<std::byte>(8), {v, v})));
    auto got = pair.client.receive(5s);
    ASSERT_FALSE(got);
    EXPECT_NE(got.error().message().find("twice"), std::string::npos) << got.error().message();
    EXPECT_FALSE(is_open(h));

    // A value that names nothing in this process.
    auto pair2 = connect_raw("nothing");
    ASSERT_TRUE(pair2.client.valid());
    ASSERT_TRUE(raw_write(pair2.server.get(), raw_message(header_for(ipc::message_type::frame, 8, 1), std::vector<std::byte>(8), {0x7FF0})));
    got = pair2.client.receive(5s);
    ASSERT_FALSE(got);
    EXPECT_NE(got.error().message().find("names no open handle"), std::string::npos) << got.error().message();

    // More handles than the cap: no trustworthy table, so nothing is closed (and nothing leaks:
    // a publisher never sends such a message).
    auto pair3 = connect_raw("over-cap");
    ASSERT_TRUE(pair3.client.valid());
    const os::unique_handle kept = make_event();
    const auto kept_value = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(kept.get()));
    ASSERT_TRUE(raw_write(pair3.server.get(), raw_message(header_for(ipc::message_type::frame, 0, 17), {}, std::vector<std::uint64_t>(17, kept_value))));
    got = pair3.client.receive(5s);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code(), errc::protocol_error);
    EXPECT_TRUE(is_open(kept.get())) << "values of a table over the cap are not touched";

    // Larger than any valid message.
    auto pair4 = connect_raw("oversize");
    ASSERT_TRUE(pair4.client.valid());
    // Written from another thread: the pipe's buffer is smaller than the message.
    bool written = false;
    std::thread writer([&] { written = raw_write(pair4.server.get(), std::vector<std::byte>(ipc::header_size + ipc::max_payload_size + 1024)); });
    got = pair4.client.receive(5s);
    writer.join();
    EXPECT_TRUE(written);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code(), errc::protocol_error);
    EXPECT_NE(got.error().message().find("larger than the largest valid one"), std::string::npos) << got.error().message();
  }
  EXPECT_TRUE(handles_changed_by(before, 0));
}

TEST(windows_ipc, the_listener_refuses_handle_values_from_a_client_without_touching_them) {
  const handle_snapshot before = snapshot_handles();
  {
    auto listener = ipc::listener::listen({.name = test_pipe_tag("client-handles")});
    ASSERT_TRUE(listener) << listener.error().message();
    const os::unique_handle raw(raw_client(listener->path()));
    ASSERT_TRUE(raw.valid());
    auto ch = listener->accept(5s);
    ASSERT_TRUE(ch) << ch.error().message();
    const os::unique_handle mine = make_event();
    const auto v = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(mine.get()));
    ASSERT_TRUE(raw_write(raw.get(), raw_message(header_for(ipc::message_type::goodbye, 0, 1), {}, {v})));
    const auto got = ch->receive(5s);
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error().code(), errc::protocol_error);
    EXPECT_NE(got.error().message().find("only the publisher sends handles"), std::string::npos) << got.error().message();
    EXPECT_TRUE(is_open(mine.get())) << "a value from a client names its handle, not ours: never closed";
  }
  EXPECT_TRUE(handles_changed_by(before, 0));
}

TEST(windows_ipc, a_client_whose_sid_is_not_allowed_is_refused) {
  const handle_snapshot before = snapshot_handles();
  {
    const auto own = ipc::current_user_sid();
    ASSERT_TRUE(own);
    auto listener = ipc::listener::listen({.name = test_pipe_tag("forged-sid"), .allowed_sids = {forged_sid}});
    ASSERT_TRUE(listener) << listener.error().message();
    auto client = ipc::channel::connect(listener->path(), 5s);
    ASSERT_TRUE(client) << client.error().message();
    const auto refused = listener->accept(5s);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code(), errc::protocol_error);
    EXPECT_NE(refused.error().message().find("SID " + *own + "): SID not allowed"), std::string::npos)
        << refused.error().message();
    const auto got = client->receive(5s);
    ASSERT_FALSE(got);
    EXPECT_TRUE(client->peer_closed()) << "the refused client sees the pipe broken: " << got.error().message();
    EXPECT_TRUE(listener->valid()) << "the listener keeps waiting for the next client";
    auto next = ipc::channel::connect(listener->path(), 5s);
    ASSERT_TRUE(next) << next.error().message();
    EXPECT_FALSE(listener->accept(5s)) << "the same SID again: refused again";

    // The same process is allowed when its SID is listed.
    auto open_listener = ipc::listener::listen({.name = test_pipe_tag("listed-sid"), .allowed_sids = {forged_sid, *own}});
    ASSERT_TRUE(open_listener) << open_listener.error().message();
    auto listed = ipc::channel::connect(open_listener->path(), 5s);
    ASSERT_TRUE(listed);
    auto accepted = open_listener->accept(5s);
    ASSERT_TRUE(accepted) << accepted.error().message();
    EXPECT_EQ(accepted->peer().pid, static_cast<std::int32_t>(::GetCurrentProcessId()));
    EXPECT_EQ(accepted->peer().user_sid, *own);
  }
  EXPECT_TRUE(handles_changed_by(before, 0));
}

TEST(windows_ipc, a_send_that_fails_closes_what_it_duplicated_into_the_client) {
  const handle_snapshot before = snapshot_handles();
  {
    auto listener = ipc::listener::listen({.name = test_pipe_tag("failed-send"), .buffer_size = 4096});
    ASSERT_TRUE(listener) << listener.error().message();
    auto client = ipc::channel::connect(listener->path(), 5s);
    ASSERT_TRUE(client);
    auto server = listener->accept(5s);
    ASSERT_TRUE(server) << server.error().message();
    const os::unique_handle a = make_event();
    const os::unique_handle b = make_event();
    const std::array<os::borrowed_handle, 2> handles{a.borrow(), b.borrow()};
    const std::vector<std::byte> payload(8);

    // The client sends no handles: refused before anything is duplicated.
    const auto from_client = client->send(ipc::message_type::frame, payload, handles, 1s);
    ASSERT_FALSE(from_client);
    EXPECT_EQ(from_client.error().code(), errc::invalid_argument);

    // A message that arrives: its two handles are new ones in the client (this process).
    const handle_snapshot before_send = snapshot_handles();
    ASSERT_TRUE(server->send(ipc::message_type::frame, payload, handles, 1s));
    EXPECT_TRUE(handles_changed_by(before_send, 2));
    auto got = client->receive(5s);
    ASSERT_TRUE(got) << got.error().message();
    ASSERT_EQ(got->fds.size(), 2U);
    ASSERT_NE(::SetEvent(got->fds[0].get()), 0);
    EXPECT_EQ(::WaitForSingleObject(a.get(), 0), WAIT_OBJECT_0) << "the same event";
    got = ipc::message{};
    EXPECT_TRUE(handles_changed_by(before_send, 0));

    // The client is gone: the send fails and the duplicates in the client are closed again.
    client->close();
    const handle_snapshot before_failed = snapshot_handles();
    const auto failed = server->send(ipc::message_type::frame, payload, handles, 1s);
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().code(), errc::protocol_error) << failed.error().message();
    EXPECT_TRUE(server->peer_closed());
    EXPECT_TRUE(handles_changed_by(before_failed, 0)) << "no duplicate is left in the client process";
  }
  EXPECT_TRUE(handles_changed_by(before, 0));
}

TEST(windows_ipc, a_send_to_a_full_pipe_times_out_at_once_and_leaves_no_duplicate) {
  const handle_snapshot before = snapshot_handles();
  {
    auto listener = ipc::listener::listen({.name = test_pipe_tag("full-pipe"), .buffer_size = 4096});
    ASSERT_TRUE(listener) << listener.error().message();
    auto client = ipc::channel::connect(listener->path(), 5s);
    ASSERT_TRUE(client);
    auto server = listener->accept(5s);
    ASSERT_TRUE(server) << server.error().message();
    const os::unique_handle event = make_event();
    const std::array<os::borrowed_handle, 1> handles{event.borrow()};
    const std::vector<std::byte> payload(16 * 1024);
    // The client reads nothing: sends with a timeout of 0 fill the pipe until one is not taken.
    int sent = 0;
    result<void> last = ok();
    handle_snapshot before_last;
    for (; sent < 64; ++sent) {
      before_last = snapshot_handles();
      last = server->send(ipc::message_type::frame, payload, handles, 0ms);
      if (!last) break;
    }
    ASSERT_FALSE(last) << "64 messages of 16 KiB fit a 4 KiB pipe";
    EXPECT_EQ(last.error().code(), errc::timeout) << last.error().message();
    EXPECT_TRUE(handles_changed_by(before_last, 0)) << "the refused message's duplicate was closed in the client";
    EXPECT_TRUE(server->valid()) << "a timeout leaves the channel usable";
    // What was taken arrives whole, each with its handle.
    for (int i = 0; i < sent; ++i) {
      auto got = client->receive(5s);
      ASSERT_TRUE(got) << got.error().message();
      EXPECT_EQ(got->payload.size(), payload.size());
      ASSERT_EQ(got->fds.size(), 1U);
    }
    const auto nothing_more = client->receive(50ms);
    ASSERT_FALSE(nothing_more);
    EXPECT_EQ(nothing_more.error().code(), errc::timeout) << "the timed-out message never arrives";
  }
  EXPECT_TRUE(handles_changed_by(before, 0));
}

TEST(windows_ipc, handle_checks_tell_sections_and_events_from_files_and_processes) {
  const os::unique_handle section(make_section(4096));
  const os::unique_handle event = make_event();
  ASSERT_TRUE(section.valid() && event.valid());
  EXPECT_EQ(ipc::detail::handle_fd_problem(section.borrow()), "");
  EXPECT_EQ(ipc::detail::handle_fd_problem(event.borrow()), "");
  const auto name = ipc::pipe_name_for(test_pipe_tag("handle-check"));
  ASSERT_TRUE(name);
  const os::unique_handle pipe(raw_server(*name));
  ASSERT_TRUE(pipe.valid());
  EXPECT_EQ(ipc::detail::handle_fd_problem(pipe.borrow()), "a file, pipe or device");
  HANDLE self = nullptr;
  ASSERT_NE(::DuplicateHandle(::GetCurrentProcess(), ::GetCurrentProcess(), ::GetCurrentProcess(), &self, 0, FALSE,
                              DUPLICATE_SAME_ACCESS), 0);
  const os::unique_handle process(self);
  EXPECT_EQ(ipc::detail::handle_fd_problem(process.borrow()), "a process, thread or token");
  EXPECT_EQ(ipc::detail::handle_fd_problem(os::borrowed_handle(reinterpret_cast<HANDLE>(std::uintptr_t{0x7FF0}))),
            "a value that names no open handle");
}

TEST(windows_ipc, timeouts_leave_the_channel_usable) {
  const handle_snapshot before = snapshot_handles();
  {
    auto listener = ipc::listener::listen({.name = test_pipe_tag("timeouts")});
    ASSERT_TRUE(listener);
    const auto no_client = listener->accept(20ms);
    ASSERT_FALSE(no_client);
    EXPECT_EQ(no_client.error().code(), errc::timeout);
    auto client = ipc::channel::connect(listener->path(), 5s);
    ASSERT_TRUE(client);
    auto server = listener->accept(5s);
    ASSERT_TRUE(server);
    const auto nothing = client->receive(30ms);
    ASSERT_FALSE(nothing);
    EXPECT_EQ(nothing.error().code(), errc::timeout);
    EXPECT_TRUE(client->valid());
    ASSERT_TRUE(server->send(ipc::message_type::frame, ipc::detail::encode_frame(7), {}, 1s));
    auto got = client->receive(5s);
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(ipc::detail::decode_frame(got->payload).value_or(0), 7U);
    ASSERT_TRUE(client->send(ipc::message_type::goodbye, ipc::detail::encode_goodbye("bye"), {}, 1s));
    got = server->receive(5s);
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(ipc::detail::decode_goodbye(got->payload).value_or(""), "bye");
  }
  EXPECT_TRUE(handles_changed_by(before, 0));
}

}  // namespace

}  // namespace membridge::testing
