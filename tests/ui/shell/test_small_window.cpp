// The window at the sizes people use, from a small laptop's 1024x700 up: no button, check box
// or label of ours shows clipped text, the chat keeps a usable width between the docks, and the
// row under the input gives its actions icons (with their names as tooltips) before anything
// is cut. Asserted from the widgets' geometry after layout, with a model loaded (the window as
// it is used) and the KV dock shown.

#include <QtTest>

#include <QAbstractButton>
#include <QCheckBox>
#include <QDockWidget>
#include <QLabel>
#include <QToolButton>
#include <QTreeWidgetItem>

#include <algorithm>

#include "support/test_env.h"
#include "support/window_driver.h"
#include "appcore/lessons/lesson_runner.h"
#include "ui/chat/chat_action_row.h"
#include "ui/chat_list/chat_list_widget.h"
#include "ui/shell/main_window.h"

namespace {
// Buttons and labels in the window whose text does not fit the room they were given.
QStringList clipped(const QWidget& window) {
  QStringList out;
  for (QAbstractButton* b : window.findChildren<QAbstractButton*>()) {
    if (!b->isVisibleTo(&window) || b->text().isEmpty()) continue;
    if (auto* t = qobject_cast<QToolButton*>(b); t && t->toolButtonStyle() == Qt::ToolButtonIconOnly) continue;
    if (b->width() < b->sizeHint().width())
      out << QStringLiteral("%1 \"%2\": %3 of %4 px").arg(b->objectName(), b->text()).arg(b->width()).arg(b->sizeHint().width());
  }
  for (QLabel* l : window.findChildren<QLabel*>()) {
    if (!l->isVisibleTo(&window) || l->text().isEmpty()) continue;
    // A wrapped label's lines past its height are cut at the bottom.
    if (l->wordWrap() && l->height() < l->heightForWidth(l->width()))
      out << QStringLiteral("label %1 \"%2\": %3 of %4 px high").arg(l->objectName(), l->text().left(40)).arg(l->height()).arg(l->heightForWidth(l->width()));
    if (l->wordWrap() || l->textFormat() == Qt::RichText) continue;
    if (l->width() < l->minimumSizeHint().width())
      out << QStringLiteral("label %1 \"%2\": %3 of %4 px").arg(l->objectName(), l->text()).arg(l->width()).arg(l->minimumSizeHint().width());
  }
  return out;
}
}  // namespace

class TestSmallWindow : public QObject {
  Q_OBJECT
  QString m_model;

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  // A window bigger than the screen (a size saved on a larger one) is moved and shrunk until its
  // whole frame, status bar included, is on the screen.
  void aWindowBiggerThanTheScreenIsFittedOnIt() {
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const QRect room = w.screen()->availableGeometry();
    w.resize(room.width() + 300, room.height() + 200);
    w.move(room.topLeft() + QPoint(150, 120));
    QTRY_VERIFY(!room.contains(w.frameGeometry()));
    w.fitOnScreen();
    // All of it, but a width the window cannot go under (a screen narrower than its minimum).
    const auto fits = [&] {
      const QRect f = w.frameGeometry();
      return f.top() >= room.top() && f.bottom() <= room.bottom() && f.left() >= room.left() &&
             (f.right() <= room.right() || w.width() == w.minimumSizeHint().width());
    };
    QTRY_VERIFY2(fits(), qPrintable(QStringLiteral("%1x%2 at %3,%4 on %5x%6").arg(w.frameGeometry().width()).arg(w.frameGeometry().height())
                                        .arg(w.frameGeometry().x()).arg(w.frameGeometry().y()).arg(room.width()).arg(room.height())));
  }

  void nothingIsClippedFrom1024x700Up_data() {
    QTest::addColumn<QSize>("size");
    QTest::addColumn<bool>("oneLineOfText");  // the row's roomiest shape, expected from here up
    QTest::newRow("1024x700") << QSize(1024, 700) << false;
    QTest::newRow("1366x768") << QSize(1366, 768) << false;
    QTest::newRow("1600x1000") << QSize(1600, 1000) << true;
  }
  void nothingIsClippedFrom1024x700Up() {
    QFETCH(QSize, size);
    QFETCH(bool, oneLineOfText);
    AppServices services;
    MainWindow w(services);
    w.resize(size);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    pagedchat::test::loadAndWait(w, m_model);
    QCOMPARE(w.size(), size);
    QVERIFY(w.findChild<QDockWidget*>(QStringLiteral("kvBlocksDock"))->isVisible());
    QVERIFY(w.findChild<QDockWidget*>(QStringLiteral("chatsDock"))->isVisible());
    QTest::qWait(50);  // the layout settles
    QStringList cut = clipped(w);
    QVERIFY2(cut.isEmpty(), qPrintable(cut.join(QStringLiteral("; "))));
    // The Lessons tab beside the chat list, shown: its buttons fit too.
    auto* lessons = w.findChild<QDockWidget*>(QStringLiteral("lessonsDock"));
    lessons->raise();
    QTRY_VERIFY(lessons->widget()->isVisible());
    QTest::qWait(50);
    cut = clipped(w);
    QVERIFY2(cut.isEmpty(), qPrintable(cut.join(QStringLiteral("; "))));
    w.findChild<QDockWidget*>(QStringLiteral("chatsDock"))->raise();
    QTest::qWait(50);

    // The chat list has room: with twelve chats, at least ten rows show whole (the system
    // prompt box under it takes what it needs, no more).
    while (w.chatIds().size() < 12) w.newChat();
    QTest::qWait(50);
    auto* list = w.findChild<ChatListWidget*>();
    QTreeWidgetItem* tenth = list->item(w.chatIds()[9]);
    QVERIFY(tenth);
    const int rowsShown = list->viewport()->height() / std::max(1, list->visualItemRect(tenth).height());
    QVERIFY2(rowsShown >= 10, qPrintable(QStringLiteral("%1 rows of the list show (viewport %2 px, row %3 px)")
                                             .arg(rowsShown).arg(list->viewport()->height()).arg(list->visualItemRect(tenth).height())));

    // The chat between the docks: room for a line of text.
    auto* transcript = w.findChild<QWidget*>(QStringLiteral("transcript"));
    QVERIFY2(transcript->width() >= 420, qPrintable(QString::number(transcript->width())));
    auto* row = w.findChild<ChatActionRow*>();
    if (oneLineOfText)
      QVERIFY2(row->shape() == ChatActionRow::Shape::oneLineText,
               qPrintable(QStringLiteral("row %1 px wide, shape %2").arg(row->width()).arg(static_cast<int>(row->shape()))));
    // An icon-only action still says what it is and its key.
    auto* regenerate = w.findChild<QToolButton*>(QStringLiteral("regenerate"));
    QVERIFY(!regenerate->icon().isNull());
    QVERIFY(regenerate->toolTip().contains(QStringLiteral("Ctrl+R")));
    // Every action fits inside the row.
    for (const char* name : {"chatSampling", "copy", "regenerate", "stop", "send"}) {
      auto* b = w.findChild<QToolButton*>(QString::fromLatin1(name));
      const QRect inWindow(b->mapTo(&w, QPoint(0, 0)), b->size());
      QVERIFY2(w.rect().contains(inWindow), name);
      QVERIFY2(b->width() >= b->sizeHint().width(), name);
    }
  }

  // A lesson's scene at its key event (a host pool drawn, the Steps tab shown, eight chats'
  // legend) keeps the window at a laptop's size: nothing in the docks asks for more height.
  // The quantization lesson (which quantizes the model for half a minute first) in a function
  // of its own: QTest gives each function five minutes.
  void eachLessonAtItsKeyEventFits1366x768() { lessonsFit(false); }
  void theQuantizationLessonFits1366x768() {
    if (pagedchat::test::sanitized()) QSKIP("the quantization lesson's measurement takes past its timeout under the sanitizers");
    lessonsFit(true);
  }

 private:
  void lessonsFit(bool quantization) {
    const QSize size(1366, 768);
    AppServices services;
    MainWindow w(services);
    w.resize(size);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    pagedchat::test::loadAndWait(w, m_model);
    w.findChild<QDockWidget*>(QStringLiteral("lessonsDock"))->raise();
    LessonRunner* runner = w.lessons();
    using State = LessonRunner::State;
    for (const LessonInfo& lesson : LessonRunner::lessons()) {
      if (lesson.studiesQuantization != quantization) continue;
      runner->start(lesson.id);
      QVERIFY2(pagedchat::test::waitUntil([&] { return runner->state() == State::ready; }, quantization ? 240000 : 60000),
               qPrintable(lesson.id));
      QVERIFY2(w.size() == size, qPrintable(QStringLiteral("%1 set up: %2x%3").arg(lesson.id).arg(w.width()).arg(w.height())));
      // The Engine toolbar's Next event, as a teacher at the window presses it (the lesson's).
      for (int press = 0; press < 300 && runner->state() != State::reached; ++press) {
        const QString before = runner->lastSentence();
        w.findChild<QAction*>(QStringLiteral("stepToNextKvEvent"))->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(runner->lastSentence() != before || runner->state() == State::reached, 10000);
        QVERIFY2(w.size() == size, qPrintable(QStringLiteral("%1, press %2: %3").arg(lesson.id).arg(press).arg(runner->lastSentence())));
      }
      QCOMPARE(runner->state(), State::reached);
      QTest::qWait(50);
      QVERIFY2(w.size() == size, qPrintable(QStringLiteral("%1: %2x%3").arg(lesson.id).arg(w.width()).arg(w.height())));
      const QStringList cut = clipped(w);
      QVERIFY2(cut.isEmpty(), qPrintable(lesson.id + QStringLiteral(": ") + cut.join(QStringLiteral("; "))));
    }
  }
};

QTEST_MAIN(TestSmallWindow)
#include "test_small_window.moc"
