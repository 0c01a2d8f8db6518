#pragma once
// What the model in use is, for the model information panel (Help > Model information): the
// file (its name, size, architecture, parameter count, quantization, trained context, chat
// template) and how this engine runs it (backend, context per chat, KV bytes a token, the
// pool's blocks). Made on the engine thread at each load (EngineBridge::modelDescribed).

#include <QMetaType>
#include <QString>
#include <QVector>

#include <utility>

struct ModelInfo {
  QString path, name, architecture, parameters, quantization, fileSize;
  int layers = 0, hiddenSize = 0, heads = 0, kvHeads = 0, headDim = 0, vocabulary = 0;
  int trainedContext = 0;  // what the file says the model was trained for
  int chatContext = 0;     // what one chat may hold here (the setting, capped by the model's)
  int slidingWindow = 0, localLayers = 0;
  // A mixture of experts: experts per layer, used per token, each one's feed-forward size, and
  // the parameters a token uses ("429M"); 0 experts: a dense model.
  int experts = 0, expertsUsed = 0, expertFfn = 0;
  QString activeParameters;
  QString chatTemplate;          // "the model's own template", "the built-in ChatML format"
  QString templateFallback;      // why the model's own is not used, when it is not
  // Its file carries no chat template: a base model, trained to continue text, not tuned to
  // chat (Gemma 3 270M as published). Its chats are plain text unless Settings say a format
  // (where its replies may run on and write the next turns themselves).
  bool baseModel = false;
  bool plainText = false;  // chats are written as plain text: a reply continues the text
  static QString baseModelSentence();
  // What the message input says before anything is typed: how a turn is written with this model.
  QString inputPlaceholder() const;
  QString backend, speculation, kvType;
  qint64 kvBytesPerToken = 0;  // every layer's keys and values of one token, in the pool's element type
  int blockSize = 0, numBlocks = 0;
  int numHostBlocks = 0;  // the swap pool; 0: a preempted chat is recomputed

  bool isEmpty() const { return path.isEmpty(); }
  // (label, value) in the order the panel shows them.
  QVector<std::pair<QString, QString>> rows() const;
};
Q_DECLARE_METATYPE(ModelInfo)
