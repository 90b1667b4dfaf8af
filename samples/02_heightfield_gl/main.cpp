// membridge_heightfield_gl: a CUDA wave-equation heightfield (2048 x 2048 by default) drawn by OpenGL
// 4.5 as a lit mesh from the very memory CUDA writes (a membridge growable_buffer imported into GL as
// a shader storage buffer), frames handed over with a timeline semaphore. Windowed with GLFW (EGL)
// when a display exists, or headless (--headless) through EGL, writing a PNG of the last frame.
// Without a CUDA device the field is stepped on the CPU into Vulkan-exported memory GL imports.
// README.md beside this file describes the options and the output.
#include "app.hpp"
#include "heightfield_options.hpp"

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

#ifndef MEMBRIDGE_HEIGHTFIELD_CUDA
#define MEMBRIDGE_HEIGHTFIELD_CUDA 0
#endif

namespace {

void on_stop_signal(int signal_number) {
  heightfield::request_stop();
  std::signal(signal_number, SIG_DFL);  // a second one ends the process
}

bool env_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

}  // namespace

#if !MEMBRIDGE_HEIGHTFIELD_CUDA
namespace heightfield {
std::string gpu_unavailable_reason() { return "built without CUDA kernels (MEMBRIDGE_CUDA_KERNELS=OFF)"; }
membridge::result<void> run_gpu(run_environment&, exit_status&) {
  return membridge::error(membridge::errc::unsupported, "run_gpu", "built without CUDA kernels");
}
}  // namespace heightfield
#endif

int main(int argc, char** argv) {
  using namespace heightfield;
  const parsed_command_line parsed = parse_command_line(argc, argv);
  if (!parsed.options) return static_cast<int>(parsed.status);

  run_environment env;
  env.options = *parsed.options;
  env.out = &std::cout;
  env.windowed = !env.options.headless;
  if (env.windowed && !env_set("DISPLAY") && !env_set("WAYLAND_DISPLAY")) {
    std::cout << "membridge_heightfield_gl: no usable display (DISPLAY and WAYLAND_DISPLAY are not set); running "
                 "headless\n";
    env.windowed = false;
  }
  apply_mode_defaults(env.options, env.windowed);

  if (env.options.cpu) {
    env.cpu_reason = "--cpu";
  } else if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    // On a GPU machine (scripts/gpu-run) the fallback would hide a broken setup: fail instead.
    if (const char* required = std::getenv("MEMBRIDGE_REQUIRE_GPU"); required != nullptr && std::string(required) == "1") {
      std::cerr << "membridge_heightfield_gl: error: no CUDA device (" << why << ") and MEMBRIDGE_REQUIRE_GPU=1\n";
      return static_cast<int>(exit_status::runtime_failure);
    }
    if (env.options.gpu_or_skip) {
      std::cout << "membridge_heightfield_gl: no CUDA device (" << why << "); skipped (--gpu-or-skip)\n";
      return static_cast<int>(exit_status::skipped);
    }
    env.cpu_reason = "no CUDA device";
    std::cout << "membridge_heightfield_gl: no CUDA device (" << why << "); running the CPU path\n";
  }
  std::cout << std::flush;

  std::signal(SIGINT, &on_stop_signal);
  std::signal(SIGTERM, &on_stop_signal);
  exit_status status = exit_status::ok;
  const membridge::result<void> ran = env.cpu_reason.empty() ? run_gpu(env, status) : run_cpu(env, status);
  std::cout << std::flush;
  if (!ran) {
    std::cerr << "membridge_heightfield_gl: error: " << ran.error().message() << '\n';
    return static_cast<int>(exit_status::runtime_failure);
  }
  if (status == exit_status::blank_image) std::cerr << "membridge_heightfield_gl: error: the image is blank\n";
  return static_cast<int>(status);
}
