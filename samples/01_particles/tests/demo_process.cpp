// Child processes for the demo tests (posix_spawn, output in files, time limit, process group).
#include "demo_process.hpp"

#include <membridge/core/error.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;  // NOLINT: POSIX

namespace particles::testing {

namespace {

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// posix_spawn's file actions and attributes, destroyed at the end of the scope.
struct spawn_setup {
  posix_spawn_file_actions_t actions{};
  posix_spawnattr_t attributes{};
  spawn_setup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attributes);
  }
  spawn_setup(const spawn_setup&) = delete;
  spawn_setup& operator=(const spawn_setup&) = delete;
  ~spawn_setup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
  }
};

}  // namespace

std::filesystem::path demo_binary() {
  const std::filesystem::path built = MEMBRIDGE_PARTICLES_BINARY;
  std::error_code ec;
  if (std::filesystem::exists(built, ec)) return built;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto beside = self.parent_path() / "membridge_particles";
    if (std::filesystem::exists(beside, ec)) return beside;
  }
  return built;
}

std::filesystem::path find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::filesystem::path candidate = std::filesystem::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

std::filesystem::path output_dir() {
  // In the build tree: a folder beside the test binary's sources' build dir; elsewhere (the GPU
  // bundle) a folder under the temporary directory.
  std::error_code ec;
  std::filesystem::path dir = MEMBRIDGE_PARTICLES_TEST_OUTPUT_DIR;
  if (!std::filesystem::exists(MEMBRIDGE_PARTICLES_BINARY, ec))
    dir = std::filesystem::temp_directory_path(ec) / "membridge_particles_tests";
  std::filesystem::create_directories(dir, ec);
  return dir;
}

membridge::result<process_result> run_process(const std::vector<std::string>& argv, const std::string& label,
                                              std::chrono::seconds limit, const std::vector<std::string>& unset,
                                              const std::vector<std::string>& set) {
  if (argv.empty()) return membridge::error(membridge::errc::invalid_argument, "run_process", "no program");
  const std::filesystem::path out_file = output_dir() / (label + ".stdout");
  const std::filesystem::path err_file = output_dir() / (label + ".stderr");

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));  // NOLINT: posix_spawn's signature
  args.push_back(nullptr);
  std::vector<std::string> names = unset;  // dropped from the inherited environment
  for (const auto& entry : set) names.push_back(entry.substr(0, entry.find('=')));
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const bool dropped = std::any_of(names.begin(), names.end(), [&](const std::string& name) {
      return entry.size() > name.size() && entry.substr(0, name.size()) == name && entry[name.size()] == '=';
    });
    if (!dropped) env.push_back(*e);
  }
  for (const auto& entry : set) env.push_back(const_cast<char*>(entry.c_str()));  // NOLINT: posix_spawn's signature
  env.push_back(nullptr);

  spawn_setup setup;
  posix_spawn_file_actions_addopen(&setup.actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&setup.actions, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&setup.actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_setpgroup(&setup.attributes, 0);  // its own group: a timeout kills xvfb-run's children too
  posix_spawnattr_setflags(&setup.attributes, POSIX_SPAWN_SETPGROUP);
  pid_t pid = -1;
  if (const int rc = posix_spawnp(&pid, args[0], &setup.actions, &setup.attributes, args.data(), env.data()); rc != 0)
    return membridge::error::from_errno(rc, "posix_spawnp", argv[0]);

  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return membridge::error::from_errno(errno, "waitpid", argv[0]);
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  process_result result;
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  result.out = slurp(out_file);
  result.err = slurp(err_file);
  return result;
}

}  // namespace particles::testing
