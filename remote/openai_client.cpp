#include "remote/openai_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "remote/http_transfer.h"
#include "remote/sse_parser.h"

namespace pagedchat::remote {
using namespace detail;

std::string RemoteError::sentence() const {
  const std::string said = server_message.empty() ? std::string() : ": " + server_message;
  const std::string code = http_status ? " (" + std::to_string(http_status) + ")" : std::string();
  switch (kind) {
    case RemoteErrorKind::none: return {};
    case RemoteErrorKind::stopped: return "Stopped.";
    case RemoteErrorKind::refused:
      return "Nothing answers at " + url + ": is the server running, and on this port?";
    case RemoteErrorKind::unreachable: return "The server at " + url + " cannot be reached (" + detail + ").";
    case RemoteErrorKind::timeout: return "The server stopped sending (" + detail + "); the request was given up.";
    case RemoteErrorKind::unauthorized:
      return "The server refused the API key" + code + said + ". Check the key set for this endpoint.";
    case RemoteErrorKind::forbidden: return "The server does not allow this request" + code + said + ".";
    case RemoteErrorKind::not_found: return "The server has no such route or model" + code + said + ".";
    case RemoteErrorKind::rate_limited:
      return "The server is busy" + code + said + "; try again" +
             (retry_after_s >= 0 ? " in " + std::to_string(retry_after_s) + " s." : " in a moment.");
    case RemoteErrorKind::bad_request: return "The server rejected the request" + code + said + ".";
    case RemoteErrorKind::server_error: return "The server failed" + code + said + ".";
    case RemoteErrorKind::stream_cut:
      if (http_status == 0) return "The server at " + url + " closed the connection without answering (" + detail + ").";
      return "The connection closed before the reply ended (the server stopped, or the network dropped); what "
             "arrived is kept.";
    case RemoteErrorKind::bad_response: return "The server's reply is not an OpenAI-compatible one" + said + ".";
  }
  return {};
}

std::string route_url(const Endpoint& endpoint, std::string_view route) {
  std::string base = endpoint.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() < 3 || base.compare(base.size() - 3, 3, "/v1") != 0) base += "/v1";
  return base + "/" + std::string(route);
}

std::string chat_request_json(const RemoteChatRequest& r, const std::string& model) {
  // Ordered: a schema goes with its members in the order the reply is to write them.
  using ordered = nlohmann::ordered_json;
  ordered messages = ordered::array();
  for (const RemoteMessage& m : r.messages) {
    ordered message = {{"role", m.role}, {"content", m.content}};
    if (!m.tool_calls.empty()) {
      ordered calls = ordered::array();
      for (const RemoteToolCall& c : m.tool_calls)
        calls.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      message["tool_calls"] = std::move(calls);
    }
    if (!m.tool_call_id.empty()) message["tool_call_id"] = m.tool_call_id;
    messages.push_back(std::move(message));
  }
  ordered body = {{"model", model},
               {"messages", std::move(messages)},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"max_tokens", r.max_tokens},
               {"temperature", r.temperature},
               {"top_p", r.top_p}};
  if (r.n != 1) body["n"] = r.n;
  if (r.seed) body["seed"] = *r.seed;
  if (!r.stop.empty()) body["stop"] = r.stop;
  if (r.frequency_penalty != 0.0) body["frequency_penalty"] = r.frequency_penalty;
  if (r.presence_penalty != 0.0) body["presence_penalty"] = r.presence_penalty;
  if (r.beam_search) body["use_beam_search"] = true;
  if (r.answer_format == "json") {
    body["response_format"] = {{"type", "json_object"}};
  } else if (!r.answer_format.empty()) {
    const ordered schema = ordered::parse(r.answer_format, nullptr, false);
    body["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "answer"}, {"schema", schema.is_discarded() ? ordered::object() : schema}, {"strict", true}}}};
  }
  if (!r.tools.empty()) {
    const ordered tools = ordered::parse(r.tools, nullptr, false);
    if (tools.is_array() && !tools.empty()) {
      body["tools"] = tools;
      if (!r.tool_choice.empty()) body["tool_choice"] = {{"type", "function"}, {"function", {{"name", r.tool_choice}}}};
    }
  }
  // Invalid UTF-8 in a message goes as U+FFFD rather than failing the whole request.
  return body.dump(-1, ' ', false, ordered::error_handler_t::replace);
}

namespace {

// A delta's (or a whole message's) tool_calls joined into `calls`: each piece names its call by
// "index" (its place in the list; absent: the next one), brings the id and the name once, and
// a part of the arguments' text. False when they are not an array of such pieces.
bool apply_tool_calls(const json& delta, std::vector<RemoteToolCall>& calls) {
  const auto list = delta.find("tool_calls");
  if (list == delta.end() || list->is_null()) return true;
  if (!list->is_array()) return false;
  constexpr int64_t kMaxCalls = 64;
  constexpr size_t kMaxArguments = 1 << 20;
  for (const json& piece : *list) {
    if (!piece.is_object()) return false;
    int64_t index = int_at(piece, "index");
    if (index < 0) index = static_cast<int64_t>(calls.size());
    if (index >= kMaxCalls) return false;
    if (calls.size() <= static_cast<size_t>(index)) calls.resize(static_cast<size_t>(index) + 1);
    RemoteToolCall& call = calls[static_cast<size_t>(index)];
    if (std::string id = string_at(piece, "id"); !id.empty()) call.id = std::move(id);
    const auto function = piece.find("function");
    if (function == piece.end() || !function->is_object()) continue;
    if (std::string name = string_at(*function, "name"); !name.empty()) call.name = std::move(name);
    if (const auto args = function->find("arguments"); args != function->end()) {
      if (args->is_string()) call.arguments += args->get<std::string>();
      else if (args->is_object()) call.arguments += args->dump();  // a server that sends the object itself
    }
    if (call.arguments.size() > kMaxArguments) return false;
  }
  return true;
}

}  // namespace

bool apply_chunk(std::string_view data, RemoteChatResult& result, const std::function<void(const RemoteDelta&)>& on_delta) {
  const json j = parse(data);
  if (!j.is_object()) return false;
  if (const auto e = j.find("error"); e != j.end() && !e->is_null()) {
    // An error after the stream began (llama.cpp and vLLM send one as a data event).
    result.error.kind = RemoteErrorKind::server_error;
    result.error.server_message = message_of(*e);
    return true;
  }
  if (std::string m = string_at(j, "model"); !m.empty()) result.model = std::move(m);
  if (result.response_id.empty()) result.response_id = string_at(j, "id");
  if (const auto u = j.find("usage"); u != j.end() && u->is_object()) {
    result.usage.prompt_tokens = int_at(*u, "prompt_tokens");
    result.usage.completion_tokens = int_at(*u, "completion_tokens");
    if (const auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object())
      result.usage.cached_tokens = int_at(*d, "cached_tokens");
  }
  const auto choices = j.find("choices");
  if (choices == j.end()) return j.contains("usage");  // the usage-only last chunk
  if (!choices->is_array()) return false;
  constexpr int64_t kMaxChoices = 128;
  for (const json& c : *choices) {
    if (!c.is_object()) return false;
    const int64_t index = int_at(c, "index") < 0 ? 0 : int_at(c, "index");
    if (index >= kMaxChoices) return false;
    const size_t i = static_cast<size_t>(index);
    if (result.texts.size() <= i) {
      result.texts.resize(i + 1);
      result.finish_reasons.resize(i + 1);
      result.chunks.resize(i + 1);
      result.tool_calls.resize(i + 1);
    }
    const auto delta = c.find("delta");
    if (delta != c.end() && delta->is_object()) {
      const std::string text = string_at(*delta, "content");
      if (!text.empty()) {
        result.texts[i] += text;
        ++result.chunks[i];
        if (on_delta) on_delta({static_cast<int>(i), text});
      }
      if (!apply_tool_calls(*delta, result.tool_calls[i])) return false;
    } else if (const auto message = c.find("message"); message != c.end() && message->is_object()) {
      result.texts[i] += string_at(*message, "content");  // a whole reply (a server that does not stream)
      if (!apply_tool_calls(*message, result.tool_calls[i])) return false;
    }
    if (std::string f = string_at(c, "finish_reason"); !f.empty()) result.finish_reasons[i] = std::move(f);
  }
  return true;
}

RemoteModels list_models(const Endpoint& endpoint, const std::atomic<bool>* stop) {
  init_curl();
  RemoteModels out;
  Transfer t;
  t.url = route_url(endpoint, "models");
  t.stop = stop;
  t.setup(endpoint);
  curl_easy_setopt(t.h, CURLOPT_TIMEOUT, endpoint.connect_timeout_s + 20);
  out.error = t.perform();
  if (!out.error.ok()) return out;
  const json j = parse(t.body);
  const auto data = j.is_object() ? j.find("data") : j.end();
  if (!j.is_object() || data == j.end() || !data->is_array()) {
    out.error.kind = RemoteErrorKind::bad_response;
    out.error.server_message = "GET /v1/models sent no list of models";
    return out;
  }
  for (const json& m : *data)
    if (m.is_object())
      if (std::string id = string_at(m, "id"); !id.empty()) out.ids.push_back(std::move(id));
  return out;
}

namespace {
using ResponseIdCallback = std::function<void(const std::string&)>;

RemoteChatResult stream_one(const Endpoint& endpoint, const RemoteChatRequest& request, const std::string& model,
                            const std::function<void(const RemoteDelta&)>& on_delta, const std::atomic<bool>* stop,
                            const ResponseIdCallback& on_response) {
  RemoteChatResult result;
  const Clock::time_point start = Clock::now();
  auto ms_since_start = [&] { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); };
  Transfer t;
  t.url = route_url(endpoint, "chat/completions");
  t.stop = stop;
  t.setup(endpoint);
  t.headers = curl_slist_append(t.headers, "Content-Type: application/json");
  t.headers = curl_slist_append(t.headers, "Accept: text/event-stream");
  t.headers = curl_slist_append(t.headers, "Expect:");  // no 100-continue wait before a long body
  const std::string body = chat_request_json(request, model);
  curl_easy_setopt(t.h, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(t.h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));

  SseParser sse(1 << 20);
  bool done = false, malformed = false;
  auto delta = [&](const RemoteDelta& d) {
    if (result.first_token_ms < 0) result.first_token_ms = ms_since_start();
    if (on_delta) on_delta(d);
  };
  // A server that streams on past anything the request could need is cut off.
  const int64_t max_chunks = (int64_t{request.max_tokens} + 64) * std::max(request.n, 1) * 2;
  int64_t chunks_seen = 0;
  bool endless = false, announced = false;
  auto fail_with = [&](std::string_view json_or_text) {
    result.error.kind = RemoteErrorKind::server_error;
    result.error.server_message = error_message(json_or_text);
    if (result.error.server_message.empty()) result.error.server_message = std::string(json_or_text.substr(0, 500));
    done = true;
  };
  t.on_stream_bytes = [&](std::string_view bytes) {
    sse.feed(bytes, [&](const SseEvent& e) {
      if (done || malformed || endless) return;
      if (!e.error.empty()) return fail_with(e.error);  // llama.cpp's "error:" line
      if (e.event == "error") return fail_with(e.data);
      if (!e.event.empty() && e.event != "message") return;  // pings, and types of other uses
      if (e.data.empty()) return;
      if (e.data == "[DONE]") {
        done = true;
        return;
      }
      if (++chunks_seen > max_chunks) {
        endless = true;
        return;
      }
      if (!apply_chunk(e.data, result, delta)) malformed = true;
      if (!announced && !result.response_id.empty()) {
        announced = true;
        if (on_response) on_response(result.response_id);
      }
    });
    // Read no more once the stream is over or cannot be trusted (the transfer then ends at once).
    return !(done || malformed || endless || sse.overflowed());
  };
  RemoteError transfer = t.perform();
  // The transfer ended because we stopped reading: judged below, by why.
  if (transfer.kind == RemoteErrorKind::bad_response && t.streaming && (done || malformed || endless || sse.overflowed()))
    transfer = RemoteError{};
  result.total_ms = ms_since_start();
  if (result.model.empty()) result.model = model;
  if (!transfer.ok()) {
    if (transfer.kind == RemoteErrorKind::bad_response && t.body_too_large) transfer.server_message = "a reply past 16 MiB";
    result.error = std::move(transfer);
    return result;
  }
  if (!result.error.ok()) {  // an error event inside the stream
    result.error.url = t.url;
    return result;
  }
  if (!t.streaming) {
    // A server that answered with one JSON reply instead of a stream.
    if (!apply_chunk(t.body, result, delta)) {
      result.error.kind = RemoteErrorKind::bad_response;
      result.error.url = t.url;
    }
    return result;
  }
  if (malformed || sse.overflowed() || endless) {
    result.error.kind = RemoteErrorKind::bad_response;
    result.error.server_message = sse.overflowed() ? "an event past 1 MiB"
                                  : endless      ? "more chunks than max_tokens allows, without an end"
                                                 : "a stream event that is not a completion chunk";
    result.error.url = t.url;
    return result;
  }
  const bool finished = !result.finish_reasons.empty() &&
                        std::all_of(result.finish_reasons.begin(), result.finish_reasons.end(), [](const std::string& f) { return !f.empty(); });
  if (!done && !finished) {
    // The connection closed cleanly but the reply never ended: a server killed between chunks.
    result.error.kind = RemoteErrorKind::stream_cut;
    result.error.http_status = static_cast<int>(t.status);
    result.error.url = t.url;
  }
  return result;
}

// Appends from's samples after into's (their texts, finish reasons and chunks), the tokens they
// took (unknown once any part's are), the earliest first token and the first error.
void append_samples(RemoteChatResult& into, const RemoteChatResult& from) {
  for (size_t i = 0; i < from.texts.size(); ++i) {
    into.texts.push_back(from.texts[i]);
    into.finish_reasons.push_back(i < from.finish_reasons.size() ? from.finish_reasons[i] : std::string());
    into.chunks.push_back(i < from.chunks.size() ? from.chunks[i] : 0);
  }
  into.usage.completion_tokens = into.usage.completion_tokens < 0 || from.usage.completion_tokens < 0
                                     ? -1
                                     : into.usage.completion_tokens + from.usage.completion_tokens;
  if (from.first_token_ms >= 0 && (into.first_token_ms < 0 || from.first_token_ms < into.first_token_ms))
    into.first_token_ms = from.first_token_ms;
  if (into.error.ok() && !from.error.ok()) into.error = from.error;
}

// n samples as n requests at once, for a server that takes no n (llama.cpp's server): each
// its own sample (seeded seed, seed + 1, ...), streamed as choice first_index + i.
RemoteChatResult stream_in_parallel(const Endpoint& endpoint, const RemoteChatRequest& request, const std::string& model,
                                    const std::function<void(const RemoteDelta&)>& on_delta, const std::atomic<bool>* stop,
                                    const ResponseIdCallback& on_response, int first_index = 0) {
  const size_t n = static_cast<size_t>(request.n);
  std::vector<RemoteChatResult> parts(n);
  std::mutex delta_mutex;  // one sample's delta at a time reaches the caller
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      RemoteChatRequest one = request;
      one.n = 1;
      if (one.seed) *one.seed += i;
      parts[i] = stream_one(endpoint, one, model, [&](const RemoteDelta& d) {
        std::lock_guard<std::mutex> lock(delta_mutex);
        if (on_delta) on_delta({first_index + static_cast<int>(i), d.text});
      }, stop, on_response);
    });
  for (std::thread& t : threads) t.join();
  RemoteChatResult out;
  out.model = parts[0].model;
  out.response_id = parts[0].response_id;
  out.usage.prompt_tokens = parts[0].usage.prompt_tokens;
  out.usage.cached_tokens = parts[0].usage.cached_tokens;
  out.usage.completion_tokens = 0;
  for (RemoteChatResult& p : parts) {
    // One sample a request, a failed one's empty: the samples keep their places.
    p.texts.resize(1);
    p.finish_reasons.resize(1);
    p.chunks.resize(1);
    append_samples(out, p);
    out.total_ms = std::max(out.total_ms, p.total_ms);
  }
  return out;
}
}  // namespace

RemoteChatResult stream_chat(const Endpoint& endpoint, const RemoteChatRequest& request,
                             const std::function<void(const RemoteDelta&)>& on_delta, const std::atomic<bool>* stop,
                             const ResponseIdCallback& on_response) {
  init_curl();
  std::string model = request.model;
  if (model.empty()) {
    RemoteModels models = list_models(endpoint, stop);  // Stop cuts this request short too
    RemoteChatResult failed;
    if (!models.error.ok()) {
      failed.error = std::move(models.error);
      return failed;
    }
    if (models.ids.empty()) {
      failed.error.kind = RemoteErrorKind::not_found;
      failed.error.server_message = "it lists no models";
      return failed;
    }
    model = models.ids.front();
  }
  bool any_text = false;
  RemoteChatResult r = stream_one(endpoint, request, model, [&](const RemoteDelta& d) {
    any_text = true;
    if (on_delta) on_delta(d);
  }, stop, on_response);
  // A server without n says so (400) before any text, or answers one choice only: then n requests.
  auto about_n = [](const std::string& m) {
    return m.find("choice") != std::string::npos || m.find("'n'") != std::string::npos ||
           m.find("\"n\"") != std::string::npos || m.find(" n ") != std::string::npos || m.rfind("n ", 0) == 0;
  };
  const bool refused_n = r.error.kind == RemoteErrorKind::bad_request && !any_text && about_n(r.error.server_message);
  const bool one_choice = r.error.ok() && r.texts.size() == 1;
  if (request.n > 1 && (refused_n || one_choice) && !(stop && stop->load())) {
    if (one_choice) {
      // Keep the sample that came; ask for the others, after it.
      RemoteChatRequest rest = request;
      rest.n -= 1;
      if (rest.seed) *rest.seed += 1;
      const RemoteChatResult more = stream_in_parallel(endpoint, rest, model, on_delta, stop, on_response, 1);
      append_samples(r, more);
      r.total_ms += more.total_ms;
      return r;
    }
    return stream_in_parallel(endpoint, request, model, on_delta, stop, on_response);
  }
  return r;
}

}  // namespace pagedchat::remote
