// The engine's error texts (engine/engine/engine.cpp, engine/gguf, engine/model,
// engine/tokenizer) matched by their stable parts; anything else gets a general sentence.
#include "appcore/chat/plain_error.h"

#include <QCoreApplication>
#include <QRegularExpression>

namespace {
QString tr(const char* text) { return QCoreApplication::translate("PlainError", text); }
}  // namespace

PlainError explainReplyError(const QString& detail) {
  PlainError e{QString(), detail};
  const QRegularExpressionMatch tooLong =
      QRegularExpression(QStringLiteral("the prompt has (\\d+) tokens; the context holds (\\d+)")).match(detail);
  const QRegularExpressionMatch blocks =
      QRegularExpression(QStringLiteral("the prompt needs (\\d+) KV blocks")).match(detail);
  if (tooLong.hasMatch())
    e.sentence = tr("This chat is too long for the model: it needs %1 tokens and the model reads at most %2. Start a new "
                    "chat, or let this chat drop its oldest turns (the setting under the system prompt).")
                     .arg(tooLong.captured(1), tooLong.captured(2));
  else if (blocks.hasMatch())
    e.sentence = tr("There is not enough KV memory for this chat (it needs %1 blocks). Stop or delete other chats, or give "
                    "the KV pool more memory in Settings.")
                     .arg(blocks.captured(1));
  else if (detail.contains(QLatin1String("not parked")))
    e.sentence = tr("The memory this chat kept was freed for other chats. Send again: its messages are read anew.");
  else if (detail.contains(QLatin1String("went idle")) || detail.contains(QLatin1String("aborted")))
    e.sentence = tr("The reply stopped before it ended. Regenerate it or send again.");
  else if (detail.contains(QLatin1String("non-finite logit")))
    e.sentence = tr("The model computed invalid numbers: its file is likely damaged. Download it again.");
  else if (detail.contains(QLatin1String("refuses this conversation")))
    e.sentence = detail;  // written for the user already (engine/chat/chat_template.cpp): the template's own reason and the way out
  else if (detail.contains(QLatin1String("template")) || detail.contains(QLatin1String("{%")))
    e.sentence = tr("The model's chat template refused this chat. Settings > Chat format: Built-in may read it.");
  else if (detail.startsWith(QLatin1String("The reply began a tool call"))) {
    e.sentence = detail.section(QLatin1Char('\n'), 0, 0);  // ours; the reply as written is the detail
    e.detail = detail.section(QLatin1Char('\n'), 1);
  } else if (detail.startsWith(QLatin1String("This model continues text")) || detail.startsWith(QLatin1String("This chat answers in JSON")))
    e.sentence = detail;
  else if (detail == QLatin1String("No model is loaded.") || detail.startsWith(QLatin1String("Pick one of")) ||
           detail.startsWith(QLatin1String("This chat is still")) || detail.contains(QLatin1String("there is no room for a reply")))
    e.sentence = detail;  // ours, plain already
  else
    e.sentence = tr("The reply failed. Regenerate it or send again; the details say what the engine reported.");
  return e;
}

PlainError explainLoadError(const QString& detail) {
  PlainError e{QString(), detail};
  auto has = [&](const char* part) { return detail.contains(QLatin1String(part), Qt::CaseInsensitive); };
  if (has("cannot open") || has("not a regular file"))
    e.sentence = tr("The file could not be opened: check that it exists and that you may read it.");
  else if (has("bad magic") || has("not a GGUF file") || has("is empty"))
    e.sentence = tr("This is not a GGUF model file. PagedChat opens GGUF files, as llama.cpp writes them.");
  else if (has("truncated") || has("exceeds the file") || has("not within the file") || has("past the end") || has("implausible"))
    e.sentence = tr("The file is incomplete or damaged (a download cut short?). Download it again.");
  else if (has("architecture"))
    e.sentence = tr("PagedChat does not run this kind of model yet (Llama, Mistral, Qwen 2 and 3, Gemma 3 and Phi-3 it does).");
  else if (has("GGUF version") || has("not supported") || has("unknown type"))
    e.sentence = tr("The file uses a format or feature PagedChat does not read yet.");
  else if (has("tokenizer"))
    e.sentence = tr("The model's tokenizer in this file could not be read: the file may be damaged or of a kind not supported.");
  else
    e.sentence = tr("The file could not be read as a model: it may be damaged.");
  return e;
}
