// The lexer. re2c turns the rule blocks below into a direct-coded DFA over
// UTF-8 (re2c -8): a character class such as [^\n] matches whole valid code
// points, so any invalid byte falls to the `*` rule and is reported where
// it is. The source buffer ends with a NUL sentinel (SourceFile::c_str);
// re2c's bounds check tells a NUL inside the file from the end.
#include "compiler/lexer.h"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <string>

#include "stdlib/numbers.h"
#include "vm/text.h"  // vm::kMaxTextBytes

namespace aup {
namespace {

/*!re2c
  re2c:define:YYCTYPE = "unsigned char";
  re2c:define:YYCURSOR = cur_;
  re2c:define:YYMARKER = mar_;
  re2c:define:YYLIMIT = lim_;
  re2c:yyfill:enable = 0;
  re2c:eof = 0;

  digits = [0-9]+ ("_" [0-9]+)*;
  number = digits ("." digits)? ([eE] [+-]? [0-9]+)?;
  ident = [A-Za-z_][A-Za-z0-9_]*;
*/

// The code point of one valid UTF-8 sequence (the rules guarantee validity).
uint32_t decode_utf8(std::string_view b) {
  auto c = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(b[i])); };
  switch (b.size()) {
    case 1: return c(0);
    case 2: return (c(0) & 0x1F) << 6 | (c(1) & 0x3F);
    case 3: return (c(0) & 0x0F) << 12 | (c(1) & 0x3F) << 6 | (c(2) & 0x3F);
    default: return (c(0) & 0x07) << 18 | (c(1) & 0x3F) << 12 | (c(2) & 0x3F) << 6 | (c(3) & 0x3F);
  }
}

class Lexer {
 public:
  Lexer(const SourceFile& file, Interner& names, Diagnostics& diags)
      : names_(names), diags_(diags) {
    base_ = reinterpret_cast<const unsigned char*>(file.c_str());
    lim_ = base_ + file.text().size();
    cur_ = base_;
    // A byte-order mark is not part of the program.
    if (lim_ - cur_ >= 3 && cur_[0] == 0xEF && cur_[1] == 0xBB && cur_[2] == 0xBF) cur_ += 3;
    line_start_ = col_at_ = cur_;
  }

  LexOutput run() {
    // A typical line of aup holds about 8 tokens and 40 bytes.
    out_.tokens.reserve(static_cast<size_t>(lim_ - base_) / 5 + 1);
    while (next()) {
    }
    return std::move(out_);
  }

 private:
  // Lexes one token (or skips blanks/comments); false after end of file.
  bool next();
  void lex_number();
  void lex_text();
  void skip_comment();
  void lex_ident();
  void lex_wrong_quote();
  void unterminated_text() {
    error(tok_, 1, "unterminated text literal (a `\"` is missing before the line ends)");
  }

  uint32_t offset(const unsigned char* p) const { return static_cast<uint32_t>(p - base_); }
  Pos pos_of(const unsigned char* p);
  void error(const unsigned char* at, uint32_t width, std::string message);
  void emit(Tok kind, uint32_t sym = 0, double number = 0);
  void emit_at(Pos pos, Tok kind, uint32_t sym = 0, double number = 0);
  void newline() {
    ++line_;
    line_start_ = col_at_ = cur_;
    col_ = 1;
    newline_before_ = true;
  }

  Interner& names_;
  Diagnostics& diags_;
  LexOutput out_;
  const unsigned char* base_ = nullptr;
  const unsigned char* lim_ = nullptr;
  const unsigned char* cur_ = nullptr;
  const unsigned char* mar_ = nullptr;
  const unsigned char* tok_ = nullptr;  // start of the token being lexed
  uint32_t line_ = 1;
  const unsigned char* line_start_ = nullptr;
  // Column cache: the column of `col_at_` on the current line, so columns
  // are found by counting only the bytes since the last token.
  const unsigned char* col_at_ = nullptr;
  uint32_t col_ = 1;
  bool newline_before_ = false;
};

Pos Lexer::pos_of(const unsigned char* p) {
  if (p < col_at_) {  // before the cache (only for errors inside a token)
    col_at_ = line_start_;
    col_ = 1;
  }
  for (; col_at_ < p; ++col_at_) col_ += (*col_at_ & 0xC0) != 0x80;
  return Pos{offset(p), line_, col_};
}

void Lexer::error(const unsigned char* at, uint32_t width, std::string message) {
  diags_.error(pos_of(at), width, std::move(message));
  out_.error_offsets.push_back(offset(at));
}

void Lexer::emit(Tok kind, uint32_t sym, double number) { emit_at(pos_of(tok_), kind, sym, number); }

void Lexer::emit_at(Pos pos, Tok kind, uint32_t sym, double number) {
  Token t;
  t.kind = kind;
  t.newline_before = newline_before_;
  t.len = static_cast<uint32_t>(cur_ - tok_);
  t.pos = pos;
  t.sym = sym;
  t.number = number;
  out_.tokens.push_back(t);
  newline_before_ = false;
}

bool Lexer::next() {
  tok_ = cur_;
  /*!re2c
    $ { emit(Tok::Eof); return false; }
    [ \t\r]+ { return true; }
    "\n" { newline(); return true; }
    "//" { skip_comment(); return true; }

    "record" { emit(Tok::KwRecord); return true; }
    "table" { emit(Tok::KwTable); return true; }
    "key" { emit(Tok::KwKey); return true; }
    "var" { emit(Tok::KwVar); return true; }
    "event" { emit(Tok::KwEvent); return true; }
    "on" { emit(Tok::KwOn); return true; }
    "query" { emit(Tok::KwQuery); return true; }
    "fn" { emit(Tok::KwFn); return true; }
    "let" { emit(Tok::KwLet); return true; }
    "if" { emit(Tok::KwIf); return true; }
    "else" { emit(Tok::KwElse); return true; }
    "for" { emit(Tok::KwFor); return true; }
    "in" { emit(Tok::KwIn); return true; }
    "while" { emit(Tok::KwWhile); return true; }
    "break" { emit(Tok::KwBreak); return true; }
    "continue" { emit(Tok::KwContinue); return true; }
    "return" { emit(Tok::KwReturn); return true; }
    "fail" { emit(Tok::KwFail); return true; }
    "true" { emit(Tok::KwTrue); return true; }
    "false" { emit(Tok::KwFalse); return true; }
    "and" { emit(Tok::KwAnd); return true; }
    "or" { emit(Tok::KwOr); return true; }
    "not" { emit(Tok::KwNot); return true; }
    ident { lex_ident(); return true; }

    number { lex_number(); return true; }
    number [A-Za-z0-9_]+ {
      error(tok_, static_cast<uint32_t>(cur_ - tok_),
            fmt::format("malformed number `{}`", std::string_view(
                reinterpret_cast<const char*>(tok_), static_cast<size_t>(cur_ - tok_))));
      emit(Tok::Number);
      return true;
    }
    ["] { lex_text(); return true; }

    "{" { emit(Tok::LBrace); return true; }
    "}" { emit(Tok::RBrace); return true; }
    "(" { emit(Tok::LParen); return true; }
    ")" { emit(Tok::RParen); return true; }
    "[" { emit(Tok::LBracket); return true; }
    "]" { emit(Tok::RBracket); return true; }
    "," { emit(Tok::Comma); return true; }
    ":" { emit(Tok::Colon); return true; }
    ";" { emit(Tok::Semi); return true; }
    "." { emit(Tok::Dot); return true; }
    ".." { emit(Tok::DotDot); return true; }
    "=" { emit(Tok::Assign); return true; }
    "==" { emit(Tok::Eq); return true; }
    "!=" { emit(Tok::Ne); return true; }
    "<" { emit(Tok::Lt); return true; }
    "<=" { emit(Tok::Le); return true; }
    ">" { emit(Tok::Gt); return true; }
    ">=" { emit(Tok::Ge); return true; }
    "+" { emit(Tok::Plus); return true; }
    "-" { emit(Tok::Minus); return true; }
    "*" { emit(Tok::Star); return true; }
    "/" { emit(Tok::Slash); return true; }
    "%" { emit(Tok::Percent); return true; }

    // Operators from other languages: say what aup spells, then go on as
    // if the user had written it, so one slip is one error.
    "&&" { error(tok_, 2, "aup writes `and`, not `&&`"); emit(Tok::KwAnd); return true; }
    "||" { error(tok_, 2, "aup writes `or`, not `||`"); emit(Tok::KwOr); return true; }
    "!" { error(tok_, 1, "aup writes `not`, not `!`"); emit(Tok::KwNot); return true; }
    "===" { error(tok_, 3, "aup writes `==`, not `===`"); emit(Tok::Eq); return true; }
    "!==" { error(tok_, 3, "aup writes `!=`, not `!==`"); emit(Tok::Ne); return true; }
    [-+*/%] "=" {
      char op = static_cast<char>(*tok_);
      error(tok_, 2, fmt::format("aup has no `{}=`; write `x = x {} e`", op, op));
      emit(Tok::Assign);
      return true;
    }
    ['`] { lex_wrong_quote(); return true; }
    [^] {
      std::string_view bytes(reinterpret_cast<const char*>(tok_), static_cast<size_t>(cur_ - tok_));
      uint32_t cp = decode_utf8(bytes);
      if (cp < 0x20 || cp == 0x7F) {
        error(tok_, 1, fmt::format("unexpected control character U+{:04X}", cp));
      } else {
        error(tok_, 1, fmt::format("unexpected character `{}` (U+{:04X}); names are ASCII letters, digits and `_`", bytes, cp));
      }
      return true;
    }
    * { error(tok_, 1, fmt::format("invalid UTF-8 byte 0x{:02X}", *tok_)); return true; }
  */
}

void Lexer::lex_ident() {
  size_t n = static_cast<size_t>(cur_ - tok_);
  std::string_view word(reinterpret_cast<const char*>(tok_), n);
  if (n > kMaxNameBytes) {
    error(tok_, static_cast<uint32_t>(n),
          fmt::format("name is {} bytes long (limit {})", n, kMaxNameBytes));
    word = word.substr(0, kMaxNameBytes);
  }
  emit(Tok::Ident, names_.intern(word));
}

void Lexer::lex_number() {
  // `_` separates digit groups; drop it before converting.
  std::string digits;
  digits.reserve(static_cast<size_t>(cur_ - tok_));
  for (const unsigned char* p = tok_; p < cur_; ++p) {
    if (*p != '_') digits += static_cast<char>(*p);
  }
  double value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (ec == std::errc::result_out_of_range) {
    // from_chars reports both overflow and underflow; strtod (correctly
    // rounded in glibc) tells them apart: underflow rounds to a tiny value
    // or zero, which is the correctly rounded literal.
    errno = 0;
    value = std::strtod(digits.c_str(), nullptr);
    if (value > 1) {
      error(tok_, static_cast<uint32_t>(cur_ - tok_),
            fmt::format("number `{}` is too large for a binary64 (largest is about 1.8e308)",
                        digits));
      value = 0;
    }
  } else if (ec != std::errc() || end != digits.data() + digits.size()) {
    // The rules only admit well-formed numbers; this is a programmer error.
    error(tok_, 1, "malformed number");
  } else if (stdlib::integer_rounded(digits, value)) {
    // As a request's arguments and `num(t)` read it (stdlib/numbers.h).
    error(tok_, static_cast<uint32_t>(cur_ - tok_),
          fmt::format("number `{}` is not exactly a binary64 (integers beyond ±2^53 are rounded: it would be {})",
                      digits, stdlib::exact_integer(value)));
  }
  emit(Tok::Number, 0, value);
}

void Lexer::lex_text() {
  const Pos start_pos = pos_of(tok_);  // before a continued line moves the line
  std::string value;
  for (;;) {
    const unsigned char* start = cur_;
    /*!re2c
      ["] { break; }
      [^"\\\n]+ { value.append(reinterpret_cast<const char*>(start), static_cast<size_t>(cur_ - start)); continue; }
      "\\\"" { value += '"'; continue; }
      "\\\\" { value += '\\'; continue; }
      "\\n" { value += '\n'; continue; }
      "\\t" { value += '\t'; continue; }
      "\\r" { value += '\r'; continue; }
      "\\u{" [0-9a-fA-F]{1,6} "}" {
        uint32_t cp = 0;
        for (const unsigned char* p = start + 3; *p != '}'; ++p) {
          unsigned d = *p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10;
          cp = cp * 16 + d;
        }
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          error(start, static_cast<uint32_t>(cur_ - start),
                fmt::format("`\\u{{{:X}}}` is not a Unicode scalar value", cp));
          continue;
        }
        if (cp < 0x80) {
          value += static_cast<char>(cp);
        } else if (cp < 0x800) {
          value += static_cast<char>(0xC0 | (cp >> 6));
          value += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
          value += static_cast<char>(0xE0 | (cp >> 12));
          value += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          value += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
          value += static_cast<char>(0xF0 | (cp >> 18));
          value += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
          value += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          value += static_cast<char>(0x80 | (cp & 0x3F));
        }
        continue;
      }
      "\\u" {
        error(start, 2, "`\\u` takes 1 to 6 hex digits in braces, like `\\u{48}`");
        continue;
      }
      "\\" [^\n] {
        error(start, 2, fmt::format("unknown escape `{}`; known: \\\" \\\\ \\n \\t \\r \\u{{HEX}}",
              std::string_view(reinterpret_cast<const char*>(start), static_cast<size_t>(cur_ - start))));
        continue;
      }
      "\\" "\r"? "\n" {
        // A `\` ending the line: the text was meant to go on. Say so once
        // and read on, so the next line's closing quote closes this text.
        error(start, 1, "a text literal cannot go on to the next line; write `\\n` or join texts with `+`");
        bool was = newline_before_;
        newline();
        newline_before_ = was;
        continue;
      }
      "\\" { continue; }  // a `\` before the end of file: reported as unterminated below
      "\n" { cur_ = start; unterminated_text(); break; }  // the line break is not text
      $ { unterminated_text(); break; }
      * { error(start, 1, fmt::format("invalid UTF-8 byte 0x{:02X} in text", *start)); continue; }
    */
  }
  // Every text has at most vm::kMaxTextBytes (a constant is loaded as one).
  if (value.size() > vm::kMaxTextBytes) {
    error(tok_, 1, fmt::format("text literal is longer than {} MiB ({} bytes), the limit for a text",
                               vm::kMaxTextBytes >> 20, vm::kMaxTextBytes));
    value.resize(vm::kMaxTextBytes);
  }
  emit_at(start_pos, Tok::Text, names_.intern(value));
}

// 'text' or `text`: reported once, then read as the text it was meant to
// be (up to the same quote on that line), so the words inside are not
// taken for names.
void Lexer::lex_wrong_quote() {
  unsigned char quote = *tok_;
  error(tok_, 1, quote == '\''
                     ? "text literals use double quotes: \"...\", not '...'"
                     : "text literals use double quotes: \"...\", not `...`");
  const unsigned char* p = cur_;
  while (p < lim_ && *p != quote && *p != '\n') ++p;
  std::string_view inside(reinterpret_cast<const char*>(cur_), static_cast<size_t>(p - cur_));
  cur_ = p < lim_ && *p == quote ? p + 1 : p;
  emit(Tok::Text, names_.intern(inside));
}

void Lexer::skip_comment() {
  bool reported = false;
  for (;;) {
    const unsigned char* start = cur_;
    /*!re2c
      [^\n]+ { continue; }
      "\n" { cur_ = start; return; }
      $ { return; }
      * {
        if (!reported) error(start, 1, fmt::format("invalid UTF-8 byte 0x{:02X} in comment", *start));
        reported = true;
        continue;
      }
    */
  }
}

}  // namespace

LexOutput lex(const SourceFile& file, Interner& names, Diagnostics& diags) {
  Lexer lexer(file, names, diags);
  return lexer.run();
}

}  // namespace aup
