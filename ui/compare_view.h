#pragma once
// Compare: the N samples of one message side by side, one column each, streaming together;
// when they are done, one column's "Continue with this" makes it the chat's reply.

#include <QVector>
#include <QWidget>

#include "ui/reply_metrics.h"

class QLabel;
class QPushButton;
class QTextBrowser;

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);

  void start(int numSamples);  // empty columns
  void setText(int sample, const QString& text);
  void setMetrics(int sample, const ReplyMetrics& metrics);
  void setPickable(bool pickable);  // the samples ended: a column can be picked
  int numColumns() const { return m_columns.size(); }
  QString text(int sample) const;

 signals:
  void picked(int sample);

 private:
  struct Column {
    QWidget* box = nullptr;
    QTextBrowser* text = nullptr;
    QLabel* metrics = nullptr;
    QPushButton* pick = nullptr;
  };
  QVector<Column> m_columns;
};
