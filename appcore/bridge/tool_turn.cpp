// A turn with tools on the engine side (see tool_turn.h).
#include "appcore/bridge/tool_turn.h"

#include <QRandomGenerator>

#include "appcore/bridge/harmony_reply.h"
#include "engine/chat/reasoning.h"
#include "engine/grammar/gbnf.h"
#include "engine/grammar/grammar_cache.h"
#include "engine/tokenizer/utf8.h"

namespace {

pagedchat::grammar::GrammarCache& toolGrammars() {
  static pagedchat::grammar::GrammarCache cache;
  return cache;
}

// `text` without a last character whose bytes have not all come (a token may end mid-character).
std::string wholeCharacters(std::string text) {
  text.resize(pagedchat::whole_utf8_prefix(text));
  return text;
}

}  // namespace

ToolTurn::ToolTurn(const TurnSettings& settings, const pagedchat::ChatModel& model)
    : m_tools(std::make_shared<const pagedchat::ToolSet>(settings.toolsJson.toStdString())),
      m_format(model.chat_template().tool_format()),
      m_thinks(model.chat_template().thinks()) {
  if (!settings.toolChoice.isEmpty()) {
    m_choice.mode = pagedchat::ToolChoice::Mode::kNamed;
    m_choice.name = settings.toolChoice.toStdString();
    m_choice.parallel = false;  // "use this tool": one call of it (a small model forced to call repeats its call otherwise)
    if (!m_tools->has(m_choice.name)) throw pagedchat::Error("the tool '" + m_choice.name + "' is not among this chat's tools");
  }
  m_prefix = pagedchat::ToolSet::forced_prefix(m_format, m_choice);
  m_model = pagedchat::ChatModel(model.shared_model(), model.chat_template().with_tools(m_tools, m_choice));
  // Made once, here: a parameter schema outside the subset refuses the turn now, naming its tool.
  const pagedchat::ToolSet::Grammar g = m_tools->grammar(m_format, m_choice);
  if (!g.gbnf.empty())
    m_grammar = toolGrammars().get(g.root + "\n" + g.gbnf, [&] { return pagedchat::grammar::parse_gbnf(g.gbnf, g.root); });
}

size_t ToolTurn::answerStart(std::string_view reply) const {
  if (!m_thinks) return 0;
  if (const size_t close = reply.find(pagedchat::kThinkClose); close != std::string_view::npos)
    return close + pagedchat::kThinkClose.size();
  if (m_beginsInside) return std::string_view::npos;
  const size_t first = reply.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return std::string_view::npos;  // nothing yet: it may open its thinking
  const std::string_view head = reply.substr(first);
  const bool opens = head.starts_with(pagedchat::kThinkOpen) || pagedchat::kThinkOpen.starts_with(head);
  return opens ? std::string_view::npos : 0;
}

// gpt-oss's harmony reply: its channels as the app keeps them (<think> form), and its calls,
// messages of their own (engine/chat/harmony.h).
QString ToolTurn::shownHarmony(const std::string& text, bool ended) const {
  HarmonyReplyText shown;
  shown.push(text);
  if (ended) shown.finish();
  return QString::fromStdString(shown.text());
}

QString ToolTurn::shown(std::string_view reply) const {
  if (m_format == pagedchat::ToolFormat::kHarmony) return shownHarmony(wholeCharacters(m_prefix + std::string(reply)), false);
  const std::string text = m_prefix + std::string(reply);
  const size_t start = answerStart(text);
  if (start == std::string_view::npos) return QString::fromStdString(wholeCharacters(text));  // thinking, as written
  return QString::fromStdString(
      wholeCharacters(text.substr(0, start) + pagedchat::streamed_content(m_format, std::string_view(text).substr(start))));
}

ToolTurn::Reply ToolTurn::parse(std::string_view reply) const {
  const std::string text = m_prefix + std::string(reply);
  if (m_format == pagedchat::ToolFormat::kHarmony) return parseHarmony(text);
  size_t start = answerStart(text);
  if (start == std::string_view::npos) start = text.size();  // cut while thinking: no answer, no call
  const std::string_view answer = std::string_view(text).substr(start);
  const pagedchat::ToolReply parsed = pagedchat::parse_tool_reply(m_format, answer);
  Reply out;
  out.content = QString::fromStdString(text.substr(0, start) + parsed.content);
  if (parsed.broken_call) {
    out.brokenCall = true;
    out.written = QString::fromStdString(std::string(answer));
    out.content = QString::fromStdString(text.substr(0, start) + pagedchat::streamed_content(m_format, answer));
    return out;
  }
  out.calls = withOurIds(parsed.calls);
  return out;
}

ToolTurn::Reply ToolTurn::parseHarmony(const std::string& text) const {
  const pagedchat::ToolReply parsed = pagedchat::parse_tool_reply(m_format, text);
  Reply out;
  out.content = shownHarmony(text, true);
  if (parsed.broken_call) {
    out.brokenCall = true;
    out.written = QString::fromStdString(text);
    return out;
  }
  out.calls = withOurIds(parsed.calls);
  return out;
}

QVector<ToolCallRecord> ToolTurn::withOurIds(const std::vector<pagedchat::ToolCall>& calls) const {
  QVector<ToolCallRecord> out;
  for (const pagedchat::ToolCall& c : calls) {
    const std::string id = pagedchat::make_call_id(m_format, [](uint32_t n) { return QRandomGenerator::global()->bounded(n); });
    out.append({QString::fromStdString(id), QString::fromStdString(c.name), QString::fromStdString(c.arguments)});
  }
  return out;
}
