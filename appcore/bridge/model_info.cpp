// The panel's rows: plain names, numbers with their units.
#include "appcore/bridge/model_info.h"

#include <QCoreApplication>
#include <QLocale>

namespace {
QString tr(const char* text) { return QCoreApplication::translate("ModelInfo", text); }

QString bytes(qint64 n) {
  return n >= (1 << 20) ? QStringLiteral("%1 MiB").arg(static_cast<double>(n) / (1 << 20), 0, 'f', 1)
         : n >= 1024    ? QStringLiteral("%1 KiB").arg(static_cast<double>(n) / 1024, 0, 'f', 1)
                        : QStringLiteral("%1 bytes").arg(n);
}
}  // namespace

QString ModelInfo::baseModelSentence() {
  return tr("a base model, trained to continue text rather than to chat; an instruct or chat version of it answers questions.");
}

QString ModelInfo::inputPlaceholder() const {
  if (plainText && baseModel)
    return tr("Write the start of a text; Ctrl+Enter sends it and the model continues it (plain text, no chat format). "
              "This is %1").arg(baseModelSentence());
  if (plainText)
    return tr("Write the start of a text; Ctrl+Enter sends it and the model continues it (plain text: Settings > Chat format)");
  if (baseModel)
    return tr("Type a message; Ctrl+Enter sends. This is %1 In a chat format its replies may run on and write the next turns "
              "themselves: Settings > Chat format > Plain text lets it continue your text.").arg(baseModelSentence());
  return tr("Type a message; Ctrl+Enter sends");
}

QVector<std::pair<QString, QString>> ModelInfo::rows() const {
  const QLocale locale;
  QVector<std::pair<QString, QString>> r;
  r.append({tr("Name"), name});
  r.append({tr("File"), path});
  r.append({tr("File size"), fileSize});
  r.append({tr("Architecture"), architecture});
  r.append({tr("Parameters"), experts > 0 ? tr("%1, of which a token uses %2").arg(parameters, activeParameters) : parameters});
  r.append({tr("Quantization"), quantization});
  r.append({tr("Layers"), tr("%1 (hidden size %2)").arg(layers).arg(hiddenSize)});
  r.append({tr("Attention heads"), kvHeads < heads ? tr("%1 query, %2 key/value (grouped-query), %3 dimensions each").arg(heads).arg(kvHeads).arg(headDim)
                                                   : tr("%1, %2 dimensions each").arg(heads).arg(headDim)});
  r.append({tr("Vocabulary"), tr("%1 tokens").arg(locale.toString(vocabulary))});
  r.append({tr("Context"), tr("%1 tokens per chat here (trained for %2)").arg(locale.toString(chatContext), locale.toString(trainedContext))});
  if (experts > 0)
    r.append({tr("Experts"), tr("%1 a layer, %2 used by each token (feed-forward size %3)").arg(experts).arg(expertsUsed).arg(expertFfn)});
  if (slidingWindow > 0)
    r.append({tr("Sliding window"), tr("%1 tokens on %2 of %3 layers").arg(slidingWindow).arg(localLayers).arg(layers)});
  r.append({tr("Chat template"), baseModel ? tr("none in the file: %1 Chats here: %2.").arg(baseModelSentence(), chatTemplate)
                                 : templateFallback.isEmpty() ? chatTemplate
                                                              : tr("%1 (%2)").arg(chatTemplate, templateFallback)});
  r.append({tr("KV cache"), tr("%1 a token (%2), %3 blocks of %4 tokens").arg(bytes(kvBytesPerToken), kvType).arg(numBlocks).arg(blockSize)});
  r.append({tr("Preemption"), numHostBlocks > 0
                                  ? tr("swap to host memory (%1 blocks, %2)").arg(numHostBlocks).arg(bytes(kvBytesPerToken * blockSize * numHostBlocks))
                                  : tr("recompute (no swap space)")});
  r.append({tr("Backend"), backend});
  r.append({tr("Speculative decoding"), speculation});
  return r;
}
