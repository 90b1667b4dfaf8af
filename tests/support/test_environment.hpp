// Process-wide test settings: the GPU requirement switch and a warm-up hook.
#pragma once

#include <string>

namespace membridge::testing {

/// True when MEMBRIDGE_REQUIRE_GPU=1: a GPU test that cannot run must then fail, not skip.
bool gpu_required() noexcept;

/// The GPUs a run requires (MEMBRIDGE_REQUIRE_GPUS=N, default 1): a test that needs more GPUs than
/// the machine has fails when this asks for them, and is reported as not run otherwise.
int gpus_required() noexcept;

/// A function run once before the tests start (and before the fd-leak listener's first snapshot).
using warm_up_fn = void (*)();

/// Registers a warm-up at static-initialisation time: `static warm_up w(&fn);`
struct warm_up {
  explicit warm_up(warm_up_fn fn);
};

/// Runs the registered warm-ups (test_main calls this).
void run_warm_up();

}  // namespace membridge::testing
