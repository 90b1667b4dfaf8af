#include "pacing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

namespace membridge::bench {

void pacer::wait(std::size_t n) const {
  const auto t = tick(n);
  const auto spin_from = t - std::chrono::microseconds(200);
  if (steady::now() < spin_from) std::this_thread::sleep_until(spin_from);
  while (steady::now() < t) {
  }
}

completion_watcher::completion_watcher(std::size_t frames, std::function<bool(std::uint64_t)> wait)
    : done_(frames) {
  thread_ = std::thread([this, frames, w = std::move(wait)] {
    for (std::size_t n = 0; n < frames; ++n) {
      if (!w(n)) {
        ok_ = false;
        return;
      }
      done_[n] = steady::now();
    }
  });
}

completion_watcher::~completion_watcher() {
  if (thread_.joinable()) thread_.join();
}

bool completion_watcher::join() {
  if (thread_.joinable()) thread_.join();
  return ok_;
}

namespace {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

paced_summary summarise_paced(const pacer& p, std::size_t frames, const std::vector<steady::time_point>& done,
                              const std::vector<work_event>& events, std::size_t skip) {
  paced_summary s;
  s.budget_ms = p.period_ms();
  std::vector<double> latency;
  std::vector<double> period;
  std::vector<std::pair<double, std::size_t>> ranked;
  for (std::size_t n = 0; n < skip && n < done.size(); ++n)
    s.warmup_worst_ms = std::max(s.warmup_worst_ms, ms_between(p.tick(n), done[n]));
  std::vector<double> shown;
  std::size_t shown_prev = 0;
  for (std::size_t n = skip; n < frames && n < done.size(); ++n) {
    // The display tick that shows frame n: after its own tick, not before it completed, after n-1's.
    const double since = ms_between(p.tick(0), done[n]) / p.period_ms();
    std::size_t k = std::max<std::size_t>(n + 1, since <= 0 ? 0 : static_cast<std::size_t>(std::ceil(since)));
    if (n > skip) {
      k = std::max(k, shown_prev + 1);
      shown.push_back(static_cast<double>(k - shown_prev) * p.period_ms());
    }
    shown_prev = k;
    const double l = ms_between(p.tick(n), done[n]);
    latency.push_back(l);
    ranked.emplace_back(l, n);
    if (l > s.budget_ms) ++s.over_budget;
    if (n > skip) period.push_back(ms_between(done[n - 1], done[n]));
  }
  s.frames = latency.size();
  if (latency.empty()) return s;
  s.latency_median_ms = percentile(latency, 0.5);
  s.latency_p99_ms = percentile(latency, 0.99);
  s.latency_worst_ms = *std::max_element(latency.begin(), latency.end());
  s.period_median_ms = percentile(period, 0.5);
  s.period_worst_ms = period.empty() ? 0 : *std::max_element(period.begin(), period.end());
  s.worst_over_median = s.period_median_ms > 0 ? s.period_worst_ms / s.period_median_ms : 0;
  s.shown_period_median_ms = percentile(shown, 0.5);
  s.shown_period_worst_ms = shown.empty() ? 0 : *std::max_element(shown.begin(), shown.end());
  s.shown_worst_over_median = s.shown_period_median_ms > 0 ? s.shown_period_worst_ms / s.shown_period_median_ms : 0;
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  s.worst_frame = ranked.front().second;
  for (std::size_t k = 0; k < std::min<std::size_t>(3, ranked.size()); ++k) {
    const std::size_t n = ranked[k].second;
    std::ostringstream line;
    line.precision(3);
    line << "frame " << n << ": " << std::fixed << ranked[k].first << " ms;";
    const auto from = p.tick(n) - std::chrono::milliseconds(1);
    const auto to = done[n];
    bool any = false;
    for (const work_event& e : events)
      if (e.begin < to && e.end > from) {
        line << " [" << e.what << " " << ms_between(e.begin, e.end) << " ms, started "
             << ms_between(p.tick(n), e.begin) << " ms after the tick]";
        any = true;
      }
    if (!any) line << " (no growth work overlapped)";
    s.worst_overlaps.push_back(line.str());
  }
  return s;
}

void paced_rounds::add(const paced_summary& s) {
  latency_worst_ms = std::max(latency_worst_ms, s.latency_worst_ms);
  latency_p99_ms = std::max(latency_p99_ms, s.latency_p99_ms);
  period_worst_ms = std::max(period_worst_ms, s.period_worst_ms);
  worst_over_median = std::max(worst_over_median, s.worst_over_median);
  shown_worst_over_median = std::max(shown_worst_over_median, s.shown_worst_over_median);
  warmup_worst_ms = std::max(warmup_worst_ms, s.warmup_worst_ms);
  over_budget += s.over_budget;
  latency_medians.push_back(s.latency_median_ms);
  period_medians.push_back(s.period_median_ms);
}

}  // namespace membridge::bench
