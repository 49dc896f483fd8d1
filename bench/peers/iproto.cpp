#include "bench/peers/iproto.h"

#include <chrono>
#include <stdexcept>

#include "bench/peers/msgpack.h"

namespace aup::bench::peers::iproto {

namespace {

// The keys and codes of the IPROTO specification that these packets use.
constexpr uint64_t kRequestType = 0x00;
constexpr uint64_t kSync = 0x01;
constexpr uint64_t kCall = 0x0a;  // IPROTO_CALL: results as the function returned them
constexpr uint64_t kFunctionName = 0x22;
constexpr uint64_t kTuple = 0x21;
constexpr uint64_t kData = 0x30;
constexpr uint64_t kError24 = 0x31;
constexpr size_t kGreetingBytes = 128;
constexpr auto kAnswerLimit = std::chrono::seconds(30);

// The header map, then the body map into `r`.
void parse_packet(std::string_view packet, Response& r) {
  msgpack::Reader in(packet);
  for (uint32_t n = in.map(); n > 0; --n) {
    int64_t key = in.integer();
    if (key == static_cast<int64_t>(kRequestType)) {
      r.code = static_cast<uint64_t>(in.integer());
    } else if (key == static_cast<int64_t>(kSync)) {
      r.sync = static_cast<uint64_t>(in.integer());
    } else {
      in.skip();
    }
  }
  if (in.at_end()) return;  // a body is optional
  for (uint32_t n = in.map(); n > 0; --n) {
    int64_t key = in.integer();
    size_t begin = in.offset();
    if (key == static_cast<int64_t>(kError24)) {
      r.error = in.str();
    } else {
      in.skip();
      if (key == static_cast<int64_t>(kData)) r.data = packet.substr(begin, in.offset() - begin);
    }
  }
}

// Sends a CALL and reads its one answer on a connection of one caller.
Response exchange(Stream& s, const std::string& packet) {
  s.send(packet);
  for (;;) {
    size_t used = 0;
    std::optional<Response> r = parse(s.input(), used);
    if (r) {
      s.consume(used);
      return std::move(*r);
    }
    s.fill();
  }
}

}  // namespace

std::string call_packet(uint64_t sync, std::string_view function, std::string_view args) {
  std::string out(5, '\0');  // the length, patched below
  msgpack::put_map(out, 2);
  msgpack::put_uint(out, kRequestType);
  msgpack::put_uint(out, kCall);
  msgpack::put_uint(out, kSync);
  msgpack::put_uint(out, sync);
  msgpack::put_map(out, 2);
  msgpack::put_uint(out, kFunctionName);
  msgpack::put_str(out, function);
  msgpack::put_uint(out, kTuple);
  out += args;
  msgpack::patch_uint32(out, 0, static_cast<uint32_t>(out.size() - 5));
  return out;
}

std::optional<Response> parse(std::string_view in, size_t& used) {
  if (in.empty()) return std::nullopt;
  // The length is a MessagePack uint of 1, 2, 3, 5 or 9 bytes.
  uint8_t first = static_cast<uint8_t>(in[0]);
  size_t prefix = first < 0x80 ? 1 : first == 0xcc ? 2 : first == 0xcd ? 3 : first == 0xce ? 5 : first == 0xcf ? 9 : 0;
  if (prefix == 0) throw std::runtime_error("not an IPROTO packet: it starts with byte " + std::to_string(first));
  if (in.size() < prefix) return std::nullopt;
  msgpack::Reader length(in.substr(0, prefix));
  uint64_t n = static_cast<uint64_t>(length.integer());
  if (in.size() - prefix < n) return std::nullopt;
  Response r;
  parse_packet(in.substr(prefix, n), r);
  used = prefix + n;
  return r;
}

void read_greeting(Stream& s) {
  while (s.input().size() < kGreetingBytes) s.fill();
  if (s.input().substr(0, 9) != "Tarantool") {
    throw std::runtime_error("not a Tarantool greeting: " + std::string(s.input().substr(0, 64)));
  }
  s.consume(kGreetingBytes);
}

Connection::Connection(const std::string& socket) : stream_(socket) { read_greeting(stream_); }

Response Connection::call(std::string_view function, std::string_view args) {
  return exchange(stream_, call_packet(next_sync_++, function, args));
}

void Connection::pipeline(std::string_view function, const std::vector<std::string>& args) {
  std::string packets;
  for (const std::string& a : args) packets += call_packet(next_sync_++, function, a);
  stream_.send(packets);
  for (size_t answered = 0; answered < args.size();) {
    size_t used = 0;
    std::optional<Response> r = parse(stream_.input(), used);
    if (!r) {
      stream_.fill();
      continue;
    }
    stream_.consume(used);
    if (!r->ok()) throw std::runtime_error("tarantool: " + std::string(function) + " failed: " + r->error);
    ++answered;
  }
}

// No receive timeout on the shared socket: between runs of calls it is
// idle; each caller bounds its own wait instead.
SharedConnection::SharedConnection(const std::string& socket) : stream_(socket, 0) {
  read_greeting(stream_);
  reader_ = std::thread([this] { read_responses(); });
}

SharedConnection::~SharedConnection() {
  stream_.shut_down();
  reader_.join();
}

void SharedConnection::read_responses() {
  try {
    for (;;) {
      size_t used = 0;
      std::optional<Response> r = parse(stream_.input(), used);
      if (!r) {
        stream_.fill();
        continue;
      }
      stream_.consume(used);
      std::lock_guard<std::mutex> lock(mu_);
      auto it = waiting_.find(r->sync);
      if (it == waiting_.end()) throw std::runtime_error("a response to no request: sync " + std::to_string(r->sync));
      it->second->response = std::move(*r);
      it->second->done.notify_one();
      waiting_.erase(it);
    }
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    failure_ = e.what();
    for (auto& [sync, waiter] : waiting_) waiter->done.notify_one();
  }
}

Response SharedConnection::call(std::string_view function, std::string_view args) {
  Waiter me;
  uint64_t sync = 0;
  {
    // Registered before it is sent, so the reader always finds its caller.
    std::lock_guard<std::mutex> lock(mu_);
    if (!failure_.empty()) throw std::runtime_error("the shared connection failed: " + failure_);
    sync = next_sync_++;
    waiting_[sync] = &me;
  }
  std::string packet = call_packet(sync, function, args);
  try {
    std::lock_guard<std::mutex> lock(write_mu_);
    stream_.send(packet);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.erase(sync);  // `me` is going away
    throw;
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (!me.done.wait_for(lock, kAnswerLimit, [&] { return me.response || !failure_.empty(); })) {
    waiting_.erase(sync);
    throw std::runtime_error("no answer on the shared connection within 30 s");
  }
  if (!me.response) {
    waiting_.erase(sync);
    throw std::runtime_error("the shared connection failed: " + failure_);
  }
  return std::move(*me.response);
}

}  // namespace aup::bench::peers::iproto
