#include "bench/json/report.h"

#include <fmt/format.h>

#include <algorithm>

#include "bench/json/parsers.h"

#ifndef AUP_SIMDJSON_VERSION
#define AUP_SIMDJSON_VERSION "unknown"
#endif

namespace aup::bench::json {

namespace {

// The simdjson this program was built against.
std::string simdjson_version() { return fmt::format("simdjson {}", AUP_SIMDJSON_VERSION); }

const ParserTiming* timing(const CorpusResult& c, const std::string& parser) {
  for (const ParserTiming& t : c.parsers) {
    if (t.parser == parser) return &t;
  }
  return nullptr;
}

}  // namespace

std::string to_json(const Environment& env, const Options& o, const Results& r) {
  std::string out = json_opening("json", env, o.command);
  out += fmt::format("  \"compiler\": {},\n  \"build\": {},\n  \"simdjson\": {},\n", json_string(env.compiler),
                     json_string(env.build), json_string(simdjson_version()));
  out += fmt::format("  \"load_average_at_start\": {:.2f},\n  \"repetitions\": {},\n  \"seed\": {},\n",
                     env.load_average, o.reps, o.seed);
  out += "  \"corpora\": [\n";
  for (size_t i = 0; i < r.corpora.size(); ++i) {
    const CorpusResult& c = r.corpora[i];
    out += fmt::format("    {{\"corpus\": {}, \"lines\": {}, \"text_bytes\": {}, \"example\": {},\n", json_string(c.corpus),
                       c.lines, c.text_bytes, json_string(c.example));
    out += "     \"parsers\": [\n";
    for (size_t j = 0; j < c.parsers.size(); ++j) {
      const ParserTiming& t = c.parsers[j];
      out += fmt::format(
          "       {{\"parser\": {}, \"label\": {}, \"ns_per_line_median\": {:.3f}, \"ns_per_line\": {}, "
          "\"wall_ns_per_line\": {}}}{}\n",
          json_string(t.parser), json_string(t.label), median(t.ns_per_line), json_numbers(t.ns_per_line),
          json_numbers(t.wall_ns_per_line), j + 1 < c.parsers.size() ? "," : "");
    }
    out += fmt::format("     ]}}{}\n", i + 1 < r.corpora.size() ? "," : "");
  }
  out += fmt::format("  ],\n  \"number_values\": {},\n  \"numbers\": [\n", r.number_values);
  for (size_t i = 0; i < r.numbers.size(); ++i) {
    const NumberResult& n = r.numbers[i];
    out += fmt::format("    {{\"format\": {}, \"parser\": {}, \"checked\": {}, \"mismatched\": {}, \"examples\": [",
                       json_string(n.format), json_string(n.parser), n.checked, n.mismatched);
    for (size_t j = 0; j < n.examples.size(); ++j) {
      const NumberMismatch& m = n.examples[j];
      out += fmt::format("{}{{\"text\": {}, \"expected_bits\": \"{:016x}\", \"got_bits\": \"{:016x}\", \"parse_failed\": {}}}",
                         j ? ", " : "", json_string(m.text), m.expected_bits, m.got_bits, m.parse_failed);
    }
    out += fmt::format("]}}{}\n", i + 1 < r.numbers.size() ? "," : "");
  }
  out += "  ]\n}\n";
  return out;
}

std::string to_markdown(const Environment& env, const Options& o, const Results& r) {
  std::string md = markdown_opening("JSON parsing: aup's parser against simdjson", env, o.command);
  md += fmt::format("Machine: {}; {}; build {}; {}; 1-minute load average at the start {:.2f}.\n\n", env.machine,
                    env.compiler, env.build, simdjson_version(), env.load_average);
  md += fmt::format(
      "Each parser parses every line of a corpus and visits every field (numbers read as binary64, strings "
      "and member names as views), folding them into a checksum; every parser must give the same checksum "
      "for every line before anything is timed. Parsers are reused across lines. {} repetitions, the "
      "parsers in a rotating order in each; ns per line is the median over repetitions of the thread's CPU "
      "time (wall times are in the JSON); ratios are medians of per-repetition ratios.\n\n",
      o.reps);
  md += "Parsers:\n\n";
  if (!r.corpora.empty()) {
    for (const ParserTiming& t : r.corpora[0].parsers) md += fmt::format("- `{}`: {}\n", t.parser, t.label);
  }
  md += "\n`aup` builds a node tape (numbers converted while parsing), then the benchmark passes over the "
        "nodes. simdjson compiles On-Demand for the instruction set the including file is compiled for; "
        "with this project's flags (plain x86-64) that is its scalar fallback kernel, so `ondemand_v3` is "
        "the same code compiled with `-march=x86-64-v3 -mpclmul` (AVX2, its haswell kernel). DOM picks its kernel at run time.\n\n";

  md += "## The figure for the decision \"own JSON parser or simdjson\"\n\n";
  for (const CorpusResult& c : r.corpora) {
    const ParserTiming* a = timing(c, "aup");
    if (!a) continue;
    double aup_ns = median(a->ns_per_line);
    md += fmt::format("- **{}** ({} bytes a line): aup {:.0f} ns a line", c.corpus, c.text_bytes / c.lines, aup_ns);
    double best = aup_ns;
    for (const ParserTiming& t : c.parsers) {
      if (t.parser == "aup") continue;
      double ns = median(t.ns_per_line);
      best = std::min(best, ns);
      md += fmt::format("; `{}` {:.0f} ns (aup/it {:.2f})", t.parser, ns, ratio_median(a->ns_per_line, t.ns_per_line));
    }
    md += fmt::format(". The most simdjson saves: {:.0f} ns a request.\n", aup_ns - best);
  }
  md += "\n## Every parser\n\n";
  md += "| corpus | lines | bytes/line | parser | ns/line | lines/s | MB/s | aup / this parser |\n";
  md += "|---|---:|---:|---|---:|---:|---:|---:|\n";
  for (const CorpusResult& c : r.corpora) {
    const ParserTiming* a = timing(c, "aup");
    double bytes_per_line = static_cast<double>(c.text_bytes) / static_cast<double>(c.lines);
    for (const ParserTiming& t : c.parsers) {
      double ns = median(t.ns_per_line);
      md += fmt::format("| {} | {} | {:.0f} | `{}` | {:.1f} | {} | {:.0f} | {:.2f} |\n", c.corpus, grouped(c.lines),
                        bytes_per_line, t.parser, ns, grouped(static_cast<uint64_t>(1e9 / ns)),
                        bytes_per_line / ns * 1e3, a ? ratio_median(a->ns_per_line, t.ns_per_line) : 0.0);
    }
  }
  md += "\nExample lines:\n\n";
  for (const CorpusResult& c : r.corpora) md += fmt::format("```json\n{}\n```\n\n", c.example);

  md += "## Numbers read bit for bit\n\n";
  md += fmt::format(
      "{} doubles ({} each of: any finite bit pattern, uniform in [0, 1), integers up to 2^53, cents as "
      "dollars, subnormals; plus 18 edge cases such as -0, 5e-324, the largest subnormal, DBL_MAX, 2^53, 1e23), "
      "each printed with `%.17g` and with the shortest round-trip text (`std::to_chars`, as aup prints "
      "numbers), read back as `{{\"v\":TEXT}}`; a mismatch is a different binary64 or a rejected line.\n\n",
      grouped(r.number_values), grouped(o.numbers_per_kind));
  md += "| printed with | parser | values | mismatches |\n|---|---|---:|---:|\n";
  for (const NumberResult& n : r.numbers) {
    md += fmt::format("| `{}` | `{}` | {} | {} |\n", n.format, n.parser, grouped(n.checked), grouped(n.mismatched));
  }
  bool any = false;
  for (const NumberResult& n : r.numbers) {
    for (const NumberMismatch& m : n.examples) {
      if (!any) md += "\nMismatches (first few per row):\n\n";
      any = true;
      md += fmt::format("- {}, `{}`: `{}` should read as bits {:016x}, gave {}\n", n.parser, n.format, m.text,
                        m.expected_bits,
                        m.parse_failed ? std::string("a rejected line") : fmt::format("{:016x}", m.got_bits));
    }
  }
  return md;
}

}  // namespace aup::bench::json
