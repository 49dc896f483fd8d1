// The `.aupm` module file: a compiled module, written by `aup build` and
// read by `aup run` without the compiler.
//
//   offset  size  field
//   0       4     magic "AUPM"
//   4       2     format version, little-endian (this file: 4; a reader
//                 reads 4, 3 and 2, which lacks section 9; 1 had another
//                 instruction set)
//   6       2     flags (0)
//   8       8     body length in bytes, little-endian
//   16      8     XXH3-64 of the body, little-endian
//   24      ...   body: sections, each `tag (1 byte) | length (varint) | payload`,
//                 in tag order, every tag present once
//
// Tags and payloads (vm/bytes.h's encodings: varint, unsigned LEB128 of at
// most 10 bytes; string, a varint length then the bytes; 4 bytes
// little-endian. A constant: kind byte 0 number (8 bytes, IEEE bits,
// little-endian), 1 text (string), 2 bool (1 byte)). vm/module_file.cpp
// lists the sections once (kSections: tag, name, encoder, decoder), and
// encode_module and decode_module walk that list; a new section is a tag
// here, an entry there, a row in docs/module-format.md, and a new format
// version (a reader refuses a section it does not know):
//
//   1 SOURCE     string: the .aup file's name
//   2 TYPES      varint n, then n times: code (1 byte), index (varint)
//   3 RECORDS    varint n, then: name, event-args flag (1 byte), varint
//                fields, each: name, type (varint), has-default (1 byte),
//                [constant]
//   4 SHAPES     varint n, then: varint fields, each: name, type (varint)
//   5 TABLES     varint n, then: name, record (varint), varint key fields,
//                each a field of the record (varint), in key order
//   6 VARS       varint n, then: name, type (varint), initial constant
//   7 EVENTS     varint n, then: name, record (varint), handler (varint)
//   8 FUNCTIONS  varint n, then: name, kind (1 byte), event (varint),
//                varint params, each: name, type (varint); result type
//                (varint); frame size (varint); varint constants, each a
//                constant; varint instructions, each 4 bytes little-endian;
//                varint line entries, each: pc delta, line, column (varints)
//   9 INDEXES    (format 3 on) varint n, then: name, table (varint),
//                unique (1 byte), varint fields, each a field of the
//                table's record (varint), in index order
//
// Reading checks the magic, the version (another one is refused by name),
// the length against the file, the checksum, then every index and operand
// (docs/module-format.md lists the checks). A module file is trusted
// code: the checks refuse damaged files, not deliberately crafted ones.
#pragma once

#include <cstdint>

namespace aup::vm::module_format {

inline constexpr char kMagic[4] = {'A', 'U', 'P', 'M'};
// History: 1 (2026-11) the first; 2 (2026-12) composite keys: a table's
// key is a list of fields, and the instruction set has KEY and KEYPFX
// (vm/bytecode.h), which moved the opcodes after them; 3 (2026-12)
// secondary indexes: the INDEXES section, and instructions appended after
// format 2's (so a format 2 module means the same and is still read, as
// a module without indexes); 4 (2026-12) texts, sorting and optional
// rows: built-ins appended to stdlib/builtins.def (text and array
// methods) and instructions TFIND, IFIND and SORT appended (a format 3
// module uses none of them, so it means the same and is still read).
inline constexpr uint16_t kVersion = 4;
inline constexpr uint16_t kOldestReadVersion = 2;
inline constexpr size_t kHeaderBytes = 24;
// Largest module file read (a module is code and schema, not data).
inline constexpr uint64_t kMaxFileBytes = uint64_t{256} << 20;

enum Tag : uint8_t {
  kSource = 1,
  kTypes = 2,
  kRecords = 3,
  kShapes = 4,
  kTables = 5,
  kVars = 6,
  kEvents = 7,
  kFunctions = 8,
  kIndexes = 9,  // format 3 on
};

}  // namespace aup::vm::module_format
