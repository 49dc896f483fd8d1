// HTTP framing (runtime/http.h): requests cut from bytes that arrive in any
// pieces, each the route's request and its body; refusals with their
// statuses; responses framed in request order from their answers; the
// client's side.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "runtime/http.h"
#include "runtime/metrics.h"
#include "tests/runtime/harness.h"

namespace aup::runtime {
namespace {

using namespace std::chrono_literals;

constexpr size_t kBody = 256;

// A route's request as the request line of the line protocol that means
// the same (a blank body is no arguments: `{}`), so a test reads what the
// framer made of the bytes.
std::string as_line(const RequestText& r) {
  std::string line;
  switch (r.kind) {
    case RequestKind::Schema: return R"({"schema":{}})";
    case RequestKind::Stats: return R"({"stats":{}})";
    case RequestKind::Event: line = R"({"event":")"; break;
    case RequestKind::Query: line = R"({"query":")"; break;
    case RequestKind::Replicate:  // no route makes one
    case RequestKind::Read:
    case RequestKind::Refused: return "<refused>";
  }
  line += std::string(r.name) + "\",\"args\":";
  line += r.body.find_first_not_of(" \t\r\n") == std::string_view::npos ? std::string("{}") : std::string(r.body);
  if (r.has_key) {
    line += ",\"key\":";
    json_append_string(line, r.key);
  }
  return line + "}" + (r.query.empty() ? "" : "?" + std::string(r.query));
}

Answer ok_answer(std::string result) {
  Answer a;
  a.has_result = true;
  a.text = std::move(result);
  return a;
}

Answer error_answer(Code code, std::string message) {
  Answer a;
  a.fail(code, message);
  return a;
}

// An answer's body as the line protocol writes it (without an id).
std::string body_of(const Answer& a) {
  std::string out;
  append_answer_line(out, a);
  return out;
}

// What the framer gives for `bytes` fed in pieces of `step` bytes: each
// request as as_line() shows it, each refusal as "STATUS ANSWER", and
// whether the connection is done (no more requests). Requests are not answered here,
// so STATUS is the refusal's own only when no request came before it (it
// is the status of the oldest response owed).
struct Framed {
  std::vector<std::string> pieces;
  bool eof = false;
};

Framed frame(HttpFramer& f, std::string_view bytes, size_t step) {
  Framed out;
  auto drain = [&] {
    RequestText request;
    Answer answer;
    for (HttpFramer::Piece p; (p = f.next(request, answer)) != HttpFramer::Piece::None;) {
      if (p == HttpFramer::Piece::Request) {
        out.pieces.push_back(as_line(request));
        continue;
      }
      // The response to this refusal: its status line's code.
      std::string response;
      f.frame(answer, response);
      std::string body = body_of(answer);
      out.pieces.push_back(response.substr(9, 3) + " " + body.substr(0, body.size() - 1));
    }
  };
  for (size_t at = 0; at < bytes.size();) {
    size_t n = f.feed(bytes.substr(at, std::min(step, bytes.size() - at)));
    at += n;
    drain();
    if (n == 0) break;  // full: what is ready was taken above, so only a refusal stops it
  }
  out.eof = f.eof();
  return out;
}

Framed frame(std::string_view bytes, size_t step = 1 << 20) {
  HttpFramer f(kBody, 10s);
  return frame(f, bytes, step);
}

std::string post(std::string_view path, std::string_view body, std::string_view extra = "") {
  return "POST " + std::string(path) + " HTTP/1.1\r\nHost: h\r\n" + std::string(extra) +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

TEST_SUITE("http") {
  TEST_CASE("each route becomes the request it names, its body the arguments") {
    std::string bytes = post("/events/open", R"({"id":1,"owner":"ann"})") +
                        "GET /queries/total HTTP/1.1\r\nHost: h\r\n\r\n" + post("/queries/balance", R"({"id":1})") +
                        "GET /schema HTTP/1.1\r\n\r\n" + post("/events/close", "");
    std::vector<std::string> want{R"({"event":"open","args":{"id":1,"owner":"ann"}})",
                                  R"({"query":"total","args":{}})", R"({"query":"balance","args":{"id":1}})",
                                  R"({"schema":{}})", R"({"event":"close","args":{}})"};
    CHECK(frame(bytes).pieces == want);
    // Pipelined requests come whole and in order whatever pieces they
    // arrive in, down to a byte at a time.
    for (size_t step = 1; step <= 7; ++step) CHECK(frame(bytes, step).pieces == want);
    CHECK(!frame(bytes).eof);
  }

  TEST_CASE("a chunked body is its chunks joined") {
    std::string bytes =
        "POST /events/deposit HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"id\"\r\n9\r\n:1,\"a\":7}\r\n0\r\n\r\n";
    std::vector<std::string> want{R"({"event":"deposit","args":{"id":1,"a":7}})"};
    CHECK(frame(bytes).pieces == want);
    CHECK(frame(bytes, 1).pieces == want);
  }

  TEST_CASE("a body is the arguments alone: what it holds cannot add to the request or close it") {
    // The framer hands the body on as it came, whole or a byte at a time;
    // the Service parses it on its own, as one JSON value, so a body that
    // is more than one value is not JSON, and nothing of it can become a
    // key of the request.
    testing::Running run(R"(event open { id: num }
on open { }
)");
    for (size_t step : {size_t{1} << 20, size_t{1}, size_t{3}}) {
      CAPTURE(step);
      for (const char* body : {R"({}, "id": 1)", R"({}}, {"query":"x")", "1, 2", R"("a":1)", R"({"a":"\""}, "b")"}) {
        HttpFramer f(kBody, 10s);
        f.feed(post("/events/open", body) + post("/events/open", "{}"));
        RequestText request;
        Answer refusal;
        REQUIRE(f.next(request, refusal) == HttpFramer::Piece::Request);
        CHECK(request.body == body);
        JsonDoc doc;
        Request r = run.service().prepare(request, doc);
        CHECK(r.kind == RequestKind::Refused);
        CHECK(r.refusal == Code::BadRequest);
        CHECK(r.why.rfind("the body is not JSON: ", 0) == 0);
        REQUIRE(f.next(request, refusal) == HttpFramer::Piece::Request);  // the connection goes on
        CHECK(as_line(request) == R"({"event":"open","args":{}})");
      }
      // Commas and colons inside strings and brackets are the value's own.
      CHECK(frame(post("/events/e", R"({"a":"x,y:}]\"","b":[1,2]})"), step).pieces ==
            std::vector<std::string>{R"({"event":"e","args":{"a":"x,y:}]\"","b":[1,2]}})"});
      // A body of only whitespace is no arguments, as an empty one is.
      CHECK(frame(post("/events/e", " \r\n\t"), step).pieces == std::vector<std::string>{R"({"event":"e","args":{}})"});
    }
    // An error in the body is placed in the body, not in a line around it.
    HttpFramer f(kBody, 10s);
    f.feed(post("/events/open", R"({"id":})"));
    RequestText request;
    Answer refusal;
    REQUIRE(f.next(request, refusal) == HttpFramer::Piece::Request);
    JsonDoc doc;
    CHECK(run.service().prepare(request, doc).why.find("at byte 6") != std::string::npos);
    // A body that is one value but not an object is refused bad_args.
    f.feed(post("/events/open", "5"));
    REQUIRE(f.next(request, refusal) == HttpFramer::Piece::Request);
    Request five = run.service().prepare(request, doc);
    CHECK(five.refusal == Code::BadArgs);
    CHECK(five.why == "the body must be a JSON object of arguments (`{\"name\": value, ...}`), not a number");
    // `[1]` is worded for HTTP: the body, not an `args` the client never wrote.
    f.feed(post("/events/open", "[1]"));
    REQUIRE(f.next(request, refusal) == HttpFramer::Piece::Request);
    CHECK(run.service().prepare(request, doc).why ==
          "the body must be a JSON object of arguments (`{\"name\": value, ...}`), not an array");
    // A body of several lines: the line and column too, as an editor counts.
    f.feed(post("/events/open", "{\n  \"id\": 1,\n}"));
    REQUIRE(f.next(request, refusal) == HttpFramer::Piece::Request);
    CHECK(run.service().prepare(request, doc).why ==
          "the body is not JSON: expected a member name (a string) at byte 13 (line 3, column 1)");
  }

  TEST_CASE("an unknown route is 404, a wrong method 405, and the connection goes on") {
    Framed f = frame("GET /nope HTTP/1.1\r\n\r\n" + post("/schema", "{}") + "GET /events/open HTTP/1.1\r\n\r\n" +
                     "GET /queries/a/b HTTP/1.1\r\n\r\n" + "GET /queries/a?id=1 HTTP/1.1\r\n\r\n" +
                     "GET /queries/total HTTP/1.1\r\n\r\n");
    REQUIRE(f.pieces.size() == 6);
    CHECK(f.pieces[0].rfind("404 ", 0) == 0);
    CHECK(f.pieces[0].find("no route GET /nope") != std::string::npos);
    CHECK(f.pieces[1].rfind("405 ", 0) == 0);
    CHECK(f.pieces[2].rfind("405 ", 0) == 0);
    CHECK(f.pieces[3].rfind("404 ", 0) == 0);
    CHECK(f.pieces[4] == R"({"query":"a","args":{}}?id=1)");  // a query's arguments may be in its query string
    CHECK(f.pieces[5] == R"({"query":"total","args":{}})");
    CHECK(!f.eof);
  }

  TEST_CASE("a route repeated is the same request line; a new method or target is routed afresh") {
    // The framer keeps the last event or query routed: a repeat must not
    // take it for another method's or path's, nor a refusal for it.
    Framed f = frame(post("/events/open", "{}") + post("/events/open", R"({"id":2})") +
                     "GET /events/open HTTP/1.1\r\n\r\n" + post("/events/opened", "{}") +
                     "GET /queries/total HTTP/1.1\r\n\r\n" + post("/queries/total", "{}") +
                     "PUT /queries/total HTTP/1.1\r\n\r\n" + post("/events/open", "", "Idempotency-Key: k\r\n") +
                     post("/events/open", ""));
    REQUIRE(f.pieces.size() == 9);
    CHECK(f.pieces[0] == R"({"event":"open","args":{}})");
    CHECK(f.pieces[1] == R"({"event":"open","args":{"id":2}})");
    // (Requests came before these refusals, so their message tells the 405.)
    CHECK(f.pieces[2].find("/events/open takes POST, not GET") != std::string::npos);
    CHECK(f.pieces[3] == R"({"event":"opened","args":{}})");
    CHECK(f.pieces[4] == R"({"query":"total","args":{}})");
    CHECK(f.pieces[5] == R"({"query":"total","args":{}})");
    CHECK(f.pieces[6].find("/queries/total takes GET, HEAD, POST, not PUT") != std::string::npos);
    CHECK(f.pieces[7] == R"({"event":"open","args":{},"key":"k"})");
    CHECK(f.pieces[8] == R"({"event":"open","args":{}})");
  }

  TEST_CASE("a head seen before makes the same request with its own body; any other bytes go through the parser") {
    std::string head_key = "Idempotency-Key: \"k1\"\r\n";
    std::string same = post("/events/open", R"({"id":1})") + post("/events/open", R"({"id":2})") +
                       post("/events/open", R"({"id":3})", head_key) + post("/events/open", R"({"id":4})", head_key);
    HttpFramer f(kBody, 10s);
    Framed got = frame(f, same, same.size());
    CHECK(got.pieces == std::vector<std::string>{R"({"event":"open","args":{"id":1}})",
                                                 R"({"event":"open","args":{"id":2}})",
                                                 R"({"event":"open","args":{"id":3},"key":"k1"})",
                                                 R"({"event":"open","args":{"id":4},"key":"k1"})"});
    CHECK(f.heads_reused() == 2);  // the second and the fourth
    // A request that arrives in two reads is the parser's; a head one byte
    // off is routed afresh; another length is another head.
    HttpFramer g(kBody, 10s);
    std::string rest = post("/events/open", R"({"id":5})") + post("/events/opem", R"({"id":6})") +
                       post("/events/open", R"({"id":77})") + post("/events/open", R"({"id":88})");
    Framed split = frame(g, same + rest, same.size() + 3);
    REQUIRE(split.pieces.size() == 8);
    CHECK(split.pieces[4] == R"({"event":"open","args":{"id":5}})");
    CHECK(split.pieces[5] == R"({"event":"opem","args":{"id":6}})");
    CHECK(split.pieces[7] == R"({"event":"open","args":{"id":88}})");
    CHECK(g.heads_reused() == 3);  // 2, 4 and 88
    // Heads that are not kept: each such request is read by the parser,
    // however often it comes (the second Expect is answered 100 Continue
    // too, a HTTP/1.0 request is the last, a chunked body is joined).
    for (std::string_view once : {std::string_view("POST /events/open HTTP/1.1\r\nExpect: 100-continue\r\n"
                                                   "Content-Length: 2\r\n\r\n{}"),
                                  std::string_view("POST /events/open HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                                   "2\r\n{}\r\n0\r\n\r\n"),
                                  std::string_view("GET /schema HTTP/1.1\r\n\r\n")}) {
      HttpFramer h(kBody, 10s);
      std::string twice = std::string(once) + std::string(once) + std::string(once);
      CHECK(frame(h, twice, twice.size()).pieces.size() == 3);
      CHECK(h.heads_reused() == 0);
    }
  }

  TEST_CASE("with heads reused or not, the same bytes make the same pieces and responses, in any pieces") {
    // The requests of the other cases here, and repeats of each.
    std::vector<std::string> streams{
        post("/events/open", R"({"id":1})") + post("/events/open", R"({"id":2})", "Connection: close\r\n") +
            post("/events/open", R"({"id":3})"),
        post("/events/open", "{}") + "GET /events/open HTTP/1.1\r\n\r\n" + post("/events/open", "{}") +
            post("/events/open", "{}", "Expect: 100-continue\r\n") + post("/events/open", "{}"),
        "POST /events/open HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}"
        "POST /events/open HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}",
        post("/events/open", "{}") + post("/events/open", std::string(kBody + 1, ' ')) + post("/events/open", "{}"),
        post("/queries/total", "{}") + post("/queries/total", "{}") + "HTTP/1.1 200 OK\r\n\r\n" +
            post("/queries/total", "{}"),
        "\r\n" + post("/events/open", "{}") + "\r\n" + post("/events/open", "{}") + post("/events/open", "{}")};
    auto transcript = [](bool reuse, const std::string& bytes, size_t step) {
      HttpFramer f(kBody, 10s, reuse);
      Framed got = frame(f, bytes, step);
      std::string out;
      for (const std::string& p : got.pieces) out += p + "\n";
      // The responses owed to the requests (frame() framed the refusals'),
      // each to a fixed answer: their heads.
      for (const std::string& p : got.pieces) {
        if (p[0] == '{') f.frame(ok_answer("1"), out);
      }
      return out + (got.eof ? "eof" : "open");
    };
    for (const std::string& bytes : streams) {
      for (size_t step : {size_t{1}, size_t{2}, size_t{5}, size_t{17}, size_t{64}, bytes.size()}) {
        CAPTURE(bytes);
        CAPTURE(step);
        CHECK(transcript(true, bytes, step) == transcript(false, bytes, step));
      }
    }
  }

  TEST_CASE("a path that is not UTF-8 is shown escaped, so the answer stays JSON") {
    Framed f = frame("GET /a\x8d\xd0 HTTP/1.1\r\n\r\n");
    REQUIRE(f.pieces.size() == 1);
    CHECK(f.pieces[0].find("no route GET /a\\\\x8d\\\\xd0") != std::string::npos);  // JSON: each backslash escaped
    // Nor is an event's or a query's name passed on unless it is printable
    // ASCII, as names are: it would come back in an unknown_query answer.
    Framed q = frame("GET /queries/\x0c\x86 HTTP/1.1\r\n\r\nPOST /events/a\xc3\xa9 HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    REQUIRE(q.pieces.size() == 2);
    CHECK(q.pieces[0].rfind("404 ", 0) == 0);
    CHECK(q.pieces[0].find("no route GET /queries/\\\\x0c\\\\x86") != std::string::npos);
    CHECK(q.pieces[1].rfind("404 ", 0) == 0);
  }

  TEST_CASE("a 405 says which methods the route takes") {
    HttpFramer f(kBody, 10s);
    f.feed("PUT /queries/total HTTP/1.1\r\n\r\n");
    RequestText request;
    Answer answer;
    std::string response;
    REQUIRE(f.next(request, answer) == HttpFramer::Piece::Answer);
    f.frame(answer, response);
    CHECK(response.find("HTTP/1.1 405 Method Not Allowed\r\n") == 0);
    CHECK(response.find("\r\nAllow: GET, HEAD, POST\r\n") != std::string::npos);
  }

  TEST_CASE("GET /stats and GET /metrics are the stats request; /metrics answers Prometheus text") {
    CHECK(frame("GET /stats HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n").pieces ==
          std::vector<std::string>{R"({"stats":{}})", R"({"stats":{}})"});
    HttpFramer f(kBody, 10s);
    f.feed("GET /metrics HTTP/1.1\r\n\r\nGET /stats HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n");
    RequestText request;
    Answer answer;
    Answer stats;
    stats.stats = std::make_unique<MetricSample>();
    std::string text, metrics, json, refused;
    prometheus_text(*stats.stats, text);
    for (int i = 0; i < 3; ++i) REQUIRE(f.next(request, answer) == HttpFramer::Piece::Request);
    f.frame(stats, metrics);
    f.frame(stats, json);
    // A server without figures answers unavailable: that goes as it is.
    f.frame(error_answer(Code::Unavailable, "x"), refused);
    CHECK(metrics.find("HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                       "Content-Length: " +
                       std::to_string(text.size()) + "\r\n\r\n") == 0);
    CHECK(metrics.substr(metrics.size() - text.size()) == text);
    CHECK(json.find("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n") == 0);
    std::string stats_body = body_of(stats);
    CHECK(stats_body.rfind(R"({"ok":true,"result":{"uptime_seconds":0,)", 0) == 0);
    CHECK(json.substr(json.size() - stats_body.size()) == stats_body);
    CHECK(refused.find("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n") == 0);
  }

  TEST_CASE("/metrics, /stats, /schema and /health take GET and HEAD: 405 with Allow: GET, HEAD") {
    for (const char* path : {"/metrics", "/stats", "/schema", "/health"}) {
      HttpFramer f(kBody, 10s);
      f.feed(post(path, ""));
      RequestText request;
      Answer answer;
      std::string response;
      REQUIRE(f.next(request, answer) == HttpFramer::Piece::Answer);
      f.frame(answer, response);
      CHECK(response.find("HTTP/1.1 405 Method Not Allowed\r\n") == 0);
      CHECK(response.find("\r\nAllow: GET, HEAD\r\n") != std::string::npos);
    }
  }

  TEST_CASE("a body at the limit is taken; one past it is 413 and the connection closes") {
    std::string at = "[" + std::string(kBody - 2, '1') + "]";
    CHECK(frame(post("/events/e", at)).pieces == std::vector<std::string>{R"({"event":"e","args":)" + at + "}"});
    // Said by Content-Length: refused before any of the body is read.
    Framed past = frame(post("/events/e", at + " ") + post("/events/e", "{}"));
    REQUIRE(past.pieces.size() == 1);
    CHECK(past.pieces[0].rfind("413 ", 0) == 0);
    CHECK(past.pieces[0].find("at most 256") != std::string::npos);
    CHECK(past.eof);
    // Chunked: refused once the chunks pass it.
    std::string chunk(kBody / 2 + 1, ' ');
    std::string chunked = "POST /events/e HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 2; ++i) chunked += "81\r\n" + chunk + "\r\n";
    Framed c = frame(chunked + "0\r\n\r\n");
    REQUIRE(c.pieces.size() == 1);
    CHECK(c.pieces[0].rfind("413 ", 0) == 0);
    CHECK(c.eof);
  }

  TEST_CASE("headers at the limit are taken; one byte past it is 431 and the connection closes") {
    std::string head = "GET /queries/total HTTP/1.1\r\nX: ";
    std::string end = "\r\n\r\n";
    std::string at = head + std::string(kMaxHttpHeaderBytes - head.size() - end.size(), 'x') + end;
    REQUIRE(at.size() == kMaxHttpHeaderBytes);
    CHECK(frame(at, 1000).pieces == std::vector<std::string>{R"({"query":"total","args":{}})"});
    std::string past = head + std::string(kMaxHttpHeaderBytes - head.size() - end.size() + 1, 'x') + end;
    for (size_t step : {size_t{1000}, size_t{1} << 20}) {
      Framed f = frame(past, step);
      REQUIRE(f.pieces.size() == 1);
      CHECK(f.pieces[0].rfind("431 ", 0) == 0);
      CHECK(f.eof);
    }
    // Headers that never end are refused once past the limit, not held.
    Framed endless = frame(head + std::string(3 * kMaxHttpHeaderBytes, 'x'), 4096);
    REQUIRE(endless.pieces.size() == 1);
    CHECK(endless.pieces[0].rfind("431 ", 0) == 0);
  }

  TEST_CASE("a chunked body's trailers have the same limit as the headers: under it taken, past it 431") {
    // http-parser counts the trailers from the last chunk's size line on,
    // so they get a limit of their own, the same 16 KiB.
    std::string body = "POST /events/e HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n";
    auto trailer = [&](size_t value) { return body + "X: " + std::string(value, 'x') + "\r\n\r\n"; };
    for (size_t step : {size_t{1000}, size_t{1} << 20}) {
      CAPTURE(step);
      CHECK(frame(trailer(kMaxHttpHeaderBytes - 64), step).pieces == std::vector<std::string>{R"({"event":"e","args":{}})"});
      Framed past = frame(trailer(kMaxHttpHeaderBytes), step);
      REQUIRE(past.pieces.size() == 1);
      CHECK(past.pieces[0].rfind("431 ", 0) == 0);
      CHECK(past.eof);
    }
  }

  TEST_CASE("what is not HTTP is 400 and the connection closes; requests before it are answered") {
    for (const char* junk : {"HELLO\r\n\r\n", "GET /\x01 HTTP/1.1\r\n\r\n", "GET /x HTTP/1.1\r\nBad Header\r\n\r\n",
                             "POST /events/e HTTP/1.1\r\nContent-Length: x\r\n\r\n", "{\"event\":\"open\"}\n"}) {
      Framed f = frame("GET /queries/total HTTP/1.1\r\n\r\n" + std::string(junk) + "GET /schema HTTP/1.1\r\n\r\n");
      CAPTURE(std::string(junk));
      REQUIRE(f.pieces.size() == 2);
      CHECK(f.pieces[0] == R"({"query":"total","args":{}})");
      CHECK(f.pieces[1].rfind("400 ", 0) == 0);
      CHECK(f.eof);
    }
  }

  TEST_CASE("Connection: close and HTTP/1.0 end the connection after their answer") {
    Framed f = frame("GET /schema HTTP/1.1\r\nConnection: close\r\n\r\nGET /schema HTTP/1.1\r\n\r\n");
    CHECK(f.pieces.size() == 1);
    CHECK(f.eof);
    HttpFramer ten(kBody, 10s);
    Framed g = frame(ten, "GET /schema HTTP/1.0\r\n\r\n", 100);
    CHECK(g.pieces.size() == 1);
    CHECK(g.eof);
    std::string response;
    ten.frame(Answer{}, response);
    CHECK(response.find("\r\nConnection: close\r\n") != std::string::npos);
    // An HTTP/1.0 client that asks to keep the connection is told it is kept.
    HttpFramer kept(kBody, 10s);
    Framed k = frame(kept, "GET /schema HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", 100);
    CHECK(!k.eof);
    response.clear();
    kept.frame(Answer{}, response);
    CHECK(response.find("\r\nConnection: keep-alive\r\n") != std::string::npos);
  }

  TEST_CASE("a request not whole within the timeout is 408 and closes; a quiet connection is not") {
    HttpFramer f(kBody, 10s);
    auto now = std::chrono::steady_clock::now();
    CHECK(!f.expire(now + 1h));  // nothing begun
    f.feed("GET /queries/total HTTP/1.1\r\nX-Slow: ");
    CHECK(!f.expire(now + 5s));
    CHECK(!f.ready());
    REQUIRE(f.expire(std::chrono::steady_clock::now() + 11s));
    RequestText request;
    Answer answer;
    std::string response;
    REQUIRE(f.next(request, answer) == HttpFramer::Piece::Answer);
    CHECK(answer.text.find("within 10 s") != std::string::npos);
    f.frame(answer, response);
    CHECK(response.find("HTTP/1.1 408 Request Timeout\r\n") == 0);
    CHECK(response.find("\r\nConnection: close\r\n") != std::string::npos);
    CHECK(f.eof());
  }

  TEST_CASE("responses are framed in request order, each status from its answer's code") {
    HttpFramer f(kBody, 10s);
    f.feed("GET /queries/a HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\n\r\nGET /queries/b HTTP/1.1\r\n\r\n");
    RequestText request;
    Answer answer;
    std::vector<Answer> refusals;
    for (int i = 0; i < 3; ++i) {
      if (f.next(request, answer) == HttpFramer::Piece::Answer) refusals.push_back(std::move(answer));
    }
    REQUIRE(refusals.size() == 1);
    std::string out;
    f.frame(ok_answer("1"), out);
    f.frame(refusals[0], out);
    f.frame(error_answer(Code::Duplicate, "m"), out);
    HttpAnswerReader reader;
    std::string error;
    REQUIRE(reader.feed(out, error));
    int status = 0;
    std::string body;
    REQUIRE(reader.next(status, body));
    CHECK(status == 200);
    CHECK(body == "{\"ok\":true,\"result\":1}\n");
    REQUIRE(reader.next(status, body));
    CHECK(status == 404);
    REQUIRE(reader.next(status, body));
    CHECK(status == 409);
    CHECK(!reader.next(status, body));
  }

  TEST_CASE("every code has its status in the one table") {
    struct Want {
      Code code;
      int status;
    };
    for (Want w : {Want{Code::BadRequest, 400}, {Code::BadArgs, 400}, {Code::BadNumber, 400},
                   {Code::UnknownEvent, 404}, {Code::UnknownQuery, 404}, {Code::NotFound, 404},
                   {Code::Duplicate, 409}, {Code::StaleRow, 409}, {Code::Failed, 422}, {Code::OutOfRange, 422},
                   {Code::NotFinite, 422}, {Code::Budget, 422}, {Code::Unavailable, 503}, {Code::Ok, 200}}) {
      CAPTURE(code_name(w.code));
      CHECK(http_status_for_code(w.code) == w.status);
    }
    // Every code is in it (a code added to code.h and not here would be 500).
    for (size_t c = 0; c < kCodes; ++c) CHECK(http_status_for_code(static_cast<Code>(c)) != 500);
  }

  TEST_CASE("an Idempotency-Key header is the request's key, in any pieces, quoted or not") {
    std::string bytes = post("/events/deposit", R"({"id":1})", "Idempotency-Key: \"t-81\"\r\n") +
                        post("/events/deposit", R"({"id":1})", "idempotency-KEY:  a\"b \r\n") +
                        post("/events/deposit", R"({"id":1})", "X-Idempotency-Key: no\r\nIdempotency-Keys: no\r\n");
    std::vector<std::string> want{R"({"event":"deposit","args":{"id":1},"key":"t-81"})",
                                  R"({"event":"deposit","args":{"id":1},"key":"a\"b"})",
                                  R"({"event":"deposit","args":{"id":1}})"};
    for (size_t step = 1; step <= 5; ++step) CHECK(frame(bytes, step).pieces == want);
    // On a query route it is passed on for the Service to refuse (a query
    // changes nothing), and on the schema and stats routes too.
    CHECK(frame("GET /queries/total HTTP/1.1\r\nIdempotency-Key: q\r\n\r\n").pieces ==
          std::vector<std::string>{R"({"query":"total","args":{},"key":"q"})"});
    CHECK(frame("GET /schema HTTP/1.1\r\nIdempotency-Key: q\r\n\r\n").pieces ==
          std::vector<std::string>{R"({"schema":{}})"});
    // The next request on the connection does not inherit it.
    CHECK(frame(post("/events/e", "{}", "Idempotency-Key: k\r\n") + post("/events/e", "{}")).pieces ==
          std::vector<std::string>{R"({"event":"e","args":{},"key":"k"})", R"({"event":"e","args":{}})"});
  }

  TEST_CASE("Expect: 100-continue is answered 100 Continue once every response before it is framed") {
    constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    std::string head = "POST /events/open HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n";
    // Alone: owed as soon as the headers are in, once.
    HttpFramer alone(kBody, 10s);
    alone.feed(head);
    std::string out;
    CHECK(alone.take_interim(out));
    CHECK(out == kContinue);
    CHECK(!alone.take_interim(out));
    alone.feed("{}");
    REQUIRE(alone.ready());
    // Pipelined behind a request not yet answered: it follows that answer.
    HttpFramer behind(kBody, 10s);
    behind.feed("GET /queries/total HTTP/1.1\r\n\r\n" + head);
    RequestText request;
    Answer answer;
    REQUIRE(behind.next(request, answer) == HttpFramer::Piece::Request);
    out.clear();
    CHECK(!behind.take_interim(out));
    behind.frame(ok_answer("0"), out);
    CHECK(out.find("HTTP/1.1 200 OK\r\n") == 0);
    CHECK(out.size() > kContinue.size());
    CHECK(out.substr(out.size() - kContinue.size()) == kContinue);
    HttpAnswerReader reader;  // a client skips the interim response
    std::string error, body;
    REQUIRE(reader.feed(out, error));
    int status = 0;
    REQUIRE(reader.next(status, body));
    CHECK(status == 200);
    CHECK(!reader.next(status, body));
    // Not when the body came with the headers, not to HTTP/1.0, not for
    // another expectation.
    for (std::string bytes : {head + "{}", std::string("POST /events/open HTTP/1.0\r\nExpect: 100-continue\r\n"
                                                       "Content-Length: 2\r\n\r\n"),
                              std::string("POST /events/open HTTP/1.1\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n")}) {
      HttpFramer f(kBody, 10s);
      f.feed(bytes);
      out.clear();
      CHECK_MESSAGE(!f.take_interim(out), bytes);
    }
  }

  TEST_CASE("a query's query string is handed on as sent; any other route's is refused 400") {
    Framed f = frame("GET /queries/balance?id=3 HTTP/1.1\r\n\r\nGET /queries/balance?id=3 HTTP/1.1\r\n\r\n"
                     "GET /queries/balance?id=4 HTTP/1.1\r\n\r\nGET /queries/total HTTP/1.1\r\n\r\n"
                     "HEAD /queries/balance?owner=Ann+Lee%21 HTTP/1.1\r\n\r\n" +
                     post("/events/open?id=1", "{}") + "GET /schema?x=1 HTTP/1.1\r\n\r\n" +
                     "GET /queries/total HTTP/1.1\r\n\r\n");
    REQUIRE(f.pieces.size() == 8);
    // Each its own, though the path is the same (a route kept must not keep its query string).
    CHECK(f.pieces[0] == R"({"query":"balance","args":{}}?id=3)");
    CHECK(f.pieces[1] == R"({"query":"balance","args":{}}?id=3)");
    CHECK(f.pieces[2] == R"({"query":"balance","args":{}}?id=4)");
    CHECK(f.pieces[3] == R"({"query":"total","args":{}})");
    CHECK(f.pieces[4] == R"({"query":"balance","args":{}}?owner=Ann+Lee%21)");
    CHECK(f.pieces[5].rfind("400 ", 0) == 0);
    CHECK(f.pieces[5].find("an event's arguments go in the body") != std::string::npos);
    CHECK(f.pieces[6].rfind("400 ", 0) == 0);
    CHECK(f.pieces[6].find("/schema takes no query string") != std::string::npos);
    CHECK(f.pieces[7] == R"({"query":"total","args":{}})");
  }

  TEST_CASE("query-string arguments are read by the query's types, and refused precisely") {
    testing::Running run(R"(record P { x: num }
query q(id: num, name: text, flag: bool, xs: [num], p: P) { return id }
query one(id: num) { return id * 2 }
)");
    auto prepared = [&](std::string_view target, std::string_view body = "") {
      HttpFramer f(kBody, 10s);
      f.feed(body.empty() ? "GET " + std::string(target) + " HTTP/1.1\r\n\r\n"
                          : "POST " + std::string(target) + " HTTP/1.1\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + std::string(body));
      RequestText request;
      Answer refusal;
      REQUIRE(f.next(request, refusal) == HttpFramer::Piece::Request);
      JsonDoc doc;
      Request r = run.service().prepare(request, doc);
      if (r.kind == RequestKind::Refused) return std::string(code_name(r.refusal)) + " " + r.why;
      return std::string(doc.node(r.args).raw);
    };
    CHECK(prepared("/queries/q?id=3&name=Ann+Lee%20%C3%A9&flag=true&xs=%5B1,2%5D&p={%22x%22:1}") ==
          R"({"id":3,"name":"Ann Lee é","flag":true,"xs":[1,2],"p":{"x":1}})");
    CHECK(prepared("/queries/one?id=-2.5e3&") == R"({"id":-2.5e3})");
    CHECK(run.call(R"({"query":"one","args":{"id":4}})") == R"({"ok":true,"result":8})");
    const std::string bad = "bad_args ";
    CHECK(prepared("/queries/one?idd=3") == bad + "unknown argument `idd` (`one` takes id); did you mean `id`?");
    CHECK(prepared("/queries/one?id=3&id=4") == bad + "argument `id` appears twice in the query string");
    CHECK(prepared("/queries/one?id=abc") == bad + "id: expected number, got `abc`");
    CHECK(prepared("/queries/one?id=") == bad + "id: expected number, got ``");
    CHECK(prepared("/queries/one?id=%zz") ==
          bad + "bad percent-encoding `%zz` in the query string (`%` and two hex digits is a byte: %25 is `%` itself)");
    CHECK(prepared("/queries/one?id=1%2").find("bad percent-encoding `%2`") != std::string::npos);
    CHECK(prepared("/queries/q?flag=yes") == bad + "flag: expected bool (true or false), got `yes`");
    CHECK(prepared("/queries/q?name=%FF") == bad + "name: the value is not UTF-8 once percent-decoded");
    CHECK(prepared("/queries/q?xs=[1,") ==
          bad + "xs: not JSON (an array, record or object argument is its JSON): unexpected end of input at byte 3");
    // Both ways at once is a mistake, not a merge.
    CHECK(prepared("/queries/one?id=1", R"({"id":2})") ==
          "bad_request the arguments come in the query string or in the body, not both");
    // An unknown query is unknown whatever its arguments; the closest is named.
    CHECK(prepared("/queries/oen?id=1").find("no query `oen`; did you mean `one`?") != std::string::npos);
  }

  TEST_CASE("HEAD is GET's response without its body, wherever GET is taken; refusals too") {
    HttpFramer f(kBody, 10s);
    f.feed("HEAD /queries/total HTTP/1.1\r\n\r\nGET /queries/total HTTP/1.1\r\n\r\nHEAD /stats HTTP/1.1\r\n\r\n"
           "HEAD /nope HTTP/1.1\r\n\r\nHEAD /events/open HTTP/1.1\r\n\r\n");
    RequestText request;
    Answer answer;
    std::string head, get, stats, none, event;
    REQUIRE(f.next(request, answer) == HttpFramer::Piece::Request);
    CHECK(as_line(request) == R"({"query":"total","args":{}})");
    REQUIRE(f.next(request, answer) == HttpFramer::Piece::Request);
    REQUIRE(f.next(request, answer) == HttpFramer::Piece::Request);
    CHECK(as_line(request) == R"({"stats":{}})");
    f.frame(ok_answer("12"), head);
    f.frame(ok_answer("12"), get);
    CHECK(get == head + "{\"ok\":true,\"result\":12}\n");
    Answer figures;
    figures.stats = std::make_unique<MetricSample>();
    f.frame(figures, stats);
    CHECK(stats.find("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ") == 0);
    CHECK(stats.size() == stats.find("\r\n\r\n") + 4);
    REQUIRE(f.next(request, answer) == HttpFramer::Piece::Answer);
    f.frame(answer, none);
    CHECK(none.find("HTTP/1.1 404 Not Found\r\n") == 0);
    CHECK(none.size() == none.find("\r\n\r\n") + 4);
    REQUIRE(f.next(request, answer) == HttpFramer::Piece::Answer);
    f.frame(answer, event);
    CHECK(event.find("HTTP/1.1 405 Method Not Allowed\r\n") == 0);
    CHECK(event.find("\r\nAllow: POST\r\n") != std::string::npos);
    CHECK(event.size() == event.find("\r\n\r\n") + 4);
    CHECK(!f.eof());
  }

  TEST_CASE("GET /health: ready with the role and save, 503 when the figures say the node is not") {
    HttpFramer f(kBody, 10s);
    f.feed("GET /health HTTP/1.1\r\n\r\nGET /health HTTP/1.1\r\n\r\nHEAD /health HTTP/1.1\r\n\r\n"
           "GET /health HTTP/1.1\r\n\r\n");
    RequestText request;
    Answer answer;
    for (int i = 0; i < 4; ++i) {
      REQUIRE(f.next(request, answer) == HttpFramer::Piece::Request);
      CHECK(as_line(request) == R"({"stats":{}})");
    }
    auto figures = [](double role, double save, double unavailable) {
      Answer a;
      a.stats = std::make_unique<MetricSample>();
      a.stats->values[static_cast<size_t>(metric_index("replication_role"))] = role;
      a.stats->values[static_cast<size_t>(metric_index("replication_save"))] = save;
      a.stats->values[static_cast<size_t>(metric_index("store_unavailable"))] = unavailable;
      a.stats->unavailable_why = "the disk failed";
      return a;
    };
    std::string ready, joining, head, failed;
    f.frame(figures(1, 12, 0), ready);
    f.frame(figures(3, 0, 0), joining);
    f.frame(figures(3, 0, 0), head);
    f.frame(figures(0, 7, 1), failed);
    CHECK(ready.find("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n") == 0);
    CHECK(ready.substr(ready.find("\r\n\r\n") + 4) ==
          "{\"ready\":true,\"role\":\"primary\",\"save\":12,\"uptime_seconds\":0}\n");
    CHECK(joining.find("HTTP/1.1 503 Service Unavailable\r\n") == 0);
    CHECK(joining.find("{\"ready\":false,\"role\":\"joining\",\"save\":0,") != std::string::npos);
    CHECK(head == joining.substr(0, joining.find("\r\n\r\n") + 4));
    CHECK(failed.find("HTTP/1.1 503 ") == 0);
    CHECK(failed.find("\"role\":\"standalone\",\"save\":7,") != std::string::npos);
    CHECK(failed.find("\"why\":\"the disk failed\"}") != std::string::npos);
  }

  TEST_CASE("the client's request for a line is the route the server maps back to that line") {
    for (std::string line : {R"({"event":"open","args":{"id":1,"owner":"ann"}})", R"({"query":"total"})",
                             R"({"query":"balance","args":{"id":2}})", R"({"schema":{}})", R"({"stats":{}})",
                             R"({"event":"deposit","args":{"id":1},"key":"order-8812"})"}) {
      std::string request, error;
      REQUIRE(http_request_for_line(line, "h", request, error));
      Framed f = frame(request);
      REQUIRE(f.pieces.size() == 1);
      if (line == R"({"query":"total"})") line = R"({"query":"total","args":{}})";
      CHECK(f.pieces[0] == line);
    }
    std::string request, error;
    CHECK(!http_request_for_line(R"({"query":"total","id":1})", "h", request, error));
    CHECK(error.find("`id`") != std::string::npos);
    CHECK(!http_request_for_line("nope", "h", request, error));
    // A key a header cannot carry as a quoted string is refused, saying why.
    CHECK(!http_request_for_line(R"({"event":"e","key":"a\"b"})", "h", request, error));
    CHECK(error.find("Idempotency-Key") != std::string::npos);
  }
}

}  // namespace
}  // namespace aup::runtime
