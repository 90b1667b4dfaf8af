// tests/gl/gl_test.hpp: helpers shared by the gl tier's tests.
#pragma once

#include <membridge/gl/headless_context.hpp>

#include <gtest/gtest.h>

namespace membridge::testing {

/// A headless GL 4.5 context for the gl tier: any EGL device, else Mesa's surfaceless platform
/// (llvmpipe in CI). Current on the calling thread.
inline result<gl::headless_context> make_gl_context() {
  gl::headless_options options;
  options.allow_software = true;
  return gl::headless_context::create(options);
}

}  // namespace membridge::testing

/// Makes `var` (a gl::headless_context) or skips the test with the reason (no EGL / GL 4.5 here).
#define MEMBRIDGE_GL_CONTEXT_OR_SKIP(var)                                                   \
  auto var##_made = ::membridge::testing::make_gl_context();                                \
  if (!var##_made) GTEST_SKIP() << "no GL 4.5 context: " << var##_made.error().message();   \
  auto& var = *var##_made
