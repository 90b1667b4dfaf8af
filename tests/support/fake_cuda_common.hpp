// What the scripted driver's source files (fake_cuda_driver.cpp, fake_cuda_events.cpp,
// fake_cuda_graph.cpp) share: the prologue every fake driver function runs, and hex formatting for
// misuse messages. Only those files include it.
#pragma once

#include "fake_cuda_driver.hpp"

#include <cstdint>
#include <cstdio>
#include <string>

namespace membridge::testing::fake_detail {

/// `v` as 0x-prefixed hexadecimal.
inline std::string hex(std::uint64_t v) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
  return text;
}

/// Forgets `handle` in `table` (a set or map of the model); a handle the model does not hold is noted
/// as misuse `what`. Returns whether the model held it.
template <class Table, class Handle>
bool forget(Table& table, const Handle& handle, const char* what) {
  if (table.erase(handle) != 0) return true;
  fake_cuda::active().note_misuse(what);
  return false;
}

}  // namespace membridge::testing::fake_detail

// Runs the common prologue: records the call, returns an injected failure if one is due.
#define FAKE_ENTER(name)                                                                       \
  if (auto injected = ::membridge::testing::fake_cuda::active().enter_call(name); injected) \
  return *injected

// Notes a misuse when the call needs a current context and none is.
#define FAKE_REQUIRE_CONTEXT(name)                                  \
  if (!::membridge::testing::fake_cuda::active().context_current()) \
  ::membridge::testing::fake_cuda::active().note_misuse(std::string(name) + " without a current context")

// Points driver-table entry `name` of `table` at the scripted function fake_<name> (each entry's name
// is written once, so an entry cannot be paired with another entry's function).
#define FAKE_FILL(table, name) (table).name = &fake_##name
