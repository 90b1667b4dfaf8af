// gl tier: gl::context adoption and capability reporting, gl::headless_context creation, device
// choice, listing, moves and teardown (Mesa llvmpipe on EGL in CI).
#include "gl_test.hpp"

#include <membridge/gl/chunked_buffer.hpp>
#include <membridge/gl/context.hpp>
#include <membridge/gl/headless_context.hpp>
#include <membridge/os/dynamic_library.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace membridge::testing {
namespace {

using gl::headless_context;

// GL enums and entry points the tests read for themselves, through the context's get_proc_address
// (independently of membridge's table).
constexpr unsigned int gl_renderer = 0x1F01;
constexpr unsigned int gl_version = 0x1F02;
constexpr unsigned int gl_extensions = 0x1F03;
constexpr unsigned int gl_num_extensions = 0x821D;
using get_string_fn = const unsigned char* (*)(unsigned int);
using get_stringi_fn = const unsigned char* (*)(unsigned int, unsigned int);
using get_integerv_fn = void (*)(unsigned int, int*);

/// The current context's GL string `name`, read with glGetString from `gpa`.
std::string gl_string(gl::get_proc_address_fn gpa, unsigned int name) {
  const auto get = reinterpret_cast<get_string_fn>(gpa("glGetString"));
  const auto* s = get != nullptr ? get(name) : nullptr;
  return s != nullptr ? reinterpret_cast<const char*>(s) : "";
}

/// The current context's extensions, read with glGetStringi from `gpa`.
std::vector<std::string> gl_extension_list(gl::get_proc_address_fn gpa) {
  const auto get_integer = reinterpret_cast<get_integerv_fn>(gpa("glGetIntegerv"));
  const auto get = reinterpret_cast<get_stringi_fn>(gpa("glGetStringi"));
  std::vector<std::string> out;
  int count = 0;
  get_integer(gl_num_extensions, &count);
  for (int i = 0; i < count; ++i) out.emplace_back(reinterpret_cast<const char*>(get(gl_extensions, static_cast<unsigned int>(i))));
  return out;
}

bool contains(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

/// A UUID no device has.
device_uuid absent_uuid() {
  device_uuid id;
  id.bytes.fill(0xA5);
  return id;
}

/// True when every EGL device is a software renderer (CI: llvmpipe only).
bool only_software_devices(const std::vector<gl::egl_device_info>& devices) {
  return std::all_of(devices.begin(), devices.end(), [](const gl::egl_device_info& d) {
    return d.index < 0 || contains(d.extensions, "EGL_MESA_device_software");
  });
}

// ------------------------------------------------------------------------------ capabilities ---

TEST(gl_context, capabilities_of_a_headless_context_meet_membridge_requirements) {
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(ctx);
  ASSERT_TRUE(ctx.valid());
  ASSERT_TRUE(ctx.gl().valid());
  const auto& caps = ctx.gl().capabilities();
  EXPECT_TRUE(caps.major > 4 || (caps.major == 4 && caps.minor >= 5)) << caps.major << "." << caps.minor;
  EXPECT_TRUE(caps.direct_state_access);
  EXPECT_TRUE(caps.memory_object);
  EXPECT_TRUE(caps.memory_object_fd);
  EXPECT_FALSE(caps.renderer.empty());
  EXPECT_FALSE(caps.vendor.empty());
  ASSERT_FALSE(caps.device_uuids.empty());
  EXPECT_FALSE(caps.device_uuids.front().is_zero());
  EXPECT_EQ(ctx.gl().uuid(), caps.device_uuids.front());
  EXPECT_TRUE(ctx.gl().is_on(caps.device_uuids.front()));
  EXPECT_FALSE(ctx.gl().is_on(absent_uuid()));
  // The strings are the context's own, read independently through get_proc_address.
  EXPECT_EQ(caps.renderer, gl_string(ctx.get_proc_address(), gl_renderer));
  EXPECT_EQ(caps.version, gl_string(ctx.get_proc_address(), gl_version));
  const std::string version_prefix = std::to_string(caps.major) + "." + std::to_string(caps.minor);
  EXPECT_EQ(caps.version.rfind(version_prefix, 0), 0U) << caps.version;
}

TEST(gl_context, capability_flags_agree_with_the_extension_list) {
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(ctx);
  const auto& caps = ctx.gl().capabilities();
  const auto extensions = gl_extension_list(ctx.get_proc_address());
  ASSERT_FALSE(extensions.empty());
  EXPECT_EQ(caps.memory_object, contains(extensions, "GL_EXT_memory_object"));
  EXPECT_EQ(caps.memory_object_fd, contains(extensions, "GL_EXT_memory_object_fd"));
  EXPECT_EQ(caps.semaphore, contains(extensions, "GL_EXT_semaphore"));
  EXPECT_EQ(caps.semaphore_fd, contains(extensions, "GL_EXT_semaphore_fd"));
  EXPECT_EQ(caps.timeline_semaphore, contains(extensions, "GL_NV_timeline_semaphore"));
  EXPECT_EQ(caps.sparse_buffer, contains(extensions, "GL_ARB_sparse_buffer"));
  EXPECT_EQ(caps.memory_object_sparse, contains(extensions, "GL_NV_memory_object_sparse"));
  EXPECT_EQ(caps.semaphore_import(), caps.semaphore && caps.semaphore_fd);
  EXPECT_EQ(caps.sparse_growth(), caps.sparse_buffer && caps.memory_object_sparse);
  EXPECT_EQ(caps.sparse_page_size > 0, caps.sparse_buffer);
}

TEST(gl_context, required_extensions_are_the_memory_object_pair) {
  EXPECT_EQ(gl::required_extensions(), (std::vector<std::string>{"GL_EXT_memory_object", "GL_EXT_memory_object_fd"}));
}

// ---------------------------------------------------------------------------- adopt_current ---

TEST(gl_context, adopt_current_refuses_a_null_get_proc_address) {
  const auto adopted = gl::context::adopt_current(nullptr);
  ASSERT_FALSE(adopted);
  EXPECT_EQ(adopted.error().code(), errc::invalid_argument);
  EXPECT_TRUE(contains(adopted.error().message(), "get_proc_address is null")) << adopted.error().message();
}

TEST(gl_context, adopt_current_refuses_when_no_context_is_current) {
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(ctx);
  ASSERT_TRUE(ctx.release_current());
  const auto adopted = gl::context::adopt_current(ctx.get_proc_address());
  ASSERT_FALSE(adopted);
  EXPECT_EQ(adopted.error().code(), errc::invalid_argument);
  EXPECT_TRUE(contains(adopted.error().message(), "no GL context is current")) << adopted.error().message();
  // Current again, the same context is adopted with the same identity.
  ASSERT_TRUE(ctx.make_current());
  const auto again = gl::context::adopt_current(ctx.get_proc_address());
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_EQ(again->uuid(), ctx.gl().uuid());
  EXPECT_EQ(again->capabilities().renderer, ctx.gl().capabilities().renderer);
}

TEST(gl_context, adopt_current_refuses_a_context_on_another_gpu_and_names_both) {
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(ctx);
  gl::adopt_options options;
  options.uuid = absent_uuid();
  const auto adopted = gl::context::adopt_current(ctx.get_proc_address(), options);
  ASSERT_FALSE(adopted);
  EXPECT_EQ(adopted.error().code(), errc::invalid_argument);
  const std::string message = adopted.error().message();
  EXPECT_TRUE(contains(message, absent_uuid().to_string())) << message;
  EXPECT_TRUE(contains(message, ctx.gl().uuid().to_string())) << message;
  // The context's own UUID is accepted.
  options.uuid = ctx.gl().uuid();
  const auto matching = gl::context::adopt_current(ctx.get_proc_address(), options);
  ASSERT_TRUE(matching) << matching.error().message();
  EXPECT_TRUE(matching->is_on(ctx.gl().uuid()));
}

// A GL that says it is NVIDIA's and advertises sparse imports (GL_ARB_sparse_buffer +
// GL_NV_memory_object_sparse) on top of the real context: everything else is the real context's.
namespace nvidia_shim {
constexpr unsigned int gl_vendor = 0x1F00;
constexpr unsigned int gl_sparse_page_size = 0x82F8;
gl::get_proc_address_fn real = nullptr;
int commits = 0;  // calls of the shim's glNamedBufferPageCommitmentMemNV (must stay 0)
const char* const extra[] = {"GL_ARB_sparse_buffer", "GL_NV_memory_object_sparse"};
int real_count() {
  int n = 0;
  reinterpret_cast<get_integerv_fn>(real("glGetIntegerv"))(gl_num_extensions, &n);
  return n;
}
const unsigned char* get_string(unsigned int name) {
  if (name == gl_vendor) return reinterpret_cast<const unsigned char*>("NVIDIA Corporation");
  return reinterpret_cast<get_string_fn>(real("glGetString"))(name);
}
const unsigned char* get_stringi(unsigned int name, unsigned int index) {
  const auto n = static_cast<unsigned int>(real_count());
  if (name == gl_extensions && index >= n && index < n + 2) return reinterpret_cast<const unsigned char*>(extra[index - n]);
  return reinterpret_cast<get_stringi_fn>(real("glGetStringi"))(name, index);
}
void get_integerv(unsigned int name, int* out) {
  if (name == gl_num_extensions) {
    *out = real_count() + 2;
    return;
  }
  if (name == gl_sparse_page_size) {
    *out = 65536;
    return;
  }
  reinterpret_cast<get_integerv_fn>(real("glGetIntegerv"))(name, out);
}
void page_commitment(unsigned int, long, long, unsigned int, unsigned long, unsigned char) { ++commits; }
gl::proc get_proc_address(const char* name) {
  const std::string_view n(name);
  if (n == "glGetString") return reinterpret_cast<gl::proc>(&get_string);
  if (n == "glGetStringi") return reinterpret_cast<gl::proc>(&get_stringi);
  if (n == "glGetIntegerv") return reinterpret_cast<gl::proc>(&get_integerv);
  if (n == "glNamedBufferPageCommitmentMemNV") return reinterpret_cast<gl::proc>(&page_commitment);
  return real(name);
}
}  // namespace nvidia_shim

// On NVIDIA's GL a commit of imported memory into a sparse buffer lost the context (H100, driver
// 580.159.04): membridge reports sparse growth as blocked there, refuses growth_mode::sparse with the
// reason, and never calls the commit; adopt_options::trust_sparse_imports lifts the block.
TEST(gl_context, sparse_growth_is_blocked_on_nvidia_gl_unless_trusted) {
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(ctx);
  nvidia_shim::real = ctx.get_proc_address();
  nvidia_shim::commits = 0;
  const auto adopted = gl::context::adopt_current(&nvidia_shim::get_proc_address);
  ASSERT_TRUE(adopted) << adopted.error().message();
  const auto& caps = adopted->capabilities();
  EXPECT_EQ(caps.vendor, "NVIDIA Corporation");
  EXPECT_TRUE(caps.sparse_buffer);
  EXPECT_TRUE(caps.memory_object_sparse);
  EXPECT_EQ(caps.sparse_page_size, 65536U);
  EXPECT_FALSE(caps.sparse_growth());
  EXPECT_TRUE(contains(caps.sparse_growth_blocked, "lost the GL context")) << caps.sparse_growth_blocked;

  const auto sparse = gl::chunked_buffer::create(*adopted, std::size_t{64} << 20, gl::growth_mode::sparse);
  ASSERT_FALSE(sparse);
  EXPECT_EQ(sparse.error().code(), errc::unsupported);
  EXPECT_TRUE(contains(sparse.error().message(), caps.sparse_growth_blocked)) << sparse.error().message();
  const auto automatic = gl::chunked_buffer::create(*adopted, std::size_t{64} << 20);
  ASSERT_TRUE(automatic) << automatic.error().message();
  EXPECT_FALSE(automatic->is_sparse());
  EXPECT_EQ(nvidia_shim::commits, 0);

  gl::adopt_options trusting;
  trusting.trust_sparse_imports = true;
  const auto trusted = gl::context::adopt_current(&nvidia_shim::get_proc_address, trusting);
  ASSERT_TRUE(trusted) << trusted.error().message();
  EXPECT_TRUE(trusted->capabilities().sparse_growth());
  EXPECT_EQ(trusted->capabilities().sparse_growth_blocked, "");
}

// ------------------------------------------------------------------------ headless_context ---

TEST(gl_headless_context, a_missing_egl_library_is_driver_unavailable) {
  gl::headless_options options;
  options.library = "libEGL-does-not-exist.so.1";
  options.allow_software = true;
  const auto made = headless_context::create(options);
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code(), errc::driver_unavailable);
  EXPECT_TRUE(contains(made.error().message(), "libEGL-does-not-exist.so.1")) << made.error().message();
  const auto listed = headless_context::list_devices("libEGL-does-not-exist.so.1");
  ASSERT_FALSE(listed);
  EXPECT_EQ(listed.error().code(), errc::driver_unavailable);
}

TEST(gl_headless_context, a_uuid_no_device_has_is_invalid_argument_listing_what_was_found) {
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(ctx);
  const std::string renderer = ctx.gl().capabilities().renderer;
  const std::string found_uuid = ctx.gl().uuid().to_string();
  gl::headless_options options;
  options.uuid = absent_uuid();
  options.allow_software = true;
  const auto made = headless_context::create(options);
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code(), errc::invalid_argument);
  const std::string message = made.error().message();
  EXPECT_TRUE(contains(message, "no EGL device is on GPU " + absent_uuid().to_string())) << message;
  EXPECT_TRUE(contains(message, "renderer " + renderer)) << message;
  EXPECT_TRUE(contains(message, "uuid " + found_uuid)) << message;
  // The failed search put the caller's context back.
  const auto adopted = gl::context::adopt_current(ctx.get_proc_address());
  ASSERT_TRUE(adopted) << adopted.error().message();
  EXPECT_EQ(adopted->uuid(), ctx.gl().uuid());
}

TEST(gl_headless_context, the_uuid_of_a_device_chooses_it) {
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(first);
  gl::headless_options options;
  options.uuid = first.gl().uuid();
  options.allow_software = true;
  auto second = headless_context::create(options);
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(second->gl().uuid(), first.gl().uuid());
  EXPECT_EQ(second->device().uuid, first.gl().uuid());
  EXPECT_EQ(second->device().renderer, first.gl().capabilities().renderer);
  EXPECT_TRUE(second->device().error.empty()) << second->device().error;
}

TEST(gl_headless_context, a_cuda_device_no_egl_device_reports_is_invalid_argument) {
  gl::headless_options options;
  options.cuda_device = 9999;
  options.allow_software = true;
  const auto made = headless_context::create(options);
  ASSERT_FALSE(made);
  if (made.error().code() == errc::driver_unavailable) GTEST_SKIP() << "no EGL here: " << made.error().message();
  EXPECT_EQ(made.error().code(), errc::invalid_argument);
  EXPECT_TRUE(contains(made.error().message(), "no EGL device is CUDA device 9999")) << made.error().message();
}

TEST(gl_headless_context, software_devices_are_skipped_unless_allowed) {
  const auto listed = headless_context::list_devices();
  if (!listed) GTEST_SKIP() << "no EGL here: " << listed.error().message();
  if (!only_software_devices(*listed)) GTEST_SKIP() << "a hardware EGL device is present";
  const auto made = headless_context::create({});
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code(), errc::driver_unavailable);
  EXPECT_TRUE(contains(made.error().message(), "allow_software is off")) << made.error().message();
}

TEST(gl_headless_context, the_chosen_device_is_described) {
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(ctx);
  const auto& d = ctx.device();
  EXPECT_TRUE(d.error.empty()) << d.error;
  EXPECT_EQ(d.renderer, ctx.gl().capabilities().renderer);
  ASSERT_TRUE(d.uuid);
  EXPECT_EQ(*d.uuid, ctx.gl().uuid());
  if (d.index >= 0) {
    EXPECT_FALSE(d.extensions.empty());
  }
}

TEST(gl_headless_context, list_devices_reports_each_device_and_keeps_the_caller_current) {
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(ctx);
  const auto listed = headless_context::list_devices();
  ASSERT_TRUE(listed) << listed.error().message();
  ASSERT_FALSE(listed->empty());
  for (std::size_t i = 0; i < listed->size(); ++i) {
    const auto& d = (*listed)[i];
    if (d.index >= 0) {
      EXPECT_EQ(d.index, static_cast<int>(i));
    }
    EXPECT_TRUE(d.error.empty() != d.renderer.empty()) << "device " << d.index << ": a renderer or an error";
  }
  const auto same = std::find_if(listed->begin(), listed->end(), [&](const gl::egl_device_info& d) {
    return d.uuid == ctx.gl().uuid() && d.renderer == ctx.gl().capabilities().renderer;
  });
  EXPECT_NE(same, listed->end()) << "the device of the headless context is listed";
  // Listing made and destroyed contexts of its own; the caller's context is current again.
  EXPECT_EQ(gl_string(ctx.get_proc_address(), gl_renderer), ctx.gl().capabilities().renderer);
}

TEST(gl_headless_context, moving_keeps_the_context_usable) {
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(ctx);
  const auto uuid = ctx.gl().uuid();
  const std::string renderer = ctx.gl().capabilities().renderer;
  headless_context moved(std::move(ctx));
  EXPECT_FALSE(ctx.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_FALSE(ctx.gl().valid());
  EXPECT_EQ(ctx.get_proc_address(), nullptr);
  ASSERT_TRUE(moved.valid());
  EXPECT_EQ(moved.gl().uuid(), uuid);
  ASSERT_TRUE(moved.release_current());
  ASSERT_TRUE(moved.make_current());
  EXPECT_EQ(gl_string(moved.get_proc_address(), gl_renderer), renderer);

  headless_context assigned;
  EXPECT_FALSE(assigned.valid());
  assigned = std::move(moved);
  ASSERT_TRUE(assigned.valid());
  EXPECT_FALSE(moved.valid());  // NOLINT(bugprone-use-after-move)
  ASSERT_TRUE(assigned.make_current());
  const auto adopted = gl::context::adopt_current(assigned.get_proc_address());
  ASSERT_TRUE(adopted) << adopted.error().message();
  EXPECT_EQ(adopted->uuid(), uuid);
  EXPECT_TRUE(assigned.gl().finish());
}

TEST(gl_headless_context, an_empty_object_refuses_to_be_made_current) {
  const headless_context empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_EQ(empty.get_proc_address(), nullptr);
  EXPECT_EQ(empty.device().index, 0);
  EXPECT_TRUE(empty.device().renderer.empty());
  const auto made_current = empty.make_current();
  ASSERT_FALSE(made_current);
  EXPECT_EQ(made_current.error().code(), errc::invalid_argument);
  const auto released = empty.release_current();
  ASSERT_FALSE(released);
  EXPECT_EQ(released.error().code(), errc::invalid_argument);
}

TEST(gl_headless_context, two_contexts_on_one_device_outlive_each_other) {
  // EGL has one display per device; destroying one context must not terminate the other's display.
  MEMBRIDGE_GL_CONTEXT_OR_SKIP(first);
  const std::string renderer = first.gl().capabilities().renderer;
  {
    MEMBRIDGE_GL_CONTEXT_OR_SKIP(second);
    EXPECT_EQ(second.gl().uuid(), first.gl().uuid());
    EXPECT_EQ(gl_string(second.get_proc_address(), gl_renderer), renderer);
  }
  ASSERT_TRUE(first.make_current());
  EXPECT_EQ(gl_string(first.get_proc_address(), gl_renderer), renderer);
  EXPECT_TRUE(first.gl().finish());
  const auto adopted = gl::context::adopt_current(first.get_proc_address());
  ASSERT_TRUE(adopted) << adopted.error().message();
}

TEST(gl_headless_context, destruction_releases_the_context_from_this_thread) {
  // Asked through libEGL itself, not through membridge.
  auto egl = os::dynamic_library::open("libEGL.so.1");
  if (!egl) GTEST_SKIP() << egl.error().message();
  const auto symbol = egl->symbol("eglGetCurrentContext");
  ASSERT_TRUE(symbol) << symbol.error().message();
  const auto current_context = reinterpret_cast<void* (*)()>(*symbol);
  {
    MEMBRIDGE_GL_CONTEXT_OR_SKIP(ctx);
    EXPECT_NE(current_context(), nullptr);
    ASSERT_TRUE(ctx.release_current());
    EXPECT_EQ(current_context(), nullptr);
    ASSERT_TRUE(ctx.make_current());
    EXPECT_NE(current_context(), nullptr);
  }
  EXPECT_EQ(current_context(), nullptr);
}

}  // namespace
}  // namespace membridge::testing
