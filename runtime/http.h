// The request protocol over HTTP/1.1 (`aup run --listen http://HOST:PORT`,
// docs/protocol.md, "HTTP"): another framing of the same requests, served
// by the same server (server.h) as the line protocol.
//
//   POST /events/NAME          body: the event's args (JSON; empty: {});
//                              an Idempotency-Key header is its `key`
//   GET|POST /queries/NAME     body: the query's args (JSON; empty: {}),
//                              or ?id=3&owner=ann (runtime/convert.h)
//   GET /schema
//   GET /stats                 the stats request's JSON answer (runtime/metrics.h)
//   GET /metrics               the same figures as Prometheus text
//   GET /health                whether the node is ready, its role and save
//   HEAD wherever GET          the same response's head, without its body (RFC 9110, 9.3.2)
//
// Each complete HTTP request becomes a RequestText of the route's form
// (runtime/request.h): the kind and name its method and path say, its body
// (the arguments, parsed on their own by the Service) and its
// Idempotency-Key. Each answer goes back as the body of an HTTP/1.1
// response whose status its code says (http_status_for_code), written from
// the Answer itself. Answers leave in request order, so pipelined requests
// need nothing more. Parsing is Debian's http-parser (libhttp-parser),
// never by hand.
//
// Limits: the request line and headers together at most
// kMaxHttpHeaderBytes (431 and close); a body at most --max-line (413 and
// close: the body is not read); a request must arrive whole within the
// timeout of its first byte (408 and close: a client that trickles its
// headers or body holds a connection that long at most). A request the
// parser refuses is answered 400 and the connection closed: after it the
// byte stream cannot be trusted to be where a request starts. A request
// sent with `Expect: 100-continue` gets its interim `100 Continue` in its
// place among the responses (take_interim).
#pragma once

#include <http_parser.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/answer.h"
#include "runtime/json.h"
#include "runtime/request.h"

namespace aup::runtime {

// The request line and every header, as sent (CRLFs included). curl sends
// about 100 bytes; 16 KiB is what Node and many proxies allow.
inline constexpr size_t kMaxHttpHeaderBytes = 16 * 1024;
inline constexpr uint32_t kDefaultHttpTimeoutSeconds = 10;

// The one table from an answer's code to its HTTP status
// (docs/protocol.md): 200 for ok, then 400, 404, 409, 422, 503.
int http_status_for_code(Code code);
std::string_view http_reason(int status);

// What a response's head says besides its length.
struct HttpResponseHead {
  int status = 0;                // 0: the answer's code says (http_status_for_code)
  bool close = false;            // `Connection: close`; the last on the connection
  bool keep_alive_header = false;  // an HTTP/1.0 client that asked to keep the connection
  std::string_view allow;        // a 405's `Allow` header, else empty
  // GET /metrics: the body is the stats answer's figures as Prometheus
  // text (Content-Type text/plain; version=0.0.4), not the answer.
  bool prometheus = false;
  // GET /health: the body is what health_json makes of the figures, and
  // 503 when the node is not ready.
  bool health = false;
  // HEAD: the head GET would have, Content-Length included, and no body.
  bool head_only = false;
};
inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";
// The head of a response of `body_bytes`: JSON, or with head.prometheus the
// Prometheus text format.
void append_http_head(std::string& out, const HttpResponseHead& head, size_t body_bytes);

// Cuts what one connection sends into requests. One read buffer, reused;
// what the parser takes is copied out (the path, the body), so the buffer
// never grows. At most one request is parsed ahead
// of the one handed out, so ready() is exact and back-pressure holds: a
// connection not taken from is neither parsed nor read.
//
// Heads seen: a client that pipelines events sends the same request line
// and headers over and over, only the body (and so Content-Length)
// changing. The framer keeps the last few heads that http-parser read
// whole and that made a plain request (an event or query route, a body of
// Content-Length bytes, kept alive, HTTP/1.1, no Expect); a request that
// begins with one of them byte for byte, its whole body here, is that
// request again with its own body, and the parser does not read it. Any
// other byte sequence goes through the parser as always.
class HttpFramer {
 public:
  // `reuse_heads` false: every request through the parser (the HTTP fuzz
  // target runs both and compares them).
  HttpFramer(size_t max_body_bytes, std::chrono::milliseconds timeout, bool reuse_heads = true);
  HttpFramer(const HttpFramer&) = delete;
  HttpFramer& operator=(const HttpFramer&) = delete;

  // One read(2) into the free space: the bytes read, 0 at end of input,
  // or -errno. feed() is the same for bytes in hand (tests, fuzzing): it
  // takes what fits and returns how many.
  ssize_t read_from(int fd);
  size_t feed(std::string_view bytes);

  enum class Piece : uint8_t { None, Request, Answer };
  // The next piece: a Request (`request` views the framer's copy, valid
  // until the next call), or an Answer the framer made itself (a refused
  // request: `refusal`). Either way one response is owed, and frame()
  // writes the responses in the order of the pieces.
  Piece next(RequestText& request, Answer& refusal);
  bool ready() const { return have_; }
  // No more requests: the peer closed its end, or the last request was
  // handed out (`Connection: close`, HTTP/1.0, or a refusal that closes).
  bool eof() const { return eof_ || (stop_ && !have_); }
  void set_eof() { eof_ = true; }

  // Appends the response to the oldest piece handed out: `a` its answer.
  void frame(const Answer& a, std::string& out);
  // Appends `HTTP/1.1 100 Continue` when the request being read asked for
  // it (`Expect: 100-continue`) and every response before it is framed,
  // so it goes out in its place; true when it did. frame() calls it after
  // each response; a server calls it after each read.
  bool take_interim(std::string& out);
  // Whether the response frame() writes next is the last (close after it).
  bool closing_next() const { return !owed_.empty() && owed_.front().close; }
  // Whether it is a HEAD's: its head alone (the HTTP fuzz target reads
  // the others back; a client reads a HEAD's knowing it sent one).
  bool head_only_next() const { return !owed_.empty() && owed_.front().head_only; }
  // How many requests were made from a head seen before (see above).
  uint64_t heads_reused() const { return heads_reused_; }

  // A request begun more than the timeout before `now` and not complete is
  // refused (408, close): true when this call did so (next() then gives it).
  bool expire(std::chrono::steady_clock::time_point now);

 private:
  struct Pending {
    bool answer = false;  // a refusal: `refusal` is its answer
    Answer refusal;
    RequestKind kind = RequestKind::Event;  // a request: what its route says
    std::string name, body, key, query;
    bool has_key = false;
    HttpResponseHead head;
  };
  static int on_message_begin(http_parser* p);
  static int on_url(http_parser* p, const char* at, size_t n);
  static int on_header_field(http_parser* p, const char* at, size_t n);
  static int on_header_value(http_parser* p, const char* at, size_t n);
  static int on_headers_complete(http_parser* p);
  static int on_body(http_parser* p, const char* at, size_t n);
  static int on_message_complete(http_parser* p);
  void parse_ahead();
  void headers_done();
  void message_done();
  void route(std::string_view path);
  void take_query_string(std::string_view path, std::string_view query);
  bool route_again();
  void refuse(int status, std::string_view message, bool close);
  void make_room();
  bool take_seen_head();
  void remember_head();

  size_t max_body_bytes_;
  std::chrono::milliseconds timeout_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  http_parser parser_;
  http_parser_settings settings_;
  // The message being parsed.
  std::string url_;
  size_t body_bytes_ = 0;
  bool in_message_ = false;
  bool keep_body_ = false;  // the body is the request's args (an event's or a query's)
  bool prometheus_ = false;  // GET /metrics
  bool health_ = false;      // GET /health
  // The header being read (its name as sent, its first
  // kMaxHeaderName bytes: enough to tell the names read here from any
  // longer one), and which of the headers read here it is.
  static constexpr size_t kMaxHeaderName = 16;
  char header_name_[kMaxHeaderName] = {};
  size_t header_name_size_ = 0;
  std::string_view header_name() const { return {header_name_, header_name_size_}; }
  bool in_value_ = false;
  enum class Header : uint8_t { Other, Key, Expect };
  Header header_ = Header::Other;  // the header whose value is being read
  std::string expect_;          // the Expect header's value, lower-cased
  bool continue_owed_ = false;  // it was 100-continue and the body is not here yet
  bool body_too_long_ = false;
  std::chrono::steady_clock::time_point started_;
  // When the latest bytes were read: a request's clock starts at the
  // latest read when its parsing begins (one clock reading a read, not one
  // a request). A request parsed late from bytes read earlier (held back
  // while the one before waited) starts then: the wait was the server's.
  std::chrono::steady_clock::time_point read_at_;
  int refuse_status_ = 0;  // refused at its headers; its body is read and dropped
  std::string refuse_message_;
  std::string_view allow_;
  // The last event or query routed: its method, its target, and what the
  // route made of them. A client that sends one kind of request over and
  // over is routed once.
  unsigned last_method_ = ~0u;
  std::string last_url_, last_name_;
  RequestKind last_kind_ = RequestKind::Event;
  // Heads seen (see the class comment): the bytes of a request's line and
  // headers, blank line included, and the request the parser made of them.
  struct SeenHead {
    std::string bytes;
    size_t body_bytes = 0;  // its Content-Length
    RequestKind kind = RequestKind::Event;
    std::string name, key;
    bool has_key = false;
  };
  // One per body length a client's requests tend to have; a head longer
  // than kMaxSeenHead is not kept (the comparison stays a short one).
  static constexpr size_t kSeenHeads = 4, kMaxSeenHead = 512;
  bool reuse_heads_;
  SeenHead seen_[kSeenHeads];
  size_t seen_count_ = 0, seen_next_ = 0;
  uint64_t heads_reused_ = 0;
  // Where in buf_ the message being parsed began and its body began, when
  // the parser read both within one call (else npos: not kept).
  static constexpr size_t kNowhere = ~size_t{0};
  size_t message_at_ = kNowhere, body_at_ = kNowhere;
  // Two pieces: the next, parsed ahead, and the one handed out (whose
  // views the caller holds); they trade places at each next().
  Pending pieces_[2];
  unsigned ahead_ = 0;
  Pending& next_piece() { return pieces_[ahead_]; }
  bool have_ = false;
  bool stop_ = false;  // the piece parsed ahead is the connection's last
  std::deque<HttpResponseHead> owed_;  // responses owed, in order
  std::string body_text_;  // a response's body being made (reused)
};

// ---- the client side (aup call, aup shell, bench/server) ----
// (The client's requests are request lines of the line protocol, made HTTP.)

// The HTTP request for a request line of the line protocol: an event is
// POST /events/NAME, a query POST /queries/NAME, the schema GET /schema,
// the stats GET /stats, the args as the body. False with a message for a line HTTP cannot carry
// (not JSON, an `id`: answers over HTTP are matched by their order).
bool http_request_for_line(std::string_view line, std::string_view host, std::string& out, std::string& error);

// Reads HTTP responses from the bytes a server sends.
class HttpAnswerReader {
 public:
  HttpAnswerReader();
  HttpAnswerReader(const HttpAnswerReader&) = delete;
  HttpAnswerReader& operator=(const HttpAnswerReader&) = delete;
  // False with a message when the bytes are not HTTP responses.
  bool feed(std::string_view bytes, std::string& error);
  // The next whole response: its status and body.
  bool next(int& status, std::string& body);

 private:
  static int on_body(http_parser* p, const char* at, size_t n);
  static int on_message_complete(http_parser* p);
  http_parser parser_;
  http_parser_settings settings_;
  std::string body_;
  std::deque<std::pair<int, std::string>> done_;
};

}  // namespace aup::runtime
