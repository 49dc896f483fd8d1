#include "report.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <stdexcept>

#ifndef AUP_BENCH_BUILD
#define AUP_BENCH_BUILD "unknown"
#endif

namespace aup::bench::table {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_numbers(const std::vector<double>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += fmt::format("{}{:.3f}", i ? ", " : "", v[i]);
  return out + "]";
}

// Seed 092's random-seek table ("안내 노드"): before and after its guide
// nodes, on a Raspberry Pi 5 with seed 092's own C B+tree.
struct SeedFigure {
  size_t rows;
  const char* before_ns;
  const char* after_ns;
};
constexpr SeedFigure kSeed092[] = {
    {1000, "129", "46"}, {30000, "193", "73"}, {300000, "384", "200–233"}, {1000000, "667", "252"}};

const SeedFigure* seed_figure(size_t rows) {
  for (const SeedFigure& f : kSeed092) {
    if (f.rows == rows) return &f;
  }
  return nullptr;
}

// 1000000 -> "1,000,000".
std::string grouped(size_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

const OpResult* find_op(const SizeResult& s, const std::string& name) {
  for (const OpResult& r : s.ops) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

}  // namespace

Environment environment() {
  Environment e;
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  e.date = date;
  struct utsname u {};
  uname(&u);
  e.machine = fmt::format("{}, {} online CPUs, {} {} {}", cpu_model(), sysconf(_SC_NPROCESSORS_ONLN), u.sysname,
                          u.release, u.machine);
  e.compiler = fmt::format("g++ {}", __VERSION__);
#ifdef NDEBUG
  e.build = fmt::format("{}, asserts off", AUP_BENCH_BUILD);
#else
  e.build = fmt::format("{}, asserts on", AUP_BENCH_BUILD);
#endif
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) e.load_average = load[0];
  return e;
}

std::string to_json(const Environment& env, const Options& o, const std::vector<SizeResult>& sizes) {
  std::string out = "{\n";
  out += fmt::format("  \"bench\": \"table\",\n  \"date\": {},\n  \"command\": {},\n", json_string(env.date),
                     json_string(o.command));
  out += fmt::format("  \"machine\": {},\n  \"compiler\": {},\n  \"build\": {},\n", json_string(env.machine),
                     json_string(env.compiler), json_string(env.build));
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
  out += "  ],\n";
  out += "  \"seed_092_random_seek_ns_raspberry_pi_5\": {\"note\": \"another machine and implementation, not measured here\", "
         "\"rows\": [1000, 30000, 300000, 1000000], \"before\": [\"129\", \"193\", \"384\", \"667\"], "
         "\"after\": [\"46\", \"73\", \"200-233\", \"252\"]}\n";
  out += "}\n";
  return out;
}

std::string to_markdown(const Environment& env, const Options& o, const std::vector<SizeResult>& sizes) {
  std::string md = "# Table seek: aup's B+tree against std::map\n\n";
  md += fmt::format("Generated {} by `{}`.\n\n", env.date, o.command);
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
  md += "| rows | aup `find` ns | `std::map::find` ns | aup / std::map | seed 092 before (Pi 5, other machine) | "
        "seed 092 after (Pi 5, other machine) |\n";
  md += "|---:|---:|---:|---:|---:|---:|\n";
  for (const SizeResult& s : sizes) {
    const OpResult* f = find_op(s, "find");
    if (!f) continue;
    const SeedFigure* seed = seed_figure(s.rows);
    md += fmt::format("| {} | {:.1f} | {:.1f} | {:.2f} | {} | {} |\n", grouped(s.rows), median(f->aup_ns),
                      median(f->base_ns), ratio_median(*f), seed ? seed->before_ns : "–",
                      seed ? seed->after_ns : "–");
  }
  md += "\nThe seed 092 columns are copied from `shared/seeds/092-tpcc.md` (section 안내 노드): a different "
        "machine (Raspberry Pi 5) and a different B+tree (seed 092's, before and after its guide nodes). "
        "They were not measured here; compare trends, not absolute times.\n\n";

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

void write_file(const std::string& dir, const std::string& name, const std::string& text) {
  std::string path = dir + "/" + name;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

}  // namespace aup::bench::table
