#include "storage/image.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <xxhash.h>

#include <cassert>
#include <cstring>
#include <span>

#include "storage/codec.h"
#include "storage/file_io.h"
#include "storage/image_format.h"
#include "storage/key_values.h"
#include "storage/schema_codec.h"
#include "vm/bytes.h"

namespace aup::storage {

namespace imf = image_format;

std::string table_image_path(const std::string& dir, const std::string& table) { return dir + "/image-" + table; }
std::string vars_image_path(const std::string& dir) { return dir + "/image.vars"; }

namespace {

// The header's fields that vary from image to image; the rest (magic,
// version, size, reserved) are image_format.h's constants.
struct ImageHeader {
  uint32_t version = imf::kFirstVersion;
  uint64_t seq = 0;
  uint64_t rows = 0;
  uint64_t body_bytes = 0;
  uint8_t kind = 0;
};

uint64_t header_sum(const uint8_t* h) { return XXH3_64bits(h, imf::kHeaderSumAt); }

void encode_header(const ImageHeader& f, uint8_t (&h)[imf::kHeaderBytes]) {
  std::memset(h, 0, sizeof h);
  std::memcpy(h, imf::kMagic, sizeof imf::kMagic);
  bytes::put_u32(h + imf::kVersionAt, f.version);
  bytes::put_u32(h + imf::kHeaderSizeAt, imf::kHeaderBytes);
  bytes::put_u64(h + imf::kSeqAt, f.seq);
  bytes::put_u64(h + imf::kRowsAt, f.rows);
  bytes::put_u64(h + imf::kBodyBytesAt, f.body_bytes);
  h[imf::kKindAt] = f.kind;
  bytes::put_u64(h + imf::kHeaderSumAt, header_sum(h));
}

// Checks the magic, the version and the header checksum of `h` (the
// file's first kHeaderBytes).
Status decode_header(const std::string& path, const uint8_t* h, ImageHeader& f) {
  if (std::memcmp(h, imf::kMagic, sizeof imf::kMagic) != 0) {
    return Status::error(fmt::format("{} is damaged or not an aup image: no image magic at byte 0", path));
  }
  f.version = bytes::get_u32(h + imf::kVersionAt);
  if (f.version < imf::kFirstVersion || f.version > imf::kLastVersion) {
    return Status::error(fmt::format("{} has image format {} at byte {}, this aup reads {} and {}", path, f.version,
                                     imf::kVersionAt, imf::kFirstVersion, imf::kLastVersion));
  }
  if (bytes::get_u64(h + imf::kHeaderSumAt) != header_sum(h)) {
    return Status::error(fmt::format("{} is damaged: header checksum mismatch at byte {}", path, imf::kHeaderSumAt));
  }
  f.seq = bytes::get_u64(h + imf::kSeqAt);
  f.rows = bytes::get_u64(h + imf::kRowsAt);
  f.body_bytes = bytes::get_u64(h + imf::kBodyBytesAt);
  f.kind = h[imf::kKindAt];
  return Status::good();
}

// Whether header bytes `h` decode as exactly `f`: a header that did not
// would make the next open refuse the image, and the store with it.
[[maybe_unused]] bool reads_back_as(const uint8_t* h, const ImageHeader& f) {
  ImageHeader back;
  return decode_header("the image header being written", h, back).ok() && back.version == f.version &&
         back.seq == f.seq && back.rows == f.rows && back.body_bytes == f.body_bytes && back.kind == f.kind;
}

std::string err_text(int e) { return std::strerror(e); }

constexpr DurablePoints kImagePoints{"image.before_fsync", "image.before_rename", "image.after_rename",
                                     "image.after_dir_sync"};

// An image being written into its `.new` file (write_file_durably opened
// it and syncs and renames it once it is whole): the body goes out in
// steps, each handed to the device (sync_file_range) so the closing fsync
// waits for little; then the trailer, and the header last.
class ImageFile {
 public:
  ImageFile(Io& io, int fd, const std::string& tmp) : io_(io), fd_(fd), tmp_(tmp) {
    state_ = XXH3_createState();
    XXH3_64bits_reset(state_);
  }
  ~ImageFile() { XXH3_freeState(state_); }
  ImageFile(const ImageFile&) = delete;
  ImageFile& operator=(const ImageFile&) = delete;

  std::vector<uint8_t>& buffer() { return buf_; }
  // Writes the buffer out once it holds a step's worth (or `force`).
  Status flush(bool force) {
    // The body is written contiguously after the header: the trailer, and
    // the header's length, depend on it.
    assert(at_ == imf::kHeaderBytes + body_);
    if (buf_.empty() || (!force && buf_.size() < imf::kStepBytes)) return Status::good();
    XXH3_64bits_update(state_, buf_.data(), buf_.size());
    Status st = write_all(io_, fd_, buf_.data(), buf_.size(), at_, tmp_);
    if (!st.ok()) return st;
    if (int rc = io_.sync_file_range(fd_, static_cast<off_t>(at_), static_cast<off_t>(buf_.size())); rc < 0) {
      return Status::error(fmt::format("cannot flush {}: {}", tmp_, err_text(-rc)), -rc);
    }
    at_ += buf_.size();
    body_ += buf_.size();
    buf_.clear();
    io_.point("image.body_step");  // part of the body in the .new, its header not yet
    return Status::good();
  }
  // The rest of the body, the trailer, then the header (its body length
  // is known only now). `total`: the file's bytes.
  Status finish(const ImageHeader& header, uint64_t& total) {
    Status st = flush(true);
    if (!st.ok()) return st;
    uint8_t trailer[imf::kDigestBytes];
    bytes::put_u64(trailer, XXH3_64bits_digest(state_));
    st = write_all(io_, fd_, trailer, sizeof trailer, at_, tmp_);
    if (!st.ok()) return st;
    uint8_t head[imf::kHeaderBytes];
    ImageHeader h = header;
    assert(h.body_bytes == 0);  // the body's length is this file's to say
    h.body_bytes = body_;
    encode_header(h, head);
    assert(reads_back_as(head, h));  // checked right before it goes to disk
    st = write_all(io_, fd_, head, sizeof head, 0, tmp_);
    if (!st.ok()) return st;
    total = imf::kHeaderBytes + body_ + imf::kDigestBytes;
    assert(total == at_ + imf::kDigestBytes);  // the file ends right after the trailer
    return Status::good();
  }

 private:
  Io& io_;
  int fd_;
  const std::string& tmp_;
  uint64_t at_ = imf::kHeaderBytes;
  uint64_t body_ = 0;
  std::vector<uint8_t> buf_;
  XXH3_state_t* state_;
};

// Reads a whole image file and checks its header and digest; `body` is the
// part between them.
Status load(Io& io, const std::string& path, uint8_t want_kind, std::vector<uint8_t>& bytes,
            ImageRead& info, std::span<const uint8_t>& body, uint32_t& version) {
  Status st = read_file(io, path, bytes);
  if (!st.ok()) return st;  // an I/O error, not damage: the open exits 2, not 1
  if (bytes.size() < imf::kHeaderBytes + imf::kDigestBytes) {
    return Status::error(fmt::format("{} is damaged: it ends at byte {}, shorter than an empty image ({} bytes)", path,
                                     bytes.size(), imf::kHeaderBytes + imf::kDigestBytes));
  }
  const uint8_t* h = bytes.data();
  ImageHeader head;
  if (st = decode_header(path, h, head); !st.ok()) return st;
  info = ImageRead{};  // the caller's may hold an earlier read's columns
  version = head.version;
  info.seq = head.seq;
  info.rows = head.rows;
  uint64_t body_len = head.body_bytes;
  if (head.kind != want_kind) {
    return Status::error(
        fmt::format("{} is not the kind of image expected (kind {} at byte {})", path, head.kind, imf::kKindAt));
  }
  uint64_t holds = bytes.size() - imf::kHeaderBytes - imf::kDigestBytes;
  if (body_len != holds) {
    return Status::error(fmt::format("{} is damaged: the header promises {} bytes of rows, the file holds {} "
                                     "(it ends at byte {})",
                                     path, body_len, holds, bytes.size()));
  }
  body = std::span<const uint8_t>(h + imf::kHeaderBytes, body_len);
  if (XXH3_64bits(body.data(), body.size()) != bytes::get_u64(h + imf::kHeaderBytes + body_len)) {
    return Status::error(fmt::format("{} is damaged: the digest at byte {} does not match its body, bytes {}..{}",
                                     path, imf::kHeaderBytes + body_len, imf::kHeaderBytes,
                                     imf::kHeaderBytes + body_len - 1));
  }
  info.bytes = bytes.size();
  return Status::good();
}

// The rows of an image must come in ascending key order, as the tree
// compares keys: a number by its order image, a text by its bytes, a
// composite key by its encoding (vm/key.h, made here into a buffer kept
// from row to row rather than a heap text per row).
class KeyOrder {
 public:
  explicit KeyOrder(const TableSchema& t) : spec_(key_spec(t)) {}
  // Whether `row`'s key is above the previous row's (the first row's
  // always is).
  bool next(const uint64_t* row) {
    bool above = false;
    if (!spec_.composite() && !spec_.text(0)) {
      uint64_t ord = vm::num_order(std::bit_cast<double>(row[spec_.fields[0]]));
      above = first_ || last_ord_ < ord;
      last_ord_ = ord;
    } else {
      encode(row);
      above = first_ || std::string_view(last_) < std::string_view(current_);
      std::swap(last_, current_);
    }
    first_ = false;
    return above;
  }

 private:
  void encode(const uint64_t* row) {
    auto n = static_cast<uint32_t>(spec_.fields.size());
    if (n == 1) {
      current_.assign(reinterpret_cast<const vm::TextObj*>(row[spec_.fields[0]])->view());
      return;
    }
    uint64_t parts[vm::kMaxKeyFields];
    for (uint32_t i = 0; i < n; ++i) parts[i] = row[spec_.fields[i]];
    current_.resize(vm::key_bytes(parts, n, spec_.text_mask));
    vm::encode_key(parts, n, spec_.text_mask, current_.data());
  }

  vm::KeySpec spec_;
  bool first_ = true;
  uint64_t last_ord_ = 0;
  std::string last_, current_;
};

void release_texts(const TableSchema& layout, const uint64_t* slots) {
  for (uint32_t f = 0; f < layout.fields.size(); ++f) {
    if (layout.fields[f].type == FieldType::Text) vm::release(reinterpret_cast<vm::TextObj*>(slots[f]));
  }
}

}  // namespace

Status write_table_image(Io& io, const std::string& dir, const TableSchema& t, const vm::BTree& tree,
                         const vm::Node* root, uint64_t seq, ImageWritten& out) {
  uint32_t version = table_format(t);
  const std::vector<uint32_t> order = field_write_order(t);
  uint64_t rows = 0;
  auto fill = [&](int fd, const std::string& tmp) {
    ImageFile file(io, fd, tmp);
    Encoder head(file.buffer());
    encode_table_schema(head, t, version);
    Status st;
    tree.for_each(root, [&](const vm::Key&, const uint64_t* row) {
      if (!st.ok()) return;
      Encoder e(file.buffer());
      for (uint32_t f : order) e.value(t.fields[f].type, row[f]);
      ++rows;
      st = file.flush(false);
    });
    if (!st.ok()) return st;
    // The header's row count is every row of the snapshot: a count that
    // said fewer would drop the rest at the next open, one that said more
    // would have it refuse the image.
    assert(rows == vm::BTree::rows_under(root));
    return file.finish(ImageHeader{version, seq, rows, 0, imf::kTable}, out.bytes);
  };
  Status st = write_file_durably(io, dir, "image-" + t.name, {}, DurableWrite{kImagePoints, fill});
  out.rows = rows;
  return st;
}

Status write_vars_image(Io& io, const std::string& dir, const Schema& schema, const std::vector<uint64_t>& values,
                        uint64_t seq, ImageWritten& out) {
  assert(values.size() == schema.vars.size());  // a value for every var, in the schema's order
  auto fill = [&](int fd, const std::string& tmp) {
    ImageFile file(io, fd, tmp);
    Encoder e(file.buffer());
    e.varint(schema.vars.size());
    for (size_t i = 0; i < schema.vars.size(); ++i) {
      encode_var_schema(e, schema.vars[i]);
      e.value(schema.vars[i].type, values[i]);
    }
    return file.finish(ImageHeader{imf::kFirstVersion, seq, schema.vars.size(), 0, imf::kVars}, out.bytes);
  };
  Status st = write_file_durably(io, dir, "image.vars", {}, DurableWrite{kImagePoints, fill});
  out.rows = schema.vars.size();
  return st;
}

Status read_table_image(Io& io, const std::string& path, ImageRead& info,
                        const std::function<Status(uint64_t* row)>& row_fn) {
  std::vector<uint8_t> bytes;
  std::span<const uint8_t> body;
  uint32_t version = 0;
  Status st = load(io, path, imf::kTable, bytes, info, body, version);
  if (!st.ok()) return st;
  Decoder d(body.data(), body.size(), imf::kHeaderBytes);
  if (!decode_table_schema(d, info.table, version)) {
    return Status::error(fmt::format("{} is damaged: its column list does not decode (byte {}): {}", path,
                                     d.error_offset(), d.problem()));
  }
  const TableSchema& t = info.table;
  const std::vector<uint32_t> order = field_write_order(t);
  std::vector<uint64_t> row(t.fields.size());
  KeyOrder keys(t);
  for (uint64_t r = 0; r < info.rows; ++r) {
    size_t at = d.offset();
    for (uint32_t f : order) row[f] = d.value(t.fields[f].type);
    // The key only once the row decoded: a text that did not is null.
    if (!d.ok() || !keys.next(row.data())) {
      release_texts(t, row.data());
      if (!d.ok()) {
        return Status::error(fmt::format("{} is damaged: row {} does not decode (byte {}): {}", path, r, at, d.error()));
      }
      return Status::error(fmt::format("{} is damaged: row {} is out of key order (byte {})", path, r, at));
    }
    st = row_fn(row.data());
    if (!st.ok()) return st;
  }
  if (!d.done()) {
    return Status::error(fmt::format("{} is damaged: bytes after the last row (byte {})", path, d.offset()));
  }
  return Status::good();
}

Status read_vars_image(Io& io, const std::string& path, ImageRead& info,
                       const std::function<void(const VarSchema& var, uint64_t value)>& var) {
  std::vector<uint8_t> bytes;
  std::span<const uint8_t> body;
  uint32_t version = 0;
  Status st = load(io, path, imf::kVars, bytes, info, body, version);
  if (!st.ok()) return st;
  Decoder d(body.data(), body.size(), imf::kHeaderBytes);
  uint64_t n = d.varint();
  if (n != info.rows || n > 65536) {
    return Status::error(fmt::format("{} is damaged: var count {} at byte {}", path, n, imf::kHeaderBytes));
  }
  for (uint64_t i = 0; i < n && d.ok(); ++i) {
    VarSchema v;
    if (!decode_var_schema(d, v)) break;
    uint64_t value = d.value(v.type);
    if (!d.ok()) break;
    info.vars.push_back(v);
    var(v, value);
  }
  if (d.ok() && !d.done()) d.fail("bytes after the last var");
  if (!d.ok()) {
    return Status::error(
        fmt::format("{} is damaged: vars do not decode (byte {}): {}", path, d.error_offset(), d.problem()));
  }
  return Status::good();
}

namespace {
// Why an image cannot be loaded into `target`: it lacks a key field (by
// name and type); empty if it has them all.
std::string missing_key_field(const std::string& path, const TableSchema& target, const std::vector<bool>& given) {
  for (size_t i = 0; i < target.key_fields.size(); ++i) {
    const std::string& name = target.fields[target.key_fields[i]].name;
    if (given[target.key_fields[i]]) continue;
    if (!target.composite_key()) return fmt::format("{} lacks the key field `{}`", path, name);
    return fmt::format("{} lacks the key field `{}`, component {} of the key `{}`", path, name, i + 1,
                       key_names(target));
  }
  return {};
}
}  // namespace

Status load_table_image(Io& io, const std::string& path, const TableSchema& target, vm::BTree& tree,
                        ImageRead& info, uint64_t& rows) {
  std::vector<uint64_t> converted(target.fields.size());
  const vm::KeySpec spec = key_spec(target);
  // The image's columns to the target's, worked out at its first row.
  std::vector<int> column_field;
  std::vector<bool> given;
  const uint64_t rows_before = rows;
  Status st = read_table_image(io, path, info, [&](uint64_t* row) -> Status {
    const TableSchema& cols = info.table;
    if (column_field.empty()) {
      given.assign(target.fields.size(), false);
      for (uint32_t c = 0; c < cols.fields.size(); ++c) {
        uint32_t f = 0;
        while (f < target.fields.size() && target.fields[f].name != cols.fields[c].name) ++f;
        bool same = f < target.fields.size() && target.fields[f].type == cols.fields[c].type;
        column_field.push_back(same ? static_cast<int>(f) : -1);
        if (same) given[f] = true;
      }
      if (std::string why = missing_key_field(path, target, given); !why.empty()) {
        release_texts(cols, row);  // a refused row's texts are still ours
        return Status::error(why);
      }
    }
    for (uint32_t c = 0; c < cols.fields.size(); ++c) {
      if (column_field[c] >= 0) {
        converted[static_cast<size_t>(column_field[c])] = row[c];
      } else if (cols.fields[c].type == FieldType::Text) {
        vm::release(reinterpret_cast<vm::TextObj*>(row[c]));
      }
    }
    for (uint32_t f = 0; f < target.fields.size(); ++f) {
      if (given[f]) continue;
      const FieldSchema& fs = target.fields[f];
      converted[f] = fs.type == FieldType::Num    ? std::bit_cast<uint64_t>(fs.default_value.num)
                     : fs.type == FieldType::Bool ? (fs.default_value.boolean ? 1u : 0u)
                                                  : reinterpret_cast<uint64_t>(vm::heap_text(fs.default_value.text));
    }
    vm::HeldKey key(spec, converted.data());
    if (!tree.insert(key.key(), converted.data())) {
      release_texts(target, converted.data());
      return Status::error(fmt::format("{} is damaged: a key appears twice", path));
    }
    ++rows;
    return Status::good();
  });
  // Every row the header counts is in the tree: one dropped here would be
  // dropped from the store at its next checkpoint.
  assert(!st.ok() || rows - rows_before == info.rows);
  return st;
}

Status rewrite_image_seq(Io& io, const std::string& path, uint64_t seq) {
  int fd = io.open(path, O_RDWR, 0);
  if (fd < 0) return Status::error(fmt::format("cannot open {}: {}", path, err_text(-fd)), -fd);
  auto fail = [&](std::string why, int e) {
    io.close(fd);
    return Status::error(fmt::format("cannot update {}: {}", path, why), e);
  };
  uint8_t old[imf::kHeaderBytes];
  size_t got = 0;
  if (Status st = read_at(io, fd, old, sizeof old, 0, path, got); !st.ok()) return fail(err_text(st.err), st.err);
  if (got != sizeof old || std::memcmp(old, imf::kMagic, 8) != 0) return fail("not an image", 0);
  if (uint32_t v = bytes::get_u32(old + imf::kVersionAt); v < imf::kFirstVersion || v > imf::kLastVersion) {
    return fail(fmt::format("image format {} at byte {}, this aup writes {} and {}", v, imf::kVersionAt,
                            imf::kFirstVersion, imf::kLastVersion),
                0);
  }
  if (bytes::get_u64(old + imf::kHeaderSumAt) != header_sum(old)) {
    return fail(fmt::format("header checksum mismatch at byte {}", imf::kHeaderSumAt), 0);
  }
  // An image's save number never moves back: the entries between would be
  // applied to it twice. The store never asks for that; a file changed
  // behind its back could.
  if (uint64_t covers = bytes::get_u64(old + imf::kSeqAt); covers > seq) {
    return fail(fmt::format("it covers save {}, later than save {}", covers, seq), 0);
  }
  uint8_t h[imf::kHeaderBytes];
  std::memcpy(h, old, sizeof h);
  bytes::put_u64(h + imf::kSeqAt, seq);
  bytes::put_u64(h + imf::kHeaderSumAt, header_sum(h));
  if (Status st = write_all(io, fd, h, sizeof h, 0, path); !st.ok()) {
    write_all(io, fd, old, sizeof old, 0, path);
    return fail(err_text(st.err), st.err);
  }
  io.point("image.seq_before_fsync");
  if (int rc = io.fsync(fd); rc < 0) return fail(err_text(-rc), -rc);
  io.close(fd);
  return Status::good();
}

}  // namespace aup::storage
