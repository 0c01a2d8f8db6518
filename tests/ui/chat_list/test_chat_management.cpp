// Managing many chats in the main window, as a user does it, on the real engine: rename in place
// (F2, then typing) and the fork's note follows; delete frees the chat's KV blocks and leaves
// its forks as chats of their own, saved so, with Undo for a few seconds; duplicate and pin; the list sorted by recent
// activity, creation or title; search over titles and message text that opens the message;
// export to JSON and Markdown and import back; drafts kept per chat; Tab leaves the input; the
// Chat menu's keys; the status line is the chat's own; forks are named after where they branch.
// Chats are saved in a temporary data dir (QStandardPaths test mode).

#include <QtTest>

#include <QApplication>
#include <QClipboard>
#include <QDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextBrowser>

#include "support/test_env.h"
#include "support/window_driver.h"
#include "appcore/chat/chat_database.h"
#include "ui/chat_list/chat_list_widget.h"
#include "ui/chat_list/chat_search_results.h"
#include "appcore/session/pool_control.h"
#include "ui/chat/chat_panel.h"
#include "ui/shell/main_window.h"

namespace {
// The references to KV blocks (summed ref counts: what the sequences' block tables hold) after `after`: a step of the engine (with no work, it only reports)
// sends a pool frame once what `after` queued on the engine thread is done.
int blockReferences(MainWindow& w, const std::function<void()>& after) {
  QSignalSpy frames(&w.session().pool(), &PoolControl::localFrame);
  after();
  frames.clear();
  w.session().pool().step();
  if (!QTest::qWaitFor([&] { return !frames.isEmpty(); }, 10000)) return -1;
  int refs = 0;
  for (const auto& b : frames.last()[0].value<PoolFrame>().snapshot.blocks) refs += b.ref_count;
  return refs;
}

}  // namespace

class TestChatManagement : public QObject {
  Q_OBJECT
  QString m_model;
  QTemporaryDir m_files;

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void renameInPlaceDeleteWithItsForksKeptAndKvFreed() {
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId parent = w.newChat();
    pagedchat::test::sendAndWait(w, QStringLiteral("Name a color."));
    const ChatId child = w.forkChat(parent, 2);
    // Named after its parent and the message it branches at.
    // What tells it apart first: the message it branches at, then its parent's title.
    QVERIFY2(w.chat(child)->title.startsWith(QStringLiteral("“") + w.chat(parent)->messages[1].content.simplified().left(16)) &&
                 w.chat(child)->title.endsWith(QStringLiteral("” ‹ ") + w.chat(parent)->title),
             qPrintable(w.chat(child)->title));

    // F2 on the list, a new title typed, Enter.
    auto* list = w.findChild<ChatListWidget*>(QStringLiteral("chatList"));
    w.selectChat(parent);
    list->setFocus();
    QTest::keyClick(list, Qt::Key_F2);
    QLineEdit* editor = nullptr;
    QTRY_VERIFY((editor = list->findChild<QLineEdit*>()) != nullptr && editor->isVisible());
    QCOMPARE(editor->text(), w.chat(parent)->title);  // the title alone, not the shown text
    QTest::keyClick(editor, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(editor, QStringLiteral("  Colours  "));
    QTest::keyClick(editor, Qt::Key_Return);
    QTRY_COMPARE(w.chat(parent)->title, QStringLiteral("Colours"));
    QCOMPARE(list->item(parent)->text(0), QStringLiteral("Colours"));
    QVERIFY2(list->item(child)->text(0).contains(QStringLiteral("fork of Colours at message 2")), qPrintable(list->item(child)->text(0)));
    QVERIFY(!w.renameChat(parent, QStringLiteral("   ")));  // an empty title is refused
    QCOMPARE(w.chat(parent)->title, QStringLiteral("Colours"));

    // Delete in the list: the chat goes at once and its sequence lets go of its blocks (the
    // fork shares them, so they stay in use, one reference fewer each); the fork stays on its
    // own; under the list, what went, and Undo.
    const QVector<MessageRecord> messages = w.chat(parent)->messages;
    auto* bar = w.findChild<QWidget*>(QStringLiteral("undoDelete"));
    QVERIFY(bar && !bar->isVisible());
    const int before = blockReferences(w, [] {});
    const int freed = blockReferences(w, [&] {
      w.selectChat(parent);
      list->setFocus();
      QTRY_VERIFY(list->hasFocus());
      QTest::keyClick(list, Qt::Key_Delete);
    });
    QVERIFY(!w.chat(parent));
    QVERIFY(!w.chatIds().contains(parent));
    QVERIFY(before > 0);
    QVERIFY2(freed >= 0 && freed < before, qPrintable(QStringLiteral("%1 block references before, %2 after").arg(before).arg(freed)));
    QVERIFY(w.chat(child));
    QVERIFY(list->item(child)->parent() == nullptr);
    QVERIFY2(list->item(child)->text(0).contains(QStringLiteral("fork of Colours (deleted) at message 2")),
             qPrintable(list->item(child)->text(0)));
    QVERIFY(w.currentChat() != parent && w.chat(w.currentChat()));
    QVERIFY(bar->isVisible());
    QCOMPARE(w.findChild<QLabel*>(QStringLiteral("undoDeleteText"))->text(),
             QStringLiteral("Deleted “Colours”: its 2 messages and the KV blocks it held. Its fork stays, as a chat of its own."));
    const auto savedIds = [] {
      QSet<ChatId> ids;
      for (const ChatRecord& r : ChatDatabase(ChatDatabase::defaultPath()).loadChats()) ids.insert(r.id);
      return ids;
    };
    QVERIFY(!savedIds().contains(parent));
    QVERIFY(savedIds().contains(child));

    // Undo: the chat is back as it was, on disk too, its fork under it again, and shown.
    QTest::mouseClick(w.findChild<QPushButton*>(QStringLiteral("undoDeleteButton")), Qt::LeftButton);
    QVERIFY(w.chat(parent));
    QCOMPARE(w.chat(parent)->title, QStringLiteral("Colours"));
    QCOMPARE(w.chat(parent)->messages.size(), messages.size());
    for (int i = 0; i < messages.size(); ++i) QCOMPARE(w.chat(parent)->messages[i].content, messages[i].content);
    QVERIFY(list->item(child)->parent() == list->item(parent));
    QVERIFY2(list->item(child)->text(0).contains(QStringLiteral("fork of Colours at message 2")), qPrintable(list->item(child)->text(0)));
    QCOMPARE(w.currentChat(), parent);
    QVERIFY(!bar->isVisible());
    QVERIFY(savedIds().contains(parent));
    // It goes on as any chat does (its blocks were freed: the turn reads it again).
    pagedchat::test::sendAndWait(w, QStringLiteral("Another one?"));
    QCOMPARE(w.chat(parent)->messages.size(), messages.size() + 2);

    // Deleted again and left: the offer ends after a few seconds and the chat stays gone.
    w.deleteChat(parent);
    QVERIFY(bar->isVisible() && !w.chat(parent));
    QTRY_VERIFY_WITH_TIMEOUT(!bar->isVisible(), 15000);
    QVERIFY(!savedIds().contains(parent));
    QVERIFY(savedIds().contains(child));
  }

  void duplicatePinAndTheListsOrders() {
    QVector<ChatId> order;
    {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId a = w.newChat();
    pagedchat::test::sendAndWait(w, QStringLiteral("Alpha question"));
    const ChatId b = w.newChat();
    pagedchat::test::sendAndWait(w, QStringLiteral("Beta question"));
    // Recent activity first: b, a; a turn in a moves it up.
    QCOMPARE(w.chatIds().mid(0, 2), (QVector<ChatId>{b, a}));
    w.selectChat(a);
    pagedchat::test::sendAndWait(w, QStringLiteral("Again"));
    QCOMPARE(w.chatIds().mid(0, 2), (QVector<ChatId>{a, b}));

    // Duplicate: a chat of its own with the same messages.
    const ChatId copy = w.duplicateChat(a);
    QVERIFY(copy > 0 && copy != a);
    QCOMPARE(w.chat(copy)->parentId, ChatId{-1});
    QCOMPARE(w.chat(copy)->messages.size(), w.chat(a)->messages.size());
    QCOMPARE(w.chat(copy)->messages.last().content, w.chat(a)->messages.last().content);
    QVERIFY(w.chat(copy)->title.endsWith(QStringLiteral("(copy)")));
    pagedchat::test::sendAndWait(w, QStringLiteral("And in the copy?"));  // it goes on on its own
    QCOMPARE(w.chat(copy)->messages.size(), w.chat(a)->messages.size() + 2);

    // Pinned first, whatever the order; Ctrl+Shift+P toggles the chat shown.
    w.selectChat(b);
    QTest::keyClick(&w, Qt::Key_P, Qt::ControlModifier | Qt::ShiftModifier);
    QVERIFY(w.chat(b)->pinned);
    QCOMPARE(w.chatIds().first(), b);
    auto* list = w.findChild<ChatListWidget*>(QStringLiteral("chatList"));
    QVERIFY(list->item(b)->text(0).startsWith(QStringLiteral("★ ")));
    // By title, from the View menu (saved for the next start).
    w.renameChat(a, QStringLiteral("zz last"));
    w.renameChat(copy, QStringLiteral("aa first"));
    w.findChild<QAction*>(QStringLiteral("sortBy_title"))->trigger();
    QVector<ChatId> shown = w.chatIds();
    QCOMPARE(shown.first(), b);  // pinned
    QVERIFY(shown.indexOf(copy) < shown.indexOf(a));
    QTest::keyClick(&w, Qt::Key_P, Qt::ControlModifier | Qt::ShiftModifier);
    QVERIFY(!w.chat(b)->pinned);
    order = w.chatIds();
    }
    AppServices again;
    MainWindow restarted(again);
    QVERIFY(restarted.findChild<QAction*>(QStringLiteral("sortBy_title"))->isChecked());
    QCOMPARE(restarted.chatIds(), order);
    restarted.findChild<QAction*>(QStringLiteral("sortBy_recent"))->trigger();
  }

  void searchFindsTitlesAndMessagesAndOpensTheMessage() {
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId zebra = w.newChat();
    pagedchat::test::sendAndWait(w, QStringLiteral("Say hello."));
    pagedchat::test::sendAndWait(w, QStringLiteral("Is a zebra black with white stripes?"));
    w.renameChat(zebra, QStringLiteral("Striped animals"));
    const ChatId other = w.newChat();
    w.renameChat(other, QStringLiteral("Café plans"));

    QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier);
    auto* search = w.findChild<QLineEdit*>(QStringLiteral("searchChats"));
    QTRY_VERIFY(search->hasFocus());
    QTest::keyClicks(search, QStringLiteral("zebr"));
    auto* results = w.findChild<ChatSearchResults*>(QStringLiteral("searchResults"));
    QTRY_VERIFY(results->isVisible());
    QTRY_VERIFY(results->count() >= 1);
    // The question (the third message) is among the hits; the reply may name zebras too.
    int question = -1;
    for (int row = 0; row < results->count(); ++row) {
      QCOMPARE(results->result(row).chat, zebra);
      if (results->result(row).message == 2) question = row;
    }
    QVERIFY(question >= 0);
    w.selectChat(other);
    QTest::keyClick(search, Qt::Key_Return);  // opens the first result
    QCOMPARE(w.currentChat(), zebra);
    auto* transcript = w.findChild<QTextBrowser*>(QStringLiteral("transcript"));
    QCOMPARE(transcript->textCursor().selectedText().toLower(), QStringLiteral("zebr"));
    // A click on the question's row opens it there.
    w.selectChat(other);
    QTest::keyClicks(search, QStringLiteral("a"));  // "zebra"
    QTRY_VERIFY(results->isVisible() && results->count() >= 1);
    question = -1;
    for (int row = 0; row < results->count(); ++row)
      if (results->result(row).message == 2) question = row;
    QVERIFY(question >= 0);
    const QRect rowRect = results->visualItemRect(results->item(question));
    QTest::mouseClick(results->viewport(), Qt::LeftButton, {}, rowRect.center());
    QCOMPARE(w.currentChat(), zebra);
    const QTextCursor at = transcript->textCursor();
    const QString question3 = QStringLiteral("Is a zebra black with white stripes?");
    QCOMPARE(at.selectedText(), QStringLiteral("zebra"));
    QVERIFY(transcript->toPlainText().indexOf(question3) <= at.selectionStart());

    // A title, accents folded both ways.
    search->clear();
    QTest::keyClicks(search, QStringLiteral("cafe"));
    QTRY_COMPARE(results->result(0).chat, other);
    QCOMPARE(results->result(0).message, -1);
    // Nothing found says so; Esc clears the box and the list is back.
    search->clear();
    QTest::keyClicks(search, QStringLiteral("xylophonequartz"));
    QTRY_VERIFY(results->count() == 1 && results->result(0).chat < 0);
    QTest::keyClick(search, Qt::Key_Escape);
    QVERIFY(search->text().isEmpty());
    QVERIFY(w.findChild<ChatListWidget*>(QStringLiteral("chatList"))->isVisible());
  }

  void exportAndImportRoundTrip() {
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId id = w.newChat();
    pagedchat::test::sendAndWait(w, QStringLiteral("Write one line about rivers."));
    w.chatPanel()->regenerate();  // a second version of the reply comes along
    QSignalSpy done(&w, &MainWindow::turnDone);
    QVERIFY(done.wait(120000));
    QCOMPARE(w.chat(id)->messages.last().numVersions(), 2);
    const QString json = m_files.filePath(QStringLiteral("rivers.json"));
    const QString md = m_files.filePath(QStringLiteral("rivers.md"));
    QVERIFY(w.exportChat(id, json));
    QVERIFY(w.exportChat(id, md));
    QFile mdFile(md);
    QVERIFY(mdFile.open(QIODevice::ReadOnly));
    const QString markdown = QString::fromUtf8(mdFile.readAll());
    QVERIFY2(markdown.contains(QStringLiteral("Write one line about rivers.")) &&
                 markdown.contains(w.chat(id)->messages.last().content.trimmed()) &&
                 markdown.contains(QStringLiteral("(version 2 / 2)")),
             qPrintable(markdown));

    const int chatsBefore = static_cast<int>(w.chatIds().size());
    const ChatId imported = w.importChat(json);
    QVERIFY(imported > 0 && imported != id);
    QCOMPARE(w.currentChat(), imported);
    QCOMPARE(w.chatIds().size(), chatsBefore + 1);
    const ChatRecord& a = *w.chat(id);
    const ChatRecord& b = *w.chat(imported);
    QCOMPARE(b.title, a.title);
    QCOMPARE(b.messages.size(), a.messages.size());
    for (int i = 0; i < a.messages.size(); ++i) {
      QCOMPARE(b.messages[i].content, a.messages[i].content);
      QCOMPARE(b.messages[i].metrics.numTokens, a.messages[i].metrics.numTokens);
      QCOMPARE(b.messages[i].numVersions(), a.messages[i].numVersions());
    }
    QCOMPARE(b.messages.last().otherVersions.first().first().content, a.messages.last().otherVersions.first().first().content);
    pagedchat::test::sendAndWait(w, QStringLiteral("More?"));  // the imported chat goes on
    QCOMPARE(w.chat(imported)->messages.size(), a.messages.size() + 2);

    // A file that is not an export: one sentence in a dialog, the detail behind it, nothing changed.
    const QString bad = m_files.filePath(QStringLiteral("bad.json"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"format\": \"something else\"}");
    f.close();
    const int chatsNow = static_cast<int>(w.chatIds().size());
    QCOMPARE(w.importChat(bad), ChatId{-1});
    auto* box = w.findChild<QMessageBox*>(QStringLiteral("importError"));
    QVERIFY(box);
    QVERIFY2(box->text().contains(QStringLiteral("could not be imported")), qPrintable(box->text()));
    QVERIFY2(box->detailedText().contains(QStringLiteral("not a PagedChat chat export")), qPrintable(box->detailedText()));
    box->accept();
    QCOMPARE(w.chatIds().size(), chatsNow);
    QVERIFY(!w.exportChat(id, m_files.filePath(QStringLiteral("no/such/folder/x.json"))));
    QVERIFY(w.findChild<QMessageBox*>(QStringLiteral("exportError")));
  }

  void draftsStayWithTheirChatAndTabLeavesTheInput() {
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId a = w.newChat(), b = w.newChat();
    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    w.selectChat(a);
    input->setFocus();
    QTest::keyClicks(input, QStringLiteral("half a thought"));
    w.selectChat(b);
    QVERIFY(input->toPlainText().isEmpty());
    QTest::keyClicks(input, QStringLiteral("another"));
    w.selectChat(a);
    QCOMPARE(input->toPlainText(), QStringLiteral("half a thought"));
    w.selectChat(b);
    QCOMPARE(input->toPlainText(), QStringLiteral("another"));
    // Tab moves the focus on and types nothing.
    input->setFocus();
    QTRY_VERIFY(input->hasFocus());
    QTest::keyClick(input, Qt::Key_Tab);
    QVERIFY(!input->hasFocus());
    QCOMPARE(input->toPlainText(), QStringLiteral("another"));
  }

  void theChatMenusKeysAndTheShortcutsList() {
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId id = w.newChat();
    pagedchat::test::sendAndWait(w, QStringLiteral("One word, please."));
    // Ctrl+Shift+C copies the last reply; Ctrl+R regenerates it (a second version).
    QApplication::clipboard()->clear();
    QTest::keyClick(&w, Qt::Key_C, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(QApplication::clipboard()->text(), w.chat(id)->messages.last().content);
    QSignalSpy done(&w, &MainWindow::turnDone);
    QTest::keyClick(&w, Qt::Key_R, Qt::ControlModifier);
    QVERIFY(done.wait(120000));
    QCOMPARE(w.chat(id)->messages.last().numVersions(), 2);
    // The status line is the chat's: another chat does not show it.
    w.exportChat(id, m_files.filePath(QStringLiteral("status.json")));
    auto* status = w.findChild<QLabel*>(QStringLiteral("status"));
    QVERIFY(status->text().startsWith(QStringLiteral("Exported to")));
    const ChatId other = w.newChat();
    QVERIFY2(!status->text().contains(QStringLiteral("Exported")), qPrintable(status->text()));
    w.selectChat(id);
    QVERIFY(status->text().startsWith(QStringLiteral("Exported to")));
    Q_UNUSED(other);
    // Help > Keyboard shortcuts lists the actions with their keys.
    QTest::keyClick(&w, Qt::Key_Slash, Qt::ControlModifier);
    QDialog* dialog = nullptr;
    QTRY_VERIFY((dialog = w.findChild<QDialog*>(QStringLiteral("shortcutsDialog"))) != nullptr);
    auto* table = dialog->findChild<QTableWidget*>();
    QStringList rows;
    for (int i = 0; i < table->rowCount(); ++i) rows << table->item(i, 0)->text() + QStringLiteral(" = ") + table->item(i, 1)->text();
    for (const char* expected : {"Regenerate the last reply = Ctrl+R", "Copy the last reply = Ctrl+Shift+C", "Rename = F2",
                                 "Delete = Del", "Search chats = Ctrl+F or Ctrl+K", "Stop the reply = Esc",
                                 "Previous chat = Ctrl+Shift+Tab", "Fork at the latest message = Ctrl+Shift+F"})
      QVERIFY2(rows.contains(QLatin1String(expected)), qPrintable(expected + QStringLiteral(" not in: ") + rows.join(QStringLiteral("; "))));
    dialog->close();
  }
};

QTEST_MAIN(TestChatManagement)
#include "test_chat_management.moc"
