#pragma once
// The block-pool view's live numbers as a form of labels: blocks used / cached / free, tokens
// stored, internal fragmentation, memory saved by sharing, prefix hit rate, preemptions,
// aggregate tok/s, the step index and what the last step did.

#include <QWidget>

#include "appcore/pool/kv_pool_numbers.h"

class QLabel;

class KvStatsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit KvStatsPanel(QWidget* parent = nullptr);
  void setNumbers(const KvPoolNumbers& numbers);
  const KvPoolNumbers& numbers() const { return m_numbers; }
  // The shown text of a row ("used", "cached", "free", "tokens", "fragmentation", "sharing",
  // "hitRate", "preemptions", "tokPerSec", "step", "window"); tests read it.
  QString rowText(const QString& key) const;

 private:
  KvPoolNumbers m_numbers;
  QLabel *m_used, *m_cached, *m_free, *m_tokens, *m_memory, *m_frag, *m_sharing, *m_hit, *m_preempt, *m_tps, *m_step;
  QLabel* m_window;  // shown only for a model with a sliding window
  QLabel* m_disk;    // shown only with a disk tier
  QLabel* m_summary;
  class QFormLayout* m_form;
};
