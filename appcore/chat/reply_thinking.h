#pragma once
// A reasoning model's reply opens with its thinking in <think>...</think> (DeepSeek-R1, Qwen3,
// QwQ, SmolLM3 write it so): the transcript folds it under "Thinking", and the next turn's
// prompt leaves it out of earlier replies, as those models' own templates do (they keep only
// what follows </think>), so a long chain of thought does not fill the context.

#include <QRegularExpression>
#include <QString>

struct ReplyThinking {
  bool present = false;  // the reply has a thinking part
  bool open = false;     // still thinking: no </think> yet (streaming, or cut by its length)
  QString thinking;      // the thinking, trimmed
  QString answer;        // the rest of the reply, trimmed at its start
};

// Words of a thinking part, as the fold's line and a compare column count them.
inline int thinkingWords(const QString& thinking) {
  static const QRegularExpression space(QStringLiteral("\\s+"));
  return static_cast<int>(thinking.split(space, Qt::SkipEmptyParts).size());
}

inline ReplyThinking splitThinking(const QString& reply) {
  static const QString open = QStringLiteral("<think>"), close = QStringLiteral("</think>");
  ReplyThinking r;
  const QString head = reply.trimmed();
  // Some templates open the thinking in the prompt, so the reply holds only its end.
  const qsizetype closeAt = reply.indexOf(close);
  if (!head.startsWith(open) && closeAt < 0) {
    r.answer = reply;
    return r;
  }
  if (!head.startsWith(open) && reply.left(closeAt).contains(QLatin1Char('<'))) {  // a </think> quoted in an answer
    r.answer = reply;
    return r;
  }
  r.present = true;
  const qsizetype start = head.startsWith(open) ? reply.indexOf(open) + open.size() : 0;
  if (closeAt < 0) {
    r.open = true;
    r.thinking = reply.mid(start).trimmed();
    return r;
  }
  r.thinking = reply.mid(start, closeAt - start).trimmed();
  r.answer = reply.mid(closeAt + close.size());
  while (!r.answer.isEmpty() && r.answer.front().isSpace()) r.answer.remove(0, 1);
  return r;
}

// The reply as a later turn's prompt holds it: its answer alone.
inline QString withoutThinking(const QString& reply) {
  const ReplyThinking r = splitThinking(reply);
  return r.present ? r.answer : reply;
}
