// Parsing and validation of completion request bodies (OpenAI's parameter names and ranges).
#include "server/api/completion_request.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonParseError>

#include <algorithm>
#include <cmath>
#include <limits>

#include "server/api/api_error.h"
#include "server/api/request_fields.h"
#include "server/api/structured_output.h"

namespace {

QString typeName(const QJsonValue& v) {
  switch (v.type()) {
    case QJsonValue::Null: return QStringLiteral("null");
    case QJsonValue::Bool: return QStringLiteral("boolean");
    case QJsonValue::Double: return QStringLiteral("number");
    case QJsonValue::String: return QStringLiteral("string");
    case QJsonValue::Array: return QStringLiteral("array");
    case QJsonValue::Object: return QStringLiteral("object");
    case QJsonValue::Undefined: break;
  }
  return QStringLiteral("undefined");
}

[[noreturn]] void badType(const QString& param, const QString& want, const QJsonValue& got) {
  throw ApiError::badRequest(QStringLiteral("'%1' must be %2, not %3").arg(param, want, typeName(got)), param);
}

[[noreturn]] void outOfRange(const QString& param, const QString& range) {
  throw ApiError::badRequest(QStringLiteral("'%1' must be %2").arg(param, range), param);
}

// A raw control character (U+0000-U+001F) where JSON allows none: inside a string (RFC 8259
// wants it escaped), or outside one other than the four whitespace bytes. Qt's parser takes
// them; the offset of the first, or -1.
qsizetype rawControlCharacter(const QByteArray& body) {
  bool inString = false, escaped = false;
  for (qsizetype i = 0; i < body.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(body[i]);
    if (inString) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') inString = false;
      else if (c < 0x20) return i;
    } else if (c == '"') {
      inString = true;
    } else if (c < 0x20 && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      return i;
    }
  }
  return -1;
}

QJsonObject parseObject(const QByteArray& body) {
  if (const qsizetype at = rawControlCharacter(body); at >= 0)
    throw ApiError::badRequest(QStringLiteral("the request body is not valid JSON: a raw control character (0x%1) at offset %2; "
                                              "JSON writes it escaped (\\u%3)")
                                   .arg(static_cast<unsigned char>(body[at]), 2, 16, QLatin1Char('0'))
                                   .arg(at)
                                   .arg(static_cast<unsigned char>(body[at]), 4, 16, QLatin1Char('0')));
  QJsonParseError err;
  QJsonDocument doc = QJsonDocument::fromJson(body, &err);
  if (err.error != QJsonParseError::NoError)
    throw ApiError::badRequest(QStringLiteral("the request body is not valid JSON: %1 at offset %2")
                                   .arg(err.errorString())
                                   .arg(err.offset));
  if (!doc.isObject()) throw ApiError::badRequest(QStringLiteral("the request body must be a JSON object"));
  return doc.object();
}

double number(const QJsonObject& o, const char* key, double lo, double hi) {
  QJsonValue v = o.value(QLatin1String(key));
  if (!v.isDouble()) badType(key, QStringLiteral("a number"), v);
  double x = v.toDouble();
  if (!std::isfinite(x) || x < lo || x > hi) outOfRange(key, QStringLiteral("between %1 and %2").arg(lo).arg(hi));
  return x;
}

int64_t integer(const QJsonObject& o, const char* key, int64_t lo, int64_t hi) {
  QJsonValue v = o.value(QLatin1String(key));
  if (!v.isDouble()) badType(key, QStringLiteral("an integer"), v);
  double x = v.toDouble();
  if (!std::isfinite(x) || x != std::floor(x)) badType(key, QStringLiteral("an integer"), v);
  if (x < static_cast<double>(lo) || x > static_cast<double>(hi))
    outOfRange(key, QStringLiteral("between %1 and %2").arg(lo).arg(hi));
  return static_cast<int64_t>(x);
}

bool boolean(const QJsonObject& o, const char* key) {
  QJsonValue v = o.value(QLatin1String(key));
  if (!v.isBool()) badType(key, QStringLiteral("a boolean"), v);
  return v.toBool();
}

QString requiredString(const QJsonObject& o, const char* key) {
  if (!o.contains(QLatin1String(key)))
    throw ApiError::badRequest(QStringLiteral("'%1' is required").arg(key), key);
  QJsonValue v = o.value(QLatin1String(key));
  if (!v.isString()) badType(key, QStringLiteral("a string"), v);
  return v.toString();
}

std::vector<std::string> stopStrings(const QJsonObject& o, const CompletionLimits& limits) {
  QJsonValue v = o.value(QLatin1String("stop"));
  QJsonArray items;
  if (v.isString()) items.append(v);
  else if (v.isArray()) items = v.toArray();
  else badType(QStringLiteral("stop"), QStringLiteral("a string or an array of strings"), v);
  if (items.size() > limits.maxStop) outOfRange(QStringLiteral("stop"), QStringLiteral("at most %1 strings").arg(limits.maxStop));
  std::vector<std::string> out;
  for (qsizetype i = 0; i < items.size(); ++i) {
    const QString param = QStringLiteral("stop[%1]").arg(i);
    if (!items[i].isString()) badType(param, QStringLiteral("a string"), items[i]);
    if (items[i].toString().isEmpty()) throw ApiError::badRequest(QStringLiteral("stop strings must not be empty"), param);
    out.push_back(items[i].toString().toStdString());
  }
  return out;
}

// The fields both endpoints share: sampling, n, stream, and the ones refused because the
// engine does not produce them yet.
void parseCommon(const QJsonObject& o, const QByteArray& body, const CompletionLimits& limits, CompletionRequest& r) {
  r.model = requiredString(o, "model");
  pagedchat::SamplingParams& p = r.params;
  if (given(o, "temperature")) p.temperature = static_cast<float>(number(o, "temperature", 0.0, 2.0));
  else p.temperature = 1.0f;  // OpenAI's default
  // top_p 0 is legal in the API (keep only the top token); the sampler wants it > 0.
  if (given(o, "top_p")) p.top_p = std::max(static_cast<float>(number(o, "top_p", 0.0, 1.0)), 1e-6f);
  if (given(o, "presence_penalty")) p.presence_penalty = static_cast<float>(number(o, "presence_penalty", -2.0, 2.0));
  if (given(o, "frequency_penalty")) p.frequency_penalty = static_cast<float>(number(o, "frequency_penalty", -2.0, 2.0));
  // OpenAI's penalties count every earlier occurrence, not a recent window.
  p.penalty_last_n = -1;
  p.max_tokens = limits.maxTokens;
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (given(o, key)) p.max_tokens = static_cast<int>(integer(o, key, 1, limits.maxTokens));
  if (given(o, "seed")) {
    // Any 64-bit integer; doubles carry 53 bits, which is what JSON clients send anyway.
    p.seed = static_cast<uint64_t>(integer(o, "seed", std::numeric_limits<int64_t>::min() / 2, std::numeric_limits<int64_t>::max() / 2));
    r.hasSeed = true;
  }
  if (given(o, "stop")) p.stop = stopStrings(o, limits);
  if (given(o, "n")) r.n = static_cast<int>(integer(o, "n", 1, limits.maxN));
  if (given(o, "use_beam_search") && boolean(o, "use_beam_search") && !given(o, "beam_width"))
    r.beamWidth = std::max(r.n, 2);  // vLLM's older spelling: n beams
  if (given(o, "beam_width")) r.beamWidth = static_cast<int>(integer(o, "beam_width", 2, std::max(limits.maxN, 2)));
  if (given(o, "length_penalty")) {
    if (r.beamWidth == 0) throw ApiError::badRequest(QStringLiteral("'length_penalty' needs 'beam_width'"), "length_penalty");
    r.lengthPenalty = static_cast<float>(number(o, "length_penalty", -10.0, 10.0));
  }
  if (r.beamWidth > 0 && r.n > r.beamWidth)
    throw ApiError::badRequest(QStringLiteral("'n' (%1) is more than 'beam_width' (%2)").arg(r.n).arg(r.beamWidth), "n");
  if (given(o, "stream")) r.stream = boolean(o, "stream");
  if (given(o, "stream_options")) {
    QJsonValue so = o.value(QLatin1String("stream_options"));
    if (!so.isObject()) badType(QStringLiteral("stream_options"), QStringLiteral("an object"), so);
    if (!r.stream) throw ApiError::badRequest(QStringLiteral("'stream_options' is only allowed when 'stream' is true"), "stream_options");
    QJsonObject opts = so.toObject();
    if (given(opts, "include_usage")) {
      if (!opts.value(QLatin1String("include_usage")).isBool())
        badType(QStringLiteral("stream_options.include_usage"), QStringLiteral("a boolean"), opts.value(QLatin1String("include_usage")));
      r.includeUsage = opts.value(QLatin1String("include_usage")).toBool();
    }
  }
  if (given(o, "cache_salt")) {
    const QJsonValue sv = o.value(QLatin1String("cache_salt"));
    if (!sv.isString()) badType(QStringLiteral("cache_salt"), QStringLiteral("a string"), sv);
    r.cacheSalt = sv.toString();
    if (r.cacheSalt.isEmpty() || r.cacheSalt.size() > 256) outOfRange(QStringLiteral("cache_salt"), QStringLiteral("1 to 256 characters"));
  }
  if (given(o, "logit_bias")) {
    const QJsonValue bv = o.value(QLatin1String("logit_bias"));
    if (!bv.isObject()) badType(QStringLiteral("logit_bias"), QStringLiteral("an object of token id -> bias"), bv);
    const QJsonObject biases = bv.toObject();
    if (biases.size() > 1024) throw ApiError::badRequest(QStringLiteral("'logit_bias' has more than 1024 entries"), "logit_bias");
    for (auto it = biases.begin(); it != biases.end(); ++it) {
      bool ok = false;
      const qlonglong id = it.key().toLongLong(&ok);
      const QString param = QStringLiteral("logit_bias.%1").arg(it.key());
      if (!ok || id < 0 || id > std::numeric_limits<int32_t>::max())
        throw ApiError::badRequest(QStringLiteral("'logit_bias' keys must be token ids, not '%1'").arg(it.key()), "logit_bias");
      if (!it.value().isDouble()) badType(param, QStringLiteral("a number"), it.value());
      const double bias = it.value().toDouble();
      if (!(bias >= -100.0 && bias <= 100.0)) outOfRange(param, QStringLiteral("in [-100, 100]"));
      p.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(bias));
    }
    if (r.beamWidth > 0 && !p.logit_bias.empty())
      throw ApiError::badRequest(QStringLiteral("'logit_bias' is not supported with beam search"), "logit_bias");
  }
  p.grammar = parseStructuredOutput(o, body);
  // Fields of the API we do not implement yet: refused by name rather than silently ignored
  // (a client asking for JSON or a tool call would get free text and not know why).
  const auto unsupported = [&](const char* key, auto acceptable) {
    if (given(o, key) && !acceptable(o.value(QLatin1String(key))))
      throw ApiError::badRequest(QStringLiteral("'%1' is not supported by this server yet").arg(QLatin1String(key)), key);
  };
  if (r.kind == CompletionRequest::Kind::chat) r.tools = parseToolRequest(o, body, p.grammar != nullptr);
  else unsupported("tools", [](const QJsonValue& v) { return v.isArray() && v.toArray().isEmpty(); });  // chat only
  if (given(o, "reasoning_effort")) {
    const QString effort = o.value(QLatin1String("reasoning_effort")).toString();
    const int budget = effort == QLatin1String("minimal") || effort == QLatin1String("none") ? 0
                       : effort == QLatin1String("low")                                       ? 512
                       : effort == QLatin1String("medium")                                    ? 2048
                       : effort == QLatin1String("high")                                      ? 8192
                                                                                               : -2;
    if (budget == -2) throw ApiError::badRequest(QStringLiteral("'reasoning_effort' must be none, minimal, low, medium or high"), "reasoning_effort");
    r.reasoningBudget = budget;
  }
  if (given(o, "thinking_budget_tokens")) r.reasoningBudget = static_cast<int>(integer(o, "thinking_budget_tokens", 0, 1 << 20));
  if (given(o, "reasoning_format")) {
    const QString f = o.value(QLatin1String("reasoning_format")).toString();
    if (f != QLatin1String("none") && f != QLatin1String("auto") && f != QLatin1String("deepseek"))
      throw ApiError::badRequest(QStringLiteral("'reasoning_format' must be none, auto or deepseek"), "reasoning_format");
    r.reasoningRaw = f == QLatin1String("none");
  }
  unsupported("suffix", [](const QJsonValue& v) { return v.isString() && v.toString().isEmpty(); });
  unsupported("echo", [](const QJsonValue& v) { return v == QJsonValue(false); });
  unsupported("best_of", [&](const QJsonValue& v) { return v.isDouble() && v.toDouble() == 1.0; });
  // logprobs: chat asks with a boolean and top_logprobs (0..20); completions with an integer
  // (0..5, the number of alternatives).
  if (r.kind == CompletionRequest::Kind::chat) {
    const bool want = given(o, "logprobs") && boolean(o, "logprobs");
    if (given(o, "top_logprobs")) {
      const int top = static_cast<int>(integer(o, "top_logprobs", 0, 20));
      if (!want) throw ApiError::badRequest(QStringLiteral("'top_logprobs' needs 'logprobs': true"), "top_logprobs");
      p.num_logprobs = top;
    } else if (want) {
      p.num_logprobs = 0;
    }
  } else if (given(o, "logprobs")) {
    p.num_logprobs = static_cast<int>(integer(o, "logprobs", 0, 5));
  }
}

// A message's content: a string, or an array of {"type": "text", "text": ...} parts, joined.
std::string messageContent(const QJsonValue& v, const QString& param, bool mayBeNull) {
  if (v.isString()) return v.toString().toStdString();
  if ((v.isNull() || v.isUndefined()) && mayBeNull) return {};
  if (!v.isArray()) badType(param, QStringLiteral("a string or an array of text parts"), v);
  std::string text;
  const QJsonArray parts = v.toArray();
  for (qsizetype i = 0; i < parts.size(); ++i) {
    const QString partParam = QStringLiteral("%1[%2]").arg(param).arg(i);
    QJsonObject part = parts[i].toObject();
    if (!parts[i].isObject() || part.value(QLatin1String("type")).toString() != QLatin1String("text"))
      throw ApiError::badRequest(QStringLiteral("only text content parts are supported"), partParam);
    QJsonValue t = part.value(QLatin1String("text"));
    if (!t.isString()) badType(partParam + QStringLiteral(".text"), QStringLiteral("a string"), t);
    text += t.toString().toStdString();
  }
  return text;
}

// An assistant message's tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}],
// the arguments a JSON object's text (or the object itself, as some clients send it).
std::vector<pagedchat::ToolCall> toolCalls(const QJsonValue& v, const QString& param) {
  if (!v.isArray()) badType(param, QStringLiteral("an array"), v);
  std::vector<pagedchat::ToolCall> out;
  const QJsonArray calls = v.toArray();
  for (qsizetype i = 0; i < calls.size(); ++i) {
    const QString at = QStringLiteral("%1[%2]").arg(param).arg(i);
    const QJsonObject c = calls[i].toObject();
    const QJsonObject f = c.value(QLatin1String("function")).toObject();
    if (!calls[i].isObject() || !f.value(QLatin1String("name")).isString())
      throw ApiError::badRequest(QStringLiteral("a tool call must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}"), at);
    pagedchat::ToolCall call;
    call.id = c.value(QLatin1String("id")).toString().toStdString();
    call.name = f.value(QLatin1String("name")).toString().toStdString();
    const QJsonValue args = f.value(QLatin1String("arguments"));
    if (args.isString()) call.arguments = args.toString().toStdString();
    else if (args.isObject()) call.arguments = QJsonDocument(args.toObject()).toJson(QJsonDocument::Compact).toStdString();
    else if (args.isNull() || args.isUndefined()) call.arguments = "{}";
    else badType(at + QStringLiteral(".function.arguments"), QStringLiteral("a string of JSON"), args);
    out.push_back(std::move(call));
  }
  return out;
}

}  // namespace

CompletionRequest parseChatCompletion(const QByteArray& body, const CompletionLimits& limits) {
  const QJsonObject o = parseObject(body);
  CompletionRequest r;
  r.kind = CompletionRequest::Kind::chat;
  parseCommon(o, body, limits, r);
  if (!o.contains(QLatin1String("messages"))) throw ApiError::badRequest(QStringLiteral("'messages' is required"), "messages");
  QJsonValue mv = o.value(QLatin1String("messages"));
  if (!mv.isArray()) badType(QStringLiteral("messages"), QStringLiteral("an array"), mv);
  const QJsonArray messages = mv.toArray();
  if (messages.isEmpty()) throw ApiError::badRequest(QStringLiteral("'messages' must not be empty"), "messages");
  for (qsizetype i = 0; i < messages.size(); ++i) {
    const QString param = QStringLiteral("messages[%1]").arg(i);
    if (!messages[i].isObject()) badType(param, QStringLiteral("an object"), messages[i]);
    const QJsonObject m = messages[i].toObject();
    QJsonValue rv = m.value(QLatin1String("role"));
    if (!rv.isString()) badType(param + QStringLiteral(".role"), QStringLiteral("a string"), rv);
    QString role = rv.toString();
    if (role == QLatin1String("developer")) role = QStringLiteral("system");  // the newer name
    if (role != QLatin1String("system") && role != QLatin1String("user") && role != QLatin1String("assistant") && role != QLatin1String("tool"))
      throw ApiError::badRequest(QStringLiteral("role '%1' is not supported (system, developer, user, assistant, tool)").arg(rv.toString()),
                                 param + QStringLiteral(".role"));
    const bool isAssistant = role == QLatin1String("assistant");
    pagedchat::ChatMessage message{role.toStdString(), messageContent(m.value(QLatin1String("content")), param + QStringLiteral(".content"), isAssistant)};
    if (isAssistant && given(m, "tool_calls")) message.tool_calls = toolCalls(m.value(QLatin1String("tool_calls")), param + QStringLiteral(".tool_calls"));
    // A reply's thinking, as this server returns it: a template that reads it back (gpt-oss's,
    // in a tool call's turn) gets it; the others leave it out.
    if (isAssistant && given(m, "reasoning_content")) {
      const QJsonValue reasoning = m.value(QLatin1String("reasoning_content"));
      if (!reasoning.isString()) badType(param + QStringLiteral(".reasoning_content"), QStringLiteral("a string"), reasoning);
      message.reasoning = reasoning.toString().toStdString();
    }
    if (role == QLatin1String("tool")) {
      // The result of a call: which call it answers is required (the template pairs them).
      const QJsonValue id = m.value(QLatin1String("tool_call_id"));
      if (!id.isString() || id.toString().isEmpty())
        throw ApiError::badRequest(QStringLiteral("a tool message needs its 'tool_call_id'"), param + QStringLiteral(".tool_call_id"));
      message.tool_call_id = id.toString().toStdString();
      if (m.value(QLatin1String("name")).isString()) message.name = m.value(QLatin1String("name")).toString().toStdString();
    }
    r.messages.push_back(std::move(message));
  }
  return r;
}

CompletionRequest parseTextCompletion(const QByteArray& body, const CompletionLimits& limits) {
  const QJsonObject o = parseObject(body);
  CompletionRequest r;
  r.kind = CompletionRequest::Kind::text;
  parseCommon(o, body, limits, r);
  if (!o.contains(QLatin1String("prompt"))) throw ApiError::badRequest(QStringLiteral("'prompt' is required"), "prompt");
  QJsonValue pv = o.value(QLatin1String("prompt"));
  // A string, a one-string array, or one array of token ids. Batches of prompts are refused
  // (their choices would interleave; send one request per prompt).
  if (pv.isArray() && pv.toArray().size() == 1 && pv.toArray().at(0).isString()) pv = pv.toArray().at(0);
  if (pv.isString()) {
    r.prompt = pv.toString().toStdString();
    if (r.prompt.empty()) throw ApiError::badRequest(QStringLiteral("'prompt' must not be empty"), "prompt");
    return r;
  }
  if (!pv.isArray()) badType(QStringLiteral("prompt"), QStringLiteral("a string or an array of token ids"), pv);
  const QJsonArray tokens = pv.toArray();
  if (tokens.isEmpty()) throw ApiError::badRequest(QStringLiteral("'prompt' must not be empty"), "prompt");
  for (qsizetype i = 0; i < tokens.size(); ++i) {
    const QJsonValue& t = tokens[i];
    if (!t.isDouble() || t.toDouble() != std::floor(t.toDouble()) || t.toDouble() < 0 || t.toDouble() > std::numeric_limits<int32_t>::max())
      throw ApiError::badRequest(QStringLiteral("'prompt' must be a string or one array of token ids (non-negative integers)"),
                                 QStringLiteral("prompt[%1]").arg(i));
    r.promptTokens.push_back(static_cast<int32_t>(t.toDouble()));
  }
  return r;
}
