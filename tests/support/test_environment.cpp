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

int gpus_required() noexcept {
  const char* value = std::getenv("MEMBRIDGE_REQUIRE_GPUS");
  if (value == nullptr || value[0] == '\0') return 1;
  const int n = std::atoi(value);
  return n > 0 ? n : 1;
}

warm_up::warm_up(warm_up_fn fn) { warm_ups().push_back(fn); }

void run_warm_up() {
  for (const auto fn : warm_ups()) fn();
}

}  // namespace membridge::testing
