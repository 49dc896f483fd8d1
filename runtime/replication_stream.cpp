#include "runtime/replication_stream.h"

#include <fmt/format.h>
#include <xxhash.h>

#include "storage/log_format.h"
#include "vm/bytes.h"

namespace aup::runtime::stream {

using bytes::get_u32;
using bytes::get_u64;
using bytes::put_u32;
using bytes::put_u64;

void put_frame(std::vector<uint8_t>& out, const Frame& f) {
  size_t at = out.size();
  out.resize(at + kFrameHeaderBytes + f.payload.size(), 0);
  uint8_t* h = out.data() + at;
  h[0] = static_cast<uint8_t>(f.kind);
  put_u32(h + 4, f.term);
  put_u32(h + 8, static_cast<uint32_t>(f.payload.size()));
  put_u64(h + 16, f.save);
  put_u64(h + 24, f.prev);
  if (!f.payload.empty()) put_u64(h + 32, XXH3_64bits(f.payload.data(), f.payload.size()));
  if (!f.payload.empty()) std::copy(f.payload.begin(), f.payload.end(), h + kFrameHeaderBytes);
}

namespace {

// The most a frame of kind `kind` may carry, or 0 for none.
uint64_t payload_limit(uint8_t kind) {
  switch (kind) {
    case 'E': return storage::log_format::kMaxPayloadBytes;
    case 'F': return 255;  // a store file's name
    case 'D': return kCopyChunkBytes;
    default: return 0;
  }
}

}  // namespace

bool take_frame(const std::vector<uint8_t>& in, size_t& at, Frame& f, std::string& why) {
  why.clear();
  if (in.size() - at < kFrameHeaderBytes) return false;
  const uint8_t* h = in.data() + at;
  uint8_t kind = h[0];
  if (std::string_view("EBFDCA").find(static_cast<char>(kind)) == std::string_view::npos) {
    why = fmt::format("a frame of unknown kind {}", kind);
    return false;
  }
  uint32_t len = get_u32(h + 8);
  if (len > payload_limit(kind)) {
    why = fmt::format("a frame whose payload length {} cannot be", len);
    return false;
  }
  if (in.size() - at - kFrameHeaderBytes < len) return false;
  f.kind = static_cast<Kind>(kind);
  f.term = get_u32(h + 4);
  f.save = get_u64(h + 16);
  f.prev = get_u64(h + 24);
  f.digest = get_u64(h + 32);
  f.payload = std::span<const uint8_t>(h + kFrameHeaderBytes, len);
  if (len > 0 && XXH3_64bits(f.payload.data(), len) != f.digest) {
    why = f.kind == Kind::Entry ? fmt::format("entry {}'s payload does not match its digest", f.save)
                                : std::string("a copy's frame whose payload does not match its digest");
    return false;
  }
  at += kFrameHeaderBytes + len;
  return true;
}

std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s += kDigits[b >> 4];
    s += kDigits[b & 15];
  }
  return s;
}

bool from_hex(std::string_view hex, std::vector<uint8_t>& out) {
  if (hex.size() % 2) return false;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  out.clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    int hi = digit(hex[i]), lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return true;
}

std::string handshake_line(const Hello& h) {
  std::string terms;
  for (const storage::TermStart& t : h.terms.starts()) {
    terms += fmt::format("{}[{},{}]", terms.empty() ? "" : ",", t.term, t.first_save);
  }
  std::string node;
  if (!h.node.empty()) {
    node = ",\"node\":";
    json_append_string(node, h.node);
  }
  return fmt::format(R"({{"replicate":{{"save":{},"covered":{},"terms":[{}],"schema":"{}","copy":{}{}}}}})", h.save,
                     h.covered, terms, to_hex(h.schema), h.copy ? "true" : "false", node);
}

namespace {

bool whole(const JsonNode& v, double max) {
  return v.kind == JsonNode::Kind::Number && v.num >= 0 && v.num <= max &&
         v.num == static_cast<double>(static_cast<uint64_t>(v.num));
}

// `terms`: [[TERM, FIRST_SAVE], ...], a history as storage/terms.h has it.
bool read_terms(const JsonDoc& doc, uint32_t node, storage::TermHistory& out) {
  const JsonNode& list = doc.node(node);
  if (list.kind != JsonNode::Kind::Array) return false;
  std::string text;
  for (uint32_t i = 0, k = doc.first_child(node); i < list.count; ++i, k = doc.after(k)) {
    const JsonNode& pair = doc.node(k);
    if (pair.kind != JsonNode::Kind::Array || pair.count != 2) return false;
    uint32_t t = doc.first_child(k), f = doc.after(t);
    if (!whole(doc.node(t), UINT32_MAX) || !whole(doc.node(f), 9007199254740992.0)) return false;
    text += fmt::format("{} {}\n", static_cast<uint64_t>(doc.node(t).num), static_cast<uint64_t>(doc.node(f).num));
  }
  return storage::TermHistory::decode(text, "`terms`", out).ok();
}

}  // namespace

bool read_hello(const JsonDoc& doc, uint32_t object, Hello& out, std::string& why) {
  out = Hello();
  const JsonNode& obj = doc.node(object);
  uint32_t seen = 0;
  uint32_t k = doc.first_child(object);
  for (uint32_t i = 0; i < obj.count; ++i, k = doc.after(k + 1)) {
    std::string_view name = doc.node(k).str;
    const JsonNode& v = doc.node(k + 1);
    bool ok = name == "save"      ? whole(v, 9007199254740992.0) && ((out.save = static_cast<uint64_t>(v.num)), true)
              : name == "covered" ? whole(v, 9007199254740992.0) && ((out.covered = static_cast<uint64_t>(v.num)), true)
              : name == "terms"   ? read_terms(doc, k + 1, out.terms)
              : name == "schema"  ? v.kind == JsonNode::Kind::String && from_hex(v.str, out.schema)
              : name == "copy"    ? (v.kind == JsonNode::Kind::True || v.kind == JsonNode::Kind::False) &&
                                     ((out.copy = v.kind == JsonNode::Kind::True), true)
              : name == "node"    ? v.kind == JsonNode::Kind::String && !v.str.empty() &&
                                     ((out.node = std::string(v.str)), true)
                                  : false;
    if (!ok) {
      why = fmt::format("`replicate` has `save`, `covered` (whole numbers), `terms` ([[TERM, FIRST_SAVE], ...], "
                        "increasing), `schema` (hex), `copy` (true or false) and perhaps `node` (a name); not `{}` "
                        "as given",
                        name);
      return false;
    }
    seen |= name == "save" ? 1 : name == "covered" ? 2 : name == "terms" ? 4 : name == "schema" ? 8 : name == "copy" ? 16 : 0;
  }
  if (seen != 31) {
    why = "`replicate` needs `save`, `covered`, `terms`, `schema` and `copy`";
    return false;
  }
  return true;
}

}  // namespace aup::runtime::stream
