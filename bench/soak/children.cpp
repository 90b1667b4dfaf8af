#include "children.hpp"

#include "cuda_support.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace membridge::bench::soak {

namespace {

std::uint64_t field(const std::string& line, const std::string& key) {
  const auto at = line.find(key + "=");
  if (at == std::string::npos) return 0;
  return std::strtoull(line.c_str() + at + key.size() + 1, nullptr, 10);
}

void apply_line(child& c, const std::string& line) {
  child_report& r = c.report;
  if (line.rfind("progress ", 0) == 0) {
    const std::uint64_t frames = field(line, "frames");
    if (frames != r.frames) c.last_progress = std::chrono::steady_clock::now();
    r.frames = frames;
    r.errors = field(line, "errors");
    r.sessions = field(line, "sessions");
    r.resizes = field(line, "resizes");
  } else if (line == "ready") {
    r.ready = true;
    c.last_progress = std::chrono::steady_clock::now();
  } else if (line.rfind("error ", 0) == 0) {
    if (r.error_lines.size() < 5) r.error_lines.push_back(c.role + ": " + line.substr(6));
  } else if (line.rfind("fds ", 0) == 0) {
    r.has_fds = true;
    r.fds_base = static_cast<int>(field(line, "base"));
    r.fds_end = static_cast<int>(field(line, "end"));
  } else if (line.rfind("free=", 0) == 0) {
    r.has_free = true;
    r.free_bytes = field(line, "free");
  }
}

}  // namespace

child spawn(const std::string& role, const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw bench_failure(std::string("pipe2: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) throw bench_failure(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);  // dup2 clears close-on-exec on the copy
    std::vector<char*> argv;
    static char self[] = "/proc/self/exe";
    argv.push_back(self);
    std::vector<std::string> copy = args;
    for (std::string& s : copy) argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  child c;
  c.pid = pid;
  c.out = fds[0];
  c.role = role;
  return c;
}

void drain_output(child& c) {
  if (c.out < 0) return;
  char buf[4096];
  for (;;) {
    const ssize_t got = ::read(c.out, buf, sizeof buf);
    if (got > 0) {
      c.pending.append(buf, static_cast<std::size_t>(got));
      for (auto nl = c.pending.find('\n'); nl != std::string::npos; nl = c.pending.find('\n')) {
        apply_line(c, c.pending.substr(0, nl));
        c.pending.erase(0, nl + 1);
      }
      continue;
    }
    if (got == 0) {  // the child closed its stdout (exited)
      ::close(c.out);
      c.out = -1;
    }
    return;
  }
}

bool reap(child& c) {
  if (c.exited) return true;
  const pid_t done = ::waitpid(c.pid, &c.status, WNOHANG);
  if (done == c.pid) {
    c.exited = true;
    drain_output(c);
  }
  return c.exited;
}

bool stop_child(child& c, int signal, std::chrono::milliseconds limit) {
  if (reap(c)) return true;
  ::kill(c.pid, signal);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    drain_output(c);
    if (reap(c)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(c.pid, SIGKILL);
  ::waitpid(c.pid, &c.status, 0);
  c.exited = true;
  drain_output(c);
  return false;
}

}  // namespace membridge::bench::soak
