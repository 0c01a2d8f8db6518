#pragma once
// The body of POST /v1/chat/completions and POST /v1/completions, parsed and checked: every
// type and range the engine relies on is validated here, so what reaches the engine is sound.
// A bad body throws ApiError (400) naming the parameter. Unknown fields are ignored, as
// clients written for other servers send extras. The model name is returned, not checked:
// which models exist is the server's knowledge (404 there).

#include <QByteArray>
#include <QString>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/sample/sampling_params.h"
#include "server/api/tool_request.h"

struct CompletionLimits {
  int maxTokens = 2048;  // the largest max_tokens a client may ask for (and the default)
  int maxN = 16;         // the most samples per request
  int maxStop = 4;       // stop strings, as OpenAI allows
};

struct CompletionRequest {
  enum class Kind { chat, text };
  Kind kind = Kind::chat;
  QString model;
  std::vector<pagedchat::ChatMessage> messages;  // chat: roles system / user / assistant / tool
  std::string prompt;                            // text: the prompt as text...
  std::vector<int32_t> promptTokens;             // ...or as token ids (then prompt is empty)
  pagedchat::SamplingParams params;              // seed drawn by the server when not given;
                                                 // num_logprobs from logprobs / top_logprobs
  bool hasSeed = false;
  int n = 1;
  // Extension (vLLM's): beam search with this many beams; n of them come back, best first.
  // Clients that do not send it get sampling as usual.
  int beamWidth = 0;
  float lengthPenalty = 1.0f;
  bool stream = false;
  bool includeUsage = false;  // stream_options.include_usage: a last chunk with usage
  // vLLM's cache_salt: only requests with the same salt share prefix-cache blocks.
  QString cacheSalt;
  ToolRequest tools;  // chat: the tools offered and how the reply may use them
  // A thinking model's thinking: capped at this many tokens (thinking_budget_tokens, or
  // reasoning_effort's low 512, medium 2048, high 8192, minimal 0); -1: not capped. reasoningRaw
  // (reasoning_format "none", llama.cpp's): the thinking stays in content, as the model wrote it.
  int reasoningBudget = -1;
  bool reasoningRaw = false;
};

// Both throw ApiError on a malformed or invalid body.
CompletionRequest parseChatCompletion(const QByteArray& body, const CompletionLimits& limits);
CompletionRequest parseTextCompletion(const QByteArray& body, const CompletionLimits& limits);
