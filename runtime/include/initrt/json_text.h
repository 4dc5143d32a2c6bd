// Parsing JSON read from files with its nesting bounded.
//
// nlohmann parses iteratively, but copying, comparing and dump() recurse once per level: a
// damaged file of a few million '[' would parse and then overflow the stack. Every JSON document
// the runtime reads goes through parseJsonText.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace initrt {

/// Deeper than any file initc reads: program.json, index.json and safetensors headers nest at
/// most 5 levels.
inline constexpr int kMaxJsonNesting = 64;

/// A parser callback that drops values nested deeper than kMaxJsonNesting and remembers it.
struct JsonNestingLimit {
  bool exceeded = false;
  template <class JsonT> bool operator()(int depth, nlohmann::json::parse_event_t event, JsonT &) {
    using Event = nlohmann::json::parse_event_t;
    if ((event == Event::object_start || event == Event::array_start) && depth >= kMaxJsonNesting)
      exceeded = true;
    return !exceeded;
  }
};

/// Parses `text` into `out`, or says why not in `why` (nlohmann's syntax error, or the nesting).
template <class JsonT> bool parseJsonText(const std::string &text, JsonT &out, std::string &why) {
  JsonNestingLimit limit;
  try {
    out = JsonT::parse(text, [&limit](int depth, typename JsonT::parse_event_t event,
                                      JsonT &parsed) { return limit(depth, event, parsed); });
  } catch (const typename JsonT::exception &e) {
    why = e.what();
    return false;
  }
  if (limit.exceeded) {
    why = "nested deeper than " + std::to_string(kMaxJsonNesting) + " levels";
    return false;
  }
  return true;
}

} // namespace initrt
