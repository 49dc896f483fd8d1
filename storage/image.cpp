#include "storage/image.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <xxhash.h>

#include <cassert>
#include <cstring>
#include <new>
#include <optional>

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

// An image read front to back in pieces into one buffer, its digest taken
// as each piece arrives: memory for a piece rather than for the file (an
// image read whole needed a new buffer its size, which the kernel zeroes
// page by page, for every image at every open), and each byte read once.
// Rows are decoded from the buffer before the digest is known: whoever
// reads them takes them back if check_digest() then fails.
class ImageStream {
 public:
  static constexpr size_t kPiece = size_t{1} << 20;
  ImageStream(Io& io, const std::string& path) : io_(io), path_(path) {}
  ~ImageStream() {
    if (fd_ >= 0) io_.close(fd_);
    if (state_) XXH3_freeState(state_);
  }
  ImageStream(const ImageStream&) = delete;
  ImageStream& operator=(const ImageStream&) = delete;

  // Opens the file and checks its header, kind and length (all before any
  // of the body is read).
  Status open(uint8_t want_kind, ImageRead& info, uint32_t& version);
  // The body's bytes read and not yet consumed, from file offset offset().
  const uint8_t* data() const { return buf_.data() + pos_; }
  size_t avail() const { return end_ - pos_; }
  size_t offset() const { return imf::kHeaderBytes + read_ - avail(); }
  // Whether the buffer holds the rest of the body.
  bool all_in() const { return read_ == body_; }
  void consume_to(const uint8_t* p) { pos_ = static_cast<size_t>(p - buf_.data()); }
  // Reads the next piece after what is not yet consumed (kept, moved to
  // the front; the buffer doubles when it would be more than half of it:
  // a row longer than a piece). Only while !all_in().
  Status more();
  // Reads the rest of the body, then compares its digest with the trailer.
  // `info.bytes` is the file's size once it matches.
  Status check_digest(ImageRead& info);

 private:
  Io& io_;
  const std::string& path_;
  int fd_ = -1;
  uint64_t file_ = 0;  // the file's size
  uint64_t body_ = 0;  // the body's length
  uint64_t read_ = 0;  // body bytes read so far
  std::vector<uint8_t> buf_;
  size_t pos_ = 0, end_ = 0;
  XXH3_state_t* state_ = nullptr;
};

Status ImageStream::open(uint8_t want_kind, ImageRead& info, uint32_t& version) {
  fd_ = io_.open(path_, O_RDONLY, 0);
  if (fd_ < 0) {
    int e = -fd_;
    return Status::error(fmt::format("cannot open {}: {}", path_, err_text(e)), e);
  }
  int64_t size = io_.file_size(fd_);
  if (size < 0) return Status::error(fmt::format("cannot read {}: {}", path_, err_text(static_cast<int>(-size))), static_cast<int>(-size));
  file_ = static_cast<uint64_t>(size);
  if (file_ < imf::kHeaderBytes + imf::kDigestBytes) {
    return Status::error(fmt::format("{} is damaged: it ends at byte {}, shorter than an empty image ({} bytes)",
                                     path_, file_, imf::kHeaderBytes + imf::kDigestBytes));
  }
  uint8_t h[imf::kHeaderBytes];
  size_t got = 0;
  if (Status st = read_at(io_, fd_, h, sizeof h, 0, path_, got); !st.ok()) return st;
  if (got != sizeof h) {
    return Status::error(fmt::format("cannot read {}: it ends at byte {}, not at byte {} as when it was opened",
                                     path_, got, file_), EIO);
  }
  ImageHeader head;
  if (Status st = decode_header(path_, h, head); !st.ok()) return st;
  info = ImageRead{};  // the caller's may hold an earlier read's columns
  version = head.version;
  info.seq = head.seq;
  info.rows = head.rows;
  if (head.kind != want_kind) {
    return Status::error(
        fmt::format("{} is not the kind of image expected (kind {} at byte {})", path_, head.kind, imf::kKindAt));
  }
  uint64_t holds = file_ - imf::kHeaderBytes - imf::kDigestBytes;
  if (head.body_bytes != holds) {
    return Status::error(fmt::format("{} is damaged: the header promises {} bytes of rows, the file holds {} "
                                     "(it ends at byte {})",
                                     path_, head.body_bytes, holds, file_));
  }
  body_ = head.body_bytes;
  state_ = XXH3_createState();
  if (!state_) throw std::bad_alloc();
  XXH3_64bits_reset(state_);
  buf_.resize(static_cast<size_t>(std::min<uint64_t>(kPiece, std::max<uint64_t>(body_, 1))));
  return body_ > 0 ? more() : Status::good();
}

Status ImageStream::more() {
  assert(!all_in());
  size_t kept = avail();
  std::memmove(buf_.data(), buf_.data() + pos_, kept);
  pos_ = 0;
  end_ = kept;
  if (kept > buf_.size() / 2) buf_.resize(buf_.size() * 2);
  size_t want = static_cast<size_t>(std::min<uint64_t>(buf_.size() - kept, body_ - read_));
  uint64_t at = imf::kHeaderBytes + read_;
  size_t got = 0;
  if (Status st = read_at(io_, fd_, buf_.data() + kept, want, at, path_, got); !st.ok()) return st;
  if (got != want) {
    return Status::error(fmt::format("cannot read {}: it ends at byte {}, not at byte {} as when it was opened",
                                     path_, at + got, file_), EIO);
  }
  XXH3_64bits_update(state_, buf_.data() + kept, got);
  read_ += got;
  end_ += got;
  return Status::good();
}

Status ImageStream::check_digest(ImageRead& info) {
  while (!all_in()) {
    pos_ = end_;  // the rest is only hashed
    if (Status st = more(); !st.ok()) return st;
  }
  uint8_t trailer[imf::kDigestBytes];
  size_t got = 0;
  uint64_t at = imf::kHeaderBytes + body_;
  if (Status st = read_at(io_, fd_, trailer, sizeof trailer, at, path_, got); !st.ok()) return st;
  if (got != sizeof trailer) {
    return Status::error(fmt::format("cannot read {}: it ends at byte {}, not at byte {} as when it was opened",
                                     path_, at + got, file_), EIO);
  }
  if (XXH3_64bits_digest(state_) != bytes::get_u64(trailer)) {
    return Status::error(fmt::format("{} is damaged: the digest at byte {} does not match its body, bytes {}..{}",
                                     path_, imf::kHeaderBytes + body_, imf::kHeaderBytes,
                                     imf::kHeaderBytes + body_ - 1));
  }
  info.bytes = file_;
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

namespace {

// Who takes a table image's rows (read_rows): its columns first, then
// each row (its number and first byte) in the image's own layout.
class RowSink {
 public:
  virtual ~RowSink() = default;
  // Whether the sink checks the rows' key order itself (else read_rows does).
  virtual bool checks_order(const TableSchema& columns) = 0;
  virtual Status row(uint64_t* row, uint64_t r, size_t at) = 0;
  // The digest did not match: the rows taken are to be given back.
  virtual void drop_rows() {}
};

// A failure while reading the body is reported as the digest's when the
// digest does not match either (the bytes are not what was written, so
// what they decode to says little), as when the digest was checked first.
Status digest_first(ImageStream& s, ImageRead& info, RowSink& sink, Status st) {
  if (st.err != 0) return st;  // an I/O error, not damage: the open exits 2, not 1
  Status digest = s.check_digest(info);
  if (digest.ok() || digest.err != 0) return digest.ok() ? st : digest;
  sink.drop_rows();
  return digest;
}

// The column list at the body's start.
Status read_columns(ImageStream& s, const std::string& path, ImageRead& info, uint32_t version) {
  for (;;) {
    Decoder d(s.data(), s.avail(), s.offset());
    info.table = TableSchema{};
    if (decode_table_schema(d, info.table, version)) {
      s.consume_to(d.position());
      return Status::good();
    }
    if (s.all_in()) {
      return Status::error(fmt::format("{} is damaged: its column list does not decode (byte {}): {}", path,
                                       d.error_offset(), d.problem()));
    }
    if (Status st = s.more(); !st.ok()) return st;
  }
}

// Reads a table image's rows into `sink`, piece by piece, checking them
// (each decodes, keys in order unless the sink checks them, nothing after
// the last) and the digest at the end.
Status read_rows(Io& io, const std::string& path, ImageRead& info, RowSink& sink) {
  ImageStream s(io, path);
  uint32_t version = 0;
  Status st = s.open(imf::kTable, info, version);
  if (!st.ok()) return st;
  if (st = read_columns(s, path, info, version); !st.ok()) return digest_first(s, info, sink, st);
  const TableSchema& t = info.table;
  const std::vector<uint32_t> order = field_write_order(t);
  std::vector<uint64_t> row(t.fields.size());
  std::optional<KeyOrder> keys;
  if (!sink.checks_order(t)) keys.emplace(t);
  uint64_t r = 0;
  while (r < info.rows) {
    Decoder d(s.data(), s.avail(), s.offset());
    for (; r < info.rows; ++r) {
      const uint8_t* start = d.position();
      size_t at = d.offset();
      for (uint32_t f : order) row[f] = d.value(t.fields[f].type);
      if (!d.ok() && !s.all_in()) {  // the row goes on in the next piece
        release_texts(t, row.data());
        s.consume_to(start);
        break;
      }
      // The key only once the row decoded: a text that did not is null.
      if (!d.ok() || (keys && !keys->next(row.data()))) {
        release_texts(t, row.data());
        st = !d.ok() ? Status::error(fmt::format("{} is damaged: row {} does not decode (byte {}): {}", path, r, at,
                                                 d.error()))
                     : Status::error(fmt::format("{} is damaged: row {} is out of key order (byte {})", path, r, at));
        return digest_first(s, info, sink, st);
      }
      if (st = sink.row(row.data(), r, at); !st.ok()) return digest_first(s, info, sink, st);
      s.consume_to(d.position());
    }
    if (r < info.rows && (st = s.more(), !st.ok())) return st;
  }
  if (s.avail() > 0 || !s.all_in()) {
    st = Status::error(fmt::format("{} is damaged: bytes after the last row (byte {})", path, s.offset()));
    return digest_first(s, info, sink, st);
  }
  return digest_first(s, info, sink, Status::good());
}

// read_table_image's sink: every row to the caller's function.
class FunctionSink : public RowSink {
 public:
  explicit FunctionSink(const std::function<Status(uint64_t* row)>& f) : f_(f) {}
  bool checks_order(const TableSchema&) override { return false; }
  Status row(uint64_t* row, uint64_t, size_t) override { return f_(row); }

 private:
  const std::function<Status(uint64_t* row)>& f_;
};

}  // namespace

Status read_table_image(Io& io, const std::string& path, ImageRead& info,
                        const std::function<Status(uint64_t* row)>& row_fn) {
  FunctionSink sink(row_fn);
  return read_rows(io, path, info, sink);
}

Status read_vars_image(Io& io, const std::string& path, ImageRead& info,
                       const std::function<void(const VarSchema& var, uint64_t value)>& var) {
  ImageStream s(io, path);
  uint32_t version = 0;
  Status st = s.open(imf::kVars, info, version);
  if (!st.ok()) return st;
  // A few vars: the whole body, its digest checked before any is decoded.
  while (!s.all_in()) {
    if (st = s.more(); !st.ok()) return st;
  }
  if (st = s.check_digest(info); !st.ok()) return st;
  Decoder d(s.data(), s.avail(), imf::kHeaderBytes);
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

// load_table_image's sink: rows converted to the target's layout (columns
// matched by name) into its tree. An image keyed as the target is (its
// rows in the tree's key order, as the writer walked the tree) is built
// bottom up, its key order checked as it goes; any other (a key that
// changed) is inserted row by row.
class TreeSink : public RowSink {
 public:
  TreeSink(const std::string& path, const TableSchema& target, vm::BTree& tree, uint64_t& rows)
      : path_(path), target_(target), tree_(tree), rows_(rows), spec_(key_spec(target)),
        converted_(target.fields.size()) {}
  bool checks_order(const TableSchema& cols) override;
  Status row(uint64_t* row, uint64_t r, size_t at) override;
  ~TreeSink() override {
    for (const vm::Key& k : inserted_) vm::release(k.text);
  }
  void drop_rows() override;

 private:
  void convert(const TableSchema& cols, uint64_t* row);
  const std::string& path_;
  const TableSchema& target_;
  vm::BTree& tree_;
  uint64_t& rows_;
  const vm::KeySpec spec_;
  const TableSchema* cols_ = nullptr;
  std::vector<int> column_field_;  // per image column its target field, or -1
  std::vector<bool> given_;        // per target field: an image column fills it
  bool identity_ = false;          // column c fills field c, for every field
  std::vector<uint64_t> converted_;
  std::optional<vm::BTree::Builder> builder_;
  std::vector<vm::Key> inserted_;  // without a builder: the keys inserted (held), to take them back
  uint64_t taken_ = 0;
};

void TreeSink::drop_rows() {
  if (builder_) builder_->discard();
  for (const vm::Key& k : inserted_) {
    std::vector<uint64_t> out(target_.fields.size());
    bool erased = tree_.erase(k, out.data());
    assert(erased);
    (void)erased;
    release_texts(target_, out.data());
    vm::release(k.text);
  }
  inserted_.clear();
  rows_ -= taken_;
  taken_ = 0;
}

bool TreeSink::checks_order(const TableSchema& cols) {
  cols_ = &cols;
  given_.assign(target_.fields.size(), false);
  for (uint32_t c = 0; c < cols.fields.size(); ++c) {
    uint32_t f = 0;
    while (f < target_.fields.size() && target_.fields[f].name != cols.fields[c].name) ++f;
    bool same = f < target_.fields.size() && target_.fields[f].type == cols.fields[c].type;
    column_field_.push_back(same ? static_cast<int>(f) : -1);
    if (same) given_[f] = true;
  }
  identity_ = cols.fields.size() == target_.fields.size();
  for (uint32_t c = 0; identity_ && c < cols.fields.size(); ++c) identity_ = column_field_[c] == static_cast<int>(c);
  bool same_key = cols.key_fields.size() == target_.key_fields.size();
  for (size_t i = 0; same_key && i < cols.key_fields.size(); ++i) {
    same_key = column_field_[cols.key_fields[i]] == static_cast<int>(target_.key_fields[i]);
  }
  if (same_key && tree_.size() == 0) builder_.emplace(tree_);
  return builder_.has_value();
}

void TreeSink::convert(const TableSchema& cols, uint64_t* row) {
  for (uint32_t c = 0; c < cols.fields.size(); ++c) {
    if (column_field_[c] >= 0) {
      converted_[static_cast<size_t>(column_field_[c])] = row[c];
    } else if (cols.fields[c].type == FieldType::Text) {
      vm::release(reinterpret_cast<vm::TextObj*>(row[c]));
    }
  }
  for (uint32_t f = 0; f < target_.fields.size(); ++f) {
    if (given_[f]) continue;
    const FieldSchema& fs = target_.fields[f];
    converted_[f] = fs.type == FieldType::Num    ? std::bit_cast<uint64_t>(fs.default_value.num)
                    : fs.type == FieldType::Bool ? (fs.default_value.boolean ? 1u : 0u)
                                                 : reinterpret_cast<uint64_t>(vm::heap_text(fs.default_value.text));
  }
}

Status TreeSink::row(uint64_t* row, uint64_t r, size_t at) {
  if (r == 0) {
    if (std::string why = missing_key_field(path_, target_, given_); !why.empty()) {
      release_texts(*cols_, row);  // a refused row's texts are still ours
      return Status::error(why);
    }
  }
  uint64_t* values = row;  // the image's columns are the target's fields, in order: no conversion
  if (!identity_) {
    convert(*cols_, row);
    values = converted_.data();
  }
  vm::HeldKey key(spec_, values);
  bool taken = builder_ ? builder_->append(key.key(), values) : tree_.insert(key.key(), values);
  if (!taken) {
    release_texts(target_, values);
    if (builder_) return Status::error(fmt::format("{} is damaged: row {} is out of key order (byte {})", path_, r, at));
    return Status::error(fmt::format("{} is damaged: a key appears twice", path_));
  }
  if (!builder_) {
    inserted_.push_back(key.key());
    vm::retain(key.key().text);
  }
  ++rows_;
  ++taken_;
  return Status::good();
}

}  // namespace

Status load_table_image(Io& io, const std::string& path, const TableSchema& target, vm::BTree& tree,
                        ImageRead& info, uint64_t& rows) {
  const uint64_t rows_before = rows;
  TreeSink sink(path, target, tree, rows);
  Status st = read_rows(io, path, info, sink);
  // Every row the header counts is in the tree: one dropped here would be
  // dropped from the store at its next checkpoint.
  assert(!st.ok() || rows - rows_before == info.rows);
  (void)rows_before;
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
