// Structured-output fields to a grammar (see structured_output.h).
#include "server/api/structured_output.h"

#include <QJsonArray>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "engine/common/error.h"
#include "engine/grammar/gbnf.h"
#include "engine/grammar/grammar_cache.h"
#include "engine/grammar/json_schema.h"
#include "server/api/api_error.h"
#include "server/api/request_fields.h"

namespace {

using pagedchat::grammar::Grammar;
using ordered_json = nlohmann::ordered_json;

pagedchat::grammar::GrammarCache& cache() {
  static pagedchat::grammar::GrammarCache grammars;
  return grammars;
}

// The value at `path` in the body, with its objects' members in the order the client wrote.
ordered_json rawValue(const QByteArray& body, const std::vector<std::string>& path) {
  ordered_json v = ordered_json::parse(body.constBegin(), body.constEnd());  // valid: Qt read it already
  for (const std::string& key : path) v = v.at(key);
  return v;
}

std::shared_ptr<const Grammar> schemaGrammar(const ordered_json& schema, const QString& param) {
  if (schema.is_boolean() && schema.get<bool>()) return cache().get("json", [] { return pagedchat::grammar::parse_gbnf(pagedchat::grammar::json_gbnf(false)); });
  if (!schema.is_object())
    throw ApiError::badRequest(QStringLiteral("'%1' must be a JSON schema (an object)").arg(param), param);
  const std::string text = schema.dump();
  try {
    return cache().get("schema:" + text, [&] { return pagedchat::grammar::json_schema_grammar(text); });
  } catch (const pagedchat::Error& e) {
    throw ApiError::badRequest(QStringLiteral("'%1': %2").arg(param, QString::fromUtf8(e.what())), param);
  }
}

std::shared_ptr<const Grammar> gbnfGrammar(const QJsonValue& v, const QString& param) {
  if (!v.isString()) throw ApiError::badRequest(QStringLiteral("'%1' must be a string of GBNF").arg(param), param);
  const std::string text = v.toString().toStdString();
  try {
    return cache().get("gbnf:" + text, [&] { return pagedchat::grammar::parse_gbnf(text); });
  } catch (const pagedchat::Error& e) {
    throw ApiError::badRequest(QStringLiteral("'%1': %2").arg(param, QString::fromUtf8(e.what())), param);
  }
}

// vLLM's guided_choice: exactly one of the strings, as written.
std::shared_ptr<const Grammar> choiceGrammar(const QJsonValue& v) {
  const QString param = QStringLiteral("guided_choice");
  if (!v.isArray() || v.toArray().isEmpty()) throw ApiError::badRequest(QStringLiteral("'guided_choice' must be a non-empty array of strings"), param);
  ordered_json values = ordered_json::array();
  for (const QJsonValue& c : v.toArray()) {
    if (!c.isString() || c.toString().isEmpty()) throw ApiError::badRequest(QStringLiteral("'guided_choice' must hold non-empty strings"), param);
    values.push_back(c.toString().toStdString());
  }
  // The choices as GBNF literals (JSON's string escapes are GBNF's too).
  std::string gbnf = "root ::=";
  for (size_t i = 0; i < values.size(); ++i) gbnf += (i ? " | " : " ") + values[i].dump();
  return cache().get("gbnf:" + gbnf, [&] { return pagedchat::grammar::parse_gbnf(gbnf); });
}

}  // namespace

std::shared_ptr<const Grammar> parseStructuredOutput(const QJsonObject& o, const QByteArray& body) {
  if (given(o, "guided_regex"))
    throw ApiError::badRequest(QStringLiteral("'guided_regex' is not supported by this server (use a JSON schema or GBNF 'grammar')"), "guided_regex");
  std::vector<const char*> fields;
  for (const char* key : {"response_format", "json_schema", "grammar", "guided_json", "guided_choice", "guided_grammar"})
    if (given(o, key)) fields.push_back(key);
  // response_format text is no constraint, and may come beside another.
  const QJsonValue format = o.value(QLatin1String("response_format"));
  const bool plainText = format.isObject() && format.toObject().value(QLatin1String("type")) == QLatin1String("text");
  if (plainText) std::erase_if(fields, [](const char* k) { return std::string(k) == "response_format"; });
  if (fields.empty()) return nullptr;
  if (fields.size() > 1)
    throw ApiError::badRequest(QStringLiteral("'%1' and '%2' both constrain the reply; give one").arg(fields[0], fields[1]), fields[1]);
  const std::string field = fields[0];
  try {
    if (field == "grammar" || field == "guided_grammar") return gbnfGrammar(o.value(QLatin1String(field.c_str())), QString::fromStdString(field));
    if (field == "guided_choice") return choiceGrammar(o.value(QLatin1String("guided_choice")));
    if (field == "json_schema") return schemaGrammar(rawValue(body, {"json_schema"}), QStringLiteral("json_schema"));
    if (field == "guided_json") {
      const QJsonValue v = o.value(QLatin1String("guided_json"));
      if (v.isString()) {
        const ordered_json schema = ordered_json::parse(v.toString().toStdString(), nullptr, false);
        if (schema.is_discarded()) throw ApiError::badRequest(QStringLiteral("'guided_json' is not valid JSON"), "guided_json");
        return schemaGrammar(schema, QStringLiteral("guided_json"));
      }
      return schemaGrammar(rawValue(body, {"guided_json"}), QStringLiteral("guided_json"));
    }
    // response_format
    const QString param = QStringLiteral("response_format");
    if (!format.isObject()) throw ApiError::badRequest(QStringLiteral("'response_format' must be an object with a 'type'"), param);
    const QJsonObject f = format.toObject();
    const QString type = f.value(QLatin1String("type")).toString();
    if (type == QLatin1String("json_object")) {
      if (given(f, "schema")) return schemaGrammar(rawValue(body, {"response_format", "schema"}), QStringLiteral("response_format.schema"));
      return cache().get("json_object", [] { return pagedchat::grammar::parse_gbnf(pagedchat::grammar::json_gbnf(true)); });
    }
    if (type == QLatin1String("json_schema")) {
      const QJsonValue js = f.value(QLatin1String("json_schema"));
      if (!js.isObject()) throw ApiError::badRequest(QStringLiteral("'response_format.json_schema' must be an object with a 'schema'"), "response_format.json_schema");
      const QJsonObject spec = js.toObject();
      if (given(spec, "name") && !spec.value(QLatin1String("name")).isString())
        throw ApiError::badRequest(QStringLiteral("'response_format.json_schema.name' must be a string"), "response_format.json_schema.name");
      if (given(spec, "strict") && !spec.value(QLatin1String("strict")).isBool())
        throw ApiError::badRequest(QStringLiteral("'response_format.json_schema.strict' must be a boolean"), "response_format.json_schema.strict");
      // No schema: any JSON, as OpenAI's API reads it. strict or not, the schema is enforced.
      if (!given(spec, "schema")) return cache().get("json", [] { return pagedchat::grammar::parse_gbnf(pagedchat::grammar::json_gbnf(false)); });
      return schemaGrammar(rawValue(body, {"response_format", "json_schema", "schema"}), QStringLiteral("response_format.json_schema.schema"));
    }
    throw ApiError::badRequest(QStringLiteral("'response_format.type' must be 'text', 'json_object' or 'json_schema', not '%1'").arg(type),
                               "response_format.type");
  } catch (const nlohmann::json::exception& e) {
    throw ApiError::badRequest(QStringLiteral("'%1' could not be read: %2").arg(QString::fromStdString(field), e.what()),
                               QString::fromStdString(field));
  }
}
