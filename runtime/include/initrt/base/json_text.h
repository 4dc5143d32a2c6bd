// Parsing JSON read from files: a key given twice and deep nesting are errors.
//
// nlohmann keeps the last of two equal keys without a word, and it parses iteratively, but
// copying, comparing and dump() recurse once per level: a damaged file of a few million '['
// would parse and then overflow the stack. Every JSON document the runtime reads, and the
// sharding rules files, go through CheckedJsonParse (through parseJsonText, unless the caller
// words each problem itself); HuggingFace configs are read by llvm::json after initc's own nesting
// check.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace initrt {

/// Deeper than any file initc reads: program.json, index.json and safetensors headers nest at
/// most 5 levels.
inline constexpr int kMaxJsonNesting = 64;

/// Parses a document in one pass, building its value and finding what nlohmann's own parse lets
/// through: a key some object has twice (nlohmann keeps the last silently) and nesting deeper
/// than kMaxJsonNesting (then it stops, and builds no deeper). A SAX handler, so that the checks
/// cost no second scan: nlohmann's parser callbacks rescan the parent at each object's end,
/// which made a header of 40,000 tensors take 20 s.
template <class JsonT> class CheckedJsonParse {
public:
  JsonT value;
  /// nlohmann's message for a syntax error, with its "[json.exception...] " prefix.
  std::string syntaxError;
  bool tooDeep = false;
  /// The first key found twice in one object.
  std::string duplicate;

  /// Parses [begin, end) into `value`; problem() then says what is wrong with it.
  template <class Iterator> CheckedJsonParse(Iterator begin, Iterator end) {
    JsonT::sax_parse(begin, end, this);
  }

  /// The same, but each element of the array that the top-level object has under `key` goes to
  /// `take` as soon as it is whole, in order, and is then dropped: `value` keeps that array
  /// empty. A long array (a program's parameters) never stands whole in memory.
  template <class Iterator>
  CheckedJsonParse(Iterator begin, Iterator end, std::string key,
                   std::function<void(JsonT &element)> take)
      : streamedKey(std::move(key)), take(std::move(take)) {
    JsonT::sax_parse(begin, end, this);
  }

  /// What is wrong, whichever the parse met first (a key twice only in a whole document), or
  /// "" when nothing is.
  std::string problem() const {
    if (tooDeep)
      return "nested deeper than " + std::to_string(kMaxJsonNesting) + " levels";
    if (!syntaxError.empty())
      return syntaxError;
    if (!duplicate.empty())
      return "the key \"" + duplicate + "\" appears twice in one object";
    return "";
  }

  // The SAX interface (nlohmann::json_sax): false stops the parse.
  bool null() { return scalar(nullptr); }
  bool boolean(bool v) { return scalar(v); }
  bool number_integer(typename JsonT::number_integer_t v) { return scalar(v); }
  bool number_unsigned(typename JsonT::number_unsigned_t v) { return scalar(v); }
  bool number_float(typename JsonT::number_float_t v, const typename JsonT::string_t &) {
    return scalar(v);
  }
  bool string(typename JsonT::string_t &v) { return scalar(std::move(v)); }
  bool binary(typename JsonT::binary_t &v) { return scalar(JsonT::binary(std::move(v))); }
  bool start_object(std::size_t) { return enter(JsonT::object()); }
  bool key(typename JsonT::string_t &key) {
    JsonT &object = *open.back();
    if (take && open.size() == 1)
      topKey = key;
    auto found = object.find(key);
    if (found == object.end()) {
      slot = &object[std::move(key)];
    } else {
      if (duplicate.empty())
        duplicate = key;
      slot = &*found;
    }
    return true;
  }
  bool end_object() {
    open.pop_back();
    handOver();
    return true;
  }
  bool start_array(std::size_t) {
    bool streams = take && open.size() == 1 && value.is_object() && topKey == streamedKey;
    if (!enter(JsonT::array()))
      return false;
    if (streams)
      streamed = open.back();
    return true;
  }
  bool end_array() {
    if (open.back() == streamed)
      streamed = nullptr;
    open.pop_back();
    handOver();
    return true;
  }
  template <class Exception>
  bool parse_error(std::size_t, const std::string &, const Exception &e) {
    syntaxError = e.what();
    return false;
  }

private:
  template <class V> bool scalar(V &&v) {
    put(std::forward<V>(v));
    handOver();
    return true;
  }
  // An element of the streamed array that has just been completed goes to `take`.
  void handOver() {
    if (streamed && open.back() == streamed) {
      take(streamed->back());
      streamed->erase(streamed->size() - 1);
    }
  }

  // Where the next value goes: the root, the end of the innermost open array, or the member
  // of the innermost open object whose key came last.
  template <class V> JsonT *put(V &&v) {
    if (open.empty()) {
      value = JsonT(std::forward<V>(v));
      return &value;
    }
    JsonT &parent = *open.back();
    if (parent.is_array()) {
      parent.emplace_back(std::forward<V>(v));
      return &parent.back();
    }
    *slot = JsonT(std::forward<V>(v));
    return slot;
  }
  bool enter(JsonT container) {
    if (open.size() >= size_t(kMaxJsonNesting)) {
      tooDeep = true;
      return false;
    }
    open.push_back(put(std::move(container)));
    return true;
  }

  std::vector<JsonT *> open; // the arrays and objects being built, innermost last
  JsonT *slot = nullptr;
  std::string streamedKey;
  std::function<void(JsonT &element)> take;
  std::string topKey;        // the top-level object's latest key, while streaming
  JsonT *streamed = nullptr; // the array whose elements go to `take`, while it is open
};

/// Parses `text` into `out`, or says why not in `why`: nlohmann's syntax error (with its
/// "[json.exception...] " prefix), a key given twice in one object, or nesting too deep.
template <class JsonT> bool parseJsonText(const std::string &text, JsonT &out, std::string &why) {
  CheckedJsonParse<JsonT> parse(text.begin(), text.end());
  why = parse.problem();
  if (!why.empty())
    return false;
  out = std::move(parse.value);
  return true;
}

} // namespace initrt
