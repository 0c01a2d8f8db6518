// Tools in the window, as a user meets them: a server in mcp.json (the `mcp` SDK's test server),
// turned on for the chat in its Tools menu, read_file chosen there for the next reply, a question
// sent. The reply's call shows as a card (the tool, its arguments as indented JSON) with Allow
// once / Always allow / Deny; clicking Allow runs it, and its result follows folded under one line
// that opens it; the model's reply goes on. Deny leaves the model told so. The Tool servers
// dialog lists the server, its state and tools.

#include <QtTest>

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QTreeWidget>

#include <cstdlib>

#include "appcore/tools/mcp_connection.h"
#include "appcore/tools/mcp_servers.h"
#include "support/mcp_app_config.h"
#include "support/test_env.h"
#include "support/transcript_driver.h"
#include "support/window_driver.h"
#include "ui/chat/chat_tools_button.h"
#include "ui/chat/transcript_view.h"
#include "ui/dialogs/tool_servers_dialog.h"
#include "ui/shell/main_window.h"

namespace {

using pagedchat::test::clickLink;

using pagedchat::test::writeNotes;
QString env(const char* name) { return pagedchat::test::envText(name); }

// The Tools menu's action whose text starts with `text` (its submenus searched too), as shown now.
QAction* menuAction(QMenu* menu, const QString& text) {
  for (QAction* a : menu->actions()) {
    if (a->text().startsWith(text)) return a;
    if (a->menu())
      if (QAction* inner = menuAction(a->menu(), text)) return inner;
  }
  return nullptr;
}

// The app's sampling made greedy: the replies of a 135M model are what the test expects of it
// (sampled, its forced call may run on past its length limit).
void greedy(MainWindow& w) {
  AppSettings s = w.settings();
  s.sampling.temperature = 0;
  w.applySettings(s);
}

// Each further call of the turn denied from its card, as a user would, until the turn ends; false
// when it does not end in time.
bool denyFurtherCallsUntilTheTurnEnds(const ChatController& chats, ChatId id, TranscriptView& transcript) {
  return QTest::qWaitFor([&] {
    const ChatController::Chat* c = chats.chat(id);
    if (c->toolCall && !c->toolCall->running && transcript.toPlainText().contains(QStringLiteral("Run it?")))
      clickLink(transcript, "tooldeny:" + c->toolCall->callId);
    return !c->replying;
  }, 120000);
}

QAction* toolsMenuAction(MainWindow& w, const QString& text) {
  auto* button = w.findChild<ChatToolsButton*>(QStringLiteral("chatTools"));
  emit button->menu()->aboutToShow();  // built as it opens
  return menuAction(button->menu(), text);
}

}  // namespace

class TestToolCallCard : public QObject {
  Q_OBJECT
  QString m_model, m_notes;

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
    if (env("PAGEDCHAT_PYTHON").isEmpty()) QSKIP("PAGEDCHAT_PYTHON (the venv with the mcp SDK) is not set");
    pagedchat::test::writeMcpConfigWithTestServer();
    m_notes = writeNotes("The secret word is marmalade.\nIt opens the blue door.\n");
  }

  void aCallIsAskedShownRunAndAnswered() {
    AppServices services;
    MainWindow w(services);
    w.resize(1100, 760);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    greedy(w);
    pagedchat::test::loadAndWait(w, m_model);
    QTRY_COMPARE_WITH_TIMEOUT(services.tools().connection("files")->state(), McpConnection::State::Ready, 30000);
    const ChatId id = w.newChat();

    // The Tools menu: the server on for this chat, then read_file for the next reply.
    QAction* server = toolsMenuAction(w, "files (");
    QVERIFY(server && server->isCheckable() && !server->isChecked());
    server->trigger();
    QCOMPARE(services.session().chats().chat(id)->record.tools.servers, QStringList{"files"});
    auto* button = w.findChild<ChatToolsButton*>(QStringLiteral("chatTools"));
    QCOMPARE(button->text(), QStringLiteral("1"));  // servers on
    QAction* use = toolsMenuAction(w, "read_file");
    QVERIFY(use);
    use->trigger();
    QCOMPARE(button->text(), QStringLiteral("read_file"));  // the next reply's tool
    QVERIFY(button->toolTip().contains(QStringLiteral("next reply calls read_file")));

    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    input->setPlainText(QStringLiteral("Read the file %1 and tell me the secret word.").arg(m_notes));
    QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
    auto* transcript = w.findChild<TranscriptView*>(QStringLiteral("transcript"));
    const ChatController& chats = services.session().chats();
    QTRY_VERIFY_WITH_TIMEOUT(chats.chat(id)->toolCall.has_value(), 120000);
    QCOMPARE(button->text(), QStringLiteral("1"));  // the forced tool was for that message
    const QString callId = chats.chat(id)->toolCall->callId;
    QTRY_VERIFY(transcript->toPlainText().contains(QStringLiteral("Tool call: read_file")));
    const QString shown = transcript->toPlainText();
    QVERIFY2(shown.contains(QStringLiteral("on files")), qPrintable(shown));
    QVERIFY2(shown.contains(QStringLiteral("\"path\": ")), qPrintable(shown));  // indented JSON
    QVERIFY2(shown.contains(QStringLiteral("Run it?")), qPrintable(shown));
    const QStringList links = pagedchat::test::anchorsOf(transcript->document());
    for (const char* href : {"toolallow:", "toolalways:", "tooldeny:"}) QVERIFY2(links.contains(href + callId), qPrintable(links.join(' ')));

    clickLink(*transcript, "toolallow:" + callId);
    // Further calls of this turn are denied from their cards.
    QVERIFY(denyFurtherCallsUntilTheTurnEnds(chats, id, *transcript));
    const QVector<MessageRecord>& m = chats.chat(id)->record.messages;
    const auto result = std::find_if(m.begin(), m.end(), [&](const MessageRecord& r) { return r.toolCallId == callId; });
    QVERIFY(result != m.end());
    const int at = static_cast<int>(result - m.begin());
    QVERIFY2(transcript->toPlainText().contains(QStringLiteral("Result of read_file")), qPrintable(transcript->toPlainText()));
    if (!result->content.startsWith(QStringLiteral("Error: "))) {
      QVERIFY(transcript->toPlainText().contains(QStringLiteral("Show the result")));
      QVERIFY(!transcript->toPlainText().contains(QStringLiteral("It opens the blue door.")));  // folded
      clickLink(*transcript, QStringLiteral("toolresult:%1").arg(at));
      QTRY_VERIFY(transcript->toolResultExpanded(at));
      QVERIFY2(transcript->toPlainText().contains(result->content.trimmed().split('\n').last()), qPrintable(transcript->toPlainText()));
    }
    QVERIFY(!transcript->toPlainText().contains(QStringLiteral("Run it?")));  // nothing waits any more
  }

  void aDeniedCallIsSaidToTheModel() {
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    greedy(w);
    pagedchat::test::loadAndWait(w, m_model);
    QTRY_COMPARE_WITH_TIMEOUT(services.tools().connection("files")->state(), McpConnection::State::Ready, 30000);
    const ChatId id = w.newChat();
    toolsMenuAction(w, "files (")->trigger();
    toolsMenuAction(w, "add")->trigger();
    auto* input = w.findChild<QPlainTextEdit*>(QStringLiteral("input"));
    input->setPlainText(QStringLiteral("What is 2 plus 3?"));
    QTest::keyClick(input, Qt::Key_Return, Qt::ControlModifier);
    const ChatController& chats = services.session().chats();
    auto* transcript = w.findChild<TranscriptView*>(QStringLiteral("transcript"));
    QTRY_VERIFY_WITH_TIMEOUT(chats.chat(id)->toolCall.has_value(), 120000);
    const QString callId = chats.chat(id)->toolCall->callId;
    QTRY_VERIFY(pagedchat::test::anchorsOf(transcript->document()).contains("tooldeny:" + callId));
    clickLink(*transcript, "tooldeny:" + callId);
    QVERIFY(denyFurtherCallsUntilTheTurnEnds(chats, id, *transcript));
    QVERIFY2(transcript->toPlainText().contains(QStringLiteral("The user denied this call: it did not run.")), qPrintable(transcript->toPlainText()));
  }

  void theToolServersDialogListsServersAndTools() {
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QTRY_COMPARE_WITH_TIMEOUT(services.tools().connection("files")->state(), McpConnection::State::Ready, 30000);
    w.showToolServers();
    auto* dialog = w.findChild<ToolServersDialog*>();
    QVERIFY(dialog);
    auto* tree = dialog->findChild<QTreeWidget*>(QStringLiteral("toolServers"));
    QCOMPARE(tree->topLevelItemCount(), 1);
    QTreeWidgetItem* files = tree->topLevelItem(0);
    QCOMPARE(files->text(0), QStringLiteral("files"));
    QVERIFY2(files->text(1).startsWith(QStringLiteral("ready · ")), qPrintable(files->text(1)));
    QStringList tools;
    for (int i = 0; i < files->childCount(); ++i) tools << files->child(i)->text(0);
    QVERIFY2(tools.contains("read_file") && tools.contains("add"), qPrintable(tools.join(' ')));
    // Always allow, ticked here, is the consent a call reads.
    for (int i = 0; i < files->childCount(); ++i)
      if (files->child(i)->text(0) == QLatin1String("add")) files->child(i)->setCheckState(2, Qt::Checked);
    QVERIFY(services.tools().alwaysAllowed("files", "add"));
    // mcp.json edited there: a second server, saved and started.
    auto* json = dialog->findChild<QPlainTextEdit*>(QStringLiteral("mcpJson"));
    QJsonObject config = QJsonDocument::fromJson(json->toPlainText().toUtf8()).object();
    QJsonObject servers = config["mcpServers"].toObject();
    servers["broken"] = QJsonObject{{"command", "sh"}, {"args", QJsonArray{"-c", "exit 3"}}};
    config["mcpServers"] = servers;
    json->setPlainText(QString::fromUtf8(QJsonDocument(config).toJson()));
    dialog->findChild<QPushButton*>(QStringLiteral("saveMcpJson"))->click();
    QTRY_COMPARE(tree->topLevelItemCount(), 2);
    QTRY_VERIFY_WITH_TIMEOUT(services.tools().connection("broken")->state() == McpConnection::State::Failed, 20000);
    QCOMPARE(services.tools().connection("files")->state(), McpConnection::State::Ready);  // unchanged: kept running
    QFileDevice::Permissions p = QFile::permissions(services.tools().configPath());
    QVERIFY(!(p & (QFileDevice::ReadGroup | QFileDevice::ReadOther)));
  }
};

QTEST_MAIN(TestToolCallCard)
#include "test_tool_call_card.moc"
