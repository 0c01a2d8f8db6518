// The dockable KV block-pool panel: its layout, frame fan-out and the selection.
#include "ui/pool_panel/kv_pool_panel.h"

#include <algorithm>

#include <QDockWidget>
#include <QEvent>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QMainWindow>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include "ui/pool_panel/kv_block_table_view.h"
#include "ui/pool_panel/kv_chat_legend.h"
#include "ui/pool_panel/kv_contiguous_strip.h"
#include "ui/pool_panel/kv_event_log.h"
#include "appcore/pool/kv_pool_numbers.h"
#include "ui/pool_view/kv_pool_view.h"
#include "ui/pool_panel/kv_roofline_chart.h"
#include "ui/lessons/quantization_chart.h"
#include "ui/pool_panel/kv_stats_panel.h"
#include "ui/pool_panel/kv_step_timeline.h"
#include "ui/pool_panel/kv_time_chart.h"

using namespace pagedchat;

KvPoolPanel::KvPoolPanel(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("kvPoolPanel"));
  qRegisterMetaType<PoolFrame>();  // setFrame is called queued, from the bridge
  m_clock.start();
  m_view = new KvPoolView;
  m_legend = new KvChatLegend;
  m_stateKey = new QLabel;
  m_stateKey->setObjectName(QStringLiteral("kvStateKey"));
  m_stateKey->setWordWrap(true);
  m_stats = new KvStatsPanel;
  m_chart = new KvTimeChart;
  m_strip = new KvContiguousStrip;
  m_table = new KvBlockTableView;
  m_log = new KvEventLogView;
  m_timeline = new KvStepTimeline;
  m_roofline = new KvRooflineChart;
  m_quantization = new QuantizationChart;

  // Each part that can outgrow its room scrolls down, never sideways (its width is the dock's).
  auto scrolled = [](QWidget* content, const char* name, bool framed) {
    auto* area = new QScrollArea;
    area->setObjectName(QLatin1String(name));
    area->setWidgetResizable(true);
    if (!framed) area->setFrameShape(QFrame::NoFrame);
    area->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    area->setWidget(content);
    return area;
  };

  auto* top = new QWidget;
  auto* topLayout = new QHBoxLayout(top);
  topLayout->setContentsMargins(0, 0, 0, 0);
  topLayout->addWidget(m_view, 1);
  auto* side = new QVBoxLayout;
  side->addWidget(new QLabel(tr("Chats")));
  side->addWidget(m_legend, 1);
  // The key scrolls when the pool's row is short (a 768 px window): cut, its last flashes were lost.
  side->addWidget(scrolled(m_stateKey, "kvStateKeyScroll", false));
  topLayout->addLayout(side);

  // The numbers above the charts, each at the dock's full width: side by side, a dock of a small
  // window's width cut the numbers' rows short.
  auto* middle = new QWidget;
  auto* midLayout = new QVBoxLayout(middle);
  midLayout->setContentsMargins(0, 0, 0, 0);
  midLayout->addWidget(m_stats);
  midLayout->addWidget(m_chart, 1);
  midLayout->addWidget(m_strip);

  // Scrolled when the window is short (a laptop's 700 px): the numbers never squeeze the pool.
  QScrollArea* middleScroll = scrolled(middle, "kvNumbersScroll", false);

  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->setObjectName(QStringLiteral("kvSplitter"));
  splitter->addWidget(top);
  splitter->addWidget(middleScroll);
  splitter->addWidget(scrolled(m_table, "kvBlockTableScroll", true));
  // What happened, two ways: the events in sentences, and the steps as a timeline.
  auto* history = new QTabWidget;
  history->setObjectName(QStringLiteral("kvHistoryTabs"));
  history->addTab(m_log, tr("Events"));
  history->addTab(scrolled(m_timeline, "kvStepTimelineScroll", true), tr("Steps"));
  history->setTabToolTip(1, tr("Continuous batching: a column per engine step, a row per chat; a number is a chunk of "
                               "that many prompt tokens, a thin bar a chat's next token, hatched: tokens computed again"));
  history->addTab(m_roofline, tr("Roofline"));
  history->setTabToolTip(2, tr("Prefill against decode: each step at its FLOP per byte read and the FLOP/s it reached, under "
                               "this machine's memory slope and compute roof"));
  history->addTab(m_quantization, tr("Quantization"));
  history->setTabToolTip(3, tr("The quantization lesson: a layer matrix's input channels by loudness, and what rounding "
                               "plainly, with an importance matrix and GPTQ-style costs"));
  connect(history, &QTabWidget::currentChanged, this, [this](int tab) {
    if (tab == rooflineTab && m_roofline->ceilings().ridge() <= 0) emit rooflineWanted();
    if (m_presenting) layOutStage();  // the roofline takes more of the stage than the events
  });
  splitter->addWidget(history);
  connect(middleScroll->verticalScrollBar(), &QScrollBar::rangeChanged, this, [this, middleScroll](int, int max) {
    if (m_stripInView) middleScroll->verticalScrollBar()->setValue(max);  // stillScrolledToStrip
  });
  splitter->setStretchFactor(0, 4);
  splitter->setStretchFactor(1, 2);
  splitter->setStretchFactor(2, 1);
  splitter->setStretchFactor(3, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(splitter);
  m_caption = new QLabel(this);
  m_caption->setObjectName(QStringLiteral("kvPresentCaption"));
  m_caption->setWordWrap(true);
  m_caption->setTextFormat(Qt::PlainText);
  m_caption->setVisible(false);
  layout->addWidget(m_caption);

  connect(m_view, &KvPoolView::sequenceClicked, this, [this](SequenceId seq) {
    selectSequence(seq);
    emit sequenceSelected(seq);
  });
  connect(m_log, &KvEventLogView::blocksPicked, m_view, &KvPoolView::setMarkedBlocks);
  connect(m_log, &KvEventLogView::savePictureRequested, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save the block pool as a picture"), QStringLiteral("kv-pool.png"),
                                                      tr("PNG images (*.png)"));
    if (!path.isEmpty()) m_view->grab().save(path, "PNG");
  });
  connect(m_legend, &KvChatLegend::sequenceSelected, this, [this](SequenceId seq) {
    selectSequence(seq);
    emit sequenceSelected(seq);
  });
  updateStateKey();
}

QDockWidget* KvPoolPanel::createDock(QMainWindow* window, Qt::DockWidgetArea area) {
  auto* dock = new QDockWidget(tr("KV block pool"), window);
  dock->setObjectName(QStringLiteral("kvPoolDock"));
  dock->setWidget(new KvPoolPanel(dock));
  window->addDockWidget(area, dock);
  return dock;
}

bool KvPoolPanel::saveSnapshotPng(const PoolFrame& frame, const QString& path, QSize size) {
  KvPoolPanel panel;
  panel.setAttribute(Qt::WA_DontShowOnScreen);
  panel.resize(size);
  panel.show();
  PoolFrame still = frame;
  still.events.clear();  // a still picture: the cells in their own colours, no flashes
  panel.setFrame(still);
  panel.flush();
  return panel.grab().save(path, "PNG");
}

void KvPoolPanel::setFrame(const PoolFrame& frame) {
  m_frame = std::make_shared<const PoolFrame>(frame);
  m_view->setFrame(m_frame);  // at once: every frame's events flash
  m_log->addFrame(frame);     // and are told, each
  m_timeline->addFrame(frame);  // every step, however many one frame spans
  m_roofline->addFrame(frame);
  if (m_refreshPending) return;
  m_refreshPending = true;
  QTimer::singleShot(0, this, [this] {
    if (m_refreshPending) refresh();
  });
}

void KvPoolPanel::flush() {
  if (m_refreshPending) refresh();
}

void KvPoolPanel::refresh() {
  m_refreshPending = false;
  if (!m_frame) return;
  const KvPoolNumbers n = computeKvPoolNumbers(*m_frame);
  m_stats->setNumbers(n);
  m_strip->setFrame(*m_frame, n);
  m_chart->addSample(m_clock.elapsed(), n.numUsed, n.numCached, n.numFree);
  m_legend->setFrame(*m_frame, m_view->colors());
  m_legend->setSelectedSequence(m_selected);
  m_table->setFrame(m_frame);
  if ((m_frame->slidingWindow.window > 0) != m_keyShowsWindow || m_frame->stats.disk_tier != m_keyShowsDisk) updateStateKey();
  if (m_presenting) updateCaption();
}

void KvPoolPanel::setPresenting(bool on) {
  if (on == m_presenting) return;
  m_presenting = on;
  auto* splitter = findChild<QSplitter*>(QStringLiteral("kvSplitter"));
  if (on) {
    m_splitterBeforePresenting = splitter->saveState();
    layOutStage();
    // Large enough to read from the back of a room: a thirtieth of the window's height.
    QFont f = m_caption->font();
    f.setPixelSize(std::max(22, window()->height() / 30));
    m_caption->setFont(f);
    updateCaption();
  } else {
    splitter->restoreState(m_splitterBeforePresenting);
  }
  m_caption->setVisible(on);
}

// Presenting: the grid most of the height; the numbers only while the contiguous strip is the
// story; the block table folded; the events or steps a short band, the roofline more.
void KvPoolPanel::layOutStage() {
  auto* splitter = findChild<QSplitter*>(QStringLiteral("kvSplitter"));
  auto* tabs = findChild<QTabWidget*>(QStringLiteral("kvHistoryTabs"));
  const int h = std::max(200, splitter->height());
  if (tabs && tabs->currentIndex() == rooflineTab)  // the chart is the story: it needs the height to be read
    splitter->setSizes({h * 4 / 10, 0, 0, h * 6 / 10});
  else if (tabs && tabs->currentIndex() == quantizationTab)  // the pool has no part in that story: folded
    splitter->setSizes({0, 0, 0, h});
  else
    splitter->setSizes({h * 7 / 10, m_stripInView ? h / 5 : 0, 0, m_stripInView ? h / 10 : h * 3 / 10});
}

void KvPoolPanel::setCaption(const QString& text) {
  m_captionText = text;
  if (m_presenting) updateCaption();
}

QString KvPoolPanel::captionShown() const { return m_caption->isVisible() ? m_caption->text() : QString(); }

void KvPoolPanel::updateCaption() {
  QString text = m_captionText;
  if (text.isEmpty() && m_log) {
    const QStringList lines = m_log->shownLines();
    if (!lines.isEmpty()) text = lines.last();
  }
  m_caption->setText(text);
}

void KvPoolPanel::showHistoryTab(int tab) {
  if (auto* tabs = findChild<QTabWidget*>(QStringLiteral("kvHistoryTabs"))) tabs->setCurrentIndex(tab);
}

void KvPoolPanel::showContiguousStrip(bool strip) {
  m_stripInView = strip;
  auto* numbers = findChild<QScrollArea*>(QStringLiteral("kvNumbersScroll"));
  auto* splitter = findChild<QSplitter*>(QStringLiteral("kvSplitter"));
  if (!numbers || !splitter) return;
  QScrollBar* bar = numbers->verticalScrollBar();
  if (!strip) {
    bar->setValue(0);
    return;
  }
  // The room the strip needs taken from the grid above it where the grid has some to spare; the
  // strip is the pane's last row, so the pane kept scrolled to its end shows it as the numbers
  // above it grow (stillScrolledToStrip).
  QList<int> sizes = splitter->sizes();
  const int want = m_strip->heightForWidth(numbers->viewport()->width()) + 2 * fontMetrics().height();
  if (sizes.size() >= 2 && sizes[1] < want) {
    const int top = splitter->widget(0)->minimumSizeHint().height();
    const int give = std::min(want - sizes[1], std::max(0, sizes[0] - top));
    sizes[0] -= give;
    sizes[1] += give;
    splitter->setSizes(sizes);
  }
  bar->setValue(bar->maximum());
}

void KvPoolPanel::selectSequence(SequenceId seq) {
  m_selected = seq;
  m_view->setSelectedSequence(seq);
  m_legend->setSelectedSequence(seq);
  m_table->setSequence(seq);
}

void KvPoolPanel::changeEvent(QEvent* e) {
  if (e->type() == QEvent::PaletteChange) updateStateKey();
  QWidget::changeEvent(e);
}

void KvPoolPanel::updateStateKey() {
  // From the palette itself: on a theme change the panel may hear of it before its view does.
  const KvCellColors c = KvCellColors::fromPalette(palette());
  auto chip = [](const QColor& color, const QString& name, const char* glyph = "&#9632;") {
    return QStringLiteral("<span style='color:%1'>%2</span>&nbsp;%3").arg(color.name(), QLatin1String(glyph), name.toHtmlEscaped());
  };
  // Free as an outlined square (a filled one in the free colour vanishes on the window), swapped
  // as a hatched one in the text colour: a chat's own colour there read as one of the chats.
  const QColor ink = palette().color(QPalette::WindowText);
  QStringList states{chip(ink, tr("free"), "&#9633;"), chip(c.chat(0), tr("in use (chat colour)")),
                     chip(c.chat(0), tr("shared: ref count drawn, outlined"), "&#9635;"), chip(c.cached, tr("cached (evictable)")),
                     chip(ink, tr("swapped out: the chat colour hatched, host strip"), "&#9640;")};
  m_keyShowsWindow = m_frame && m_frame->slidingWindow.window > 0;
  m_keyShowsDisk = m_frame && m_frame->stats.disk_tier;
  if (m_keyShowsDisk) {
    states << chip(ink, tr("corner mark: a copy on disk too (read back after eviction or a restart)"), "&#9698;");
    states << chip(c.cachedTint(0), tr("disk strip: the chats' blocks on disk, faded when only there"), "&#9635;");
  }
  if (m_keyShowsWindow)
    states << chip(c.chat(2), tr("dotted: past the sliding window (%1 tokens), read by global layers only")
                                  .arg(m_frame->slidingWindow.window));
  QStringList flashes;
  for (int k = 0; k < kNumKvFlashKinds; ++k)
    flashes << chip(c.flashes[k], QString::fromLatin1(kvFlashKindName(static_cast<KvFlashKind>(k))));
  m_stateKey->setText(states.join(QStringLiteral("<br>")) + QStringLiteral("<br><i>") + tr("Flashes:") +
                      QStringLiteral("</i><br>") + flashes.join(QStringLiteral("<br>")));
}
