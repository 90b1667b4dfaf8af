#include "support.hpp"

#include "kernels.cuh"

#include <algorithm>
#include <array>
#include <ctime>
#include <iomanip>
#include <sstream>

namespace membridge::bench::gl_bench {

namespace gpu = testing::gpu;


void check_gl(std::string_view what) {
  std::string errors;
  for (int i = 0; i < 16; ++i) {
    const GLenum e = glGetError();
    if (e == GL_NO_ERROR) break;
    std::ostringstream hex;
    hex << "0x" << std::hex << e;
    errors += (errors.empty() ? "" : ", ") + hex.str();
  }
  if (!errors.empty()) throw bench_failure(std::string(what) + ": GL error " + errors);
}

void check_data(unsigned long long wrong, unsigned long long of, std::string_view what) {
  if (wrong != 0)
    throw bench_failure("data check failed: " + std::string(what) + ": " + std::to_string(wrong) + " of " +
                        std::to_string(of) + " differ from what the kernels wrote");
}

std::int64_t thread_cpu_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// -------------------------------------------------------------------------------- CUDA objects ---

device_counter::device_counter() {
  MEMBRIDGE_GL_BENCH_CUDA(cudaMalloc(&p_, sizeof *p_));
  MEMBRIDGE_GL_BENCH_CUDA(cudaMemset(p_, 0, sizeof *p_));
  MEMBRIDGE_GL_BENCH_CUDA(cudaDeviceSynchronize());
}

device_counter::~device_counter() {
  if (p_ != nullptr) (void)cudaFree(p_);
}

unsigned long long device_counter::read() const {
  unsigned long long value = 0;
  MEMBRIDGE_GL_BENCH_CUDA(cudaMemcpy(&value, p_, sizeof value, cudaMemcpyDeviceToHost));
  return value;
}

std::uint32_t frame_seed(std::uint32_t lane, std::uint64_t frame, unsigned step) noexcept {
  return gpu::pattern(frame * 16U + step, 0x6c000000U + lane * 0x10001U);
}

std::size_t probe_word(std::uint64_t frame, std::size_t words) noexcept {
  return static_cast<std::size_t>((frame * 7919U + 13U) % words);
}

// ---------------------------------------------------------------------------------- GL objects ---

gl_buffer gl_buffer::with_data(std::size_t bytes) {
  gl_buffer b;
  glCreateBuffers(1, &b.name_);
  glNamedBufferData(b.name_, static_cast<GLsizeiptr>(bytes), nullptr, GL_DYNAMIC_DRAW);
  // Cleared once, so the storage exists before CUDA registers it (drivers may allocate lazily).
  const std::uint32_t zero = 0;
  glClearNamedBufferData(b.name_, GL_R32UI, GL_RED_INTEGER, GL_UNSIGNED_INT, &zero);
  glFinish();
  check_gl("glCreateBuffers + glNamedBufferData + glClearNamedBufferData(" + std::to_string(bytes) + " bytes)");
  return b;
}

namespace {
std::vector<std::string>& peer_failures() {
  static std::vector<std::string> failures;
  return failures;
}
}  // namespace

void check_peer(const std::function<void()>& check) {
  try {
    check();
  } catch (const bench_failure& e) {
    peer_failures().emplace_back(e.what());
  }
}

const std::vector<std::string>& peer_data_failures() { return peer_failures(); }

gl_buffer gl_buffer::with_storage(std::size_t bytes) {
  gl_buffer b;
  glCreateBuffers(1, &b.name_);
  glNamedBufferStorage(b.name_, static_cast<GLsizeiptr>(bytes), nullptr, GL_DYNAMIC_STORAGE_BIT);
  check_gl("glCreateBuffers + glNamedBufferStorage(" + std::to_string(bytes) + " bytes)");
  return b;
}

gl_buffer& gl_buffer::operator=(gl_buffer&& other) noexcept {
  if (this != &other) {
    reset();
    name_ = std::exchange(other.name_, 0U);
  }
  return *this;
}

gl_buffer::~gl_buffer() { reset(); }

void gl_buffer::reset() noexcept {
  if (name_ != 0) glDeleteBuffers(1, &name_);
  name_ = 0;
}

std::vector<std::uint32_t> read_words(GLuint buffer, std::size_t offset, std::size_t words) {
  std::vector<std::uint32_t> out(words, 0U);
  glGetNamedBufferSubData(buffer, static_cast<GLintptr>(offset), static_cast<GLsizeiptr>(words * 4), out.data());
  check_gl("glGetNamedBufferSubData");
  return out;
}

unsigned long long pattern_mismatches(const std::vector<std::uint32_t>& words, std::uint32_t seed,
                                      std::uint64_t first_word) {
  unsigned long long bad = 0;
  for (std::size_t i = 0; i < words.size(); ++i)
    if (words[i] != gpu::pattern(first_word + i, seed)) ++bad;
  return bad;
}

history::history(std::size_t capacity) : buffer_(gl_buffer::with_storage(capacity * 4)), capacity_(capacity) {
  const GLuint poison = 0xFFFFFFFFU;
  glClearNamedBufferData(buffer_.name(), GL_R32UI, GL_RED_INTEGER, GL_UNSIGNED_INT, &poison);
  check_gl("poisoning a history buffer");
  expected_.reserve(capacity);
}

std::size_t history::copy_from(GLuint source, std::size_t offset, std::uint32_t expected) {
  const std::size_t index = expected_.size();
  if (index >= capacity_) throw bench_failure("history buffer overflow (internal error)");
  glCopyNamedBufferSubData(source, buffer_.name(), static_cast<GLintptr>(offset), static_cast<GLintptr>(index * 4), 4);
  expected_.push_back(expected);
  return index;
}

void history::verify(std::string_view what) const {
  if (expected_.empty()) return;
  const std::vector<std::uint32_t> seen = read_words(buffer_.name(), 0, expected_.size());
  unsigned long long bad = 0;
  std::size_t first_bad = 0;
  for (std::size_t i = 0; i < seen.size(); ++i)
    if (seen[i] != expected_[i]) {
      if (bad == 0) first_bad = i;
      ++bad;
    }
  if (bad != 0)
    throw bench_failure("data check failed: " + std::string(what) + ": " + std::to_string(bad) + " of " +
                        std::to_string(seen.size()) + " frames read a word their kernel did not write (first: frame " +
                        std::to_string(first_bad) + ")");
}

gpu_clock::gpu_clock(std::size_t frames)
    : queries_(ring, 0U), stamps_(frames, 0U), pending_(ring, false), frame_of_(ring, 0U) {
  glCreateQueries(GL_TIMESTAMP, static_cast<GLsizei>(ring), queries_.data());
  check_gl("glCreateQueries(GL_TIMESTAMP)");
}

gpu_clock::~gpu_clock() { glDeleteQueries(static_cast<GLsizei>(ring), queries_.data()); }

void gpu_clock::prepare(std::size_t i) {
  const std::size_t q = i % ring;
  if (!pending_[q]) return;
  GLuint64 value = 0;
  glGetQueryObjectui64v(queries_[q], GL_QUERY_RESULT, &value);
  stamps_[frame_of_[q]] = value;
  pending_[q] = false;
}

void gpu_clock::record(std::size_t i) {
  if (i >= stamps_.size()) throw bench_failure("gpu_clock: more frames than planned (internal error)");
  const std::size_t q = i % ring;
  glQueryCounter(queries_[q], GL_TIMESTAMP);
  pending_[q] = true;
  frame_of_[q] = i;
}

std::vector<std::uint64_t> gpu_clock::finish() {
  for (std::size_t q = 0; q < ring; ++q) prepare(q);
  check_gl("reading GL timestamp queries");
  return stamps_;
}

frame_throttle::frame_throttle(std::size_t depth) : depth_(std::max<std::size_t>(depth, 1)), fences_(depth_, nullptr) {}

frame_throttle::~frame_throttle() {
  for (GLsync& f : fences_)
    if (f != nullptr) glDeleteSync(std::exchange(f, nullptr));
}

void frame_throttle::wait_slot(std::size_t slot) {
  GLsync& f = fences_[slot];
  if (f == nullptr) return;
  const GLenum r = glClientWaitSync(f, GL_SYNC_FLUSH_COMMANDS_BIT,
                                    static_cast<GLuint64>(std::chrono::nanoseconds(wait_timeout).count()));
  glDeleteSync(std::exchange(f, nullptr));
  if (r == GL_TIMEOUT_EXPIRED) throw bench_failure("a frame's GL fence did not signal within 20 s (GPU hang?)");
  if (r == GL_WAIT_FAILED) check_gl("glClientWaitSync");
}

void frame_throttle::wait(std::size_t i) { wait_slot(i % depth_); }

void frame_throttle::fence(std::size_t i) {
  GLsync& f = fences_[i % depth_];
  if (f != nullptr) glDeleteSync(f);
  f = glFenceSync(GL_SYNC_GPU_COMMANDS_COMPLETE, 0);
}

void frame_throttle::drain() {
  for (std::size_t s = 0; s < depth_; ++s) wait_slot(s);
}

gpu_intervals intervals_from(const std::vector<std::uint64_t>& stamps, std::size_t first) {
  gpu_intervals out;
  if (stamps.size() < first + 2) return out;
  for (std::size_t i = first + 1; i < stamps.size(); ++i)
    out.intervals_us.push_back(static_cast<double>(static_cast<std::int64_t>(stamps[i] - stamps[i - 1])) / 1000.0);
  out.mean_us = static_cast<double>(stamps.back() - stamps[first]) / 1000.0 /
                static_cast<double>(stamps.size() - first - 1);
  return out;
}

// ---------------------------------------------------------------------------------- hand-off ---

void handoff::set_produced(std::uint64_t count) {
  {
    const std::lock_guard lock(mutex_);
    produced_ = count;
  }
  changed_.notify_all();
}

void handoff::set_released(std::uint64_t count) {
  {
    const std::lock_guard lock(mutex_);
    released_ = count;
  }
  changed_.notify_all();
}

void handoff::wait_for(std::uint64_t count, const std::uint64_t& counter, std::string_view what) {
  std::unique_lock lock(mutex_);
  const bool done = changed_.wait_for(lock, wait_timeout, [&] { return counter >= count || aborted_ || error_; });
  if (error_ || aborted_) throw bench_failure(std::string("stopped waiting for ") + std::string(what) + ": the other thread failed");
  if (!done)
    throw bench_failure("waited 20 s for " + std::string(what) + " " + std::to_string(count) + " (now " +
                        std::to_string(counter) + ")");
}

void handoff::wait_produced(std::uint64_t count) { wait_for(count, produced_, "the producer's frame"); }

void handoff::wait_released(std::uint64_t count) { wait_for(count, released_, "the render thread's release"); }

void handoff::fail(std::exception_ptr error) noexcept {
  {
    const std::lock_guard lock(mutex_);
    if (!error_) error_ = std::move(error);
  }
  changed_.notify_all();
}

void handoff::abort() noexcept {
  {
    const std::lock_guard lock(mutex_);
    aborted_ = true;
  }
  changed_.notify_all();
}

void handoff::rethrow() const {
  std::exception_ptr e;
  {
    const std::lock_guard lock(mutex_);
    e = error_;
  }
  if (e) std::rethrow_exception(e);
}

std::string ratio_text(double r) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(3) << r << 'x';
  return s.str();
}

std::string egl_error_text(std::string_view call) {
  std::ostringstream s;
  s << call << " failed, EGL error 0x" << std::hex << eglGetError();
  return s.str();
}

void make_shared_context(shared_context& out) {
  out.display = eglGetCurrentDisplay();
  const EGLContext current = eglGetCurrentContext();
  if (out.display == EGL_NO_DISPLAY || current == EGL_NO_CONTEXT) {
    out.error = "no current EGL context to share with";
    return;
  }
  EGLint config_id = 0;
  EGLConfig config = nullptr;  // EGL_NO_CONFIG_KHR
  if (eglQueryContext(out.display, current, EGL_CONFIG_ID, &config_id) == EGL_TRUE && config_id > 0) {
    const std::array<EGLint, 3> wanted{EGL_CONFIG_ID, config_id, EGL_NONE};
    EGLint found = 0;
    if (eglChooseConfig(out.display, wanted.data(), &config, 1, &found) != EGL_TRUE || found < 1) config = nullptr;
  }
  if (eglBindAPI(EGL_OPENGL_API) != EGL_TRUE) {
    out.error = egl_error_text("eglBindAPI(EGL_OPENGL_API)");
    return;
  }
  const std::array<EGLint, 7> attributes{EGL_CONTEXT_MAJOR_VERSION, 4, EGL_CONTEXT_MINOR_VERSION, 5,
                                         EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT,
                                         EGL_NONE};
  out.context = eglCreateContext(out.display, config, current, attributes.data());
  if (out.context == EGL_NO_CONTEXT) out.error = egl_error_text("eglCreateContext (shared with the render context)");
}

}  // namespace membridge::bench::gl_bench
