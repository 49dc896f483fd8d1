// A table's key as the store writes it: its key fields' values, in key
// order, each in codec.h's encoding of its type; for a one-field key that
// is the one value, as before composite keys. Never the tree's in-memory
// encoding of a composite key (vm/key.h), which is not a storage format.
#pragma once

#include <string>
#include <vector>

#include "storage/codec.h"
#include "storage/schema.h"
#include "vm/btree.h"
#include "vm/key.h"

namespace aup::storage {

// The key of a table's tree: its key fields in key order, and which are
// texts (what vm/state.cpp makes from a module's table).
vm::KeySpec key_spec(const TableSchema& t);

// The shape of a table's rows in its tree: slots, which hold texts, the
// key (what vm/state.cpp makes from a module's table).
vm::RowLayout row_layout(const TableSchema& t);

// The order a row's fields are written in, by an image and by a put
// record: the key fields in key order, then every other field in order.
std::vector<uint32_t> field_write_order(const TableSchema& t);

// The key as a message names it: `id`, or `(w, d, o)` for a composite key.
std::string key_names(const TableSchema& t);

// Writes the values of tree key `k` of a table keyed by `spec`: a one-field
// key is the value itself; a composite key's encoding is read back into its
// components. For a row that is gone (a remove), whose fields are not there
// to write from.
void write_key_values(Encoder& e, const vm::KeySpec& spec, const vm::Key& k);

}  // namespace aup::storage
