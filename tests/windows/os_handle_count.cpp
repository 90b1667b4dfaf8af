#include "os_handle_count.hpp"
#include "runtime_priming.hpp"

#include <windows.h>
#include <winternl.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
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
constexpr ULONG object_name_information = 1;
constexpr ULONG object_type_information = 2;
using query_system_fn = NTSTATUS(NTAPI*)(ULONG, PVOID, ULONG, PULONG);
using query_object_fn = NTSTATUS(NTAPI*)(HANDLE, ULONG, PVOID, ULONG, PULONG);

template <class Fn>
Fn ntdll_function(const char* name) {
  return reinterpret_cast<Fn>(reinterpret_cast<void*>(::GetProcAddress(::GetModuleHandleA("ntdll.dll"), name)));
}

std::string narrow(const UNICODE_STRING& s) {
  const int chars = static_cast<int>(s.Length / sizeof(WCHAR));
  if (s.Buffer == nullptr || chars == 0) return {};
  const int bytes = ::WideCharToMultiByte(CP_UTF8, 0, s.Buffer, chars, nullptr, 0, nullptr, nullptr);
  std::string out(static_cast<std::size_t>(std::max(bytes, 0)), '\0');
  ::WideCharToMultiByte(CP_UTF8, 0, s.Buffer, chars, out.data(), bytes, nullptr, nullptr);
  return out;
}

/// NtQueryObject's UNICODE_STRING answer for `h` (the type or the name); empty if none.
std::string query_object_string(HANDLE h, ULONG what) {
  static const auto query = ntdll_function<query_object_fn>("NtQueryObject");
  if (query == nullptr) return {};
  alignas(8) unsigned char buffer[4096] = {};
  ULONG needed = 0;
  if (query(h, what, buffer, sizeof buffer, &needed) != 0) return {};
  return narrow(*reinterpret_cast<const UNICODE_STRING*>(buffer));
}

/// Type names by type index, learnt from live handles (a closed handle's type is named from another
/// open handle of the same type, or as its number).
std::string type_name_of_index(std::uint32_t index, const handle_snapshot& live) {
  static std::mutex lock;
  static std::map<std::uint32_t, std::string> names;
  const std::lock_guard guard(lock);
  if (const auto known = names.find(index); known != names.end()) return known->second;
  for (const open_handle& h : live.handles)
    if (h.type_index == index) {
      std::string name = open_handle_type_name(reinterpret_cast<void*>(h.value));
      if (name.empty()) break;
      names.emplace(index, name);
      return name;
    }
  return "type #" + std::to_string(index);
}

/// True when [p, p + n) is committed, readable memory of this process.
bool readable(const void* p, std::size_t n) {
  MEMORY_BASIC_INFORMATION m{};
  if (::VirtualQuery(p, &m, sizeof m) != sizeof m || m.State != MEM_COMMIT) return false;
  if ((m.Protect & (PAGE_READWRITE | PAGE_READONLY | PAGE_WRITECOPY)) == 0 || (m.Protect & PAGE_GUARD) != 0) return false;
  return static_cast<const char*>(p) + n <= static_cast<const char*>(m.BaseAddress) + m.RegionSize;
}

// The heap part of a winpthreads mutex (mutex_impl_t in mingw-w64 10's winpthreads/src/mutex.c):
// pthread_mutex_t (and so std::mutex) is a pointer to it once locked; `event` is made on the first
// contention and closed only by pthread_mutex_destroy.
struct winpthreads_mutex {
  LONG state;  // 0 unlocked, 1 locked, 2 locked with waiters
  LONG type;   // 0 normal, 1 error-checking, 2 recursive
  HANDLE event;
};

}  // namespace

std::optional<std::uintptr_t> static_mutex_owning(void* event) {
  const auto* base = reinterpret_cast<const unsigned char*>(::GetModuleHandleA(nullptr));
  const auto* dos = reinterpret_cast<const IMAGE_DOS_HEADER*>(base);
  const auto* nt = reinterpret_cast<const IMAGE_NT_HEADERS*>(base + dos->e_lfanew);
  const auto* section = reinterpret_cast<const IMAGE_SECTION_HEADER*>(
      reinterpret_cast<const unsigned char*>(&nt->OptionalHeader) + nt->FileHeader.SizeOfOptionalHeader);
  for (WORD i = 0; i < nt->FileHeader.NumberOfSections; ++i, ++section) {
    if ((section->Characteristics & IMAGE_SCN_MEM_WRITE) == 0) continue;
    const auto* words = reinterpret_cast<const std::uintptr_t*>(base + section->VirtualAddress);
    const std::size_t count = section->Misc.VirtualSize / sizeof(std::uintptr_t);
    for (std::size_t w = 0; w < count; ++w) {
      const std::uintptr_t p = words[w];
      if (p < 0x10000 || p % alignof(winpthreads_mutex) != 0 || p >= ~std::uintptr_t{0} - 4) continue;
      const auto* m = reinterpret_cast<const winpthreads_mutex*>(p);
      if (!readable(m, sizeof *m)) continue;
      if (m->event == event && m->state >= 0 && m->state <= 2 && m->type >= 0 && m->type <= 2)
        return reinterpret_cast<const unsigned char*>(&words[w]) - base;
    }
  }
  return std::nullopt;
}

namespace {

std::string describe(const open_handle& h, const handle_snapshot& live, bool is_live) {
  char head[64];
  std::snprintf(head, sizeof head, "0x%llx ", static_cast<unsigned long long>(h.value));
  std::string line = head + type_name_of_index(h.type_index, live);
  std::snprintf(head, sizeof head, " (access 0x%lx)", static_cast<unsigned long>(h.access));
  line += head;
  // Not for files: a name query on a pipe with a read in progress can block.
  if (is_live && line.find(" File ") == std::string::npos) {
    const std::string name = query_object_string(reinterpret_cast<HANDLE>(h.value), object_name_information);
    if (!name.empty()) line += " \"" + name + "\"";
  }
  if (is_live && line.find(" Event ") != std::string::npos)
    if (const auto mutex = static_mutex_owning(reinterpret_cast<HANDLE>(h.value))) {
      std::snprintf(head, sizeof head, "0x%llx", static_cast<unsigned long long>(*mutex));
      line += std::string(": the wait event of the winpthreads mutex at image offset ") + head +
              " (static data: it lives as long as the process)";
    }
  return line;
}

bool by_value(const open_handle& a, const open_handle& b) {
  return a.value != b.value ? a.value < b.value : a.type_index < b.type_index;
}

}  // namespace

handle_snapshot snapshot_handles() {
  static const auto query = ntdll_function<query_system_fn>("NtQuerySystemInformation");
  handle_snapshot out;
  if (query == nullptr) return out;
  std::vector<unsigned char> buffer(std::size_t{1} << 20);
  for (int attempt = 0; attempt < 4; ++attempt) {
    ULONG needed = 0;
    const NTSTATUS status = query(system_extended_handle_information, buffer.data(),
                                  static_cast<ULONG>(buffer.size()), &needed);
    if (status == 0) {
      const auto* table = reinterpret_cast<const handle_table*>(buffer.data());
      const ULONG_PTR self = ::GetCurrentProcessId();
      for (ULONG_PTR i = 0; i < table->count; ++i) {
        const handle_entry& e = table->entries[i];
        if (e.process_id == self) out.handles.push_back({e.handle_value, e.object_type_index, e.granted_access});
      }
      std::sort(out.handles.begin(), out.handles.end(), by_value);
      out.ok = true;
      return out;
    }
    buffer.resize(buffer.size() * 4);  // STATUS_INFO_LENGTH_MISMATCH: the table grew
  }
  return out;
}

long open_handle_count() { return snapshot_handles().count(); }

std::string open_handle_type_name(void* h) { return query_object_string(h, object_type_information); }

std::string describe_handle_changes(const handle_snapshot& before, const handle_snapshot& after) {
  std::vector<open_handle> opened;
  std::vector<open_handle> closed;
  std::set_difference(after.handles.begin(), after.handles.end(), before.handles.begin(), before.handles.end(),
                      std::back_inserter(opened), by_value);
  std::set_difference(before.handles.begin(), before.handles.end(), after.handles.begin(), after.handles.end(),
                      std::back_inserter(closed), by_value);
  std::string out;
  for (const open_handle& h : opened) out += "  + " + describe(h, after, true) + "\n";
  for (const open_handle& h : closed) out += "  - " + describe(h, after, false) + "\n";
  return out.empty() ? "  (the same handle values; none opened or closed for good)\n" : out;
}

::testing::AssertionResult handles_changed_by(const handle_snapshot& before, long delta) {
  if (!before.ok) return ::testing::AssertionFailure() << "NtQuerySystemInformation cannot list this process's handles";
  handle_snapshot after = snapshot_handles();
  for (int i = 0; i < 200 && after.ok && after.count() != before.count() + delta; ++i) {
    ::Sleep(10);
    after = snapshot_handles();
  }
  if (!after.ok) return ::testing::AssertionFailure() << "NtQuerySystemInformation cannot list this process's handles";
  if (after.count() == before.count() + delta) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << before.count() << (delta >= 0 ? " + " : " - ")
                                       << (delta >= 0 ? delta : -delta) << " open handles, found " << after.count()
                                       << "; opened (+) and closed (-) since the first count:\n"
                                       << describe_handle_changes(before, after);
}

void handle_leak_listener::OnTestStart(const ::testing::TestInfo& /*info*/) {
  settle_thread_runtime();
  before_ = snapshot_handles();
}

void handle_leak_listener::OnTestEnd(const ::testing::TestInfo& /*info*/) {
  settle_thread_runtime();
  EXPECT_TRUE(handles_changed_by(before_, 0))
      << "the test changed the number of open handles (leaked or closed one not its own)";
}

}  // namespace membridge::testing
