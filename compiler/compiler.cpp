#include "compiler/compiler.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "compiler/checker.h"
#include "compiler/lexer.h"
#include "compiler/parser.h"

namespace aup {

std::unique_ptr<CheckedModule> check_source(std::string name, std::string text) {
  auto m = std::make_unique<CheckedModule>(std::move(name), std::move(text));
  LexOutput lexed = lex(m->file, m->names, m->diags);
  parse(m->file, lexed, m->names, m->ast, m->diags);
  check(m->file, m->names, m->ast, m->types, m->program, m->diags);
  m->diags.finish();
  return m;
}

bool read_source_file(const std::string& path, std::string& text, std::string& error) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    error = fmt::format("cannot open {}: {}", path, std::strerror(errno));
    return false;
  }
  text.clear();
  char buf[1 << 16];
  bool ok = true;
  for (;;) {
    size_t n = std::fread(buf, 1, sizeof buf, f);
    text.append(buf, n);
    if (text.size() > kMaxSourceBytes) {
      error = fmt::format("{} is larger than {} MiB, the limit for a source file", path,
                          kMaxSourceBytes >> 20);
      ok = false;
      break;
    }
    if (n < sizeof buf) {
      if (std::ferror(f)) {
        error = fmt::format("cannot read {}: {}", path, std::strerror(errno));
        ok = false;
      }
      break;
    }
  }
  std::fclose(f);
  return ok;
}

}  // namespace aup
