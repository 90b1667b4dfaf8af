#include "os_handle_count.hpp"
#include "runtime_priming.hpp"

#include <windows.h>
#include <winternl.h>

#include <cstdint>
#include <vector>

namespace membridge::testing {

namespace {

// SYSTEM_HANDLE_TABLE_ENTRY_INFO_EX and SYSTEM_HANDLE_INFORMATION_EX (not in mingw's winternl.h).
struct handle_entry {
  void* object;
  ULONG_PTR process_id;
  ULONG_PTR handle_value;
  ULONG granted_access;
  USHORT creator_back_trace_index;
  USHORT object_type_index;
  ULONG handle_attributes;
  ULONG reserved;
};
struct handle_table {
  ULONG_PTR count;
  ULONG_PTR reserved;
  handle_entry entries[1];
};
constexpr ULONG system_extended_handle_information = 64;
using query_fn = NTSTATUS(NTAPI*)(ULONG, PVOID, ULONG, PULONG);

}  // namespace

long open_handle_count() {
  static const auto query = reinterpret_cast<query_fn>(
      reinterpret_cast<void*>(::GetProcAddress(::GetModuleHandleA("ntdll.dll"), "NtQuerySystemInformation")));
  if (query == nullptr) return -1;
  std::vector<unsigned char> buffer(std::size_t{1} << 20);
  for (int attempt = 0; attempt < 4; ++attempt) {
    ULONG needed = 0;
    const NTSTATUS status = query(system_extended_handle_information, buffer.data(),
                                  static_cast<ULONG>(buffer.size()), &needed);
    if (status == 0) {
      const auto* table = reinterpret_cast<const handle_table*>(buffer.data());
      const ULONG_PTR self = ::GetCurrentProcessId();
      long n = 0;
      for (ULONG_PTR i = 0; i < table->count; ++i)
        if (table->entries[i].process_id == self) ++n;
      return n;
    }
    buffer.resize(buffer.size() * 4);  // STATUS_INFO_LENGTH_MISMATCH: the table grew
  }
  return -1;
}

void handle_leak_listener::OnTestStart(const ::testing::TestInfo& /*info*/) {
  settle_thread_runtime();
  before_ = open_handle_count();
}

void handle_leak_listener::OnTestEnd(const ::testing::TestInfo& /*info*/) {
  // mingw-w64's thread runtime tidies a finished thread lazily (settle_thread_runtime) and may close
  // its event later still: poll for up to 2 s before judging (a real leak stays).
  settle_thread_runtime();
  long after = open_handle_count();
  for (int i = 0; i < 200 && after >= 0 && before_ >= 0 && after != before_; ++i) {
    ::Sleep(10);
    after = open_handle_count();
  }
  if (before_ < 0 || after < 0) {
    ADD_FAILURE() << "NtQuerySystemInformation cannot count this process's handles";
    return;
  }
  EXPECT_EQ(after, before_) << "the test changed the number of open handles (leaked or closed one not its own)";
}

}  // namespace membridge::testing
