// Tool-calling request fields (see tool_request.h).
#include "server/api/tool_request.h"

#include <QJsonArray>

#include <nlohmann/json.hpp>

#include "engine/common/error.h"
#include "server/api/api_error.h"
#include "server/api/request_fields.h"

ToolRequest parseToolRequest(const QJsonObject& o, const QByteArray& body, bool constrained) {
  for (const char* legacy : {"functions", "function_call"})
    if (given(o, legacy))
      throw ApiError::badRequest(QStringLiteral("'%1' (OpenAI's older function calling) is not supported; send 'tools' and 'tool_choice'")
                                     .arg(QLatin1String(legacy)),
                                 legacy);
  ToolRequest r;
  const bool hasTools = given(o, "tools") && !(o.value(QLatin1String("tools")).isArray() && o.value(QLatin1String("tools")).toArray().isEmpty());
  if (given(o, "parallel_tool_calls")) {
    if (!o.value(QLatin1String("parallel_tool_calls")).isBool())
      throw ApiError::badRequest(QStringLiteral("'parallel_tool_calls' must be a boolean"), "parallel_tool_calls");
    r.choice.parallel = o.value(QLatin1String("parallel_tool_calls")).toBool();
  }
  bool none = false;
  if (given(o, "tool_choice")) {
    const QJsonValue c = o.value(QLatin1String("tool_choice"));
    if (c == QLatin1String("none")) none = true;
    else if (c == QLatin1String("auto")) r.choice.mode = pagedchat::ToolChoice::Mode::kAuto;
    else if (c == QLatin1String("required")) r.choice.mode = pagedchat::ToolChoice::Mode::kRequired;
    else if (c.isObject() && c.toObject().value(QLatin1String("function")).toObject().value(QLatin1String("name")).isString()) {
      r.choice.mode = pagedchat::ToolChoice::Mode::kNamed;
      r.choice.name = c.toObject().value(QLatin1String("function")).toObject().value(QLatin1String("name")).toString().toStdString();
    } else {
      throw ApiError::badRequest(
          QStringLiteral("'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}"),
          "tool_choice");
    }
    if (!hasTools && !none) throw ApiError::badRequest(QStringLiteral("'tool_choice' needs 'tools'"), "tool_choice");
  }
  if (!hasTools || none) return r;  // "none": the model is not told of the tools, and cannot call them
  if (constrained)
    throw ApiError::badRequest(QStringLiteral("'tools' with another constraint on the reply (response_format, grammar...) is not supported"), "tools");
  try {
    const nlohmann::ordered_json raw = nlohmann::ordered_json::parse(body.constBegin(), body.constEnd());
    r.tools = std::make_shared<const pagedchat::ToolSet>(raw.at("tools").dump());
  } catch (const pagedchat::Error& e) {
    throw ApiError::badRequest(QString::fromUtf8(e.what()), "tools");
  } catch (const nlohmann::json::exception& e) {
    throw ApiError::badRequest(QStringLiteral("'tools' could not be read: %1").arg(e.what()), "tools");
  }
  if (r.choice.mode == pagedchat::ToolChoice::Mode::kNamed && !r.tools->has(r.choice.name))
    throw ApiError::badRequest(QStringLiteral("'tool_choice' names '%1', which is not among the tools").arg(QString::fromStdString(r.choice.name)),
                               "tool_choice");
  return r;
}
