#include "ipc/report.hpp"

#include <membridge/core/units.hpp>

#include <array>
#include <cmath>
#include <ostream>
#include <string_view>

namespace membridge::bench::ipc_bench {

namespace {

template <class Row, class Pick>
std::vector<double> column(const std::vector<Row>& rows, Pick pick) {
  std::vector<double> out;
  out.reserve(rows.size());
  for (const Row& r : rows) out.push_back(pick(r));
  return out;
}

/// One pipeline of (c) over its runs. Latency parts pool every measured frame of every run.
struct pipeline_digest {
  bool ran = false;
  summary fps;           // per run
  summary gpu_interval;  // per run
  summary latency;       // release -> done
  summary delivery;      // release -> told
  summary consumer;      // told -> done
  double latency_p99 = 0.0;
  double delivery_p99 = 0.0;
  double consumer_p99 = 0.0;
  // The tail: the frames whose latency is at or above the p99, and how it split.
  std::size_t tail_frames = 0;
  double tail_delivery_median = 0.0;
  double tail_consumer_median = 0.0;
  double max_delivery = 0.0;  // the split of the slowest frame
  double max_consumer = 0.0;
  std::uint64_t frames_seen_min = 0;
};

pipeline_digest digest_runs(const std::vector<frame_run>& runs) {
  pipeline_digest d;
  d.ran = !runs.empty();
  d.fps = summarize(column(runs, [](const frame_run& x) { return x.frames_per_s; }));
  d.gpu_interval = summarize(column(runs, [](const frame_run& x) { return x.gpu_interval_us; }));
  std::vector<double> latency;
  std::vector<double> delivery;
  std::vector<double> consumer;
  for (const frame_run& r : runs) {
    latency.insert(latency.end(), r.latency_us.begin(), r.latency_us.end());
    delivery.insert(delivery.end(), r.delivery_us.begin(), r.delivery_us.end());
    consumer.insert(consumer.end(), r.consumer_us.begin(), r.consumer_us.end());
  }
  d.latency = summarize(latency);
  d.delivery = summarize(delivery);
  d.consumer = summarize(consumer);
  d.latency_p99 = percentile(latency, 0.99);
  d.delivery_p99 = percentile(delivery, 0.99);
  d.consumer_p99 = percentile(consumer, 0.99);
  std::vector<double> tail_delivery;
  std::vector<double> tail_consumer;
  double slowest = -1.0;
  for (std::size_t i = 0; i < latency.size() && i < delivery.size() && i < consumer.size(); ++i) {
    if (latency[i] >= d.latency_p99) {
      tail_delivery.push_back(delivery[i]);
      tail_consumer.push_back(consumer[i]);
    }
    if (latency[i] > slowest) {
      slowest = latency[i];
      d.max_delivery = delivery[i];
      d.max_consumer = consumer[i];
    }
  }
  d.tail_frames = tail_delivery.size();
  d.tail_delivery_median = median(tail_delivery);
  d.tail_consumer_median = median(tail_consumer);
  d.frames_seen_min = runs.empty() ? 0 : runs.front().frames_seen;
  for (const frame_run& r : runs) d.frames_seen_min = std::min(d.frames_seen_min, r.frames_seen);
  return d;
}

/// What the tail of a pipeline's latency is, from its split: "the slowest 1% ...".
std::string tail_text(const pipeline_digest& p) {
  if (!p.ran || p.tail_frames == 0) return "no frames";
  const bool delivery_dominates = p.tail_delivery_median > p.tail_consumer_median;
  return "the slowest 1% (" + std::to_string(p.tail_frames) + " frames, >= " + fixed(p.latency_p99, 0) +
         " us) spent a median " + fixed(p.tail_delivery_median, 0) + " us between the release and the consumer being "
         "told (delivery: publish_frame, socket, the consumer thread's wake-up) and " +
         fixed(p.tail_consumer_median, 0) + " us from being told to done (submit, GPU wait for the producer, copy, "
         "context switch, the done wait's wake-up; delivery medians " + fixed(p.delivery.median, 0) + " us, consumer " +
         fixed(p.consumer.median, 0) + " us); the slowest frame " + fixed(p.max_delivery, 0) + " + " +
         fixed(p.max_consumer, 0) + " us: the tail is " + (delivery_dominates ? "the announcement's delivery" : "the consumer's side");
}

std::vector<double> fps_of(const std::vector<frame_run>& runs) {
  return column(runs, [](const frame_run& x) { return x.frames_per_s; });
}

/// Every number the report shows, computed once.
struct digest {
  // (a)
  summary vmm1_connect, vmm1_import, vmm1_total, vmm8_connect, vmm8_import, vmm8_total;
  summary legacy_transfer, legacy, legacy_total;
  ratio attach_total;       // vmm1 connect + import / legacy connect + handle + open (like for like)
  ratio attach_import;      // vmm1 import / legacy open (each with the handle in hand)
  ratio attach_vs_open;     // vmm1 connect + import / legacy open alone (reference)
  ratio attach8_total;      // vmm8 connect + import / legacy connect + handle + open
  double per_chunk_import_us = 0.0;  // median vmm8 import / 8
  double marginal_chunk_us = 0.0;    // (median vmm8 import - median vmm1 import) / 7
  bool other_ran = false;            // the 1-chunk attach with the subscriber on another GPU
  summary other1_connect, other1_import, other1_total;
  ratio other_total;   // other GPU connect + import / same GPU connect + import (1 chunk)
  ratio other_import;  // other GPU import_into_cuda / same GPU import_into_cuda (1 chunk)
  // (b)
  summary grow, publish, delivery, follow, touch, to_followed, total;
  // (c)
  pipeline_digest vulkan_cross, vulkan_single, cuda_cross, cuda_single, vulkan_cross_paced, vulkan_single_paced;
  ratio vulkan_throughput;  // Vulkan consumer: cross / single, per round (the goal)
  ratio cuda_throughput;    // CUDA consumer: cross / single, per round (reference)
  bool cuda_ran = false;
  std::vector<goal> goals;
};

/// The goals of the parts that ran (`d`'s numbers computed).
std::vector<goal> goals_of(const run_config& config, const digest& d) {
  // Ratios are judged by the median of the per-round ratios (the same round of both methods).
  const double attach = d.attach_total.paired.median;
  const double attach_import = d.attach_import.paired.median;
  const double growth_ms = d.total.median / 1000.0;
  const double throughput = d.vulkan_throughput.paired.median;
  const double latency_p99_ms = d.vulkan_cross_paced.latency_p99 / 1000.0;  // NaN when not run
  std::vector<goal> goals;
  if (config.run_attach) {
    goals.push_back({"attach_ratio",
                     "attach of a fresh 1 GiB buffer in a second process, from a fresh connection: membridge 1 chunk "
                     "(connect + import_into_cuda) / legacy (connect + handle over a Unix socket + "
                     "cudaIpcOpenMemHandle) (median of per-round ratios)",
                     "<=", attach_ratio_goal, attach, attach <= attach_ratio_goal});
    goals.push_back({"attach_import_ratio",
                     "attach of a fresh 1 GiB buffer in a second process, the handle in hand: membridge 1 chunk "
                     "import_into_cuda / cudaIpcOpenMemHandle (median of per-round ratios)",
                     "<=", attach_ratio_goal, attach_import, attach_import <= attach_ratio_goal});
  }
  if (config.run_growth)
    goals.push_back({"growth_latency_ms",
                     "growth of 1 GiB reaching a subscriber, grow() returned -> subscriber's follow_growth + kernel on "
                     "the new range done (median, ms)",
                     "<=", growth_latency_goal_ms, growth_ms, growth_ms <= growth_latency_goal_ms});
  if (config.run_frames) {
    goals.push_back({"frame_throughput_ratio",
                     "frame handoff throughput to a Vulkan consumer, consumer in another process / in the producer's "
                     "process (median of per-round ratios)",
                     ">=", frame_throughput_goal, throughput, throughput >= frame_throughput_goal});
    goals.push_back({"cross_process_latency_p99_ms",
                     "frame handoff latency to a Vulkan consumer in another process, producer paced at 144 Hz: "
                     "producer's release -> consumer done, CLOCK_MONOTONIC in each process (p99 of every measured "
                     "frame, ms)",
                     "<=", latency_p99_goal_ms, latency_p99_ms, latency_p99_ms <= latency_p99_goal_ms});
  }
  return goals;
}

digest make_digest(const run_config& config, const run_results& r) {
  digest d;
  const auto& a = r.attach;
  d.vmm1_connect = summarize(column(a, [](const attach_round& x) { return x.vmm1_connect_us; }));
  d.vmm1_import = summarize(column(a, [](const attach_round& x) { return x.vmm1_import_us; }));
  d.vmm1_total = summarize(column(a, [](const attach_round& x) { return x.vmm1_total_us(); }));
  d.vmm8_connect = summarize(column(a, [](const attach_round& x) { return x.vmm8_connect_us; }));
  d.vmm8_import = summarize(column(a, [](const attach_round& x) { return x.vmm8_import_us; }));
  d.vmm8_total = summarize(column(a, [](const attach_round& x) { return x.vmm8_total_us(); }));
  d.legacy_transfer = summarize(column(a, [](const attach_round& x) { return x.legacy_transfer_us; }));
  d.legacy = summarize(column(a, [](const attach_round& x) { return x.legacy_us; }));
  d.legacy_total = summarize(column(a, [](const attach_round& x) { return x.legacy_total_us(); }));
  const auto legacy_open = column(a, [](const attach_round& x) { return x.legacy_us; });
  const auto legacy_total = column(a, [](const attach_round& x) { return x.legacy_total_us(); });
  const auto vmm1_total = column(a, [](const attach_round& x) { return x.vmm1_total_us(); });
  d.attach_total = compare(vmm1_total, legacy_total);
  d.attach_import = compare(column(a, [](const attach_round& x) { return x.vmm1_import_us; }), legacy_open);
  d.attach_vs_open = compare(vmm1_total, legacy_open);
  d.attach8_total = compare(column(a, [](const attach_round& x) { return x.vmm8_total_us(); }), legacy_total);
  d.per_chunk_import_us = d.vmm8_import.median / static_cast<double>(multi_chunks);
  d.marginal_chunk_us = (d.vmm8_import.median - d.vmm1_import.median) / static_cast<double>(multi_chunks - 1);
  d.other_ran = config.run_attach && config.attach_peer_device >= 0 && r.other_gpu_not_run.empty();
  if (d.other_ran) {
    const auto other1_total = column(a, [](const attach_round& x) { return x.other1_total_us(); });
    const auto other1_import = column(a, [](const attach_round& x) { return x.other1_import_us; });
    d.other1_connect = summarize(column(a, [](const attach_round& x) { return x.other1_connect_us; }));
    d.other1_import = summarize(other1_import);
    d.other1_total = summarize(other1_total);
    d.other_total = compare(other1_total, vmm1_total);
    d.other_import = compare(other1_import, column(a, [](const attach_round& x) { return x.vmm1_import_us; }));
  }

  const auto& g = r.growth;
  d.grow = summarize(column(g, [](const growth_sample& x) { return x.grow_us; }));
  d.publish = summarize(column(g, [](const growth_sample& x) { return x.publish_us; }));
  d.delivery = summarize(column(g, [](const growth_sample& x) { return x.delivery_us; }));
  d.follow = summarize(column(g, [](const growth_sample& x) { return x.follow_us; }));
  d.touch = summarize(column(g, [](const growth_sample& x) { return x.touch_us; }));
  d.to_followed = summarize(column(g, [](const growth_sample& x) { return x.to_followed_us; }));
  d.total = summarize(column(g, [](const growth_sample& x) { return x.total_us; }));

  const auto& f = r.frames;
  d.vulkan_cross = digest_runs(f.vulkan_cross);
  d.vulkan_single = digest_runs(f.vulkan_single);
  d.vulkan_throughput = compare(fps_of(f.vulkan_cross), fps_of(f.vulkan_single));
  d.vulkan_cross_paced = digest_runs(f.vulkan_cross_paced);
  d.vulkan_single_paced = digest_runs(f.vulkan_single_paced);
  d.cuda_ran = !f.cuda_cross.empty() && !f.cuda_single.empty();
  if (d.cuda_ran) {
    d.cuda_cross = digest_runs(f.cuda_cross);
    d.cuda_single = digest_runs(f.cuda_single);
    d.cuda_throughput = compare(fps_of(f.cuda_cross), fps_of(f.cuda_single));
  }

  d.goals = goals_of(config, d);
  return d;
}

std::vector<std::string> row(std::string_view label, const summary& s, int decimals = 1) {
  return {std::string(label), fixed(s.median, decimals), fixed(s.p10, decimals), fixed(s.p90, decimals),
          fixed(s.min, decimals), fixed(s.max, decimals)};
}

text_table summary_table(std::string first) {
  return text_table({{std::move(first)},
                     {"median", align::right},
                     {"p10", align::right},
                     {"p90", align::right},
                     {"min", align::right},
                     {"max", align::right}});
}

/// (a)'s lines on the attach with the subscriber on another GPU, when asked.
void print_other_gpu(std::ostream& out, const run_config& config, const run_results& r, const digest& d) {
  if (config.attach_peer_device < 0) return;
  if (!d.other_ran) {
    out << "  attach on another GPU: not run (" << r.other_gpu_not_run << ")\n";
    return;
  }
  out << '\n';
  text_table ratio = ratio_table("ratio subscriber on GPU " + std::to_string(config.attach_peer_device) +
                                 " / on the publisher's GPU " + std::to_string(config.device));
  ratio.add_row(ratio_row("1 chunk, connect + import", d.other_total));
  ratio.add_row(ratio_row("1 chunk, import_into_cuda", d.other_import));
  ratio.print(out);
  out << "  the subscriber on GPU " << config.attach_peer_device << " checked every word of each buffer from GPU "
      << config.attach_peer_device << " (over the peer link)\n";
}

void print_attach(std::ostream& out, const run_config& config, const run_results& r, const digest& d) {
  out << "(a) attach of a fresh " << format_bytes(attach_bytes) << " buffer in a second process (" << config.rounds
      << " rounds after 1 warm-up, methods rotating; CLOCK_MONOTONIC in the child around the attach calls only;\n"
      << "    every buffer's data checked after); times in us\n";
  text_table attach = summary_table("method");
  attach.add_row(row("membridge 1 x 1 GiB: connect + import", d.vmm1_total));
  attach.add_row(row("  subscriber::connect (socket, handshake, fd)", d.vmm1_connect));
  attach.add_row(row("  sync::import_into_cuda", d.vmm1_import));
  attach.add_row(row("membridge 8 x 128 MiB: connect + import", d.vmm8_total));
  attach.add_row(row("  subscriber::connect", d.vmm8_connect));
  attach.add_row(row("  sync::import_into_cuda", d.vmm8_import));
  attach.add_row(row("legacy 1 GiB (cudaMalloc): connect + handle + open", d.legacy_total));
  attach.add_row(row("  connect + receive the handle (Unix socket)", d.legacy_transfer));
  attach.add_row(row("  cudaIpcOpenMemHandle", d.legacy));
  if (d.other_ran) {
    const std::string gpu = std::to_string(config.attach_peer_device);
    attach.add_row(row("membridge 1 x 1 GiB, subscriber on GPU " + gpu + ": connect + import", d.other1_total));
    attach.add_row(row("  subscriber::connect", d.other1_connect));
    attach.add_row(row("  sync::import_into_cuda (GPU " + gpu + ", peer access)", d.other1_import));
  }
  attach.print(out);
  out << '\n';
  text_table attach_ratio = ratio_table("ratio membridge / legacy CUDA IPC");
  attach_ratio.add_row(ratio_row("1 chunk, connect + import / connect + handle + open", d.attach_total));
  attach_ratio.add_row(ratio_row("1 chunk, import_into_cuda / cudaIpcOpenMemHandle", d.attach_import));
  attach_ratio.add_row(ratio_row("1 chunk, connect + import / cudaIpcOpenMemHandle", d.attach_vs_open));
  attach_ratio.add_row(ratio_row("8 chunks, connect + import / connect + handle + open", d.attach8_total));
  attach_ratio.print(out);
  out << "  per chunk (8 x 128 MiB): import " << fixed(d.per_chunk_import_us, 1) << " us per chunk; each chunk past the "
      << "first adds " << fixed(d.marginal_chunk_us, 1) << " us (medians)\n";
  print_other_gpu(out, config, r, d);
  out << '\n';

}

/// A part of (b)'s latency: its JSON key, its table label and its summary in the digest (one list for
/// the table and the JSON).
struct growth_part {
  const char* key;
  const char* label;
  summary digest::*member;
};

constexpr std::array<growth_part, 7> growth_parts{{
    {"grow_us", "grow() in the producer (not in the latency)", &digest::grow},
    {"publish_us", "publish_growth (export + update message)", &digest::publish},
    {"delivery_us", "delivery (-> subscriber's next_event returns)", &digest::delivery},
    {"follow_us", "follow_growth (import + map + access)", &digest::follow},
    {"touch_us", "kernel on the new range (launch -> done)", &digest::touch},
    {"to_followed_us", "grow() returned -> follow_growth done", &digest::to_followed},
    {"total_us", "grow() returned -> kernel done", &digest::total},
}};

void print_growth(std::ostream& out, const run_config& config, const digest& d) {
  out << "(b) growth by " << format_bytes(growth_step_bytes) << " reaching a subscriber (" << config.rounds << " rounds x "
      << config.growth_steps << " steps after 1 warm-up round; CLOCK_MONOTONIC in both processes; the kernel reads\n"
      << "    one word per " << format_bytes(touch_stride) << " of the new range); times in us\n";
  text_table growth = summary_table("part");
  for (const growth_part& part : growth_parts) growth.add_row(row(part.label, d.*part.member));
  growth.print(out);
  out << '\n';

}

void print_frames(std::ostream& out, const run_config& config, const digest& d) {
  out << "(c) frame handoff, CUDA producer thread -> consumer (" << frame_slots << " slots of " << format_bytes(slot_bytes)
      << "; unpaced: " << config.frames.frames << " frames after " << config.frames.warmup << " warm-up; paced at "
      << fixed(config.frames.pace_hz, 0) << " Hz: " << config.frames.paced_frames << " after "
      << config.frames.paced_warmup << "; " << config.frames.rounds << " rounds, pipelines interleaved;\n"
      << "    frames/s over the producer's host time, first measured frame enqueued -> last frame consumed; latency =\n"
      << "    producer's release (clock read right before cuda_release is enqueued) -> consumer done (clock read right\n"
      << "    after a host wait in the consumer's process on its work for the frame returns), CLOCK_MONOTONIC in each\n"
      << "    process, split at `told` (the consumer's consume() begins); no part can be negative by causality (checked);\n"
      << "    GPU interval between the consumer's frames: Vulkan timestamps after its copy, CUDA %globaltimer at its\n"
      << "    kernel's start; every frame's slot checked); times in us\n";
  text_table frames({{"pipeline"},
                     {"frames/s", align::right},
                     {"GPU intvl", align::right},
                     {"latency median", align::right},
                     {"p99", align::right},
                     {"max", align::right},
                     {"delivery median", align::right},
                     {"p99", align::right},
                     {"consumer median", align::right},
                     {"p99", align::right}});
  const auto frame_row = [](std::string_view label, const pipeline_digest& p) {
    return std::vector<std::string>{std::string(label),          fixed(p.fps.median, 0),      fixed(p.gpu_interval.median, 1),
                                    fixed(p.latency.median, 1),  fixed(p.latency_p99, 1),     fixed(p.latency.max, 1),
                                    fixed(p.delivery.median, 1), fixed(p.delivery_p99, 1),    fixed(p.consumer.median, 1),
                                    fixed(p.consumer_p99, 1)};
  };
  frames.add_row(frame_row("Vulkan consumer, another process", d.vulkan_cross));
  frames.add_row(frame_row("Vulkan consumer, producer's process", d.vulkan_single));
  if (d.cuda_ran) {
    frames.add_row(frame_row("CUDA consumer, another process (ref.)", d.cuda_cross));
    frames.add_row(frame_row("CUDA consumer, producer's context (ref.)", d.cuda_single));
  }
  if (d.vulkan_cross_paced.ran) {
    frames.add_row(frame_row("Vulkan consumer, another process, paced", d.vulkan_cross_paced));
    frames.add_row(frame_row("Vulkan consumer, producer's process, paced", d.vulkan_single_paced));
  }
  frames.print(out);
  if (d.vulkan_cross_paced.ran) {
    out << "  tail, another process, paced: " << tail_text(d.vulkan_cross_paced) << '\n';
    out << "  tail, producer's process, paced: " << tail_text(d.vulkan_single_paced) << '\n';
  }
  out << "  tail, another process, unpaced: " << tail_text(d.vulkan_cross) << '\n';
  out << '\n';
  text_table frame_ratio = ratio_table("throughput ratio cross-process / single process");
  frame_ratio.add_row(ratio_row("Vulkan consumer (the goal)", d.vulkan_throughput));
  if (d.cuda_ran) frame_ratio.add_row(ratio_row("CUDA consumer (ref.: no context switch in one process)", d.cuda_throughput));
  frame_ratio.print(out);
  out << '\n';
}

}  // namespace

void print_report(std::ostream& out, const run_config& config, const run_environment& env, const run_results& r) {
  const digest d = make_digest(config, r);
  out << "membridge cross-process benchmark on " << env.device_name << " (device " << config.device << ", sm_"
      << env.compute_capability << "), CUDA driver " << cuda_version_text(env.driver_version) << ", runtime "
      << cuda_version_text(env.runtime_version) << "; Vulkan: " << env.vulkan_device
      << (config.quick ? "; --quick" : "") << "\n\n";

  if (config.run_attach)
    print_attach(out, config, r, d);
  else
    print_other_gpu(out, config, r, d);
  if (config.run_growth) print_growth(out, config, d);
  if (config.run_frames) print_frames(out, config, d);
  out << "goals (reported, not enforced)\n";
  for (const goal& g : d.goals)
    out << "  " << (g.met ? "met    " : "NOT MET") << "  " << g.description << " " << g.comparison << " "
        << fixed(g.target, 2) << ": measured " << fixed(g.measured, 3) << '\n';
  out << '\n';
}

namespace {

json attach_json(const digest& d) {
  return {{"vmm_1_chunk",
           {{"connect_us", to_json(d.vmm1_connect, 2)},
            {"import_us", to_json(d.vmm1_import, 2)},
            {"total_us", to_json(d.vmm1_total, 2)}}},
          {"vmm_8_chunks",
           {{"connect_us", to_json(d.vmm8_connect, 2)},
            {"import_us", to_json(d.vmm8_import, 2)},
            {"total_us", to_json(d.vmm8_total, 2)},
            {"import_per_chunk_us", rounded(d.per_chunk_import_us, 2)},
            {"marginal_chunk_us", rounded(d.marginal_chunk_us, 2)}}},
          {"legacy",
           {{"transfer_us", to_json(d.legacy_transfer, 2)},
            {"open_us", to_json(d.legacy, 2)},
            {"total_us", to_json(d.legacy_total, 2)}}},
          {"ratio_vmm_over_legacy",
           {{"total_1_chunk", ratio_json(d.attach_total)},
            {"import_1_chunk_over_open", ratio_json(d.attach_import)},
            {"total_1_chunk_over_open", ratio_json(d.attach_vs_open)},
            {"total_8_chunks", ratio_json(d.attach8_total)}}}};
}

/// attach.other_gpu: the 1-chunk attach with the subscriber on another GPU and its ratio to the same
/// GPU's, or {"not_run": why}. No goal: the figure alone.
json other_gpu_json(const run_config& config, const run_results& r, const digest& d) {
  if (!d.other_ran) return {{"not_run", r.other_gpu_not_run}};
  return {{"publisher_device", config.device},
          {"subscriber_device", config.attach_peer_device},
          {"vmm_1_chunk_other_gpu",
           {{"connect_us", to_json(d.other1_connect, 2)},
            {"import_us", to_json(d.other1_import, 2)},
            {"total_us", to_json(d.other1_total, 2)}}},
          {"ratio_other_gpu_over_same_gpu",
           {{"total_1_chunk", ratio_json(d.other_total)}, {"import_1_chunk", ratio_json(d.other_import)}}}};
}

json growth_json(const run_results& r, const digest& d) {
  json j = {{"samples", r.growth.size()}};
  for (const growth_part& part : growth_parts) j[part.key] = to_json(d.*part.member, 2);
  return j;
}

json pipeline_json(const pipeline_digest& p) {
  return json{{"frames_per_s", to_json(p.fps, 1)},
              {"gpu_interval_us", to_json(p.gpu_interval, 2)},
              {"latency_us", to_json(p.latency, 2)},
              {"latency_p99_us", rounded(p.latency_p99, 2)},
              {"delivery_us", to_json(p.delivery, 2)},
              {"delivery_p99_us", rounded(p.delivery_p99, 2)},
              {"consumer_us", to_json(p.consumer, 2)},
              {"consumer_p99_us", rounded(p.consumer_p99, 2)},
              {"tail",
               {{"frames", p.tail_frames},
                {"delivery_median_us", rounded(p.tail_delivery_median, 2)},
                {"consumer_median_us", rounded(p.tail_consumer_median, 2)},
                {"slowest_delivery_us", rounded(p.max_delivery, 2)},
                {"slowest_consumer_us", rounded(p.max_consumer, 2)}}},
              {"frames_seen_min", p.frames_seen_min}};
}

json frames_json(const run_config& config, const digest& d) {
  json out = {{"latency_method",
               "CLOCK_MONOTONIC in each process: producer's clock right before cuda_release(n) is enqueued -> "
               "consumer's clock when consume(n) begins (delivery) -> consumer's clock right after its host wait "
               "on frame n's completion returns (consumer); negative parts fail the run"},
              {"vulkan_consumer",
               {{"cross_process", pipeline_json(d.vulkan_cross)},
                {"single_process", pipeline_json(d.vulkan_single)},
                {"ratio_throughput_cross_over_single", ratio_json(d.vulkan_throughput)}}}};
  if (d.vulkan_cross_paced.ran)
    out["vulkan_consumer_paced"] = {{"pace_hz", config.frames.pace_hz},
                                    {"cross_process", pipeline_json(d.vulkan_cross_paced)},
                                    {"single_process", pipeline_json(d.vulkan_single_paced)},
                                    {"tail_cross_process", tail_text(d.vulkan_cross_paced)}};
  if (d.cuda_ran)
    out["cuda_consumer"] = {{"cross_process", pipeline_json(d.cuda_cross)},
                            {"single_process", pipeline_json(d.cuda_single)},
                            {"ratio_throughput_cross_over_single", ratio_json(d.cuda_throughput)}};
  return out;
}

json parts_json(const run_config& config) {
  json parts = json::array();
  if (config.run_attach) parts.push_back("attach");
  if (config.run_growth) parts.push_back("growth");
  if (config.run_frames) parts.push_back("frames");
  return parts;
}

}  // namespace

json report_json(const run_config& config, const run_environment& env, const run_results& r) {
  const digest d = make_digest(config, r);
  json out;
  out["bench"] = "ipc";
  out["device"] = {{"ordinal", config.device},
                   {"name", env.device_name},
                   {"uuid", env.device_uuid},
                   {"pci_bus_id", env.pci_bus_id},
                   {"compute_capability", env.compute_capability},
                   {"cuda_driver_version", cuda_version_text(env.driver_version)},
                   {"cuda_runtime_version", cuda_version_text(env.runtime_version)}};
  out["vulkan"] = {{"device", env.vulkan_device}};
  out["config"] = {{"rounds", config.rounds},
                   {"warmup_rounds", 1},
                   {"quick", config.quick},
                   {"parts", parts_json(config)},
                   {"attach_peer_device", config.attach_peer_device >= 0 ? json(config.attach_peer_device) : json()},
                   {"attach_bytes", attach_bytes},
                   {"attach_multi_chunks", multi_chunks},
                   {"growth_step_bytes", growth_step_bytes},
                   {"growth_steps", config.growth_steps},
                   {"touch_stride_bytes", touch_stride},
                   {"frames", config.frames.frames},
                   {"warmup_frames", config.frames.warmup},
                   {"frame_rounds", config.frames.rounds},
                   {"pace_hz", config.frames.pace_hz},
                   {"paced_frames", config.frames.paced_frames},
                   {"paced_warmup_frames", config.frames.paced_warmup},
                   {"cuda_consumers", config.frames.cuda_consumers},
                   {"slots", frame_slots},
                   {"slot_bytes", slot_bytes}};
  if (config.run_attach) out["attach"] = attach_json(d);
  if (config.attach_peer_device >= 0) out["attach"]["other_gpu"] = other_gpu_json(config, r, d);
  if (config.run_growth) out["growth"] = growth_json(r, d);
  if (config.run_frames) out["frames"] = frames_json(config, d);
  bool all_met = true;
  out["goals"] = goals_json(d.goals, all_met);
  out["all_goals_met"] = all_met;
  out["data_checked"] = true;
  return out;
}

}  // namespace membridge::bench::ipc_bench
