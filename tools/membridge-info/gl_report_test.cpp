// membridge-info's OpenGL section without a GL driver: the verdicts, the JSON and text of hand-made
// sections beside the fake CUDA device, and an EGL library that is missing for real.
#include "report.hpp"

#include "fake_driver_test.hpp"

#include <membridge/config.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>

namespace {

/// `r` with `g` as its OpenGL section (what membridge-info's main does with probe_gl's answer).
membridge::info::report with_gl(membridge::info::report r, const membridge::info::gl_report& g) {
  r.gl = g;
  return r;
}


using membridge::device_uuid;
using membridge::errc;
using membridge::info::gl_context_report;
using membridge::info::gl_device_report;
using membridge::info::gl_egl_device;
using membridge::info::gl_report;
using membridge::info::report;

constexpr const char* gpu_uuid = "10111213-1415-1617-1819-1a1b1c1d1e1f";
constexpr const char* llvmpipe_uuid = "6d657361-3232-2e33-2e36-000000000000";
constexpr const char* h100 = "NVIDIA H100 80GB HBM3/PCIe/SSE2";
constexpr const char* llvmpipe = "llvmpipe (LLVM 15.0.6, 256 bits)";

device_uuid uuid_from(std::uint8_t first) {
  std::uint8_t raw[16];
  for (std::uint8_t i = 0; i < 16; ++i) raw[i] = static_cast<std::uint8_t>(first + i);
  return device_uuid::from_bytes(raw);
}

device_uuid llvmpipe_id() {
  const std::uint8_t raw[16] = {0x6d, 0x65, 0x73, 0x61, 0x32, 0x32, 0x2e, 0x33, 0x2e, 0x36, 0, 0, 0, 0, 0, 0};
  return device_uuid::from_bytes(raw);
}

/// Why sparse growth is not used on NVIDIA's GL (as gl::context reports it).
constexpr const char* sparse_blocked = "sparse commits of imported memory lost the context";

/// What NVIDIA's GL offers on an H100 (sparse growth advertised but blocked).
gl_context_report nvidia_context() {
  return {h100, "4.6.0 NVIDIA 580.65.06", true, true, true, false, sparse_blocked};
}

/// What Mesa llvmpipe offers: memory fds, no semaphores, no sparse growth.
gl_context_report llvmpipe_context() { return {llvmpipe, "4.5 (Core Profile) Mesa 22.3.6", true, false, false, false}; }

gl_egl_device nvidia_egl_device() {
  gl_egl_device d;
  d.index = 0;
  d.cuda_device = 0;
  d.renderer = h100;
  d.uuid = uuid_from(0x10);
  return d;
}

gl_egl_device llvmpipe_egl_device(int index) {
  gl_egl_device d;
  d.index = index;
  d.software = true;
  d.drm_device = "";
  d.renderer = llvmpipe;
  d.uuid = llvmpipe_id();
  return d;
}

gl_report egl_with(std::vector<gl_egl_device> devices) {
  gl_report g;
  g.library = "libEGL.so.1";
  g.egl_found = true;
  g.devices = std::move(devices);
  return g;
}

/// CUDA device 0 (the fake's UUID) as the GL section sees it, judged.
gl_device_report judged(const gl_report& g, std::optional<gl_context_report> context,
                        std::optional<membridge::error> failure = std::nullopt) {
  gl_device_report d;
  d.cuda_ordinal = 0;
  d.uuid = uuid_from(0x10);
  d.context = std::move(context);
  d.failure = std::move(failure);
  membridge::info::judge_gl_interop(d, g);
  return d;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string keys_of(const nlohmann::ordered_json& j) {
  std::string keys;
  for (const auto& [key, value] : j.items()) keys += key + " ";
  return keys;
}

// -------------------------------------------------------------------------------- verdicts ---

TEST(gl_report_verdict, a_context_with_memory_and_semaphore_fds_is_ready) {
  const auto d = judged(egl_with({nvidia_egl_device()}), nvidia_context());
  EXPECT_TRUE(d.ready);
  EXPECT_EQ(d.reason, std::string(h100) + ": memory and semaphore fd import, timeline semaphores, growth by re-import");
  auto trusted = nvidia_context();  // adopt_options::trust_sparse_imports
  trusted.sparse_growth = true;
  trusted.sparse_growth_blocked.clear();
  EXPECT_EQ(judged(egl_with({nvidia_egl_device()}), trusted).reason,
            std::string(h100) + ": memory and semaphore fd import, timeline semaphores, sparse growth");
  auto plain = nvidia_context();
  plain.timeline_semaphore = false;
  plain.sparse_growth = false;
  const auto without_extras = judged(egl_with({nvidia_egl_device()}), plain);
  EXPECT_TRUE(without_extras.ready) << "timelines and sparse growth do not decide readiness";
  EXPECT_EQ(without_extras.reason, std::string(h100) + ": memory and semaphore fd import, growth by re-import");
}

TEST(gl_report_verdict, a_context_without_fds_says_what_it_lacks) {
  const auto mesa = judged(egl_with({llvmpipe_egl_device(0)}), llvmpipe_context());
  EXPECT_FALSE(mesa.ready);
  EXPECT_EQ(mesa.reason, std::string(llvmpipe) + " lacks GL_EXT_semaphore_fd");
  auto bare = llvmpipe_context();
  bare.memory_object_fd = false;
  EXPECT_EQ(judged(egl_with({}), bare).reason, std::string(llvmpipe) + " lacks GL_EXT_memory_object_fd, GL_EXT_semaphore_fd");
}

TEST(gl_report_verdict, failures_say_why_there_is_no_context) {
  const auto g = egl_with({llvmpipe_egl_device(0)});
  const auto no_match = judged(g, std::nullopt, membridge::error(errc::invalid_argument, "gl::headless_context::create"));
  EXPECT_FALSE(no_match.ready);
  EXPECT_EQ(no_match.reason, "no EGL device is on this GPU (EGL lists: " + std::string(llvmpipe) + ")");
  EXPECT_EQ(judged(egl_with({}), std::nullopt, membridge::error(errc::invalid_argument, "x")).reason,
            "no EGL device is on this GPU (EGL lists no device with a GL context)");
  const auto no_context = judged(g, std::nullopt, membridge::error(errc::driver_unavailable, "gl::headless_context::create"));
  EXPECT_EQ(no_context.reason, "no GL 4.5 context on this GPU (driver_unavailable in gl::headless_context::create)");

  gl_report missing;
  missing.library = "libEGL-missing.so.1";
  EXPECT_EQ(judged(missing, std::nullopt).reason, "the EGL library libEGL-missing.so.1 could not be loaded");
  gl_device_report anonymous;
  membridge::info::judge_gl_interop(anonymous, g);
  EXPECT_FALSE(anonymous.ready);
  EXPECT_EQ(anonymous.reason, "the CUDA device reports no UUID to find its GL device by");
}

// ------------------------------------------------------------- hand-made sections, rendered ---

class gl_report_test : public membridge::testing::fake_driver_test {
 protected:
  /// The fake CUDA device 0 (UUID 10111213-...) with an NVIDIA EGL device and llvmpipe beside it.
  std::pair<report, gl_report> machine() {
    report r = membridge::info::collect(fake_.driver(), {});
    gl_report g = egl_with({nvidia_egl_device(), llvmpipe_egl_device(1)});
    g.cuda_devices.push_back(judged(g, nvidia_context()));
    return {std::move(r), std::move(g)};
  }
};

TEST_F(gl_report_test, json_of_the_gl_section_has_the_documented_shape) {
  const auto [r, g] = machine();
  const auto j = membridge::info::make_json(with_gl(r, g));
  EXPECT_EQ(keys_of(j), "membridge cuda vulkan gl ");
  const auto& s = j["gl"];
  EXPECT_EQ(keys_of(s), "egl_found library error devices cuda_devices ");
  EXPECT_EQ(s["egl_found"], true);
  EXPECT_EQ(s["library"], "libEGL.so.1");
  EXPECT_TRUE(s["error"].is_null());
  ASSERT_EQ(s["devices"].size(), 2U);
  const auto& nvidia = s["devices"][0];
  EXPECT_EQ(keys_of(nvidia), "index software cuda_device drm_device renderer uuid error ");
  EXPECT_EQ(nvidia["index"], 0);
  EXPECT_EQ(nvidia["software"], false);
  EXPECT_EQ(nvidia["cuda_device"], 0);
  EXPECT_TRUE(nvidia["drm_device"].is_null());
  EXPECT_EQ(nvidia["renderer"], h100);
  EXPECT_EQ(nvidia["uuid"], gpu_uuid);
  EXPECT_TRUE(nvidia["error"].is_null());
  const auto& mesa = s["devices"][1];
  EXPECT_EQ(mesa["software"], true);
  EXPECT_TRUE(mesa["cuda_device"].is_null());
  EXPECT_EQ(mesa["uuid"], llvmpipe_uuid);

  ASSERT_EQ(s["cuda_devices"].size(), 1U);
  const auto& on_gpu = s["cuda_devices"][0];
  EXPECT_EQ(keys_of(on_gpu), "cuda_ordinal uuid context error ready reason ");
  EXPECT_EQ(on_gpu["cuda_ordinal"], 0);
  EXPECT_EQ(on_gpu["uuid"], gpu_uuid);
  EXPECT_EQ(on_gpu["context"], nlohmann::ordered_json({{"renderer", h100},
                                                        {"version", "4.6.0 NVIDIA 580.65.06"},
                                                        {"memory_object_fd", true},
                                                        {"semaphore_fd", true},
                                                        {"timeline_semaphore", true},
                                                        {"sparse_growth", false},
                                                        {"sparse_growth_blocked", sparse_blocked}}));
  EXPECT_EQ(keys_of(on_gpu["context"]), "renderer version memory_object_fd semaphore_fd timeline_semaphore sparse_growth sparse_growth_blocked ");
  EXPECT_TRUE(on_gpu["error"].is_null());
  EXPECT_EQ(on_gpu["ready"], true);
  // The rest of the report is make_json(r)'s, unchanged.
  EXPECT_EQ(j["cuda"], membridge::info::make_json(r)["cuda"]);
  EXPECT_EQ(nlohmann::json::parse(membridge::info::render_json(with_gl(r, g)))["gl"]["cuda_devices"][0]["ready"], true);
}

TEST_F(gl_report_test, text_lists_egl_devices_and_gl_per_cuda_device_before_the_summary) {
  const auto [r, g] = machine();
  const std::string text = membridge::info::render_text(with_gl(r, g));
  EXPECT_TRUE(contains(text, "\nOpenGL (EGL)\n  EGL found:                    yes\n"
                             "  library:                      libEGL.so.1\n"
                             "  EGL devices:                  2\n"))
      << text;
  EXPECT_TRUE(contains(text, "\nEGL device 0\n  renderer:                     " + std::string(h100) +
                                 "\n  UUID:                         " + gpu_uuid +
                                 "\n  CUDA device:                  0\n  software renderer:            no\n"))
      << text;
  EXPECT_TRUE(contains(text, "\nEGL device 1\n  renderer:                     " + std::string(llvmpipe) + "\n")) << text;
  EXPECT_TRUE(contains(text, "\n  CUDA device:                  (not reported)\n  software renderer:            yes\n")) << text;
  EXPECT_TRUE(contains(text, "\nGL on CUDA device 0\n  UUID:                         " + std::string(gpu_uuid) +
                                 "\n  headless context:             yes\n  renderer:                     " + h100 +
                                 "\n  version:                      4.6.0 NVIDIA 580.65.06\n"
                                 "  GL_EXT_memory_object_fd:      yes\n"
                                 "  GL_EXT_semaphore_fd:          yes\n"
                                 "  GL_NV_timeline_semaphore:     yes\n"
                                 "  sparse growth:                not used (growth re-imports per chunk): " +
                                 sparse_blocked + "\n"
                                 "  GL interop:                   ready ("))
      << text;
  // Sections in order: CUDA, GL, summary; the GL verdict is the last summary line.
  EXPECT_LT(text.find("\nCUDA device 0\n"), text.find("\nOpenGL (EGL)\n"));
  EXPECT_LT(text.find("\nOpenGL (EGL)\n"), text.find("\nSummary: "));
  const std::string last_line = "  CUDA device 0: GL interop: ready (" + std::string(h100) +
                                ": memory and semaphore fd import, timeline semaphores, growth by re-import)\n";
  ASSERT_GE(text.size(), last_line.size());
  EXPECT_EQ(text.substr(text.size() - last_line.size()), last_line) << text;
}

TEST_F(gl_report_test, a_gpu_without_a_context_shows_the_error_and_no_capability_rows) {
  report r = membridge::info::collect(fake_.driver(), {});
  gl_report g = egl_with({llvmpipe_egl_device(0)});
  g.cuda_devices.push_back(judged(g, std::nullopt, membridge::error(errc::invalid_argument, "gl::headless_context::create",
                                                                    "no EGL device is on GPU " + std::string(gpu_uuid))));
  const std::string text = membridge::info::render_text(with_gl(r, g));
  EXPECT_TRUE(contains(text, "\n  headless context:             no\n  error:                        invalid_argument\n")) << text;
  EXPECT_FALSE(contains(text, "GL_EXT_semaphore_fd:")) << text;
  EXPECT_TRUE(contains(text, "  CUDA device 0: GL interop: not ready (no EGL device is on this GPU (EGL lists: " +
                                 std::string(llvmpipe) + "))\n"))
      << text;
  const auto j = membridge::info::make_json(with_gl(r, g))["gl"]["cuda_devices"][0];
  EXPECT_TRUE(j["context"].is_null());
  EXPECT_EQ(j["error"]["category"], "invalid_argument");
  EXPECT_EQ(j["ready"], false);
}

#if MEMBRIDGE_HAS_GL
// A real failed dlopen: the EGL library does not exist on any machine.
TEST_F(gl_report_test, a_missing_egl_library_is_a_reported_state) {
  const report r = membridge::info::collect(fake_.driver(), {});
  membridge::info::gl_probe_options options;
  options.library = "libEGL-does-not-exist.so.1";
  const gl_report g = membridge::info::probe_gl(r, options);
  EXPECT_FALSE(g.egl_found);
  EXPECT_EQ(g.library, "libEGL-does-not-exist.so.1");
  ASSERT_TRUE(g.failure);
  EXPECT_EQ(g.failure->code(), errc::driver_unavailable);
  EXPECT_TRUE(g.devices.empty());
  ASSERT_EQ(g.cuda_devices.size(), 1U);
  const auto& d = g.cuda_devices[0];
  EXPECT_EQ(d.cuda_ordinal, 0);
  ASSERT_TRUE(d.uuid);
  EXPECT_EQ(d.uuid->to_string(), gpu_uuid);
  EXPECT_FALSE(d.context);
  EXPECT_FALSE(d.ready);
  EXPECT_EQ(d.reason, "the EGL library libEGL-does-not-exist.so.1 could not be loaded");

  const auto j = membridge::info::make_json(with_gl(r, g))["gl"];
  EXPECT_EQ(j["egl_found"], false);
  EXPECT_EQ(j["error"]["category"], "driver_unavailable");
  EXPECT_TRUE(contains(j["error"]["message"].get<std::string>(), "libEGL-does-not-exist.so.1"));
  EXPECT_EQ(j["devices"], nlohmann::ordered_json::array());
  const std::string text = membridge::info::render_text(with_gl(r, g));
  EXPECT_TRUE(contains(text, "\nOpenGL (EGL)\n  EGL found:                    no\n"
                             "  library:                      libEGL-does-not-exist.so.1\n"
                             "  error:                        driver_unavailable\n"))
      << text;
  EXPECT_EQ(membridge::info::exit_status_of(r), membridge::info::exit_status::usable) << "GL never changes the exit status";
}
#endif

}  // namespace
