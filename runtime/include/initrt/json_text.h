// Parsing JSON read from files: a key given twice and deep nesting are errors.
//
// nlohmann keeps the last of two equal keys without a word, and it parses iteratively, but
// copying, comparing and dump() recurse once per level: a damaged file of a few million '['
// would parse and then overflow the stack. Every JSON document the runtime reads, and the
// sharding rules files, go through parseJsonText (or JsonInputCheck, where the parse needs its
// own options); HuggingFace configs are read by llvm::json after initc's own nesting check.
#pragma once

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

namespace initrt {

/// Deeper than any file initc reads: program.json, index.json and safetensors headers nest at
/// most 5 levels.
inline constexpr int kMaxJsonNesting = 64;

/// A first, SAX pass over a document that finds the first key some object has twice (nlohmann
/// would keep the last silently) and nesting deeper than kMaxJsonNesting, building nothing. It is
/// linear in the document: nlohmann's parser callbacks rescan the parent at each object's end,
/// which made a header of 40,000 tensors take 20 s. Syntax errors are left to the parse after it.
struct JsonInputCheck {
  bool tooDeep = false;
  std::string duplicate;

  /// Scans [begin, end); problem() then says what it found.
  template <class JsonT, class Iterator> void scan(Iterator begin, Iterator end) {
    JsonT::sax_parse(begin, end, this);
  }

  /// What is wrong, or "" when nothing is.
  std::string problem() const {
    if (tooDeep)
      return "nested deeper than " + std::to_string(kMaxJsonNesting) + " levels";
    if (!duplicate.empty())
      return "the key \"" + duplicate + "\" appears twice in one object";
    return "";
  }

  // The SAX interface (nlohmann::json_sax): false stops the scan.
  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(int64_t) { return true; }
  bool number_unsigned(uint64_t) { return true; }
  bool number_float(double, const std::string &) { return true; }
  bool string(std::string &) { return true; }
  bool binary(nlohmann::json::binary_t &) { return true; }
  bool start_object(std::size_t) {
    keysPerObject.emplace_back();
    return enter();
  }
  bool key(std::string &key) {
    if (!keysPerObject.back().insert(key).second && duplicate.empty())
      duplicate = key;
    return true;
  }
  bool end_object() {
    keysPerObject.pop_back();
    --depth;
    return true;
  }
  bool start_array(std::size_t) { return enter(); }
  bool end_array() {
    --depth;
    return true;
  }
  template <class Exception> bool parse_error(std::size_t, const std::string &, const Exception &) {
    return false;
  }

private:
  bool enter() {
    tooDeep = tooDeep || ++depth > kMaxJsonNesting;
    return !tooDeep;
  }
  int depth = 0;
  std::vector<std::set<std::string>> keysPerObject;
};

/// Parses `text` into `out`, or says why not in `why`: nlohmann's syntax error (with its
/// "[json.exception...] " prefix), a key given twice in one object, or nesting too deep.
template <class JsonT> bool parseJsonText(const std::string &text, JsonT &out, std::string &why) {
  JsonInputCheck check;
  check.scan<JsonT>(text.begin(), text.end());
  if (check.tooDeep) { // not built: copying or printing it would recurse as deep
    why = check.problem();
    return false;
  }
  try {
    out = JsonT::parse(text);
  } catch (const typename JsonT::exception &e) {
    why = e.what();
    return false;
  }
  why = check.problem();
  return why.empty();
}

} // namespace initrt
