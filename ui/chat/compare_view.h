#pragma once
// Compare: the N samples of one message side by side, one column each, streaming together;
// when they are done, one column's "Continue with this" makes it the chat's reply.

#include <QStringList>
#include <QVector>
#include <QWidget>

#include "appcore/chat/reply_metrics.h"

class QLabel;
class QPushButton;
class QTextBrowser;

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);

  // Empty columns; titles (optional, one per column) say how each samples.
  void start(int numSamples, const QStringList& titles = {});
  QStringList titles() const { return m_titles; }
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
  QStringList m_titles;
};
