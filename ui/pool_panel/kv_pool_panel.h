#pragma once
// The KV block-pool view, the panel the main window docks: the cell grid with the chat legend
// and a colour key, the live numbers, a one-minute chart of used / cached / free blocks, the
// contiguous-allocation strip, the selected chat's block table, and what happened as events in
// sentences (the event log), as steps (the step timeline of continuous batching), or as steps
// against this machine's roofline (prefill against decode). Fed one PoolFrame at a
// time (setFrame, a queued slot); the grid takes each frame at once (its events flash), the
// rest refresh once per event-loop pass from the latest frame.

#include <QElapsedTimer>
#include <QWidget>

#include <memory>

#include "appcore/pool/pool_frame.h"

class QDockWidget;
class QLabel;
class QMainWindow;
class KvBlockTableView;
class KvChatLegend;
class KvContiguousStrip;
class KvEventLogView;
class KvPoolView;
class KvStatsPanel;
class KvRooflineChart;
class QuantizationChart;
class KvStepTimeline;
class KvTimeChart;

class KvPoolPanel : public QWidget {
  Q_OBJECT
 public:
  explicit KvPoolPanel(QWidget* parent = nullptr);

  // A new panel in a dock widget (object names "kvPoolDock" / "kvPoolPanel"), added to window
  // in area; the panel is the dock's widget().
  static QDockWidget* createDock(QMainWindow* window, Qt::DockWidgetArea area = Qt::RightDockWidgetArea);
  // Renders a panel showing frame (without its events' flashes) at size into a PNG file (for
  // screenshots and tests; needs a QApplication). Returns whether the file was written.
  static bool saveSnapshotPng(const PoolFrame& frame, const QString& path, QSize size);

  void selectSequence(pagedchat::SequenceId seq);  // -1: none
  pagedchat::SequenceId selectedSequence() const { return m_selected; }
  // Applies the latest frame to the numbers, chart, legend and block table now instead of at
  // the next event-loop pass.
  void flush();

  KvPoolView* poolView() const { return m_view; }
  KvStatsPanel* statsPanel() const { return m_stats; }
  KvTimeChart* timeChart() const { return m_chart; }
  KvContiguousStrip* contiguousStrip() const { return m_strip; }
  KvBlockTableView* blockTableView() const { return m_table; }
  KvChatLegend* chatLegend() const { return m_legend; }
  KvEventLogView* eventLog() const { return m_log; }
  KvStepTimeline* stepTimeline() const { return m_timeline; }
  KvRooflineChart* rooflineChart() const { return m_roofline; }
  QuantizationChart* quantizationChart() const { return m_quantization; }
  // The history tab in front (a lesson shows the one it is about): 0 Events, 1 Steps, 2 Roofline,
  // 3 Quantization (LessonInfo::History's order).
  enum HistoryTab { eventsTab = 0, stepsTab = 1, rooflineTab = 2, quantizationTab = 3 };
  void showHistoryTab(int tab);
  // The numbers' pane scrolled to its top, or (strip) made tall enough for the contiguous strip
  // and scrolled to it: the contiguous lesson is told by the strip's two bars.
  void showContiguousStrip(bool strip);
  // Presenting (the main window's present mode, a lesson's): the grid takes most of the panel,
  // the numbers and the block table fold away, and a caption under the grid says the sentence
  // of the moment in large type: setCaption's, else the event log's newest line.
  void setPresenting(bool on);
  bool presenting() const { return m_presenting; }
  void setCaption(const QString& text);  // empty: follow the event log
  QString captionShown() const;
  QLabel* captionLabel() const { return m_caption; }

 public slots:
  void setFrame(const PoolFrame& frame);

 signals:
  void sequenceSelected(pagedchat::SequenceId seq);
  // The Roofline tab was shown with no ceilings: the window has this machine's measured.
  void rooflineWanted();

 protected:
  void changeEvent(QEvent* event) override;

 private:
  void refresh();
  void updateStateKey();
  void updateCaption();
  void layOutStage();  // presenting: the splitter's shares

  std::shared_ptr<const PoolFrame> m_frame;
  bool m_keyShowsWindow = false;  // the state key lists the sliding window's mark
  bool m_keyShowsDisk = false;    // ... and the disk tier's
  bool m_refreshPending = false;
  bool m_stripInView = false;  // showContiguousStrip(true): the numbers' pane kept at its end
  pagedchat::SequenceId m_selected = -1;
  QElapsedTimer m_clock;
  KvPoolView* m_view;
  KvChatLegend* m_legend;
  QLabel* m_stateKey;
  KvStatsPanel* m_stats;
  KvTimeChart* m_chart;
  KvContiguousStrip* m_strip;
  KvEventLogView* m_log = nullptr;
  KvStepTimeline* m_timeline = nullptr;
  KvRooflineChart* m_roofline = nullptr;
  QuantizationChart* m_quantization = nullptr;
  KvBlockTableView* m_table;
  QLabel* m_caption = nullptr;
  QString m_captionText;  // setCaption's; empty: the event log's newest line
  bool m_presenting = false;
  QByteArray m_splitterBeforePresenting;
};
