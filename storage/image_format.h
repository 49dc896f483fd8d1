// The image files: `image-<table>` holds every row of one table, and
// `image.vars` every var, as of a save number. Written beside the live file
// (`.new`), then renamed over it.
//
//   0   8  magic "AUPIMAGE"
//   8   4  format version, little-endian: a table image 1 when its key is
//          one field (as before composite keys), 2 when composite (the
//          table schema's key form, schema_codec.h); a vars image 1
//   12  4  header size (64)
//   16  8  save number covered: every log entry up to it is in the image
//   24  8  row count (vars: the number of vars)
//   32  8  body length in bytes
//   40  1  kind: 1 table, 2 vars
//   41  15 reserved (0)
//   56  8  XXH3-64 of bytes 0..55
//   64  ... body:
//           table: the table's schema (schema_codec.h: name, record name,
//                  field count, fields, key); then each row in ascending
//                  key order: its key fields in key order, then every
//                  other field in order (codec.h's encoding)
//           vars:  count, each: name, type byte (schema_codec.h), value
//   64+L 8  XXH3-64 of the body
//
// An image describes its own columns, so `aup replay` reads it without the
// module, and a migrated store can hold images of two layouts while the
// migration's checkpoint is written.
#pragma once

#include <cstdint>

namespace aup::storage::image_format {

inline constexpr char kMagic[8] = {'A', 'U', 'P', 'I', 'M', 'A', 'G', 'E'};
// The versions read; a table image is written in the first that holds its
// key (schema_codec.h's table_format), a vars image in the first.
inline constexpr uint32_t kFirstVersion = 1;
inline constexpr uint32_t kLastVersion = 2;
inline constexpr uint32_t kHeaderBytes = 64;
// Where each header field is (the table above).
inline constexpr uint32_t kVersionAt = 8;
inline constexpr uint32_t kHeaderSizeAt = 12;
inline constexpr uint32_t kSeqAt = 16;
inline constexpr uint32_t kRowsAt = 24;
inline constexpr uint32_t kBodyBytesAt = 32;
inline constexpr uint32_t kKindAt = 40;
inline constexpr uint32_t kHeaderSumAt = 56;
inline constexpr uint32_t kDigestBytes = 8;
inline constexpr uint8_t kTable = 1;
inline constexpr uint8_t kVars = 2;
// Written and flushed to the device in steps this large, so the final
// fsync has little left to wait for.
inline constexpr uint64_t kStepBytes = 256 * 1024;

}  // namespace aup::storage::image_format
