// Helpers of the Windows ipc tests (run under Wine): sections with
// content (they stand in for CUDA memory, as memfds do on Linux), a raw pipe server and client that
// bypass every check of ipc::channel (to play a hostile peer), and spawning this binary as a child.
#pragma once

#include "os_handle_count.hpp"

#include <membridge/ipc/wire.hpp>

#include <windows.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace membridge::testing {

/// True while `h` names an open handle of this process.
inline bool is_open(HANDLE h) {
  DWORD flags = 0;
  return ::GetHandleInformation(h, &flags) != 0;
}

/// A byte of the test pattern: chunk `chunk`'s byte `i` for `seed`.
inline std::uint8_t pattern_byte(std::uint32_t seed, std::size_t chunk, std::size_t i) {
  std::uint32_t x = seed * 2654435761U + static_cast<std::uint32_t>(chunk) * 40503U + static_cast<std::uint32_t>(i);
  x ^= x >> 13U;
  x *= 0x5bd1e995U;
  x ^= x >> 15U;
  return static_cast<std::uint8_t>(x);
}

/// A pagefile-backed section of `size` bytes (read/write), or null.
inline HANDLE make_section(std::size_t size) {
  return ::CreateFileMappingA(INVALID_HANDLE_VALUE, nullptr, PAGE_READWRITE, 0, static_cast<DWORD>(size), nullptr);
}

/// A raw pipe message writer/reader on `pipe` (overlapped handle), bypassing ipc::channel.
inline bool raw_write(HANDLE pipe, const std::vector<std::byte>& bytes) {
  OVERLAPPED ov{};
  ov.hEvent = ::CreateEventA(nullptr, TRUE, FALSE, nullptr);
  DWORD written = 0;
  BOOL ok = ::WriteFile(pipe, bytes.data(), static_cast<DWORD>(bytes.size()), nullptr, &ov);
  if (ok == 0 && ::GetLastError() == ERROR_IO_PENDING) ok = TRUE;
  if (ok != 0) ok = ::GetOverlappedResult(pipe, &ov, &written, TRUE);
  ::CloseHandle(ov.hEvent);
  return ok != 0 && written == bytes.size();
}

/// Header + payload + handle table, the fields given as they are (no checks).
inline std::vector<std::byte> raw_message(ipc::message_header header, const std::vector<std::byte>& payload,
                                          const std::vector<std::uint64_t>& table) {
  const auto head = ipc::encode_header(header);
  const auto t = ipc::encode_handle_table(table);
  std::vector<std::byte> out(head.begin(), head.end());
  out.insert(out.end(), payload.begin(), payload.end());
  out.insert(out.end(), t.begin(), t.end());
  return out;
}

/// A pipe server instance on `name` (overlapped, message mode, default security) already waiting
/// for a client; null on failure.
inline HANDLE raw_server(const std::string& name) {
  HANDLE pipe = ::CreateNamedPipeA(name.c_str(), PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED,
                                   PIPE_TYPE_MESSAGE | PIPE_READMODE_MESSAGE | PIPE_WAIT, PIPE_UNLIMITED_INSTANCES,
                                   1U << 16U, 1U << 16U, 0, nullptr);
  return pipe == INVALID_HANDLE_VALUE ? nullptr : pipe;
}

/// A raw client of pipe `name` (overlapped, message mode); null on failure.
inline HANDLE raw_client(const std::string& name) {
  HANDLE pipe = ::CreateFileA(name.c_str(), GENERIC_READ | GENERIC_WRITE, 0, nullptr, OPEN_EXISTING,
                              FILE_FLAG_OVERLAPPED, nullptr);
  if (pipe == INVALID_HANDLE_VALUE) return nullptr;
  DWORD mode = PIPE_READMODE_MESSAGE;
  (void)::SetNamedPipeHandleState(pipe, &mode, nullptr, nullptr);
  return pipe;
}

/// A pipe name no other test uses: `membridge-test-<pid>-<tag>` under this user's pipe prefix.
inline std::string test_pipe_tag(const std::string& tag) {
  return "wintest-" + std::to_string(::GetCurrentProcessId()) + "-" + tag;
}

/// Starts this binary again as `--membridge-child=<role> <args...>`. Returns the process
/// (PROCESS_INFORMATION's thread handle closed), or a null process on failure.
inline PROCESS_INFORMATION spawn_self(const std::string& role, const std::vector<std::string>& args) {
  PROCESS_INFORMATION pi{};
  char exe[MAX_PATH] = {};
  if (::GetModuleFileNameA(nullptr, exe, MAX_PATH) == 0) return pi;
  std::string command = std::string("\"") + exe + "\" --membridge-child=" + role;
  for (const std::string& a : args) command += " \"" + a + "\"";
  STARTUPINFOA si{};
  si.cb = sizeof si;
  if (::CreateProcessA(nullptr, command.data(), nullptr, nullptr, FALSE, 0, nullptr, nullptr, &si, &pi) == 0)
    return PROCESS_INFORMATION{};
  ::CloseHandle(pi.hThread);
  pi.hThread = nullptr;
  return pi;
}

/// The child role of the publisher test (ipc_publisher_test.cpp): ipc::subscriber following the
/// publisher at `pipe_name`; 0 when everything arrived as expected.
int publisher_subscriber_role(const std::string& pipe_name, std::uint32_t seed);

/// Runs the child role named in argv (`--membridge-child=<role>`); returns its exit code, or -1
/// when argv names no child role (then the binary runs its tests).
int run_child_role(int argc, char** argv);

}  // namespace membridge::testing
