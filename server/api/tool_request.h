#pragma once
// The tool-calling fields of a chat completion request: `tools` (read from the raw body, so a
// template that writes them with tojson writes the client's order), `tool_choice` ("none",
// "auto", "required", or {"type": "function", "function": {"name": ...}}) and
// `parallel_tool_calls`. Refused with a 400 naming the field: a malformed tool, a named choice
// not among the tools, a tool_choice without tools, tools beside another constraint on the
// reply (response_format, grammar...). OpenAI's older `functions` / `function_call` are refused
// by name too (send `tools`).

#include <QByteArray>
#include <QJsonObject>

#include <memory>

#include "engine/chat/tool_calls.h"

struct ToolRequest {
  std::shared_ptr<const pagedchat::ToolSet> tools;  // null: none offered, or tool_choice "none"
  pagedchat::ToolChoice choice;
};

// Throws ApiError. `constrained`: the request also has a structured-output field.
ToolRequest parseToolRequest(const QJsonObject& request, const QByteArray& body, bool constrained);
