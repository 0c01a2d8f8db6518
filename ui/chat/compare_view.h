#pragma once
// Compare: the N samples of one message side by side, under the question they answer, one
// column each, streaming together; a column that has ended can be picked at once ("Continue
// with this" makes it the chat's reply; the samples still running are stopped).

#include <QStringList>
#include <QVector>
#include <QWidget>

#include "appcore/chat/reply_metrics.h"

class QHBoxLayout;
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
  // The message the samples answer, shown above the columns (a few lines of it; all in its tooltip).
  void setQuestion(const QString& question);
  QString question() const { return m_questionText; }
  void setText(int sample, const QString& text);
  void setMetrics(int sample, const ReplyMetrics& metrics);
  void setPickable(int sample, bool pickable);  // that sample ended: its column can be picked
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
  QLabel* m_question = nullptr;
  QString m_questionText;
  QHBoxLayout* m_row = nullptr;
  QVector<Column> m_columns;
  QStringList m_titles;
};
