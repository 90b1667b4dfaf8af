#include "test_environment.hpp"

#include <cstdlib>
#include <cstring>
#include <vector>

namespace membridge::testing {

namespace {
std::vector<warm_up_fn>& warm_ups() {
  static std::vector<warm_up_fn> fns;
  return fns;
}
}  // namespace

bool gpu_required() noexcept {
  const char* value = std::getenv("MEMBRIDGE_REQUIRE_GPU");
  return value != nullptr && std::strcmp(value, "0") != 0 && value[0] != '\0';
}

warm_up::warm_up(warm_up_fn fn) { warm_ups().push_back(fn); }

void run_warm_up() {
  for (const auto fn : warm_ups()) fn();
}

}  // namespace membridge::testing
