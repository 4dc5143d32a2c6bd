// CheckedJsonParse: the value nlohmann's own parse builds, and what that parse lets through.
#include "initrt/base/json_text.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

using namespace initrt;

namespace {

// Every kind of value, empty and nested containers, escapes, numbers at their edges.
const std::string kDocument = R"({
  "z": [1, -2, 18446744073709551615, -9223372036854775808, 0.5, -1e-300, 1.7976931348623157e308],
  "a": {"nested": {"deeper": [[], {}, [[[]]], {"k": null}]}, "t": true, "f": false},
  "s": "tab\t quote\" slash\\ unicode \u00e9 \ud83d\ude00",
  "m": [{"b": 2, "a": 1}, "x", null],
  "": "empty key"
})";

template <class JsonT> void expectSameValueAsNlohmann(const std::string &text) {
  CheckedJsonParse<JsonT> parse(text.begin(), text.end());
  EXPECT_EQ(parse.problem(), "");
  JsonT expected = JsonT::parse(text);
  EXPECT_EQ(parse.value, expected);
  // The same text back, which for ordered_json also compares the order of keys.
  EXPECT_EQ(parse.value.dump(), expected.dump());
}

TEST(CheckedJsonParse, BuildsTheValueNlohmannBuilds) {
  expectSameValueAsNlohmann<nlohmann::json>(kDocument);
  expectSameValueAsNlohmann<nlohmann::ordered_json>(kDocument);
  for (const char *scalar : {"3", "-4", "2.5", "\"text\"", "true", "null", "[]", "{}"})
    expectSameValueAsNlohmann<nlohmann::json>(scalar);
}

TEST(CheckedJsonParse, FindsTheFirstKeyGivenTwiceAtAnyDepth) {
  const std::string text = R"({"a": {"x": 1, "y": 2, "x": 3}, "b": 4, "b": 5})";
  CheckedJsonParse<nlohmann::json> parse(text.begin(), text.end());
  EXPECT_EQ(parse.duplicate, "x");
  EXPECT_EQ(parse.problem(), "the key \"x\" appears twice in one object");
  // Equal keys in different objects are not a duplicate.
  const std::string apart = R"([{"x": 1}, {"x": 2, "y": {"x": 3}}])";
  CheckedJsonParse<nlohmann::ordered_json> fine(apart.begin(), apart.end());
  EXPECT_EQ(fine.problem(), "");
}

TEST(CheckedJsonParse, ReportsWhatTheParseMetFirst) {
  // A syntax error after a key given twice: the document is not JSON at all.
  const std::string broken = R"({"a": 1, "a": 2, )";
  CheckedJsonParse<nlohmann::json> syntax(broken.begin(), broken.end());
  EXPECT_FALSE(syntax.syntaxError.empty());
  EXPECT_EQ(syntax.problem().rfind("[json.exception.parse_error.101]", 0), 0u) << syntax.problem();
  std::string nlohmannSays;
  try {
    (void)nlohmann::json::parse(broken);
  } catch (const nlohmann::json::exception &e) {
    nlohmannSays = e.what();
  }
  EXPECT_EQ(syntax.syntaxError, nlohmannSays);

  // Nesting deeper than the limit stops the parse there, before the syntax error after it.
  const std::string deep = std::string(kMaxJsonNesting + 1, '[') + "oops";
  CheckedJsonParse<nlohmann::json> tooDeep(deep.begin(), deep.end());
  EXPECT_TRUE(tooDeep.tooDeep);
  EXPECT_EQ(tooDeep.problem(), "nested deeper than 64 levels");
  // At the limit itself, the document parses.
  const std::string limit = std::string(kMaxJsonNesting, '[') + std::string(kMaxJsonNesting, ']');
  CheckedJsonParse<nlohmann::json> atLimit(limit.begin(), limit.end());
  EXPECT_EQ(atLimit.problem(), "");
}

TEST(CheckedJsonParse, StreamsTheElementsOfOneTopLevelArray) {
  // Elements of every kind, a nested "items" that is not the top level's, and "items" as the
  // key of a later member's inner object.
  const std::string text = R"({"before": [1], "items": [{"a": [1, 2], "items": [3]}, 4, [5, [6]],
    "s", null], "after": {"items": [7]}})";
  std::vector<nlohmann::json> taken;
  CheckedJsonParse<nlohmann::json> parse(text.begin(), text.end(), "items",
                                         [&](nlohmann::json &e) { taken.push_back(e); });
  EXPECT_EQ(parse.problem(), "");
  nlohmann::json whole = nlohmann::json::parse(text);
  EXPECT_EQ(nlohmann::json(taken), whole["items"]);
  whole["items"] = nlohmann::json::array();
  EXPECT_EQ(parse.value, whole);
  // Without that key, nothing is taken.
  taken.clear();
  CheckedJsonParse<nlohmann::json> other(text.begin(), text.end(), "missing",
                                         [&](nlohmann::json &e) { taken.push_back(e); });
  EXPECT_TRUE(taken.empty());
  EXPECT_EQ(other.value, nlohmann::json::parse(text));
}

TEST(ParseJsonText, GivesTheValueOnlyWhenNothingIsWrong) {
  nlohmann::json value = 7;
  std::string why;
  EXPECT_FALSE(parseJsonText(std::string(R"({"k": 1, "k": 2})"), value, why));
  EXPECT_EQ(why, "the key \"k\" appears twice in one object");
  EXPECT_EQ(value, 7);
  EXPECT_TRUE(parseJsonText(std::string(R"({"k": [1, 2]})"), value, why));
  EXPECT_EQ(why, "");
  EXPECT_EQ(value, nlohmann::json::parse(R"({"k": [1, 2]})"));
}

} // namespace
