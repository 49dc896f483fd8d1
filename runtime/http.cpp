#include "runtime/http.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "runtime/json.h"
#include "runtime/metrics.h"

namespace aup::runtime {

// ---- statuses ------------------------------------------------------------------------

namespace {

// The header whose value is an event request's `key` (runtime/keys.h), as
// the IETF's Idempotency-Key draft names it, lower-cased.
constexpr std::string_view kIdempotencyHeader = "idempotency-key";
// A client that sends `Expect: 100-continue` waits for the interim
// response before it sends the body (curl waits a second, then sends it
// anyway), so the server says it once it owes nothing before it.
constexpr std::string_view kExpectHeader = "expect";
constexpr std::string_view kContinueExpectation = "100-continue";  // lower-cased, as read
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// Its value: spaces around it dropped, and the quotes of a structured-field
// string (`Idempotency-Key: "8e03978e"`, as the draft writes it) taken off.
std::string_view key_value(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

}  // namespace

// docs/protocol.md, "HTTP": keep the two in step.
int http_status_for_code(Code code) {
  switch (code) {
    case Code::Ok: return 200;
    case Code::BadRequest:
    case Code::BadArgs:
    case Code::BadNumber: return 400;
    case Code::UnknownEvent:
    case Code::UnknownQuery:
    case Code::NotFound: return 404;
    case Code::Duplicate:
    case Code::StaleRow: return 409;
    case Code::Failed:
    case Code::OutOfRange:
    case Code::NotFinite:
    case Code::Budget: return 422;
    case Code::Unavailable: return 503;
    case Code::NotPrimary: return 421;
  }
  return 500;
}

std::string_view http_reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 422: return "Unprocessable Content";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    case 421: return "Misdirected Request";
    default: return "Internal Server Error";
  }
}

void append_http_head(std::string& out, const HttpResponseHead& head, size_t body_bytes) {
  // Most responses begin the same way: that part is one piece.
  constexpr std::string_view kOkJson = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ";
  char digits[24];
  if (head.status == 200 && !head.prometheus) {
    out += kOkJson;
  } else {
    out += "HTTP/1.1 ";
    out.append(digits, std::to_chars(digits, digits + sizeof digits, head.status).ptr);
    out += ' ';
    out += http_reason(head.status);
    out += "\r\nContent-Type: ";
    out += head.prometheus ? kPrometheusContentType : "application/json";
    out += "\r\nContent-Length: ";
  }
  out.append(digits, std::to_chars(digits, digits + sizeof digits, body_bytes).ptr);
  if (head.close) out += "\r\nConnection: close";
  if (head.keep_alive_header) out += "\r\nConnection: keep-alive";
  if (!head.allow.empty()) {
    out += "\r\nAllow: ";
    out += head.allow;
  }
  out += "\r\n\r\n";
}

// ---- the server's framer -------------------------------------------------------------

namespace {

// Each read asks for at least this much room; the buffer is twice that.
constexpr size_t kReadBytes = 16 * 1024;

// http-parser counts a message's request line and headers itself (CRLFs
// included, and any blank lines before the request line) and stops one
// byte past its limit with HPE_HEADER_OVERFLOW; a chunked body's trailers
// are counted the same way, afresh from the last chunk's size line. The
// limit is one for the process: every parser here, of either side, sets it
// before it is made (once; a static's initialization is thread-safe).
void set_parser_header_limit() {
  static const bool set = [] {
    http_parser_set_max_header_size(kMaxHttpHeaderBytes);
    return true;
  }();
  (void)set;
}

// A path as a message shows it: printable ASCII as it is, any other byte
// as \xNN, so an answer stays valid UTF-8 whatever the client sent.
std::string shown(std::string_view path) {
  std::string out;
  for (unsigned char c : path) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  return out;
}

// Header names and the Expect value are ASCII (RFC 9110, 5.1 and 10.1.1),
// so no locale: std::tolower is a library call per byte.
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

HttpFramer::HttpFramer(size_t max_body_bytes, std::chrono::milliseconds timeout, bool reuse_heads)
    : max_body_bytes_(max_body_bytes), timeout_(timeout), buf_(2 * kReadBytes), reuse_heads_(reuse_heads) {
  set_parser_header_limit();
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
  http_parser_settings_init(&settings_);
  settings_.on_message_begin = on_message_begin;
  settings_.on_url = on_url;
  settings_.on_header_field = on_header_field;
  settings_.on_header_value = on_header_value;
  settings_.on_headers_complete = on_headers_complete;
  settings_.on_body = on_body;
  settings_.on_message_complete = on_message_complete;
}

// The bytes not yet parsed move to the front when there is too little room
// after them, and also whenever they are few (the piece of a request a
// read ended in): then the reads of a busy connection land on the same
// warm bytes at the front, not on fresh ones further along each time.
void HttpFramer::make_room() {
  constexpr size_t kCheapMove = 1024;
  if (begin_ == 0 || (buf_.size() - end_ >= kReadBytes && end_ - begin_ > kCheapMove)) return;
  std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
}

ssize_t HttpFramer::read_from(int fd) {
  make_room();
  ssize_t n = ::read(fd, buf_.data() + end_, buf_.size() - end_);
  if (n < 0) return -errno;
  if (n == 0) {
    eof_ = true;
    return 0;
  }
  end_ += static_cast<size_t>(n);
  read_at_ = std::chrono::steady_clock::now();
  parse_ahead();
  return n;
}

size_t HttpFramer::feed(std::string_view bytes) {
  make_room();
  size_t n = std::min(bytes.size(), buf_.size() - end_);
  std::memcpy(buf_.data() + end_, bytes.data(), n);
  end_ += n;
  read_at_ = std::chrono::steady_clock::now();
  parse_ahead();
  return n;
}

HttpFramer::Piece HttpFramer::next(RequestText& request, Answer& refusal) {
  if (!have_) return Piece::None;
  Pending& handed = pieces_[ahead_];
  ahead_ ^= 1;
  have_ = false;
  owed_.push_back(handed.head);
  parse_ahead();
  if (handed.answer) {
    std::swap(refusal, handed.refusal);
    return Piece::Answer;
  }
  request = RequestText{};
  request.form = RequestText::Form::Route;
  request.kind = handed.kind;
  request.name = handed.name;
  request.body = handed.body;
  request.query = handed.query;
  request.has_key = handed.has_key;
  request.key = key_value(handed.key);
  return Piece::Request;
}

void HttpFramer::frame(const Answer& a, std::string& out) {
  // One response for each piece handed out, in order.
  assert(!owed_.empty());
  HttpResponseHead head = owed_.front();
  owed_.pop_front();
  if (head.status == 0) head.status = http_status_for_code(a.code);
  if (a.ok() && !a.stats) {
    // The usual answer's length is known before it is written: written
    // once, straight after its head.
    constexpr size_t kOk = std::string_view("{\"ok\":true}\n").size(), kResult = std::string_view(",\"result\":").size();
    size_t bytes = kOk + (a.has_result ? kResult + a.text.size() : 0);
    append_http_head(out, head, bytes);
    if (!head.head_only) {
      size_t before = out.size();
      append_answer(out, a, false);
      out += '\n';
      assert(out.size() - before == bytes);
      (void)before;
    }
    take_interim(out);
    return;
  }
  body_text_.clear();
  // The figures as Prometheus text, or the health they say; an answer that
  // is not the figures (a server without them) goes as it is.
  head.prometheus = head.prometheus && a.ok() && a.stats;
  if (head.prometheus) {
    prometheus_text(*a.stats, body_text_);
  } else if (head.health && a.ok() && a.stats) {
    if (!health_json(*a.stats, body_text_)) head.status = 503;
    body_text_ += '\n';
  } else {
    append_answer(body_text_, a, false);
    body_text_ += '\n';
  }
  append_http_head(out, head, body_text_.size());
  if (!head.head_only) out += body_text_;
  take_interim(out);
}

bool HttpFramer::take_interim(std::string& out) {
  if (!continue_owed_ || !owed_.empty()) return false;
  continue_owed_ = false;
  out += kContinue;
  return true;
}

bool HttpFramer::expire(std::chrono::steady_clock::time_point now) {
  if (!in_message_ || have_ || stop_ || now - started_ < timeout_) return false;
  refuse(408, fmt::format("the request did not arrive whole within {} s", timeout_.count() / 1000), true);
  return true;
}

// Runs the parser over what is buffered until a piece is ready or the
// bytes run out: one http_parser_execute a request when its bytes are all
// here. The request is routed in on_headers_complete and finished in
// on_message_complete, which pauses the parser so that it stops there
// (one request parsed ahead); a refusal at the headers pauses it too.
// The parser itself counts the request line and headers against
// kMaxHttpHeaderBytes (set_parser_header_limit).
void HttpFramer::parse_ahead() {
  while (!have_ && !stop_ && begin_ < end_) {
    if (!in_message_ && take_seen_head()) break;
    // A message that begins here and ends within this call can be kept
    // (remember_head); one that spans calls is not (the buffer may move).
    message_at_ = in_message_ ? kNowhere : begin_;
    body_at_ = kNowhere;
    begin_ += http_parser_execute(&parser_, &settings_, buf_.data() + begin_, end_ - begin_);
    http_errno e = HTTP_PARSER_ERRNO(&parser_);
    if (e == HPE_PAUSED) {
      http_parser_pause(&parser_, 0);
    } else if (e != HPE_OK) {
      if (body_too_long_) {
        refuse(413, fmt::format("the body is longer than {} bytes (--max-line)", max_body_bytes_), true);
      } else if (e == HPE_HEADER_OVERFLOW) {
        refuse(431, fmt::format("the request's headers are longer than {} bytes", kMaxHttpHeaderBytes), true);
      } else {
        refuse(400, fmt::format("not an HTTP/1.1 request: {}", http_errno_description(e)), true);
      }
    }
  }
  if (begin_ == end_) begin_ = end_ = 0;
}

int HttpFramer::on_message_begin(http_parser* p) {
  auto* f = static_cast<HttpFramer*>(p->data);
  f->in_message_ = true;
  f->started_ = f->read_at_;  // see read_at_
  f->url_.clear();
  f->next_piece().body.clear();
  f->next_piece().has_key = false;
  f->next_piece().key.clear();
  f->next_piece().query.clear();
  f->refuse_status_ = 0;
  f->keep_body_ = false;
  f->prometheus_ = false;
  f->health_ = false;
  f->header_name_size_ = 0;
  f->in_value_ = false;
  f->expect_.clear();
  f->body_bytes_ = 0;
  f->body_too_long_ = false;
  return 0;
}

int HttpFramer::on_url(http_parser* p, const char* at, size_t n) {
  auto* f = static_cast<HttpFramer*>(p->data);
  // Bounded by the header limit: the parser stops past it.
  if (f->url_.size() + n <= kMaxHttpHeaderBytes) f->url_.append(at, n);
  return 0;
}

// A header's name and value may each come in pieces (split across reads):
// a name piece after a value starts the next header. Of a name, the first
// kMaxHeaderName bytes are kept as they came; which header it is, is known
// once its value begins (names are compared ignoring ASCII case, and only
// when their length is one of the two looked for: most are neither).
int HttpFramer::on_header_field(http_parser* p, const char* at, size_t n) {
  static_assert(kMaxHeaderName > std::max(kIdempotencyHeader.size(), kExpectHeader.size()),
                "a longer name must not look like one compared");
  auto* f = static_cast<HttpFramer*>(p->data);
  if (f->in_value_) f->header_name_size_ = 0;
  f->in_value_ = false;
  size_t take = std::min(n, kMaxHeaderName - f->header_name_size_);
  std::memcpy(f->header_name_ + f->header_name_size_, at, take);
  f->header_name_size_ += take;
  return 0;
}

namespace {
// Whether `name` is `lower` (lower-case ASCII) ignoring ASCII case.
bool named(std::string_view name, std::string_view lower) {
  if (name.size() != lower.size()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (ascii_lower(name[i]) != lower[i]) return false;
  }
  return true;
}
}  // namespace

int HttpFramer::on_header_value(http_parser* p, const char* at, size_t n) {
  auto* f = static_cast<HttpFramer*>(p->data);
  Pending& next = f->next_piece();
  if (!f->in_value_) {
    std::string_view name = f->header_name();
    f->header_ = named(name, kIdempotencyHeader) ? Header::Key
                 : named(name, kExpectHeader)    ? Header::Expect
                                                 : Header::Other;
    if (f->header_ == Header::Key) {
      next.has_key = true;  // a second one replaces the first
      next.key.clear();
    }
  }
  f->in_value_ = true;
  // Bounded by the header limit: the parser stops past it.
  if (f->header_ == Header::Key && next.key.size() + n <= kMaxHttpHeaderBytes) next.key.append(at, n);
  // Lower-cased, as header names are: the expectation is case-insensitive.
  if (f->header_ == Header::Expect && f->expect_.size() + n <= kMaxHttpHeaderBytes) {
    for (size_t i = 0; i < n; ++i) f->expect_ += ascii_lower(at[i]);
  }
  return 0;
}

int HttpFramer::on_headers_complete(http_parser* p) {
  auto* f = static_cast<HttpFramer*>(p->data);
  f->headers_done();
  if (f->have_) http_parser_pause(p, 1);  // refused, and the connection closes: read no further
  return 0;
}

int HttpFramer::on_body(http_parser* p, const char* at, size_t n) {
  auto* f = static_cast<HttpFramer*>(p->data);
  if (f->body_bytes_ == 0 && f->message_at_ != kNowhere) f->body_at_ = static_cast<size_t>(at - f->buf_.data());
  f->body_bytes_ += n;
  if (f->body_bytes_ > f->max_body_bytes_) {
    f->body_too_long_ = true;
    return 1;  // stops the parser: refused, 413
  }
  if (f->keep_body_) f->next_piece().body.append(at, n);  // else dropped: a refused request's, or /schema's
  return 0;
}

int HttpFramer::on_message_complete(http_parser* p) {
  auto* f = static_cast<HttpFramer*>(p->data);
  f->message_done();
  http_parser_pause(p, 1);  // the next request stays unparsed until this one is taken
  return 0;
}

// The request line and headers are in: route it, and refuse a body that
// says it is over the limit before reading any of it.
void HttpFramer::headers_done() {
  if ((parser_.flags & F_CONTENTLENGTH) && parser_.content_length > max_body_bytes_) {
    refuse(413, fmt::format("the body is {} bytes; at most {} are taken (--max-line)", parser_.content_length,
                            max_body_bytes_),
           true);
    return;
  }
  // The body will be read (and, for a request refused below, dropped):
  // a client waiting to send it is told to. HTTP/1.0 has no 100 Continue
  // (RFC 9110, 10.1.1), so such a client is not waiting for one.
  continue_owed_ = parser_.http_major == 1 && parser_.http_minor >= 1 && key_value(expect_) == kContinueExpectation;
  if (route_again()) return;
  // An origin-form target without a query or fragment (what clients send:
  // `/events/transfer`) is its own path: the request line's parser has
  // checked its bytes as the URL parser would, and the URL parser would
  // only say that it is all path.
  if (!url_.empty() && url_[0] == '/' && url_.find('?') == std::string::npos && url_.find('#') == std::string::npos) {
    route(url_);
    return;
  }
  http_parser_url u;
  http_parser_url_init(&u);
  if (http_parser_parse_url(url_.data(), url_.size(), 0, &u) != 0 || !(u.field_set & (1 << UF_PATH))) {
    refuse_status_ = 400;
    refuse_message_ = fmt::format("`{}` is not a path", shown(url_));
    return;
  }
  std::string_view path = std::string_view(url_).substr(u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
  route(path);
  if (u.field_set & (1 << UF_QUERY)) {
    take_query_string(path, std::string_view(url_).substr(u.field_data[UF_QUERY].off, u.field_data[UF_QUERY].len));
  }
}

// A query's arguments may come in the query string (the Service reads
// them by the query's types: runtime/convert.h), and GET /stats and
// /metrics take `memory`; no other route takes one.
void HttpFramer::take_query_string(std::string_view path, std::string_view query) {
  if (refuse_status_ != 0) return;  // refused already (no route, a method it does not take)
  if (keep_body_ && next_piece().kind == RequestKind::Query) {
    next_piece().query.assign(query);
    last_url_.clear();  // routed again each time: the query string is the request's own
    return;
  }
  if (next_piece().kind == RequestKind::Stats && !health_) {
    if (query == "memory" || query == "memory=1" || query == "memory=true") {
      next_piece().name.assign("memory");  // Service::resolve: the memory breakdown walked
      return;
    }
    refuse_status_ = 400;
    refuse_message_ = fmt::format("{} takes one query string, `memory` (the breakdown of memory, a walk of every "
                                  "row), not `{}`", shown(path), shown(query));
    return;
  }
  refuse_status_ = 400;
  refuse_message_ = keep_body_ ? "an event's arguments go in the body, as a JSON object, not in the query string"
                               : fmt::format("{} takes no query string (only a query's arguments come in one)",
                                             shown(path));
}

// POST /events/NAME, GET|POST /queries/NAME, GET /schema, /stats and
// /metrics: what the request is, or a refusal.
void HttpFramer::route(std::string_view path) {
  auto method = static_cast<http_method>(parser_.method);
  // A name is printable ASCII (as the language's names are): anything else
  // is no route, and is never echoed as it came (an answer stays UTF-8).
  auto name_after = [&](std::string_view prefix, std::string_view& name) {
    if (path.substr(0, prefix.size()) != prefix) return false;
    name = path.substr(prefix.size());
    return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c > 0x20 && c < 0x7f && c != '/'; });
  };
  std::string_view name;
  bool event = name_after("/events/", name);
  bool query = !event && name_after("/queries/", name);
  bool schema = path == "/schema", stats = path == "/stats", metrics = path == "/metrics", health = path == "/health";
  // HEAD wherever GET (RFC 9110, 9.3.2): the same request, answered without a body.
  bool get = method == HTTP_GET || method == HTTP_HEAD;
  allow_ = event ? "POST" : query ? "GET, HEAD, POST" : "GET, HEAD";
  bool allowed = event ? method == HTTP_POST : query ? get || method == HTTP_POST : get;
  if (!event && !query && !schema && !stats && !metrics && !health) {
    refuse_status_ = 404;
    refuse_message_ = fmt::format("no route {} {}: the routes are POST /events/NAME, GET or POST /queries/NAME, "
                                  "GET /schema, GET /stats, GET /metrics and GET /health (HEAD wherever GET)",
                                  http_method_str(method), shown(path));
  } else if (!allowed) {
    refuse_status_ = 405;
    refuse_message_ = fmt::format("{} takes {}, not {}", shown(path), allow_, http_method_str(method));
  } else if (schema) {
    next_piece().kind = RequestKind::Schema;
  } else if (stats || metrics || health) {
    next_piece().kind = RequestKind::Stats;
    next_piece().name.clear();  // "memory" when the query string asks (take_query_string)
    prometheus_ = metrics;
    health_ = health;
  } else {
    next_piece().kind = event ? RequestKind::Event : RequestKind::Query;
    next_piece().name.assign(name);
    keep_body_ = true;
    last_method_ = parser_.method;
    last_url_ = url_;
    last_kind_ = next_piece().kind;
    last_name_ = next_piece().name;
  }
}

// The same method and target as the last event or query routed: the same
// request (and route() would say so again).
bool HttpFramer::route_again() {
  if (parser_.method != last_method_ || url_ != last_url_) return false;
  next_piece().kind = last_kind_;
  next_piece().name = last_name_;
  keep_body_ = true;
  return true;
}

// The request is whole: its request line is finished (or its refusal
// formed), and it is the next piece.
void HttpFramer::message_done() {
  in_message_ = false;
  continue_owed_ = false;  // the body is here: nothing to wait for
  bool keep_alive = http_should_keep_alive(&parser_) != 0 && !parser_.upgrade;
  bool head_only = parser_.method == HTTP_HEAD;
  if (refuse_status_ != 0) {
    refuse(refuse_status_, refuse_message_, !keep_alive);
    if (refuse_status_ == 405) next_piece().head.allow = allow_;
    next_piece().head.head_only = head_only;
    return;
  }
  if (!keep_body_) {  // the schema and stats routes take no arguments, nor a key
    next_piece().body.clear();
    next_piece().has_key = false;
  }
  next_piece().answer = false;
  next_piece().head = HttpResponseHead{};
  next_piece().head.close = !keep_alive;
  next_piece().head.keep_alive_header = keep_alive && parser_.http_major == 1 && parser_.http_minor == 0;
  next_piece().head.prometheus = prometheus_;
  next_piece().head.health = health_;
  next_piece().head.head_only = head_only;
  have_ = true;
  stop_ = !keep_alive;
  remember_head();
}

// After a request the parser read whole in one call: its head is kept if
// a request beginning with the same bytes is necessarily the same request
// (the class comment says which), replacing the oldest kept.
void HttpFramer::remember_head() {
  const Pending& made = next_piece();
  bool plain = keep_body_ && made.query.empty() && !made.head.head_only && !made.head.close &&
               !made.head.keep_alive_header && !made.head.prometheus &&
               parser_.http_major == 1 && parser_.http_minor == 1 && (parser_.flags & F_CONTENTLENGTH) &&
               expect_.empty() && body_bytes_ > 0;  // (no chunked body: http-parser refuses one with a length)
  if (!reuse_heads_ || !plain || message_at_ == kNowhere || body_at_ == kNowhere) return;
  assert(message_at_ < body_at_ && body_at_ + body_bytes_ <= end_);  // (begin_ moves past it after the call)
  std::string_view head(buf_.data() + message_at_, body_at_ - message_at_);
  if (head.size() > kMaxSeenHead) return;
  for (size_t i = 0; i < seen_count_; ++i) {
    if (seen_[i].bytes == head) return;  // kept already (its body was not whole when it came)
  }
  SeenHead& s = seen_[seen_next_];
  seen_next_ = (seen_next_ + 1) % kSeenHeads;
  if (seen_count_ < kSeenHeads) ++seen_count_;
  s.bytes.assign(head);
  s.body_bytes = body_bytes_;
  s.kind = made.kind;
  s.name = made.name;
  s.has_key = made.has_key;
  s.key = made.key;
}

// The next request, when it begins with a kept head and its whole body is
// here: made as the parser made it the first time, with this body.
bool HttpFramer::take_seen_head() {
  std::string_view ahead(buf_.data() + begin_, end_ - begin_);
  for (size_t i = 0; i < seen_count_; ++i) {
    const SeenHead& s = seen_[i];
    if (ahead.size() < s.bytes.size() + s.body_bytes || ahead.substr(0, s.bytes.size()) != s.bytes) continue;
    Pending& next = next_piece();
    next.answer = false;
    next.kind = s.kind;
    next.name = s.name;
    next.has_key = s.has_key;
    next.key = s.key;
    next.body.assign(ahead.substr(s.bytes.size(), s.body_bytes));
    next.query.clear();
    next.head = HttpResponseHead{};
    begin_ += s.bytes.size() + s.body_bytes;
    have_ = true;
    ++heads_reused_;
    return true;
  }
  return false;
}

void HttpFramer::refuse(int status, std::string_view message, bool close) {
  next_piece().refusal.reset();
  next_piece().refusal.fail(Code::BadRequest, message);
  next_piece().answer = true;
  next_piece().head = HttpResponseHead{};
  next_piece().head.status = status;
  next_piece().head.close = close;
  have_ = true;
  stop_ = close;
  in_message_ = false;
  continue_owed_ = false;
}

// ---- the client side ----------------------------------------------------------------

namespace {
// Whether a key can go in a header as a quoted string: printable ASCII,
// no quote or backslash (which a structured-field string would escape).
bool header_safe(std::string_view key) {
  for (char c : key) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}
}  // namespace

bool http_request_for_line(std::string_view line, std::string_view host, std::string& out, std::string& error) {
  JsonDoc doc;
  if (!doc.parse(line, error)) return false;
  if (doc.node(doc.root()).kind != JsonNode::Kind::Object) {
    error = "a request is a JSON object";
    return false;
  }
  if (doc.member(doc.root(), "id")) {
    error = "a request over HTTP has no `id` (its answer is the response to it)";
    return false;
  }
  std::string path, body;
  const char* method = "POST";
  uint32_t args = doc.member(doc.root(), "args");
  if (args) body = doc.node(args).raw;
  if (uint32_t e = doc.member(doc.root(), "event"); e && doc.node(e).kind == JsonNode::Kind::String) {
    path = "/events/" + std::string(doc.node(e).str);
  } else if (uint32_t q = doc.member(doc.root(), "query"); q && doc.node(q).kind == JsonNode::Kind::String) {
    path = "/queries/" + std::string(doc.node(q).str);
  } else if (doc.member(doc.root(), "schema") && !args) {
    path = "/schema";
    method = "GET";
  } else if (doc.member(doc.root(), "stats") && !args) {
    path = "/stats";
    method = "GET";
  } else {
    error = "over HTTP a request is an `event` or a `query` (a string), with its `args`, `schema` or `stats`";
    return false;
  }
  std::string key_header;
  if (uint32_t k = doc.member(doc.root(), "key"); k) {
    if (doc.node(k).kind != JsonNode::Kind::String || !header_safe(doc.node(k).str)) {
      error = "over HTTP a `key` is a string of printable ASCII (it goes in the Idempotency-Key header)";
      return false;
    }
    key_header = fmt::format("Idempotency-Key: \"{}\"\r\n", doc.node(k).str);
  }
  out += fmt::format("{} {} HTTP/1.1\r\nHost: {}\r\n{}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                     method, path, host, key_header, body.size());
  out += body;
  return true;
}

HttpAnswerReader::HttpAnswerReader() {
  set_parser_header_limit();
  http_parser_init(&parser_, HTTP_RESPONSE);
  parser_.data = this;
  http_parser_settings_init(&settings_);
  settings_.on_body = on_body;
  settings_.on_message_complete = on_message_complete;
}

int HttpAnswerReader::on_body(http_parser* p, const char* at, size_t n) {
  static_cast<HttpAnswerReader*>(p->data)->body_.append(at, n);
  return 0;
}

int HttpAnswerReader::on_message_complete(http_parser* p) {
  auto* r = static_cast<HttpAnswerReader*>(p->data);
  // An interim response (100 Continue) answers nothing: the final one follows.
  if (p->status_code >= 100 && p->status_code < 200) return 0;
  r->done_.emplace_back(static_cast<int>(p->status_code), std::move(r->body_));
  r->body_.clear();
  return 0;
}

bool HttpAnswerReader::feed(std::string_view bytes, std::string& error) {
  size_t n = http_parser_execute(&parser_, &settings_, bytes.data(), bytes.size());
  if (HTTP_PARSER_ERRNO(&parser_) != HPE_OK || n != bytes.size()) {
    error = fmt::format("not an HTTP response: {}", http_errno_description(HTTP_PARSER_ERRNO(&parser_)));
    return false;
  }
  return true;
}

bool HttpAnswerReader::next(int& status, std::string& body) {
  if (done_.empty()) return false;
  status = done_.front().first;
  body = std::move(done_.front().second);
  done_.pop_front();
  return true;
}

}  // namespace aup::runtime
