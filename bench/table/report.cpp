#include "bench/table/report.h"

#include <fmt/format.h>

namespace aup::bench::table {

namespace {

const OpResult* find_op(const SizeResult& s, const std::string& name) {
  for (const OpResult& r : s.ops) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

}  // namespace

std::string to_json(const Environment& env, const Options& o, const std::vector<SizeResult>& sizes) {
  std::string out = json_opening("table", env, o.command);
  out += fmt::format("  \"compiler\": {},\n  \"build\": {},\n", json_string(env.compiler), json_string(env.build));
  out += fmt::format("  \"load_average_at_start\": {:.2f},\n", env.load_average);
  out += fmt::format("  \"slots_per_row\": 4,\n  \"repetitions\": {},\n  \"probes_per_batch\": {},\n  \"seed\": {},\n",
                     o.reps, o.probes, o.seed);
  out += "  \"sizes\": [\n";
  for (size_t i = 0; i < sizes.size(); ++i) {
    const SizeResult& s = sizes[i];
    out += fmt::format("    {{\"rows\": {}, \"depth\": {}, \"leaf_capacity\": {}, ", s.rows, s.depth, s.leaf_capacity);
    out += fmt::format("\"aup_heap_bytes_per_row\": {:.1f}, \"map_heap_bytes_per_row\": {:.1f},\n", s.aup_bytes_per_row,
                       s.map_bytes_per_row);
    out += fmt::format("     \"load_latency_ns_median\": {:.3f}, \"load_latency_ns\": {},\n",
                       median(s.load_latency_ns), json_numbers(s.load_latency_ns));
    out += "     \"ops\": [\n";
    for (size_t j = 0; j < s.ops.size(); ++j) {
      const OpResult& r = s.ops[j];
      out += fmt::format("       {{\"name\": {}, \"aup\": {}, \"baseline\": {},\n", json_string(r.name),
                         json_string(r.aup), json_string(r.baseline));
      out += fmt::format("        \"aup_ns_median\": {:.3f}, \"baseline_ns_median\": {:.3f}, \"ratio_median\": {:.4f},\n",
                         median(r.aup_ns), median(r.base_ns), ratio_median(r));
      out += fmt::format("        \"aup_ns\": {}, \"baseline_ns\": {},\n", json_numbers(r.aup_ns),
                         json_numbers(r.base_ns));
      out += fmt::format("        \"aup_wall_ns\": {}, \"baseline_wall_ns\": {}}}{}\n", json_numbers(r.aup_wall_ns),
                         json_numbers(r.base_wall_ns), j + 1 < s.ops.size() ? "," : "");
    }
    out += fmt::format("     ]}}{}\n", i + 1 < sizes.size() ? "," : "");
  }
  out += "  ]\n";
  out += "}\n";
  return out;
}

std::string to_markdown(const Environment& env, const Options& o, const std::vector<SizeResult>& sizes) {
  std::string md = markdown_opening("Table seek: aup's B+tree against std::map", env, o.command);
  md += fmt::format("Machine: {}; {}; build {}; 1-minute load average at the start {:.2f}.\n\n", env.machine,
                    env.compiler, env.build, env.load_average);
  md += fmt::format(
      "Rows of 4 slots (8 bytes each, slot 0 the key, as `RowLayout{{4}}`); keys 1..n inserted in a random "
      "order; {} probes per timed batch, drawn uniformly from the keys (every probe hits); {} repetitions, "
      "aup and the baseline alternating (aup first in even repetitions). ns/op is the median over "
      "repetitions of the thread's CPU time per operation (this machine is shared; CPU time leaves out "
      "the time other processes ran, the JSON also has wall times); the ratio is the median of the "
      "per-repetition aup/baseline ratios (below 1: aup is faster).\n\n",
      o.probes, o.reps);

  md += "## Random find\n\n";
  md += "| rows | aup `find` ns | `std::map::find` ns | aup / std::map |\n";
  md += "|---:|---:|---:|---:|\n";
  for (const SizeResult& s : sizes) {
    const OpResult* f = find_op(s, "find");
    if (!f) continue;
    md += fmt::format("| {} | {:.1f} | {:.1f} | {:.2f} |\n", grouped(s.rows), median(f->aup_ns),
                      median(f->base_ns), ratio_median(*f));
  }
  md += "\n";

  md += "## Every operation\n\n";
  md += "| operation | rows | aup ns/op | baseline ns/op | aup / baseline | aup side | baseline |\n";
  md += "|---|---:|---:|---:|---:|---|---|\n";
  if (!sizes.empty()) {
    for (size_t j = 0; j < sizes[0].ops.size(); ++j) {
      for (const SizeResult& s : sizes) {
        const OpResult& r = s.ops[j];
        md += fmt::format("| {} | {} | {:.1f} | {:.1f} | {:.2f} | {} | {} |\n", r.name, grouped(s.rows), median(r.aup_ns),
                          median(r.base_ns), ratio_median(r), r.aup, r.baseline);
      }
    }
  }
  md += "\nInserts time only the inserting (structures are built fresh in every repetition and destroyed "
        "untimed). `set_snapshot` takes one snapshot before the batch and drops it after (both timed): the "
        "first write through each shared node copies it, so with many writes per row the cost approaches "
        "`set`. `set_fresh_snapshot` copies the whole root-to-leaf path on every write. A view's `count` is "
        "two `rank`s.\n\n";

  md += "## Shape and memory\n\n";
  md += "| rows | aup levels | rows per aup leaf | aup heap bytes/row | std::map heap bytes/row | dependent load ns |\n";
  md += "|---:|---:|---:|---:|---:|---:|\n";
  for (const SizeResult& s : sizes) {
    md += fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {:.1f} |\n", grouped(s.rows), s.depth, s.leaf_capacity,
                      s.aup_bytes_per_row, s.map_bytes_per_row, median(s.load_latency_ns));
  }
  md += "\nHeap bytes are glibc's bytes in use (mallinfo2) grown by the random inserts, divided by rows. "
        "*Dependent load* is a machine reference, not a table operation: a pointer chase through random "
        "64-byte lines of a buffer as large as aup's tree, each load waiting for the one before; it is the "
        "price of one cache and TLB miss at that working set, and the unit to read the seek times in.\n";
  return md;
}

}  // namespace aup::bench::table
