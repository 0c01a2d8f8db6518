// Errors said where they matter, in words a user reads: a reply that fails ends the chat with
// one plain sentence (what happened, what to do) and a "details" link to the engine's own
// words; the next turn clears it; the status line is the chat's and is not overwritten by the
// engine's step summary. Also the sentences for the engine's and the loader's error texts.

#include <QtTest>

#include <QLabel>
#include <QTextBlock>
#include <QTextBrowser>

#include "support/test_env.h"
#include "support/transcript_driver.h"
#include "support/window_driver.h"
#include "appcore/chat/plain_error.h"
#include "ui/chat/transcript_view.h"
#include "ui/shell/main_window.h"
#include "ui/theme/app_theme.h"

namespace {
using pagedchat::test::clickLink;
}  // namespace

class TestChatErrors : public QObject {
  Q_OBJECT
  QString m_model;

 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
  }

  void engineErrorsGetASentence_data() {
    QTest::addColumn<QString>("detail");
    QTest::addColumn<QString>("says");
    QTest::newRow("context") << "the prompt has 4100 tokens; the context holds 2048" << "needs 4100 tokens and the model reads at most 2048";
    QTest::newRow("pool") << "the prompt needs 40 KV blocks of 16 tokens; the pool has 32" << "not enough KV memory for this chat (it needs 40 blocks)";
    QTest::newRow("reclaimed") << "sequence 12 is not parked (finished, released or reclaimed)" << "freed for other chats";
    QTest::newRow("idle") << "the engine went idle before request 12 ended" << "stopped before it ended";
    QTest::newRow("ours") << "No model is loaded." << "No model is loaded.";
    // A message longer than the context: the reason and the way out, not "send again".
    QTest::newRow("no room") << "The last message alone takes 861 of the context's 256 tokens: there is no room for a reply. "
                                "Shorten it, or raise the context in Settings."
                             << "takes 861 of the context's 256 tokens: there is no room for a reply. Shorten it";
    QTest::newRow("other") << "request 7: something odd" << "The reply failed.";
  }
  void engineErrorsGetASentence() {
    QFETCH(QString, detail);
    QFETCH(QString, says);
    const PlainError e = explainReplyError(detail);
    QVERIFY2(e.sentence.contains(says), qPrintable(e.sentence));
    QVERIFY2(!e.sentence.contains(QStringLiteral("request 7")), qPrintable(e.sentence));  // no engine jargon
    QCOMPARE(e.detail, detail);
  }

  void loadErrorsGetASentence_data() {
    QTest::addColumn<QString>("detail");
    QTest::addColumn<QString>("says");
    QTest::newRow("merges") << "metadata 'tokenizer.ggml.merges': array count 48900 exceeds the file" << "incomplete or damaged";
    QTest::newRow("truncated") << "truncated file: header needs 24 bytes at offset 0 but only 3 remain" << "incomplete or damaged";
    QTest::newRow("magic") << "not a GGUF file (bad magic)" << "not a GGUF model file";
    QTest::newRow("architecture") << "architecture 'mamba' is not supported (llama, mistral, qwen2, qwen3, qwen3moe, gemma3, phi3, smollm3, granite and gpt-oss are)"
                                  << "does not run this kind of model";
    QTest::newRow("type") << "tensor 'blk.0.attn_q.weight' has type IQ2_XXS, which is not supported" << "does not read yet";
    QTest::newRow("missing") << "cannot open '/x.gguf': No such file or directory" << "could not be opened";
  }
  void loadErrorsGetASentence() {
    QFETCH(QString, detail);
    QFETCH(QString, says);
    QVERIFY2(explainLoadError(detail).sentence.contains(says), qPrintable(explainLoadError(detail).sentence));
  }

  // A real failure: a KV pool of 1 MiB cannot hold a long message.
  void aFailedReplyIsSaidInTheChatWithItsDetailsOneClickAway() {
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    AppSettings s = w.settings();
    s.kvMemoryMiB = 1;
    w.applySettings(s);
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId quiet = w.newChat();  // another chat, whose status line must stay its own
    const ChatId id = w.newChat();
    QString longMessage;
    for (int i = 0; i < 40; ++i) longMessage += QStringLiteral("Please remember the number %1 for later. ").arg(i);
    pagedchat::test::sendAndWait(w, longMessage);
    auto* transcript = w.findChild<TranscriptView*>(QStringLiteral("transcript"));
    const QString shown = transcript->toPlainText();
    QVERIFY2(shown.contains(QStringLiteral("There is not enough KV memory for this chat")), qPrintable(shown));
    QVERIFY2(!shown.contains(QStringLiteral("KV blocks of")), qPrintable(shown));  // the detail is folded
    // No empty reply was left; the question stays.
    QCOMPARE(w.chat(id)->messages.size(), 1);
    // The sentence is in the theme's error colour.
    for (QTextBlock b = transcript->document()->begin(); b.isValid(); b = b.next())
      if (b.text().startsWith(QStringLiteral("There is not enough")))
        QCOMPARE(b.begin().fragment().charFormat().foreground().color(), textColors().error);
    clickLink(*transcript, QStringLiteral("errordetail:"));
    QTRY_VERIFY2(transcript->toPlainText().contains(QStringLiteral("KV blocks of")), qPrintable(transcript->toPlainText()));
    // The status line is not the engine's: another chat shows its own (none).
    auto* status = w.findChild<QLabel*>(QStringLiteral("status"));
    w.selectChat(quiet);
    QVERIFY2(!status->text().contains(QStringLiteral("step")), qPrintable(status->text()));
    QVERIFY(!transcript->toPlainText().contains(QStringLiteral("not enough KV memory")));
    w.selectChat(id);
    QVERIFY(transcript->toPlainText().contains(QStringLiteral("not enough KV memory")));

    // As a user fixes it: edit the question into a short one; it goes through, and the notice
    // goes with the new turn.
    clickLink(*transcript, QStringLiteral("edit:0"));
    pagedchat::test::sendAndWait(w, QStringLiteral("Hi"));
    QCOMPARE(w.chat(id)->messages.size(), 2);
    QCOMPARE(w.chat(id)->messages.first().content, QStringLiteral("Hi"));
    QVERIFY2(!transcript->toPlainText().contains(QStringLiteral("not enough KV memory")), qPrintable(transcript->toPlainText()));
  }

  // A message longer than the whole context (item 6 of the new user's walk): refused with the
  // reason and the way out, said under it and in view, and the meter says the turn failed
  // rather than what a next turn would do.
  void aMessageLongerThanTheContextIsSaidWhereItIsSeen() {
    AppServices services;
    MainWindow w(services);
    w.resize(1024, 700);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    pagedchat::test::loadAndWait(w, m_model);
    const ChatId id = w.newChat();
    pagedchat::test::sendAndWait(w, QStringLiteral("Please summarise these notes: ") + QStringLiteral("river stone, ").repeated(1200));
    QCOMPARE(w.chat(id)->messages.size(), 1);
    auto* transcript = w.findChild<TranscriptView*>(QStringLiteral("transcript"));
    const QTextCursor note = transcript->document()->find(QStringLiteral("Shorten it, or raise the context in Settings."));
    QVERIFY2(!note.isNull(), qPrintable(transcript->toPlainText().right(400)));
    QVERIFY2(transcript->toPlainText().contains(QStringLiteral("The last message alone takes ")), qPrintable(transcript->toPlainText().right(400)));
    QTRY_VERIFY2(transcript->viewport()->rect().contains(transcript->cursorRect(note).center()), "the note is out of view");
    auto* meter = w.findChild<QLabel*>(QStringLiteral("contextUsed"));
    QTRY_VERIFY2(meter->text().endsWith(QStringLiteral("more than the model reads; its last turn failed (the chat says why)")),
                 qPrintable(meter->text()));
  }
};

QTEST_MAIN(TestChatErrors)
#include "test_chat_errors.moc"
