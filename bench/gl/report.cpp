#include "report.hpp"

#include <membridge/core/units.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <ostream>

namespace membridge::bench::gl_bench {

namespace {

goal make_goal(std::string key, std::string description, std::string comparison, double target, double measured) {
  const bool met = comparison == "<=" ? measured <= target : comparison == "==" ? measured == target : measured >= target;
  return {std::move(key), std::move(description), std::move(comparison), target, measured, met && !std::isnan(measured)};
}

template <class Pick>
std::vector<double> per_block(const lane_result& lane, Pick pick) {
  std::vector<double> out;
  for (const frame_block& b : lane.blocks) out.push_back(pick(b));
  return out;
}

std::vector<double> pooled(const lane_result& lane, std::vector<double> frame_block::*field) {
  std::vector<double> out;
  for (const frame_block& b : lane.blocks) out.insert(out.end(), (b.*field).begin(), (b.*field).end());
  return out;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? std::nan("") : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

/// A lane's digest.
struct lane_digest {
  summary gpu_frame_us;       // block means
  summary host_us;            // every frame
  double host_cpu_mean_us = 0.0;
  summary producer_us;        // every frame (membridge)
  double gl_to_cuda_per_frame = 0.0;
  double cuda_to_gl_per_frame = 0.0;
  std::vector<double> block_gpu, block_host, block_cpu;
};

lane_digest digest(const lane_result& lane) {
  lane_digest d;
  d.block_gpu = per_block(lane, [](const frame_block& b) { return b.gpu_frame_us; });
  d.block_host = per_block(lane, [](const frame_block& b) { return median(b.host_us); });
  d.block_cpu = per_block(lane, [](const frame_block& b) { return mean(b.host_cpu_us); });
  d.gpu_frame_us = summarize(d.block_gpu);
  d.host_us = summarize(pooled(lane, &frame_block::host_us));
  d.host_cpu_mean_us = mean(pooled(lane, &frame_block::host_cpu_us));
  d.producer_us = summarize(pooled(lane, &frame_block::producer_us));
  std::uint64_t frames = 0, g2c = 0, c2g = 0;
  for (const frame_block& b : lane.blocks) {
    frames += b.frames;
    g2c += b.gl_to_cuda;
    c2g += b.cuda_to_gl;
  }
  if (frames != 0) {
    d.gl_to_cuda_per_frame = static_cast<double>(g2c) / static_cast<double>(frames);
    d.cuda_to_gl_per_frame = static_cast<double>(c2g) / static_cast<double>(frames);
  }
  return d;
}

json lane_json(const lane_digest& d) {
  return {{"gpu_frame_us", to_json(d.gpu_frame_us, 2)},
          {"host_us", to_json(d.host_us, 2)},
          {"host_cpu_mean_us", rounded(d.host_cpu_mean_us, 2)},
          {"producer_us", to_json(d.producer_us, 2)},
          {"gl_to_cuda_per_frame", rounded(d.gl_to_cuda_per_frame, 3)},
          {"cuda_to_gl_per_frame", rounded(d.cuda_to_gl_per_frame, 3)}};
}

std::string us_cell(double v) { return fixed(v, 1); }

double max_of(const std::vector<double>& v) { return v.empty() ? std::nan("") : *std::max_element(v.begin(), v.end()); }

std::string ordering_text(const bench_env& env, const run_info& info) {
  if (env.order == ordering::semaphores)
    return "membridge ordered by sync::frame_timeline + sync::gl_frame_consumer (timeline semaphores; CUDA producer thread)";
  return "membridge ordered BY THE HOST (" + info.ordering_note +
         "): cudaStreamSynchronize before GL, GL fences before CUDA rewrites a slot; this is NOT the semaphore path";
}

}  // namespace

json report(std::ostream& out, const bench_env& env, const run_info& info, const run_results& r) {
  std::vector<goal> goals;
  json j;
  j["bench"] = "gl";
  j["commit"] = info.commit;
  j["device"] = {{"name", info.gpu_name},
                 {"uuid", info.gpu_uuid},
                 {"compute_capability", info.compute_capability},
                 {"cuda_driver_version", info.cuda_driver},
                 {"cuda_runtime_version", info.cuda_runtime}};
  j["gl"] = {{"vendor", info.gl_vendor},
             {"renderer", info.gl_renderer},
             {"version", info.gl_version},
             {"semaphore_fd", info.gl_semaphore_fd},
             {"timeline_semaphore", info.gl_timeline_semaphore},
             {"sparse_growth", info.gl_sparse_growth}};
  j["ordering"] = env.order == ordering::semaphores ? "semaphores" : "host";
  if (env.order != ordering::semaphores) j["ordering_note"] = info.ordering_note;
  j["config"] = {{"frames", env.frames},     {"warmup", env.warmup}, {"blocks", env.blocks},
                 {"slots", env.slots},       {"growth_rounds", env.growth_rounds},
                 {"quick", env.quick},       {"parts", info.parts}};

  out << "membridge GL benchmark on " << info.gpu_name << " (sm_" << info.compute_capability << "), CUDA driver "
      << info.cuda_driver << ", runtime " << info.cuda_runtime << "\nGL: " << info.gl_renderer << ", " << info.gl_version
      << "; commit " << info.commit << "\n" << ordering_text(env, info) << "\n"
      << "frames: " << env.frames << " timed (+" << env.warmup << " warm-up) per block, " << env.blocks
      << " interleaved blocks per path, " << env.slots << " frames in flight (GL fence), data checked every frame\n"
      << "GPU frame = mean interval between GL timestamps (glQueryCounter GL_TIMESTAMP) at the end of each frame's GL work;\n"
      << "host = render thread's wall time in the frame's own calls (legacy: map..flush incl. kernel launch; membridge:\n"
      << "acquire..release; the CUDA launches run on the producer thread, shown as 'producer'); cpu = thread CPU time\n\n";

  // ------------------------------------------------------------------------------------ (a) ---
  if (r.steady) {
    out << "(a) steady frames: kernel writes the whole RGBA frame, GL copies a word of it (history), fence, flush\n";
    text_table t({{"size"}, {"path"}, {"GPU frame us", align::right}, {"min", align::right}, {"max", align::right},
                  {"host us", align::right}, {"p90", align::right}, {"cpu us", align::right},
                  {"producer us", align::right}});
    text_table rt({{"(a) membridge / legacy"}, {"GPU frame", align::right}, {"host", align::right},
                   {"host cpu", align::right}, {"min..max host (paired)", align::right}});
    text_table ot({{"one-time"}, {"register us", align::right}, {"max", align::right}, {"unregister us", align::right},
                   {"mirror_in_gl us", align::right}, {"max", align::right}, {"frame_timeline us", align::right},
                   {"gl_frame_consumer us", align::right}});
    json sizes = json::array();
    for (const steady_size& s : *r.steady) {
      const lane_digest l = digest(s.legacy);
      const lane_digest m = digest(s.membridge);
      for (const auto& [name, d] : {std::pair{"legacy map/unmap", &l}, std::pair{"membridge", &m}})
        t.add_row({s.name, name, us_cell(d->gpu_frame_us.median), us_cell(d->gpu_frame_us.min),
                   us_cell(d->gpu_frame_us.max), us_cell(d->host_us.median), us_cell(d->host_us.p90),
                   us_cell(d->host_cpu_mean_us), d->producer_us.count ? us_cell(d->producer_us.median) : "-"});
      const ratio gpu = compare(m.block_gpu, l.block_gpu);
      const ratio host = compare(m.block_host, l.block_host);
      const ratio cpu = compare(m.block_cpu, l.block_cpu);
      rt.add_row({s.name, fixed(gpu.paired.median, 3) + "x", fixed(host.paired.median, 3) + "x",
                  fixed(cpu.paired.median, 3) + "x",
                  fixed(host.paired.min, 3) + ".." + fixed(host.paired.max, 3)});
      const summary reg = summarize(s.once.register_us), unreg = summarize(s.once.unregister_us),
                    imp = summarize(s.once.import_us), tl = summarize(s.once.timeline_us),
                    co = summarize(s.once.consumer_us);
      ot.add_row({s.name, us_cell(reg.median), us_cell(reg.max), us_cell(unreg.median), us_cell(imp.median),
                  us_cell(imp.max), tl.count ? us_cell(tl.median) : "-", co.count ? us_cell(co.median) : "-"});
      goals.push_back(make_goal("steady_gpu_frame_" + s.name, "(a) " + s.name + " GPU frame time, membridge / legacy", "<=",
                                1.0, gpu.paired.median));
      goals.push_back(make_goal("steady_host_" + s.name, "(a) " + s.name + " host time per frame, membridge / legacy",
                                "<=", 0.8, host.paired.median));
      sizes.push_back({{"size", s.name},
                       {"width", s.width},
                       {"height", s.height},
                       {"frame_bytes", s.frame_bytes},
                       {"legacy", lane_json(l)},
                       {"membridge", lane_json(m)},
                       {"ratio_membridge_over_legacy",
                        {{"gpu_frame", ratio_json(gpu)}, {"host", ratio_json(host)}, {"host_cpu", ratio_json(cpu)}}},
                       {"one_time_us",
                        {{"register", to_json(reg, 1)},
                         {"unregister", to_json(unreg, 1)},
                         {"mirror_in_gl", to_json(imp, 1)},
                         {"frame_timeline_create", to_json(tl, 1)},
                         {"gl_frame_consumer_import", to_json(co, 1)}}}});
    }
    t.print(out);
    out << '\n';
    rt.print(out);
    out << "  (paired: the median over blocks of membridge's block / the adjacent legacy block)\n\n";
    ot.print(out);
    out << "  (register: cudaGraphicsGLRegisterBuffer(WriteDiscard) of a frame-sized GL buffer; mirror_in_gl: export fd +\n"
           "   glImportMemoryFdEXT + buffer storage of a frame-sized growable_buffer; medians of repeated, alternating runs)\n\n";
    j["steady"] = sizes;
  }

  // ------------------------------------------------------------------------------------ (b) ---
  if (r.growth) {
    const growth_result& g = *r.growth;
    out << "(b) growth " << format_bytes(g.start_bytes) << " -> " << format_bytes(g.final_bytes) << ", doubling every "
        << g.frames_per_step << " frames (" << g.steps << " steps), " << g.legacy.size() << "+" << g.membridge.size()
        << " interleaved rounds; membridge import "
        << (g.import_off_render_thread ? std::string("on a thread with a shared GL context")
                                       : "on the render thread (" + g.import_note + ")")
        << (g.sparse ? ", one sparse GL buffer" : ", one GL buffer per chunk") << "\n"
        << "period = render thread, end of one frame to the end of the next (what it sees, GPU back-pressure included);\n"
        << "work = the frame's own calls (growth handling included); peak = cudaMemGetInfo above the round's baseline\n"
        << "(taken after the round's fixed setup: streams, histories, semaphores, the import thread's GL context)\n";
    text_table t({{"path"}, {"worst period ms", align::right}, {"max", align::right}, {"worst work ms", align::right},
                  {"worst GPU interval ms", align::right}, {"median period ms", align::right},
                  {"growth step ms", align::right}, {"max", align::right}, {"import ms", align::right},
                  {"peak GiB", align::right}, {"peak/final", align::right}});
    struct growth_digest {
      std::vector<double> worst_period, worst_work, worst_gpu, median_period, steps, imports, peak, peak_ratio, lag;
      std::size_t gl_final_min = 0;
    };
    const auto dig = [](const std::vector<growth_round>& rounds) {
      growth_digest d;
      d.gl_final_min = rounds.empty() ? 0 : rounds.front().gl_final_bytes;
      for (const growth_round& x : rounds) {
        d.worst_period.push_back(max_of(x.period_ms));
        d.worst_work.push_back(max_of(x.region_ms));
        d.worst_gpu.push_back(max_of(x.gpu_interval_ms));
        d.median_period.push_back(median(x.period_ms));
        d.steps.insert(d.steps.end(), x.step_ms.begin(), x.step_ms.end());
        d.imports.insert(d.imports.end(), x.import_ms.begin(), x.import_ms.end());
        d.lag.insert(d.lag.end(), x.apply_lag_frames.begin(), x.apply_lag_frames.end());
        d.peak.push_back(static_cast<double>(x.peak_bytes));
        d.peak_ratio.push_back(static_cast<double>(x.peak_bytes) / static_cast<double>(x.final_bytes));
        d.gl_final_min = std::min(d.gl_final_min, x.gl_final_bytes);
      }
      return d;
    };
    const growth_digest l = dig(g.legacy);
    const growth_digest m = dig(g.membridge);
    constexpr double gib = 1.0 / static_cast<double>(std::size_t{1} << 30);
    for (const auto& [name, d] : {std::pair{"legacy re-register", &l}, std::pair{"membridge", &m}}) {
      const summary st = summarize(d->steps), im = summarize(d->imports);
      t.add_row({name, fixed(median(d->worst_period), 2), fixed(max_of(d->worst_period), 2), fixed(median(d->worst_work), 2),
                 fixed(median(d->worst_gpu), 2), fixed(median(d->median_period), 3), fixed(st.median, 2), fixed(st.max, 2),
                 im.count ? fixed(im.median, 2) + " (max " + fixed(im.max, 2) + ")" : "-",
                 fixed(max_of(d->peak) * gib, 3), fixed(max_of(d->peak_ratio), 3)});
    }
    t.print(out);
    const ratio worst = compare(l.worst_period, m.worst_period);
    const ratio worst_gpu = compare(l.worst_gpu, m.worst_gpu);
    out << "  worst period, legacy / membridge: " << fixed(worst.paired.median, 2) << "x (paired rounds; min "
        << fixed(worst.paired.min, 2) << ", max " << fixed(worst.paired.max, 2) << "); worst GPU interval: "
        << fixed(worst_gpu.paired.median, 2) << "x\n";
    out << "  growth step: legacy = unregister + glNamedBufferData + copy + delete + register (render thread); membridge =\n"
           "  growable_buffer::grow ("
        << (env.order == ordering::semaphores ? "producer thread" : "render thread") << "); import = sync::follow_growth";
    if (!m.lag.empty())
      out << "; GL took up each growth " << fixed(median(m.lag), 1) << " frames (median, max " << fixed(max_of(m.lag), 0)
          << ") after the frame that made it";
    out << "\n";
    if (!g.membridge.empty() && m.gl_final_min != g.final_bytes)
      out << "  NOTE: in a membridge round GL never reached the final size (" << format_bytes(m.gl_final_min)
          << "): the last import finished after the last frame\n";
    out << '\n';
    const double slack = 1.0 + static_cast<double>(std::size_t{16} << 20) / static_cast<double>(g.final_bytes);
    goals.push_back(make_goal("growth_worst_frame", "(b) worst frame period during growth, legacy / membridge", ">=", 10.0,
                              worst.paired.median));
    goal peak_goal = make_goal("growth_peak_memory", "(b) membridge peak memory / final size (16 MiB slack)", "<=", 1.0,
                               max_of(m.peak_ratio));
    peak_goal.met = !std::isnan(peak_goal.measured) && peak_goal.measured <= slack;
    goals.push_back(peak_goal);
    const auto rounds_json = [](const std::vector<growth_round>& rounds) {
      json a = json::array();
      const auto ms = [](const std::vector<double>& v, int d) {
        json x = json::array();
        for (const double e : v) x.push_back(rounded(e, d));
        return x;
      };
      for (const growth_round& x : rounds)
        a.push_back({{"worst_period_ms", rounded(max_of(x.period_ms), 3)},
                     {"worst_work_ms", rounded(max_of(x.region_ms), 3)},
                     {"worst_gpu_interval_ms", rounded(max_of(x.gpu_interval_ms), 3)},
                     {"median_period_ms", rounded(median(x.period_ms), 4)},
                     {"step_ms", ms(x.step_ms, 3)},
                     {"import_ms", ms(x.import_ms, 3)},
                     {"apply_lag_frames", ms(x.apply_lag_frames, 0)},
                     {"peak_bytes", x.peak_bytes},
                     {"final_bytes", x.final_bytes},
                     {"gl_final_bytes", x.gl_final_bytes},
                     {"frames", x.frames}});
      return a;
    };
    j["growth"] = {{"start_bytes", g.start_bytes},
                   {"final_bytes", g.final_bytes},
                   {"frames_per_step", g.frames_per_step},
                   {"steps", g.steps},
                   {"import_off_render_thread", g.import_off_render_thread},
                   {"import_note", g.import_note},
                   {"sparse", g.sparse},
                   {"legacy", rounds_json(g.legacy)},
                   {"membridge", rounds_json(g.membridge)},
                   {"ratio_legacy_over_membridge",
                    {{"worst_period", ratio_json(worst)}, {"worst_gpu_interval", ratio_json(worst_gpu)}}}};
  }

  // ------------------------------------------------------------------------------------ (c) ---
  if (r.steps) {
    const steps_result& s = *r.steps;
    out << "(c) k CUDA steps (kernels writing the " << s.size_name
        << " frame) per drawn frame; transfers counted in the loops, per drawn frame\n";
    text_table t({{"k"}, {"path"}, {"GPU frame us", align::right}, {"min", align::right}, {"max", align::right},
                  {"GL->CUDA", align::right}, {"CUDA->GL", align::right}, {"host us", align::right}});
    json lanes = json::array();
    bool one_round_trip = true;
    double worst_membridge_trips = 0.0;
    for (const unsigned k : {1U, 2U, 4U, 8U})
      for (const lane_result& lane : s.lanes) {
        if (lane.steps != k) continue;
        const lane_digest d = digest(lane);
        t.add_row({std::to_string(k), path_name(lane.which), us_cell(d.gpu_frame_us.median), us_cell(d.gpu_frame_us.min),
                   us_cell(d.gpu_frame_us.max), fixed(d.gl_to_cuda_per_frame, 2), fixed(d.cuda_to_gl_per_frame, 2),
                   us_cell(d.host_us.median)});
        if (lane.which == path::membridge) {
          const double trips = std::max(d.gl_to_cuda_per_frame, d.cuda_to_gl_per_frame);
          worst_membridge_trips = std::max(worst_membridge_trips, trips);
          one_round_trip = one_round_trip && d.gl_to_cuda_per_frame == 1.0 && d.cuda_to_gl_per_frame == 1.0;
        }
        json lj = lane_json(d);
        lj["k"] = k;
        lj["path"] = path_name(lane.which);
        lanes.push_back(lj);
      }
    t.print(out);
    out << "  (legacy: a map is a GL->CUDA transfer, an unmap CUDA->GL; membridge: a GL release (CUDA waits) and a GL\n"
           "   acquire (after CUDA signals); the GPU frame time shows what the transfers cost as k grows)\n\n";
    goal trips = make_goal("steps_round_trips", "(c) membridge CUDA<->GL round trips per drawn frame, every k", "==", 1.0,
                           worst_membridge_trips);
    trips.met = one_round_trip;
    goals.push_back(trips);
    j["steps"] = {{"size", s.size_name}, {"frame_bytes", s.frame_bytes}, {"lanes", lanes}};
  }

  out << "goals (reported, not enforced)" << (env.order == ordering::semaphores ? "" : " -- host ordering, not the semaphore path")
      << '\n';
  json gj = json::object();
  bool all = true;
  for (const goal& g : goals) {
    out << "  " << (g.met ? "met    " : "NOT MET") << "  " << g.description << ' ' << g.comparison << ' '
        << fixed(g.target, 2) << ": measured " << fixed(g.measured, 3) << '\n';
    gj[g.key] = {{"comparison", g.comparison}, {"target", g.target}, {"measured", rounded(g.measured, 4)}, {"met", g.met}};
    all = all && g.met;
  }
  out << '\n';
  j["goals"] = gj;
  j["all_goals_met"] = all;
  j["data_checked"] = true;
  return j;
}

}  // namespace membridge::bench::gl_bench
