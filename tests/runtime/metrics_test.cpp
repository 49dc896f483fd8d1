// runtime/metrics.cpp: one table of descriptors makes both the stats
// answer and the Prometheus text; commit latency over the last minute; the
// stats request as the Service answers and refuses it.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <ctime>
#include <set>
#include <string>

#include "runtime/durability.h"
#include "runtime/json.h"
#include "runtime/metrics.h"
#include "runtime/committer.h"
#include "runtime/outbox.h"
#include "tests/runtime/harness.h"

namespace aup::runtime {
namespace {

const char* kMetricsModule = R"(
record Account { id: num, balance: num }
table accounts: Account key id
event open { id: num }
on open { accounts.add(Account { id: open.id, balance: 0 }) }
event say { message: text }
on say { fail say.message }
query balance(id: num) { return accounts[id].balance }
)";

// A sample whose every value differs, so a metric read from the wrong
// place shows.
MetricSample distinct_sample() {
  MetricSample s;
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    bool number = !kMetrics[i].per_code && !kMetrics[i].per_part && kMetrics[i].kind != MetricKind::Histogram &&
                  kMetrics[i].kind != MetricKind::Info;
    s.values[i] = number ? static_cast<double>(i) * 10 + 0.5 : 0;
  }
  for (size_t c = 0; c < kFailCodes; ++c) s.by_code[c] = static_cast<double>(c + 1);
  s.memory = {{"rows", "accounts", "", 1024}, {"index", "accounts", "by_owner", 512}, {"malloc_free", "", "", 7}};
  return s;
}

// The bytes of memory part `part` of `table` (and `index`), or -1 if the
// sample has none.
double memory_part(const MetricSample& s, std::string_view part, std::string_view table = "",
                   std::string_view index = "") {
  for (const MemoryPart& p : s.memory) {
    if (p.part == part && p.table == table && p.index == index) return p.bytes;
  }
  return -1;
}

double metric(const MetricSample& s, std::string_view name) {
  int i = metric_index(name);
  REQUIRE(i >= 0);
  return s.values[static_cast<size_t>(i)];
}

// The stats answer of `r`'s Service, read back.
MetricSample stats_of(testing::Running& r, bool memory = false) {
  std::string answer = r.call(memory ? R"({"stats":{"memory":true}})" : R"({"stats":{}})");
  JsonDoc doc;
  std::string error;
  REQUIRE_MESSAGE(doc.parse(answer, error), error);
  uint32_t result = doc.member(doc.root(), "result");
  REQUIRE(result);
  MetricSample s;
  REQUIRE_MESSAGE(sample_from_json(doc.node(result).raw, s, error), error);
  return s;
}

TEST_SUITE("metrics") {
  TEST_CASE("the table: names unique, Prometheus names prefixed, counters end in _total") {
    std::set<std::string> names;
    for (const MetricDesc& d : kMetrics) {
      CHECK(names.insert(std::string(d.name)).second);
      CHECK(!d.help.empty());
      CHECK(!d.unit.empty());
      CHECK(d.help.find('\n') == std::string_view::npos);
      std::string p = prometheus_name(d);
      // process_* as every client library names them; the rest aup's own.
      CHECK(p.rfind(d.process ? "process_" : "aup_", 0) == 0);
      CHECK((d.kind == MetricKind::Counter) == (p.size() > 6 && p.substr(p.size() - 6) == "_total"));
    }
    CHECK(prometheus_name(kMetrics[static_cast<size_t>(metric_index("events_applied"))]) == "aup_events_applied_total");
    CHECK(metric_index("nope") == -1);
    CHECK(fail_code_name(0) == "failed");
    CHECK(fail_code_name(kUnavailableCode) == "unavailable");
  }

  TEST_CASE("the JSON answer reads back to the same figures, in the table's order") {
    MetricSample s = distinct_sample();
    std::string json;
    stats_json(s, json);
    CHECK(json.rfind(R"({"uptime_seconds":0.5,"events_applied":10.5,"events_replayed":20.5,"events_failed":{"failed":1,)", 0) ==
          0);
    MetricSample back;
    std::string error;
    REQUIRE_MESSAGE(sample_from_json(json, back, error), error);
    CHECK(back.values == s.values);
    CHECK(back.by_code == s.by_code);
    REQUIRE(back.memory.size() == 3);
    CHECK(memory_part(back, "rows", "accounts") == 1024);
    CHECK(memory_part(back, "index", "accounts", "by_owner") == 512);
    CHECK(memory_part(back, "malloc_free") == 7);
    CHECK(json.find(R"("memory_bytes":[{"part":"rows","table":"accounts","bytes":1024},)") != std::string::npos);
    // A figure missing is named.
    CHECK(!sample_from_json(R"({"uptime_seconds":1})", back, error));
    CHECK(error == "the stats answer has no number `events_applied`");
  }

  TEST_CASE("the Prometheus text: HELP and TYPE for each, one line per code, the JSON's values") {
    MetricSample s = distinct_sample();
    std::string text;
    prometheus_text(s, text);
    CHECK(text.find("# HELP aup_uptime_seconds ") == 0);
    CHECK(text.find("\n# TYPE aup_uptime_seconds gauge\naup_uptime_seconds 0.5\n") != std::string::npos);
    CHECK(text.find("# TYPE aup_events_applied_total counter\naup_events_applied_total 10.5\n") != std::string::npos);
    CHECK(text.find("\naup_events_failed_total{code=\"not_found\"} 2\n") != std::string::npos);
    CHECK(text.find("\naup_events_failed_total{code=\"unavailable\"} 9\n") != std::string::npos);
    CHECK(text.find("\naup_memory_bytes{part=\"rows\",table=\"accounts\"} 1024\n") != std::string::npos);
    CHECK(text.find("\naup_memory_bytes{part=\"index\",table=\"accounts\",index=\"by_owner\"} 512\n") !=
          std::string::npos);
    CHECK(text.find("\naup_memory_bytes{part=\"malloc_free\"} 7\n") != std::string::npos);
    size_t types = 0;
    for (size_t at = 0; (at = text.find("# TYPE ", at)) != std::string::npos; ++at) ++types;
    CHECK(types == kMetrics.size());
  }

  TEST_CASE("commit latency over the last minute: an old second leaves the window") {
    LatencyWindow w;
    w.add(100, 1000, 1);
    w.add(100, 3000, 3);
    w.add(130, 2000, 2);
    LatencyWindow::Summary s = w.over(130);
    CHECK(s.commits == 3);
    CHECK(s.events == 6);
    CHECK(s.max_ns == 3000);
    CHECK(s.p50_ns >= 2000);
    CHECK(s.p50_ns < 2200);  // a bucket's bound, within 1/16
    // Second 100 is 60 seconds before 160: out; 130 is still in.
    s = w.over(159);
    CHECK(s.commits == 3);
    s = w.over(160);
    CHECK(s.commits == 1);
    CHECK(s.max_ns == 2000);
    // A slot reused for a later second forgets what it held.
    w.add(190, 500, 1);  // 190 % 60 == 130 % 60
    s = w.over(190);
    CHECK(s.commits == 1);
    CHECK(s.max_ns == 500);
    CHECK(w.over(1000).commits == 0);
  }

  TEST_CASE("the Service counts by code, answers stats in place and does not count them") {
    double clock = 50;
    Metrics metrics([&clock] { return clock; });
    testing::Running r(kMetricsModule, vm::kDefaultStepBudget, &metrics);
    r.call(R"({"event":"open","args":{"id":1}})");
    r.call(R"({"event":"open","args":{"id":1}})");      // duplicate
    r.call(R"({"event":"say","args":{"message":"no"}})");  // failed
    r.call(R"({"event":"nope"})");                        // unknown_event: invalid, not failed
    r.call(R"({"query":"balance","args":{"id":1}})");
    r.call(R"({"schema":{}})");
    clock = 62.5;
    MetricSample s = stats_of(r);
    CHECK(metric(s, "events_applied") == 1);
    CHECK(s.by_code[static_cast<size_t>(vm::ErrorCode::Duplicate)] == 1);
    CHECK(s.by_code[static_cast<size_t>(vm::ErrorCode::Failed)] == 1);
    CHECK(s.by_code[static_cast<size_t>(vm::ErrorCode::NotFound)] == 0);
    CHECK(metric(s, "queries") == 1);  // the query: a schema request is not one
    CHECK(metric(s, "schema_requests") == 1);
    CHECK(metric(s, "requests_invalid") == 1);
    CHECK(metric(s, "uptime_seconds") == 12.5);
    CHECK(metric(s, "commits") == 1);  // the batch of the one event applied
    CHECK(metric(s, "checkpoint_age_seconds") == 0);  // no store
    CHECK(metric(s, "process_resident_memory_bytes") > 0);
    CHECK(metric(stats_of(r), "queries") == 1);  // the stats request before was not counted
    // Each event and query that ran is in its duration histogram.
    CHECK(s.histograms[static_cast<size_t>(Latency::Event)].count() == 3);  // the unknown one was refused unrun
    CHECK(s.histograms[static_cast<size_t>(Latency::Query)].count() == 1);
    CHECK(s.histograms[static_cast<size_t>(Latency::Query)].sum_seconds > 0);
  }

  TEST_CASE("memory_bytes: rows grow by what was inserted, texts by their chunks, an index only with one") {
    const char* notes = R"(
record Note { id: num, body: text }
table notes: Note key id
index by_body on notes (body)
event add { id: num, body: text }
on add { notes.add(Note { id: add.id, body: add.body }) }
)";
    Metrics metrics;
    testing::Running r(notes, vm::kDefaultStepBudget, &metrics);
    CHECK(stats_of(r).memory.empty());  // walked only when asked
    MetricSample before = stats_of(r, true);
    CHECK(memory_part(before, "rows", "notes") == 0);
    CHECK(memory_part(before, "index", "notes", "by_body") == 0);
    // glibc's figures (a sanitizer's allocator reports 0 to mallinfo2).
    CHECK(memory_part(before, "malloc_in_use") >= 0);
    const int n = 1000;
    std::string body(100, 'b');
    for (int i = 0; i < n; ++i) {
      r.call(fmt::format(R"({{"event":"add","args":{{"id":{},"body":"{}{}"}}}})", i, body, i));
    }
    MetricSample after = stats_of(r, true);
    // A row: its number key (its 8-byte order image) and two 8-byte slots,
    // in its leaf.
    CHECK(memory_part(after, "rows", "notes") == n * 24);
    CHECK(memory_part(after, "leaf_free", "notes") >= 0);
    CHECK(memory_part(after, "keys", "notes") == 0);  // a num key has no text
    // Each body: 101 to 103 bytes, and a 10-byte header, in a text pool
    // block (vm/text_pool.h): 112 bytes for ids below 100, 116 above.
    double texts = memory_part(after, "texts", "notes");
    CHECK(texts == 100 * 112 + 900 * 116);
    // The index: an entry (an encoded key text, the row's key) a row.
    CHECK(memory_part(after, "index", "notes", "by_body") > n * (16 + 8 + 100));
    CHECK(memory_part(after, "journal") >= 0);
    CHECK(memory_part(after, "jit_code") == 0);  // set by `aup run` alone
    CHECK(memory_part(after, "text_pool_free") >= 0);
    double in_use = memory_part(after, "malloc_in_use");
    if (in_use > 0) CHECK(in_use > memory_part(after, "rows", "notes") + texts);
    // No index, no index part; the store's own tables are named.
    testing::Running plain(kMetricsModule, vm::kDefaultStepBudget, &metrics);
    MetricSample p = stats_of(plain, true);
    for (const MemoryPart& part : p.memory) CHECK(part.part != "index");
    CHECK(memory_part(p, "rows", "accounts") == 0);
    CHECK(memory_part(p, "rows", "$keys") == 0);
    // GET /stats?memory and /metrics?memory walk (the framer names the
    // route "memory"); GET /stats, /metrics and /health do not.
    for (std::string_view route : {"memory", ""}) {
      RequestText t;
      t.form = RequestText::Form::Route;
      t.kind = RequestKind::Stats;
      t.name = route;
      JsonDoc doc;
      Request req = r.service().prepare(t, doc);
      Answer a;
      r.service().run(req, 0, a);
      REQUIRE(a.stats);
      CHECK(a.stats->memory.empty() == (route != "memory"));
    }
    // The text form: a line a table, with how full its leaves are.
    std::string text;
    stats_text(after, text);
    CHECK(text.find("\n  notes ") != std::string::npos);
    CHECK(text.find("% of the leaves)") != std::string::npos);
  }

  TEST_CASE("a stats request is the empty object alone; anything else is bad_request") {
    Metrics metrics;
    testing::Running r(kMetricsModule, vm::kDefaultStepBudget, &metrics);
    CHECK(r.call(R"({"stats":{},"id":"s"})").rfind(R"({"id":"s","ok":true,"result":{"uptime_seconds":)", 0) == 0);
    for (const char* line : {R"({"stats":{"x":1}})", R"({"stats":[]})", R"({"stats":null})",
                             R"({"stats":{},"event":"open"})", R"({"stats":{},"query":"balance"})",
                             R"({"stats":{},"args":{}})", R"({"stats":{},"schema":{}})", R"({"schema":{},"stats":{}})",
                             R"({"stats":{},"stats":{}})", R"({"stats":{"memory":1}})",
                             R"({"stats":{"memory":true,"x":1}})"}) {
      CAPTURE(line);
      CHECK(r.reply(line).code() == "bad_request");
    }
    CHECK(r.reply(R"({"stats":[]})").text.find(R"(`stats` must be {} or {\"memory\": true})") != std::string::npos);
    CHECK(r.reply(R"({"stats":{"memory":1}})").text.find("`stats`'s `memory` must be true or false") !=
          std::string::npos);
    CHECK(r.reply(R"({"stats":{"memory":false}})").code().empty());
    CHECK(metric(stats_of(r), "requests_invalid") == 13);
    // A Service without Metrics says it keeps none.
    testing::Running bare(kMetricsModule);
    CHECK(bare.reply(R"({"stats":{}})").code() == "unavailable");
  }

  TEST_CASE("a Committer publishes each batch: commits, events per commit, latency; a batch of queries does not") {
    double clock = 10;
    Metrics metrics([&clock] { return clock; });
    testing::Running r(kMetricsModule, vm::kDefaultStepBudget, &metrics);
    Service owner(r.module(), r.state(), ServiceOptions{vm::kDefaultStepBudget, nullptr, &metrics});
    MemoryDurability memory(r.state());
    Committer batch(owner, memory, 0);
    auto deliver = [](uint64_t, Answer&) {};
    JsonDoc doc;
    auto take = [&](std::string_view line) {
      RequestText text = RequestText::of_line(line);
      batch.take(0, owner.prepare(text, doc), text, 0);
    };
    for (const char* line : {R"({"event":"open","args":{"id":1}})", R"({"event":"open","args":{"id":2}})",
                             R"({"event":"open","args":{"id":3}})"}) {
      take(line);
    }
    batch.commit(deliver);
    take(R"({"event":"open","args":{"id":4}})");
    batch.commit(deliver);
    take(R"({"query":"balance","args":{"id":1}})");
    batch.commit(deliver);
    MetricSample s = stats_of(r);
    CHECK(metric(s, "commits") == 2);
    CHECK(metric(s, "commit_failures") == 0);
    CHECK(metric(s, "events_applied") == 4);
    CHECK(metric(s, "events_per_commit") == 2);
    CHECK(metric(s, "commit_latency_max_seconds") >= metric(s, "commit_latency_p50_seconds"));
    CHECK(metric(s, "state_bytes") > 0);
    CHECK(metric(s, "log_written_bytes") == 0);  // in memory
    // A minute later the window is empty; the counters stay.
    clock = 70;
    s = stats_of(r);
    CHECK(metric(s, "commits") == 2);
    CHECK(metric(s, "events_per_commit") == 0);
    CHECK(metric(s, "commit_latency_max_seconds") == 0);
    // The histogram is since the start: both commits are still in it.
    CHECK(s.histograms[static_cast<size_t>(Latency::Commit)].count() == 2);
  }

  TEST_CASE("a duration's bucket is the first bound it is at or under; bounds rise") {
    for (size_t b = 1; b < kLatencyBoundsSeconds.size(); ++b) CHECK(kLatencyBoundsSeconds[b - 1] < kLatencyBoundsSeconds[b]);
    CHECK(latency_bucket(0) == 0);
    CHECK(latency_bucket(1000) == 0);  // 1 µs: at the first bound
    CHECK(latency_bucket(1001) == 1);
    CHECK(latency_bucket(2'500'000) == 10);  // 2.5 ms
    CHECK(latency_bucket(10'000'000'000) == kLatencyBoundsSeconds.size() - 1);  // 10 s
    CHECK(latency_bucket(10'000'000'001) == kLatencyBoundsSeconds.size());      // +Inf
    CHECK(latency_bucket(UINT64_MAX) == kLatencyBoundsSeconds.size());
  }

  TEST_CASE("histograms: cumulative buckets, sum and count, in the JSON and in the Prometheus text") {
    Metrics metrics;
    testing::Running r(kMetricsModule, vm::kDefaultStepBudget, &metrics);
    for (int i = 0; i < 3; ++i) r.call(R"({"query":"balance","args":{"id":1}})");
    MetricSample s = metrics.sample();
    const HistogramSample& q = s.histograms[static_cast<size_t>(Latency::Query)];
    CHECK(q.count() == 3);
    for (size_t b = 1; b < kLatencyBuckets; ++b) CHECK(q.cumulative[b - 1] <= q.cumulative[b]);
    std::string json, text;
    stats_json(s, json);
    CHECK(json.find(R"("query_duration_seconds":{"count":3,"sum":)") != std::string::npos);
    MetricSample back;
    std::string error;
    REQUIRE_MESSAGE(sample_from_json(json, back, error), error);
    CHECK(back.histograms[static_cast<size_t>(Latency::Query)].cumulative == q.cumulative);
    CHECK(back.version == AUP_VERSION);
    prometheus_text(s, text);
    CHECK(text.find("# TYPE aup_query_duration_seconds histogram\n") != std::string::npos);
    CHECK(text.find("\naup_query_duration_seconds_bucket{le=\"1e-06\"} ") != std::string::npos);
    CHECK(text.find("\naup_query_duration_seconds_bucket{le=\"+Inf\"} 3\naup_query_duration_seconds_sum ") !=
          std::string::npos);
    CHECK(text.find("\naup_query_duration_seconds_count 3\n") != std::string::npos);
    CHECK(text.find("\naup_commit_duration_seconds_count 0\n") != std::string::npos);
  }

  TEST_CASE("process_* figures and the build info") {
    Metrics metrics;
    metrics.set_build("9.9.9", "jit");
    MetricSample s = metrics.sample();
    CHECK(metric(s, "process_cpu_seconds") > 0);
    CHECK(metric(s, "process_open_fds") >= 3);  // stdin, stdout, stderr at least
    CHECK(metric(s, "process_max_fds") >= metric(s, "process_open_fds"));
    // Started before now, and after this machine's clock said 2017.
    CHECK(metric(s, "process_start_time_seconds") > 1.5e9);
    CHECK(metric(s, "process_start_time_seconds") <= static_cast<double>(std::time(nullptr)) + 1);
    std::string text;
    prometheus_text(s, text);
    CHECK(text.find("\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total ") != std::string::npos);
    CHECK(text.find("\nprocess_resident_memory_bytes ") != std::string::npos);
    CHECK(text.find("\n# TYPE aup_build_info gauge\naup_build_info{version=\"9.9.9\",engine=\"jit\"} 1\n") !=
          std::string::npos);
  }

  TEST_CASE("aup stats' text: each value in its unit") {
    MetricSample s;
    auto set = [&s](std::string_view name, double v) { s.values[static_cast<size_t>(metric_index(name))] = v; };
    set("uptime_seconds", 100);
    set("commit_latency_p50_seconds", 0.00208);
    set("commit_latency_p99_seconds", 0.000042);
    set("log_bytes", 3.5 * 1024 * 1024);
    set("state_bytes", 2048);
    set("events_applied", 5);
    set("process_cpu_seconds", 2.5);
    set("replication_role", 2);
    s.by_code[static_cast<size_t>(vm::ErrorCode::NotFound)] = 3;
    HistogramSample& c = s.histograms[static_cast<size_t>(Latency::Commit)];
    c.cumulative.fill(4);
    for (size_t b = 0; b < 9; ++b) c.cumulative[b] = 0;
    c.cumulative[9] = 1;  // one commit at or under 1 ms, the rest at or under 2.5 ms
    c.sum_seconds = 0.008;
    std::string text;
    stats_text(s, text);
    auto line_of = [&text](std::string_view name) {
      size_t at = text.find(std::string(name) + " ");
      REQUIRE(at != std::string::npos);
      std::string line = text.substr(at, text.find('\n', at) - at);
      return line.substr(line.find_first_not_of(' ', name.size()));
    };
    CHECK(line_of("uptime_seconds") == "100.00 s");
    CHECK(line_of("commit_latency_p50_seconds") == "2.08 ms");
    CHECK(line_of("commit_latency_p99_seconds") == "42.0 µs");
    CHECK(line_of("log_bytes") == "3.5 MiB");
    CHECK(line_of("state_bytes") == "2.0 KiB");
    CHECK(line_of("events_applied") == "5");
    CHECK(line_of("events_failed") == "not_found 3");
    CHECK(line_of("process_cpu_seconds") == "2.50 s (2.5% of a core since the start)");
    CHECK(line_of("replication_role") == "replica");
    CHECK(line_of("commit_duration_seconds") == "4, mean 2.00 ms, median ≤ 2.50 ms, 99% ≤ 2.50 ms");
    CHECK(line_of("query_duration_seconds") == "none");
  }

  TEST_CASE("an Outbox counts the bytes waiting in its thread's gauge") {
    Metrics metrics;
    std::atomic<int64_t>* gauge = metrics.answer_gauge();
    {
      Outbox out;
      out.count_in(gauge);
      out.append([](std::string& b) { b += "{\"ok\":true}\n"; });
      out.append([](std::string& b) { b += "abc"; });
      CHECK(gauge->load() == 15);
      CHECK(metric(metrics.sample(), "answer_bytes_waiting") == 15);
      out.clear();
      CHECK(gauge->load() == 0);
      out.append([](std::string& b) { b += "{}\n"; });
    }
    CHECK(gauge->load() == 0);  // an Outbox gone takes its bytes with it
  }
}

}  // namespace
}  // namespace aup::runtime
