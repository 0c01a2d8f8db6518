#pragma once
// The names the app's layers share for a chat: its id (given by the UI, stable across
// restarts, the bridge's key), its messages as (role, content), and how a turn samples.

#include <QPair>
#include <QString>
#include <QVector>

#include <vector>

using ChatId = qint64;
using ChatMessages = QVector<QPair<QString, QString>>;  // (role, content): "system", "user", "assistant"

struct TurnSettings {
  double temperature = 0.7;
  double topP = 0.95;              // 1: off
  int topK = 40;                   // 0: off
  double minP = 0.05;              // 0: off
  double repetitionPenalty = 1.0;  // 1: off
  int maxTokens = 512;
  int numSamples = 1;  // compare: 2-4 samples from one prefill (Request::n)
  quint64 seed = 0;    // 0: a fresh random seed each turn
  // Compare with different settings: one entry per column (their numSamples and columns are
  // ignored); empty: numSamples samples of these settings.
  std::vector<TurnSettings> columns;
};
