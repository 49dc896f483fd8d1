#include "bench/common/report.h"

#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#ifndef AUP_BENCH_BUILD
#define AUP_BENCH_BUILD "unknown"
#endif

namespace aup::bench {

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

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return date;
}

}  // namespace

// This library is compiled in the same build as the benchmarks, with the
// same compiler and the same NDEBUG, so what it sees here is what they were
// built with.
Environment environment() {
  Environment e;
  e.date = utc_now();
  struct utsname u {};
  uname(&u);
  e.machine = fmt::format("{}, {} online CPUs, {} {} {}", cpu_model(), sysconf(_SC_NPROCESSORS_ONLN), u.sysname,
                          u.release, u.machine);
  e.compiler = fmt::format("g++ {}", __VERSION__);
  e.build_type = AUP_BENCH_BUILD;
#ifdef NDEBUG
  e.build = fmt::format("{}, asserts off", e.build_type);
#else
  e.build = fmt::format("{}, asserts on", e.build_type);
#endif
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) e.load_average = load[0];
  return e;
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

std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string json_opening(const std::string& bench, const Environment& env, const std::string& command) {
  return fmt::format("{{\n  \"bench\": {},\n  \"date\": {},\n  \"command\": {},\n  \"machine\": {},\n",
                     json_string(bench), json_string(env.date), json_string(command), json_string(env.machine));
}

std::string markdown_opening(const std::string& title, const Environment& env, const std::string& command) {
  return fmt::format("# {}\n\nGenerated {} by `{}`.\n\n", title, env.date, command);
}

void write_file(const std::string& dir, const std::string& name, const std::string& text) {
  std::string path = dir + "/" + name;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  }
}

void publish(const std::string& out_dir, const std::string& name, const std::string& json, const std::string& md) {
  if (!out_dir.empty()) {
    // --out names where the reports go, as a user would expect of a new
    // folder too: made if missing.
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    if (ec) throw std::runtime_error("cannot make " + out_dir + ": " + ec.message());
    write_file(out_dir, name + ".json", json);
    write_file(out_dir, name + ".md", md);
  }
  std::fputs(md.c_str(), stdout);
}

}  // namespace aup::bench
