// Writing and reading `.aupm` files (the layout: module_format.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vm/module.h"

namespace aup::vm {

std::vector<uint8_t> encode_module(const Module& m);
// Fills `out` from a file's bytes; false with a message naming what is wrong
// (and where) when the bytes are not a module this aup can run.
bool decode_module(std::span<const uint8_t> bytes, Module& out, std::string& error);

// The start of the refusal of a file that is no module at all (it does
// not begin with the magic), as told from a damaged one.
inline constexpr const char* kNotAModule = "not an aup module";

// Writes beside the target and renames, so a reader never sees half a
// file; a failure names `path` (the file the caller asked for).
bool write_module_file(const std::string& path, const Module& m, std::string& error);
bool read_module_file(const std::string& path, Module& out, std::string& error);

// The structural checks decode_module applies (also usable on a module the
// compiler just produced, as a self-check in tests).
bool verify_module(const Module& m, std::string& error);

}  // namespace aup::vm
