// What a new user's walk found broken across a restart and around the lessons (issue 45), each
// through the real window on one data folder, quit and started again: the model used last comes
// back (a file that is gone is said on the welcome page); the chat shown last is shown again,
// each chat's draft in its input; a lesson's end gives the engine back to the user's chats, and
// so does going back to one's own chat in the middle of one (its chats gone, the user's engine
// settings back), also after a quit in the middle of a lesson.

#include <QtTest>

#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTemporaryDir>

#include "appcore/lessons/lesson_runner.h"
#include "appcore/session/pool_control.h"
#include "support/test_env.h"
#include "support/window_driver.h"
#include "ui/chat/chat_panel.h"
#include "ui/chat_list/chat_list_widget.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/library/welcome_view.h"
#include "ui/shell/main_window.h"

namespace {
QPlainTextEdit* input(MainWindow& w) { return w.findChild<QPlainTextEdit*>(QStringLiteral("input")); }

void startLesson(MainWindow& w, const QString& id) {
  auto* panel = w.findChild<LessonsPanel*>(QStringLiteral("lessonsPanel"));
  auto* list = panel->findChild<QListWidget*>(QStringLiteral("lessonList"));
  for (int i = 0; i < list->count(); ++i)
    if (list->item(i)->data(Qt::UserRole).toString() == id) list->setCurrentRow(i);
  panel->findChild<QPushButton*>(QStringLiteral("startLesson"))->click();
  QTRY_VERIFY_WITH_TIMEOUT(w.lessons()->state() == LessonRunner::State::ready || w.lessons()->state() == LessonRunner::State::failed, 180000);
  QCOMPARE(w.lessons()->state(), LessonRunner::State::ready);
}
}  // namespace

class TestAppRestart : public QObject {
  Q_OBJECT
  QString m_model;
  QTemporaryDir m_dir;

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
    QVERIFY(m_dir.isValid());
  }

  // Quit with a model in use, start again with none asked for: that model loads, not the
  // default one and not the welcome page. Once its file is gone, the welcome page says so.
  void theModelUsedLastComesBackAfterARestart() {
    const QString mine = m_dir.filePath(QStringLiteral("my-model.gguf"));  // not the default model's path
    QVERIFY(QFile::link(m_model, mine));
    {
      AppServices services;
      MainWindow w(services);
      w.show();
      pagedchat::test::loadAndWait(w, mine);
      w.close();
    }
    {
      AppServices services;
      MainWindow w(services);
      w.show();
      QSignalSpy ready(&w, &MainWindow::modelReady);
      w.openAtStart(QString());
      QVERIFY(ready.wait(60000));
      QCOMPARE(w.modelInfo().path, QFileInfo(mine).absoluteFilePath());
      QVERIFY(!w.welcomeShown());
      w.close();
    }
    QVERIFY(QFile::remove(mine));
    AppServices services;
    MainWindow w(services);
    w.show();
    w.openAtStart(QString());
    QVERIFY(w.welcomeShown());
    const QString said = w.findChild<QLabel*>(QStringLiteral("welcomeMessage"))->text();
    QVERIFY2(said.contains(QStringLiteral("no longer there")) && said.contains(mine), qPrintable(said));
  }

  // Three chats, a draft typed in two, the middle one shown at quit: after the start it is
  // shown again with its draft, and the other draft waits in its own chat.
  void theChatShownAndItsDraftsComeBack() {
    pagedchat::test::useFreshDataFolder();
    ChatId a = -1, b = -1, c = -1;
    {
      AppServices services;
      MainWindow w(services);
      w.show();
      a = w.currentChat();  // the start's own new chat
      input(w)->setPlainText(QStringLiteral("a question for A, not sent yet"));
      b = w.newChat();
      input(w)->setPlainText(QStringLiteral("half a thought for B"));
      c = w.newChat();
      w.selectChat(b);
      QCOMPARE(input(w)->toPlainText(), QStringLiteral("half a thought for B"));
      w.close();
    }
    AppServices services;
    MainWindow w(services);
    w.show();
    QCOMPARE(w.currentChat(), b);
    QCOMPARE(input(w)->toPlainText(), QStringLiteral("half a thought for B"));
    w.selectChat(a);
    QCOMPARE(input(w)->toPlainText(), QStringLiteral("a question for A, not sent yet"));
    w.selectChat(c);
    QVERIFY(input(w)->toPlainText().isEmpty());
  }

  // A lesson run to its end leaves the engine running; the next lesson deletes the last one's
  // chats; going back to one's own chat in the list ends the lesson there: its chats go, and the
  // engine is the user's again (its own context and pool, running), so the message gets its
  // reply; a restart after a quit in the middle of a lesson deletes its chats and gives the
  // user's engine settings back, and the user's own chat stays.
  void lessonsLeaveTheEngineAndTheChatsAsTheyFoundThem() {
    pagedchat::test::useFreshDataFolder();
    ChatId mine = -1, prefixA = -1;
    {
      AppServices services;
      MainWindow w(services);
      w.show();
      pagedchat::test::loadAndWait(w, m_model);
      mine = w.currentChat();
      const int context = w.session().contextLength();
      startLesson(w, QStringLiteral("allocation"));
      const ChatId allocationA = w.lessons()->sceneChat(QStringLiteral("Chat A"));
      QVERIFY(w.chat(allocationA));
      pagedchat::test::runLessonToEnd(w);
      QTRY_COMPARE(w.lessons()->state(), LessonRunner::State::finished);
      QVERIFY(!w.session().pool().paused());  // the user's chats reply again

      startLesson(w, QStringLiteral("prefix"));
      QVERIFY(!w.chat(allocationA));  // the last lesson's chats are gone
      prefixA = w.lessons()->sceneChat(QStringLiteral("Chat A"));
      QVERIFY(w.chat(prefixA));
      QVERIFY(w.session().pool().paused());
      QVERIFY(w.settings().teachingPreset);
      QVERIFY(w.session().contextLength() < context);

      // The user's own chat, clicked in the list: the lesson is left.
      QSignalSpy reloaded(&w, &MainWindow::modelReady);
      auto* list = w.findChild<ChatListWidget*>(QStringLiteral("chatList"));
      list->setCurrentItem(list->item(mine));
      QTRY_COMPARE(w.lessons()->state(), LessonRunner::State::idle);
      QCOMPARE(w.currentChat(), mine);
      QCOMPARE(list->currentItem(), list->item(mine));  // the row marked is the chat shown
      QVERIFY(!w.chat(prefixA));
      for (ChatId id : w.chatIds()) QVERIFY2(!w.chat(id)->title.startsWith(QStringLiteral("Chat ")), qPrintable(w.chat(id)->title));
      QVERIFY(!w.settings().teachingPreset);
      QVERIFY(reloaded.wait(60000));  // the user's engine, loaded again
      QCOMPARE(w.session().contextLength(), context);
      QVERIFY(!w.session().pool().paused());
      pagedchat::test::sendAndWait(w, QStringLiteral("Hello?"));
      QCOMPARE(w.chat(mine)->messages.last().role, QStringLiteral("assistant"));
      QVERIFY(!w.chat(mine)->messages.last().content.isEmpty());

      // Quit in the middle of a lesson (the fork lesson: its Chat B is a fork, made another way).
      startLesson(w, QStringLiteral("fork"));
      prefixA = w.lessons()->sceneChat(QStringLiteral("Chat A"));
      QVERIFY(w.settings().teachingPreset);
      w.close();
    }
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(!w.chat(prefixA));
    QVERIFY(w.chat(mine));
    for (ChatId id : w.chatIds()) QVERIFY2(!w.chat(id)->title.startsWith(QStringLiteral("Chat ")), qPrintable(w.chat(id)->title));
    QVERIFY(!w.settings().teachingPreset);  // the user's engine settings, not the lesson's
  }
};

QTEST_MAIN(TestAppRestart)
#include "test_app_restart.moc"
