// Writing and reading images (image_format.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "vm/btree.h"
#include "storage/io.h"
#include "storage/schema.h"
#include "storage/status.h"

namespace aup::storage {

std::string table_image_path(const std::string& dir, const std::string& table);
std::string vars_image_path(const std::string& dir);

struct ImageWritten {
  uint64_t bytes = 0;
  uint64_t rows = 0;
};

// Writes every row under `root` (a snapshot of `tree`'s table: only its
// layout is read from `tree`, so this may run on another thread) as the
// image of table `t`, covering save number `seq`: `.new`, streamed in
// steps, fsync, rename, directory fsync.
Status write_table_image(Io& io, const std::string& dir, const TableSchema& t, const vm::BTree& tree,
                         const vm::Node* root, uint64_t seq, ImageWritten& out);
Status write_vars_image(Io& io, const std::string& dir, const Schema& schema,
                        const std::vector<uint64_t>& values, uint64_t seq, ImageWritten& out);

struct ImageRead {
  uint64_t seq = 0;
  uint64_t rows = 0;
  uint64_t bytes = 0;
  TableSchema table;          // kind table
  std::vector<VarSchema> vars;  // kind vars
};

// Reads an image and checks it (header, digest, key order), front to back
// in pieces of 1 MiB. `row` receives each row in the image's own layout
// (texts as new heap texts the callee owns) as its piece is read, before
// the digest at the end is known: a status naming the digest means the
// rows given were not the image's. `var` receives each var value (the
// vars image is checked whole first). A missing file is reported with
// err == ENOENT.
Status read_table_image(Io& io, const std::string& path, ImageRead& info,
                        const std::function<Status(uint64_t* row)>& row);
Status read_vars_image(Io& io, const std::string& path, ImageRead& info,
                       const std::function<void(const VarSchema& var, uint64_t value)>& var);

// Loads an image into `tree` (empty, in `target`'s layout): columns are
// matched by name, so an image written before a migration (lacking new
// fields) loads with their defaults. `rows` counts the rows loaded. The
// tree is built bottom up (vm::BTree::Builder) when the image is keyed as
// the target (always, from a store: a key cannot change), with the keys'
// order checked as it goes. An image refused for its digest leaves the
// tree as it was; one refused in its rows keeps those before the damage.
Status load_table_image(Io& io, const std::string& path, const TableSchema& target, vm::BTree& tree,
                        ImageRead& info, uint64_t& rows);

// Moves the save number an image covers up to `seq` in place (the header's
// bytes 16..23 and its checksum at 56, then fsync), for a table unchanged
// since its image: the image is the table as of `seq` too. Only an image
// whose header checks is rewritten (a new checksum over a damaged header
// would hide the damage), and a write that stops part way puts the old
// header back, which still describes the image. Failures read
// "cannot update PATH: ...".
Status rewrite_image_seq(Io& io, const std::string& path, uint64_t seq);

}  // namespace aup::storage
