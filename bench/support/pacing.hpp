// bench/support/pacing.hpp: a render loop paced like a display (frame n starts at tick n, one tick per
// 1/hz seconds), when each frame's GPU work completed, what a user sees of it (latency from the tick to
// completion against the budget; the period between completions), and a log of the growth work done
// meanwhile, so the worst frames can be attributed to what overlapped them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace membridge::bench {

using steady = std::chrono::steady_clock;

/// Milliseconds from `a` to `b`.
[[nodiscard]] inline double ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// Ticks at `hz`: frame n may start at start() + n / hz. wait(n) sleeps until then (the last ~200 us
/// spinning, so ticks are sharp).
class pacer {
 public:
  explicit pacer(double hz) : period_(std::chrono::duration<double>(1.0 / hz)) {}
  void start() { start_ = steady::now() + std::chrono::milliseconds(2); }
  [[nodiscard]] steady::time_point tick(std::size_t n) const {
    return start_ + std::chrono::duration_cast<steady::duration>(period_ * static_cast<double>(n));
  }
  void wait(std::size_t n) const;
  [[nodiscard]] double period_ms() const { return period_.count() * 1000.0; }

 private:
  std::chrono::duration<double> period_;
  steady::time_point start_{};
};

/// One piece of growth work (a follow step, a grow) and when it ran.
struct work_event {
  std::string what;          ///< e.g. "import 64 MiB", "grow 256 MiB (maps)".
  steady::time_point begin;  ///< Host time it started.
  steady::time_point end;    ///< Host time it returned.
};

/// Thread-safe log of work events.
class work_log {
 public:
  void add(std::string what, steady::time_point begin, steady::time_point end) {
    const std::lock_guard lock(mutex_);
    events_.push_back({std::move(what), begin, end});
  }
  [[nodiscard]] std::vector<work_event> events() const {
    const std::lock_guard lock(mutex_);
    return events_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<work_event> events_;
};

/// Stamps, from its own thread, when each frame completed: done(n) is taken right after wait(n)
/// returns (wait(n) blocks until frame n's GPU work is done, e.g. a timeline value). Start it before
/// the first frame; join() after the last was submitted.
class completion_watcher {
 public:
  completion_watcher(std::size_t frames, std::function<bool(std::uint64_t)> wait);
  completion_watcher(const completion_watcher&) = delete;
  completion_watcher& operator=(const completion_watcher&) = delete;
  ~completion_watcher();
  /// Waits for the thread; false if a wait failed (timed out).
  bool join();
  [[nodiscard]] const std::vector<steady::time_point>& done() const { return done_; }

 private:
  std::vector<steady::time_point> done_;
  std::thread thread_;
  bool ok_ = true;
};

/// What a paced run looked like from the user's side.
struct paced_summary {
  double budget_ms = 0;            ///< 1 / hz.
  std::size_t frames = 0;
  double latency_median_ms = 0;    ///< tick -> GPU done.
  double latency_p99_ms = 0;
  double latency_worst_ms = 0;     ///< "no frame over the budget" means this <= budget_ms.
  std::size_t over_budget = 0;     ///< Frames whose latency exceeded the budget.
  double period_median_ms = 0;     ///< Raw completion period: done(n) - done(n-1) (moves with every frame's latency).
  double period_worst_ms = 0;
  double worst_over_median = 0;    ///< Raw: period_worst_ms / period_median_ms.
  /// What a display at the pacing rate shows (FIFO): frame n is shown at the first tick k > n with
  /// tick(k) >= done(n), and after frame n-1; the period is the time between shown frames.
  double shown_period_median_ms = 0;
  double shown_period_worst_ms = 0;
  double shown_worst_over_median = 0;   ///< shown_period_worst_ms / shown_period_median_ms (1.0: no frame late).
  double warmup_worst_ms = 0;      ///< Worst latency among the skipped warm-up frames (reported, not judged).
  std::size_t worst_frame = 0;     ///< Index of the frame with the worst latency.
  std::vector<std::string> worst_overlaps;  ///< Work events that overlapped the worst frames (up to 3).
};

/// Summarises frames [skip, frames): latency from each tick to completion, the raw and the shown
/// period, and the work that overlapped the three worst frames. Frames before `skip` are warm-up (the
/// first semaphore waits of a new timeline): only their worst latency is kept.
[[nodiscard]] paced_summary summarise_paced(const pacer& p, std::size_t frames, const std::vector<steady::time_point>& done,
                                            const std::vector<work_event>& events, std::size_t skip = 2);

/// Several paced runs of one configuration taken together (add() each run's summary): the worst of
/// each run's figure, every run's medians (for their median), and the frames over budget of all.
struct paced_rounds {
  double latency_worst_ms = 0;          ///< Worst latency of any run.
  double latency_p99_ms = 0;            ///< Worst p99 latency of any run.
  double period_worst_ms = 0;           ///< Worst raw completion period of any run.
  double worst_over_median = 0;         ///< Worst raw period / median of any run.
  double shown_worst_over_median = 0;   ///< Worst shown period / median of any run.
  double warmup_worst_ms = 0;           ///< Worst warm-up latency of any run.
  std::size_t over_budget = 0;          ///< Frames over the budget, all runs.
  std::vector<double> latency_medians;  ///< Each run's median latency.
  std::vector<double> period_medians;   ///< Each run's median raw completion period.

  /// Takes in one run.
  void add(const paced_summary& s);
};

}  // namespace membridge::bench
