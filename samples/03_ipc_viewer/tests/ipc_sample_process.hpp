// samples/03_ipc_viewer/tests/ipc_sample_process.hpp: sample 03 run the way a user runs it, for the
// gpu-tier tests: membridge_ipc_producer in the background and membridge_ipc_viewer attached to it by
// name, in a private XDG_RUNTIME_DIR, under a time limit (demo_process.hpp).
#pragma once

#include "demo_process.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace particles::testing {

using namespace std::chrono_literals;

/// The build tree's binary, or the one beside this test (the GPU bundle puts them in one folder).
inline std::filesystem::path sample_binary(const std::filesystem::path& built, const char* name) {
  std::error_code ec;
  if (std::filesystem::exists(built, ec)) return built;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(self.parent_path() / name, ec)) return self.parent_path() / name;
  return built;
}

inline std::filesystem::path producer_binary() { return sample_binary(MEMBRIDGE_IPC_PRODUCER_BINARY, "membridge_ipc_producer"); }
inline std::filesystem::path viewer_binary() { return sample_binary(MEMBRIDGE_IPC_VIEWER_BINARY, "membridge_ipc_viewer"); }

/// A private XDG_RUNTIME_DIR for the socket (mode 0700, as ipc wants), removed by the destructor.
class runtime_dir {
 public:
  runtime_dir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "membridge-ipc-sample-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  runtime_dir(const runtime_dir&) = delete;
  runtime_dir& operator=(const runtime_dir&) = delete;
  ~runtime_dir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

/// Runs the producer (PRODUCER_ARGS) in the background until the viewer (VIEWER_ARGS) is done, then
/// stops it with SIGTERM. Prints the producer's log after "=== producer", and exits with the viewer's
/// status, or 20 + the producer's when only that failed (0 and 143 are a clean stop).
inline constexpr const char* both_script = R"sh(
producer=$1 viewer=$2 name=$3 log=$4
read -r -a producer_args <<< "$5"
read -r -a viewer_args <<< "$6"
"$producer" --name "$name" "${producer_args[@]}" > "$log" 2>&1 &
p=$!
for _ in $(seq 150); do
  [ -S "$XDG_RUNTIME_DIR/membridge/$name.sock" ] && break
  kill -0 $p 2>/dev/null || break
  sleep 0.1
done
"$viewer" --name "$name" "${viewer_args[@]}"
v=$?
kill -TERM $p 2>/dev/null
wait $p
pr=$?
echo "=== producer (exit $pr)"
cat "$log"
[ $v -ne 0 ] && exit $v
[ $pr -ne 0 ] && [ $pr -ne 143 ] && exit $((20 + pr))
exit 0
)sh";

/// run_both() with the command line wrapped: `prefix` comes before it (e.g. xvfb-run and its options)
/// and `set` ("NAME=VALUE") is added to the environment.
inline process_result run_both(const std::string& label, const std::string& producer_args,
                               const std::string& viewer_args, const std::vector<std::string>& prefix = {},
                               const std::vector<std::string>& set = {}) {
  const runtime_dir xdg;
  EXPECT_FALSE(xdg.path().empty()) << "mkdtemp failed";
  const auto log = output_dir() / (label + ".producer.log");
  std::vector<std::string> argv = prefix;
  argv.insert(argv.end(), {"bash", "-c", both_script, "bash", producer_binary().string(), viewer_binary().string(),
                           "ipc-test-" + label, log.string(), producer_args, viewer_args});
  std::vector<std::string> environment = set;
  environment.push_back("XDG_RUNTIME_DIR=" + xdg.path().string());
  auto r = run_process(argv, label, 120s, {}, environment);
  EXPECT_TRUE(r) << r.error().message();
  return r ? *r : process_result{};
}

inline std::string describe(const process_result& r) {
  return "exit status " + std::to_string(r.exit_status) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

}  // namespace particles::testing
