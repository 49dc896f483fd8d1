// Tokens produced by the lexer (lexer.re) and read by the parser.
#pragma once

#include <cstdint>
#include <string_view>

#include "compiler/source.h"

namespace aup {

enum class Tok : uint8_t {
#define AUP_TOKEN(name, spelling) name,
#include "compiler/tokens.def"
#undef AUP_TOKEN
};

inline constexpr Tok kFirstKeyword = Tok::KwRecord;
inline constexpr Tok kLastKeyword = Tok::KwNot;

// How a token kind is named in messages ("`{`", "name", "end of file").
std::string_view tok_spelling(Tok t);
// The keyword a word is, or Tok::Ident.
Tok keyword_of(std::string_view word);
inline bool is_keyword(Tok t) { return t >= kFirstKeyword && t <= kLastKeyword; }

struct Token {
  Tok kind = Tok::Eof;
  bool newline_before = false;  // a line break lies between this and the previous token
  uint32_t len = 0;             // bytes of source the token spans
  Pos pos;
  uint32_t sym = 0;    // Ident: interned name; Text: interned decoded value
  double number = 0;   // Number: its binary64 value (correctly rounded)
};

}  // namespace aup
