#pragma once
// The sampling settings of each compare column ("Vary settings"): one row per column with its
// temperature, top-p, top-k and seed, so one message can be answered side by side by, say, a
// greedy column and three hotter ones. The prompt is still computed once.

#include <QDialog>

#include <vector>

#include "appcore/chat/chat_types.h"

class QTableWidget;

class CompareSettingsDialog : public QDialog {
  Q_OBJECT
 public:
  CompareSettingsDialog(const std::vector<TurnSettings>& columns, QWidget* parent = nullptr);
  std::vector<TurnSettings> columns() const;

 private:
  std::vector<TurnSettings> m_initial;
  QTableWidget* m_table;
};

// "T 0.7 · top-p 0.95 · top-k 40 · seed 3": a column's settings in a line.
QString describeSampling(const TurnSettings& s);
