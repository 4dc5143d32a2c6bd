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

/// A parser callback that remembers the first key some object has twice (nlohmann would keep
/// the last silently) and drops values nested deeper than kMaxJsonNesting, remembering that too.
struct JsonInputCheck {
  bool tooDeep = false;
  std::string duplicate;
  std::vector<std::set<std::string>> keysPerObject;

  template <class JsonT>
  bool operator()(int depth, nlohmann::json::parse_event_t event, JsonT &parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (tooDeep)
      return false;
    if (event == Event::object_start || event == Event::array_start) {
      if (depth >= kMaxJsonNesting) {
        tooDeep = true;
        return false;
      }
      if (event == Event::object_start)
        keysPerObject.emplace_back();
    } else if (event == Event::object_end) {
      if (!keysPerObject.empty())
        keysPerObject.pop_back();
    } else if (event == Event::key && !keysPerObject.empty()) {
      const auto &key = parsed.template get_ref<const std::string &>();
      if (!keysPerObject.back().insert(key).second && duplicate.empty())
        duplicate = key;
    }
    return true;
  }

  /// What is wrong, or "" when nothing is.
  std::string problem() const {
    if (tooDeep)
      return "nested deeper than " + std::to_string(kMaxJsonNesting) + " levels";
    if (!duplicate.empty())
      return "the key \"" + duplicate + "\" appears twice in one object";
    return "";
  }
};

/// Parses `text` into `out`, or says why not in `why`: nlohmann's syntax error (with its
/// "[json.exception...] " prefix), a key given twice in one object, or nesting too deep.
template <class JsonT> bool parseJsonText(const std::string &text, JsonT &out, std::string &why) {
  JsonInputCheck check;
  try {
    out = JsonT::parse(text, [&check](int depth, typename JsonT::parse_event_t event,
                                      JsonT &parsed) { return check(depth, event, parsed); });
  } catch (const typename JsonT::exception &e) {
    why = e.what();
    return false;
  }
  why = check.problem();
  return why.empty();
}

} // namespace initrt
