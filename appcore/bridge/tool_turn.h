#pragma once
// A turn that offers the user's tools (an MCP server's: appcore/tools/), on the engine side:
// the tools and the call it must make, the chat model that renders them in every prompt of the
// chat (so its held sequence reads the same from turn to turn), the grammar its reply follows,
// and the reply read back: as it streams, what the chat shows; when it ends, its content and
// calls (engine/chat/tool_calls.h does the reading; this adds the thinking and the ids).

#include <QString>
#include <QVector>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "appcore/chat/chat_types.h"
#include "engine/chat/chat_model.h"
#include "engine/chat/tool_calls.h"

namespace pagedchat::grammar {
struct Grammar;
}

class ToolTurn {
 public:
  // The tools of settings (toolsJson, toolChoice) as `model` offers them. Throws
  // pagedchat::Error naming what is wrong (a malformed tool, a schema keyword outside the
  // subset, a named tool that is not offered).
  ToolTurn(const TurnSettings& settings, const pagedchat::ChatModel& model);

  // The chat's model with these tools in its template (ChatTemplate::with_tools).
  const pagedchat::ChatModel& chatModel() const { return m_model; }
  // What the reply must follow (null: free text, a model's own format left to choose).
  std::shared_ptr<const pagedchat::grammar::Grammar> grammar() const { return m_grammar; }
  // The reply begins inside the model's thinking (its prompt opened <think>): the grammar then
  // applies after </think> (SamplingParams::reasoning_end).
  void setBeginsInsideThinking(bool inside) { m_beginsInside = inside; }

  // `reply`: the sample's tokens decoded with special tokens written out (a model's call tags
  // may be control tokens). shown(): the thinking as written, then the content settled so far.
  QString shown(std::string_view reply) const;
  struct Reply {
    QString content;  // the thinking as written, then what the reply says outside its calls
    QVector<ToolCallRecord> calls;  // with ids of our own (unique; a model's own are not)
    // The reply began a call that does not parse (cut by its length, or written wrong): content
    // holds only what came before it, and `written` the reply's answer as the model wrote it.
    bool brokenCall = false;
    QString written;
  };
  Reply parse(std::string_view reply) const;

 private:
  // Where the reply's answer begins: past </think> for a model that thinks, 0 otherwise;
  // npos while it is still thinking.
  size_t answerStart(std::string_view reply) const;
  QString shownHarmony(const std::string& text, bool ended) const;  // `text`: the prefix and the reply
  Reply parseHarmony(const std::string& text) const;
  QVector<ToolCallRecord> withOurIds(const std::vector<pagedchat::ToolCall>& calls) const;

  std::shared_ptr<const pagedchat::ToolSet> m_tools;
  pagedchat::ToolChoice m_choice;
  pagedchat::ToolFormat m_format;
  std::string m_prefix;  // a forced call's opening, which the prompt ends with (Mistral's [TOOL_CALLS])
  pagedchat::ChatModel m_model;
  std::shared_ptr<const pagedchat::grammar::Grammar> m_grammar;
  bool m_thinks = false;
  bool m_beginsInside = false;
};
