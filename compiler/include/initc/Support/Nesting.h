//===- Nesting.h - refuse text nested too deeply to parse safely -*- C++ -*-===//
//
// The MLIR parser and llvm::json recurse once per bracket level: a file of a few hundred
// thousand '[' overflows the stack and kills the process instead of producing an error. Inputs
// from users go through this check first.
//
//===----------------------------------------------------------------------===//
#ifndef INITC_SUPPORT_NESTING_H
#define INITC_SUPPORT_NESTING_H

#include "llvm/ADT/StringRef.h"

namespace initc {

/// Deeper than any real model or config, far shallower than what overflows an 8 MiB stack.
constexpr unsigned kMaxNesting = 256;

/// The 1-based line where `text` first opens more than `limit` brackets ('(', '[', '{', '<')
/// outside "strings" and // comments, or 0 if it never does. Closing brackets of any kind
/// count down, so the depth is an upper bound of what a parser sees.
inline unsigned lineNestedDeeperThan(llvm::StringRef text, unsigned limit = kMaxNesting) {
  unsigned depth = 0, line = 1;
  for (size_t i = 0, n = text.size(); i < n; ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
    } else if (c == '"') {
      for (++i; i < n && text[i] != '"'; ++i) {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n')
          ++line;
      }
    } else if (c == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i + 1 < n && text[i + 1] != '\n')
        ++i;
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > limit)
        return line;
    } else if ((c == ')' || c == ']' || c == '}' || c == '>') && depth > 0) {
      --depth;
    }
  }
  return 0;
}

} // namespace initc

#endif // INITC_SUPPORT_NESTING_H
