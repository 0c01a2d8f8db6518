// JSON Schema written as GBNF (see json_schema.h): one rule per schema node, named after its
// place ("root-user-name"), over the shared rules of JSON's own syntax.
#include "engine/grammar/json_schema.h"

#include <cctype>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "engine/grammar/gbnf.h"

namespace pagedchat::grammar {
namespace {

using Json = nlohmann::ordered_json;  // the properties in the order the schema lists them

const char* const kJsonRules = R"(ws ::= "" | " " | "\n" [ \t]{0,20}
json-value ::= json-object | json-array | json-string | json-number | "true" | "false" | "null"
json-object ::= "{" ws ( json-string ws ":" ws json-value ( "," ws json-string ws ":" ws json-value )* )? "}" ws
json-array ::= "[" ws ( json-value ( "," ws json-value )* )? "]" ws
json-string ::= "\"" json-char* "\"" ws
json-char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-number ::= json-integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )? ws
json-integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
)";

// Keywords that say something of the document (a schema's meaning) and those that only
// describe it; every other keyword is refused.
const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$schema", "$id", "$comment"};
const std::set<std::string> kUnderstood = {"type", "properties", "required", "additionalProperties", "enum", "const", "items",
                                           "minItems", "maxItems", "anyOf", "oneOf", "$ref", "$defs", "definitions",
                                           "minLength", "maxLength"};

// A JSON value as a GBNF literal (its compact serialization, quoted for GBNF).
std::string literal(const Json& value) {
  std::string out = "\"";
  for (const char c : value.dump()) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

class Compiler {
 public:
  explicit Compiler(const Json& root) : root_(root) {}

  std::string compile() {
    const std::string start = node(root_, "root");
    return "root ::= ws " + start + "\n" + rules_ + kJsonRules;
  }

 private:
  // The rule name for a schema node at `path` (written the first time it is met).
  std::string node(const Json& schema, const std::string& path) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail("JSON schema at %s: 'false' admits no value", path.c_str());
      return "json-value";
    }
    check_keywords(schema, path);
    const std::string name = unique(path);
    rules_ += name + " ::= " + body(schema, path) + "\n";
    return name;
  }

  static void check_keywords(const Json& schema, const std::string& path) {
    if (!schema.is_object()) fail("JSON schema at %s: a schema must be an object or a boolean", path.c_str());
    for (const auto& [key, value] : schema.items())
      if (!kUnderstood.count(key) && !kAnnotations.count(key))
        fail("JSON schema at %s: the keyword '%s' is not supported", path.c_str(), key.c_str());
  }

  std::string unique(const std::string& path) {
    std::string name;
    for (const char c : path) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    std::string candidate = name;
    for (int i = 2; !names_.insert(candidate).second; ++i) candidate = name + "-" + std::to_string(i);
    return candidate;
  }

  std::string body(const Json& s, const std::string& path) {
    if (s.contains("$ref")) return ref(s.at("$ref"), path);
    if (s.contains("const")) return literal(s.at("const")) + " ws";
    if (s.contains("enum")) {
      if (!s.at("enum").is_array() || s.at("enum").empty()) fail("JSON schema at %s: 'enum' must be a list of values", path.c_str());
      std::string alts;
      for (const Json& v : s.at("enum")) alts += (alts.empty() ? "" : " | ") + literal(v);
      return "( " + alts + " ) ws";
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (s.contains(key)) {
        if (!s.at(key).is_array() || s.at(key).empty()) fail("JSON schema at %s: '%s' must be a list of schemas", path.c_str(), key);
        std::string alts;
        for (size_t i = 0; i < s.at(key).size(); ++i) alts += (i ? " | " : "") + node(s.at(key)[i], path + "-" + std::to_string(i));
        return alts;
      }
    if (!s.contains("type")) return s.contains("properties") ? object(s, path) : s.contains("items") ? array(s, path) : "json-value";
    const Json& type = s.at("type");
    if (type.is_string()) return typed(type.get<std::string>(), s, path);
    if (!type.is_array() || type.empty()) fail("JSON schema at %s: 'type' must be a type name or a list of them", path.c_str());
    std::string alts;
    for (const Json& t : type) {
      if (!t.is_string()) fail("JSON schema at %s: 'type' must be a type name or a list of them", path.c_str());
      alts += (alts.empty() ? "" : " | ") + std::string("( ") + typed(t.get<std::string>(), s, path) + " )";
    }
    return alts;
  }

  std::string typed(const std::string& type, const Json& s, const std::string& path) {
    if (type == "string") return string(s, path);
    if (type == "integer") return "json-integer ws";
    if (type == "number") return "json-number";
    if (type == "boolean") return "( \"true\" | \"false\" ) ws";
    if (type == "null") return "\"null\" ws";
    if (type == "object") return object(s, path);
    if (type == "array") return array(s, path);
    fail("JSON schema at %s: unknown type '%s'", path.c_str(), type.c_str());
  }

  static int count(const Json& s, const char* key, int fallback, const std::string& path) {
    if (!s.contains(key)) return fallback;
    const Json& v = s.at(key);
    if (!v.is_number_unsigned() || v.get<uint64_t>() > static_cast<uint64_t>(kMaxRepetition))
      fail("JSON schema at %s: '%s' must be a whole number up to %d", path.c_str(), key, kMaxRepetition);
    return static_cast<int>(v.get<uint64_t>());
  }

  // `item` between min and max times (max < 0: no limit), separated by commas.
  static std::string repeated(const std::string& item, int min, int max) {
    if (max == 0) return "";
    const std::string more = "( \",\" ws " + item + " )";
    const std::string least = std::to_string(std::max(0, min - 1));
    std::string rest = max < 0 ? (min > 1 ? more + "{" + least + ",}" : more + "*")
                       : max == 1 ? "" : more + "{" + least + "," + std::to_string(max - 1) + "}";
    const std::string some = item + (rest.empty() ? "" : " " + rest);
    return min == 0 ? "( " + some + " )?" : some;
  }

  std::string string(const Json& s, const std::string& path) {
    const int min = count(s, "minLength", 0, path), max = count(s, "maxLength", -1, path);
    if (max >= 0 && max < min) fail("JSON schema at %s: 'maxLength' is less than 'minLength'", path.c_str());
    const std::string chars = max < 0 ? "json-char{" + std::to_string(min) + ",}" : "json-char{" + std::to_string(min) + "," + std::to_string(max) + "}";
    return "\"\\\"\" " + chars + " \"\\\"\" ws";
  }

  std::string array(const Json& s, const std::string& path) {
    const std::string item = s.contains("items") ? node(s.at("items"), path + "-item") : "json-value";
    const int min = count(s, "minItems", 0, path), max = count(s, "maxItems", -1, path);
    if (max >= 0 && max < min) fail("JSON schema at %s: 'maxItems' is less than 'minItems'", path.c_str());
    return "\"[\" ws " + repeated(item, min, max) + " \"]\" ws";
  }

  std::string object(const Json& s, const std::string& path) {
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s.at("required").is_array()) fail("JSON schema at %s: 'required' must be a list of names", path.c_str());
      for (const Json& r : s.at("required")) required.insert(r.get<std::string>());
    }
    const Json props = s.value("properties", Json::object());
    for (const std::string& r : required)
      if (!props.contains(r)) fail("JSON schema at %s: '%s' is required but not among the properties", path.c_str(), r.c_str());
    if (props.empty()) {
      // A map: additionalProperties' schema for every value (absent or true: any value).
      const Json extra = s.value("additionalProperties", Json(true));
      if (extra.is_boolean() && !extra.get<bool>()) return "\"{\" ws \"}\" ws";
      const std::string value = node(extra, path + "-value");
      return "\"{\" ws " + repeated("json-string \":\" ws " + value, 0, -1) + " \"}\" ws";
    }
    // The properties in the schema's order, each required one present, the others optional;
    // members not listed are not written (the schema admits their absence).
    std::vector<std::pair<std::string, bool>> members;  // member rule, required
    for (const auto& [key, schema] : props.items())
      members.emplace_back(literal(Json(key)) + " ws \":\" ws " + node(schema, path + "-" + key), required.count(key) != 0);
    // first_i: the members from i on, none written yet; rest_i: some written, so a comma first.
    std::vector<std::string> first(members.size() + 1), rest(members.size() + 1);
    const std::string base = unique(path + "-members");
    for (size_t i = members.size() + 1; i-- > 0;) {
      first[i] = base + "-first-" + std::to_string(i);
      rest[i] = base + "-rest-" + std::to_string(i);
      if (i == members.size()) {
        rules_ += first[i] + " ::= \"\"\n" + rest[i] + " ::= \"\"\n";
        continue;
      }
      const auto& [member, needed] = members[i];
      rules_ += first[i] + " ::= " + member + " " + rest[i + 1] + (needed ? "" : " | " + first[i + 1]) + "\n";
      rules_ += rest[i] + " ::= \",\" ws " + member + " " + rest[i + 1] + (needed ? "" : " | " + rest[i + 1]) + "\n";
    }
    return "\"{\" ws " + first[0] + " \"}\" ws";
  }

  std::string ref(const Json& target, const std::string& path) {
    const std::string r = target.is_string() ? target.get<std::string>() : "";
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      if (r.rfind(prefix, 0) != 0) continue;
      const std::string name = r.substr(std::string(prefix).size());
      const Json& defs = root_.value(std::string(prefix).substr(2, std::string(prefix).size() - 3), Json::object());
      if (!defs.contains(name)) fail("JSON schema at %s: '$ref' %s names no definition", path.c_str(), r.c_str());
      if (const auto it = refs_.find(r); it != refs_.end()) return it->second;
      const std::string rule = unique("def-" + name);
      refs_[r] = rule;
      if (defs.at(name).is_boolean()) return node(defs.at(name), "def-" + name);
      check_keywords(defs.at(name), "def-" + name);
      rules_ += rule + " ::= " + body(defs.at(name), "def-" + name) + "\n";
      return rule;
    }
    fail("JSON schema at %s: '$ref' must point into #/$defs or #/definitions (got '%s')", path.c_str(), r.c_str());
  }

  const Json& root_;
  std::string rules_;
  std::set<std::string> names_ = {"root", "ws"};
  std::map<std::string, std::string> refs_;
};

}  // namespace

std::string json_schema_to_gbnf(std::string_view schema_json, JsonLayout layout) {
  const Json schema = Json::parse(schema_json, nullptr, false);
  if (schema.is_discarded()) fail("the JSON schema is not JSON");
  std::string gbnf = Compiler(schema).compile();
  if (layout == JsonLayout::kCompact) {
    // The one whitespace rule, emptied: every other rule writes its tokens back to back.
    const std::string free_ws = std::string(kJsonRules).substr(0, std::string_view(kJsonRules).find('\n') + 1);
    gbnf.replace(gbnf.find(free_ws), free_ws.size(), "ws ::= \"\"\n");
  }
  return gbnf;
}

Grammar json_schema_grammar(std::string_view schema_json) { return parse_gbnf(json_schema_to_gbnf(schema_json)); }

std::string json_gbnf(bool object_only) {
  return std::string("root ::= ws ") + (object_only ? "json-object" : "json-value") + "\n" + kJsonRules;
}

}  // namespace pagedchat::grammar
