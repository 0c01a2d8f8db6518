// Side-by-side sample columns.
#include "ui/chat/compare_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollBar>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "ui/chat/transcript_view.h"

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("compareView"));
  auto* v = new QVBoxLayout(this);
  m_question = new QLabel(this);
  m_question->setObjectName(QStringLiteral("compareQuestion"));
  m_question->setWordWrap(true);
  m_question->setTextFormat(Qt::PlainText);
  m_question->setTextInteractionFlags(Qt::TextSelectableByMouse);
  v->addWidget(m_question);
  m_row = new QHBoxLayout;
  v->addLayout(m_row, 1);
}

void CompareView::setQuestion(const QString& question) {
  if (question == m_questionText) return;
  m_questionText = question;
  // A long question keeps the columns their room: its first lines, the whole of it on hover.
  constexpr int kShownLines = 3, kShownChars = 300;
  QStringList lines = question.trimmed().split(QLatin1Char('\n'));
  QString shown = lines.mid(0, kShownLines).join(QLatin1Char('\n'));
  const bool cut = lines.size() > kShownLines || shown.size() > kShownChars;
  if (shown.size() > kShownChars) shown = shown.left(kShownChars);
  m_question->setText(tr("You asked: %1").arg(cut ? shown.trimmed() + QStringLiteral("…") : shown));
  m_question->setToolTip(cut ? question : QString());
}

void CompareView::start(int numSamples, const QStringList& titles) {
  for (Column& c : m_columns) delete c.box;
  m_columns.clear();
  m_titles = titles;
  for (int i = 0; i < numSamples; ++i) {
    Column c;
    c.box = new QWidget(this);
    c.box->setObjectName(QStringLiteral("compareColumn%1").arg(i));
    auto* v = new QVBoxLayout(c.box);
    v->setContentsMargins(0, 0, 0, 0);
    auto* title = new QLabel(i < titles.size() ? tr("Sample %1 — %2").arg(i + 1).arg(titles[i]) : tr("Sample %1").arg(i + 1), c.box);
    title->setObjectName(QStringLiteral("sampleTitle"));
    v->addWidget(title);
    c.text = new QTextBrowser(c.box);
    c.text->setObjectName(QStringLiteral("sampleText"));
    v->addWidget(c.text, 1);
    c.metrics = new QLabel(c.box);
    c.metrics->setObjectName(QStringLiteral("sampleMetrics"));
    c.metrics->setWordWrap(true);
    v->addWidget(c.metrics);
    c.pick = new QPushButton(tr("Continue with this"), c.box);
    c.pick->setObjectName(QStringLiteral("pickSample%1").arg(i));
    c.pick->setEnabled(false);
    connect(c.pick, &QPushButton::clicked, this, [this, i] { emit picked(i); });
    v->addWidget(c.pick);
    m_row->addWidget(c.box);
    m_columns.append(c);
  }
}

void CompareView::setText(int sample, const QString& text) {
  if (sample < 0 || sample >= m_columns.size()) return;
  QTextBrowser* t = m_columns[sample].text;
  t->setHtml(TranscriptView::messageHtml(text));
  t->verticalScrollBar()->setValue(t->verticalScrollBar()->maximum());
  t->setProperty("plainReply", text);
}

QString CompareView::text(int sample) const {
  return sample >= 0 && sample < m_columns.size() ? m_columns[sample].text->property("plainReply").toString() : QString();
}

void CompareView::setMetrics(int sample, const ReplyMetrics& metrics) {
  if (sample < 0 || sample >= m_columns.size()) return;
  // A narrow column wraps between the figures, never inside one ("first token 19 / ms").
  QStringList figures = metrics.summary().split(QStringLiteral(" · "));
  for (QString& f : figures) f.replace(QLatin1Char(' '), QChar(0x00a0));
  m_columns[sample].metrics->setText(figures.join(QStringLiteral(" · ")));
}

void CompareView::setPickable(int sample, bool pickable) {
  if (sample >= 0 && sample < m_columns.size()) m_columns[sample].pick->setEnabled(pickable);
}
