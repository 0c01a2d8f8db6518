// The model information panel, as a user opens it (Ctrl+I): the file's facts read from its
// header (architecture, parameters, quantization, trained context) and the engine's (context
// per chat, KV bytes a token, which equal 2 x layers x KV heads x head size x 2 bytes in f16,
// the pool), the template in use; Copy puts them on the clipboard; with no model it says so.

#include <QtTest>

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QLabel>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>

#include "support/test_env.h"
#include "support/window_driver.h"
#include "ui/shell/main_window.h"
#include "ui/dialogs/model_info_dialog.h"

namespace {
QString row(const ModelInfoDialog& d, const char* key) {
  auto* label = d.findChild<QLabel*>(QStringLiteral("modelInfo_") + QLatin1String(key));
  return label ? label->text() : QStringLiteral("(no row %1)").arg(QLatin1String(key));
}
ModelInfoDialog* openWithKeys(MainWindow& w) {
  QTest::keyClick(&w, Qt::Key_I, Qt::ControlModifier);
  ModelInfoDialog* d = nullptr;
  (void)QTest::qWaitFor([&] { return (d = w.findChild<ModelInfoDialog*>()) && d->isVisible(); }, 5000);
  return d;
}
}  // namespace

class TestModelInfo : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { pagedchat::test::useFreshDataFolder(); }

  void noModelSaysSo() {
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QTest::keyClick(&w, Qt::Key_I, Qt::ControlModifier);
    QMessageBox* box = nullptr;
    QTRY_VERIFY((box = w.findChild<QMessageBox*>(QStringLiteral("modelInfoError"))) != nullptr);
    QVERIFY(box->text().contains(QStringLiteral("No model is loaded")));
    box->accept();
  }

  void theDefaultModelsFacts() {
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    AppServices services;
    MainWindow w(services);
    w.show();
    QVERIFY(QTest::qWaitForWindowActive(&w));
    pagedchat::test::loadAndWait(w, QString::fromStdString(model));
    QTRY_VERIFY(!w.modelInfo().isEmpty());
    const ModelInfo& info = w.modelInfo();
    QCOMPARE(info.architecture, QStringLiteral("llama"));
    QCOMPARE(info.quantization, QStringLiteral("Q4_1"));
    QCOMPARE(info.parameters, QStringLiteral("135M"));
    QCOMPARE(info.layers, 30);
    QCOMPARE(info.chatContext, w.settings().maxContext);
    QVERIFY(info.trainedContext >= info.chatContext);
    // f16 keys and values of every layer: the pool's bytes a token, computed from the shape.
    QCOMPARE(info.kvBytesPerToken, qint64{2} * info.layers * info.kvHeads * info.headDim * 2);
    QVERIFY(info.chatTemplate.contains(QStringLiteral("template")) || info.chatTemplate.contains(QStringLiteral("format")));
    QVERIFY(!info.baseModel);  // SmolLM2-Instruct carries its template
    QVERIFY(!w.findChild<QLabel*>(QStringLiteral("status"))->text().contains(QStringLiteral("base model")));

    ModelInfoDialog* d = openWithKeys(w);
    QVERIFY(d);
    QCOMPARE(row(*d, "architecture"), QStringLiteral("llama"));
    QCOMPARE(row(*d, "quantization"), QStringLiteral("Q4_1"));
    QVERIFY2(row(*d, "file").endsWith(QFileInfo(QString::fromStdString(model)).fileName()), qPrintable(row(*d, "file")));
    QVERIFY2(row(*d, "context").contains(QStringLiteral("%1 tokens per chat here").arg(QLocale().toString(info.chatContext))),
             qPrintable(row(*d, "context")));
    QVERIFY2(row(*d, "kvcache").startsWith(QStringLiteral("22.5 KiB a token (f16)")), qPrintable(row(*d, "kvcache")));
    QVERIFY2(row(*d, "attentionheads").contains(QStringLiteral("grouped-query")), qPrintable(row(*d, "attentionheads")));
    QVERIFY(!d->findChild<QLabel*>(QStringLiteral("modelInfo_slidingwindow")));  // Llama has none
    QApplication::clipboard()->clear();
    d->findChild<QPushButton*>(QStringLiteral("copyModelInfo"))->click();
    QVERIFY(QApplication::clipboard()->text().contains(QStringLiteral("Quantization: Q4_1")));
    QCOMPARE(QApplication::clipboard()->text(), ModelInfoDialog::asText(info));
    d->reject();
  }

  // A mixture of experts says how many experts a layer has and a token uses, and what of its
  // parameters a token uses (the engine bridge fills these from the config and the header).
  void aMixtureOfExpertsSaysItsExperts() {
    ModelInfo info;
    info.path = QStringLiteral("/m/qwen3-30b-a3b.gguf");
    info.parameters = QStringLiteral("30.5B");
    info.activeParameters = QStringLiteral("3.3B");
    info.experts = 128;
    info.expertsUsed = 8;
    info.expertFfn = 768;
    QVERIFY(info.rows().contains(std::pair{QStringLiteral("Parameters"), QStringLiteral("30.5B, of which a token uses 3.3B")}));
    QVERIFY(info.rows().contains(std::pair{QStringLiteral("Experts"),
                                           QStringLiteral("128 a layer, 8 used by each token (feed-forward size 768)")}));
    info.experts = 0;  // dense: neither
    QVERIFY(info.rows().contains(std::pair{QStringLiteral("Parameters"), QStringLiteral("30.5B")}));
    for (const auto& row : info.rows()) QVERIFY(row.first != QStringLiteral("Experts"));
  }

  void aSlidingWindowModelSaysWhichLayers() {
    PC_REQUIRE_ENV(gemma, "PAGEDCHAT_TEST_GEMMA");
    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, QString::fromStdString(gemma));
    QTRY_VERIFY(!w.modelInfo().isEmpty());
    const ModelInfo& info = w.modelInfo();
    QCOMPARE(info.architecture, QStringLiteral("gemma3"));
    QVERIFY(info.slidingWindow > 0);
    QVERIFY(info.localLayers > 0 && info.localLayers < info.layers);
    QVERIFY(info.rows().contains(std::pair{QStringLiteral("Sliding window"),
                                           QStringLiteral("%1 tokens on %2 of %3 layers").arg(info.slidingWindow).arg(info.localLayers).arg(info.layers)}));
    // Gemma 3 270M as published is a base model (no template in its file): said in the status
    // line, where the user types, and in the panel; and its chats are plain text, which it
    // continues, not a chat format it would run on in (issue 45, item 7).
    QVERIFY(info.baseModel);
    QVERIFY(info.plainText);
    const QString status = w.findChild<QLabel*>(QStringLiteral("status"))->text();
    QVERIFY2(status.endsWith(QStringLiteral("a base model: its file has no chat template · plain text: replies continue your text")),
             qPrintable(status));
    const QString placeholder = w.findChild<QPlainTextEdit*>(QStringLiteral("input"))->placeholderText();
    QVERIFY2(placeholder.startsWith(QStringLiteral("Write the start of a text")) &&
                 placeholder.contains(QStringLiteral("base model, trained to continue text rather than to chat")),
             qPrintable(placeholder));
    QVERIFY(info.rows().contains(std::pair{QStringLiteral("Chat template"),
                                           QStringLiteral("none in the file: ") + ModelInfo::baseModelSentence() +
                                               QStringLiteral(" Chats here: plain text (no chat format: the model continues the text).")}));
    // A reply continues the question's text: what the engine reads is the messages, nothing around them.
    AppSettings s = w.settings();
    s.sampling.temperature = 0.0;
    s.sampling.maxTokens = 8;
    w.applySettings(s);
    const ChatId id = w.newChat();
    pagedchat::test::sendAndWait(w, QStringLiteral("The capital of France is"));
    const ChatRecord* chat = w.chat(id);
    QCOMPARE(chat->messages.size(), 2);
    QVERIFY(!chat->messages[1].content.trimmed().isEmpty());
    QVERIFY2(!chat->messages[1].content.contains(QStringLiteral("<start_of_turn>")), qPrintable(chat->messages[1].content));

    // Chosen back to the built-in format, the same file chats in Gemma's turns.
    s.chatTemplate = QStringLiteral("builtin");
    QSignalSpy reloaded(&w, &MainWindow::modelReady);
    w.applySettings(s);  // the engine's settings changed: the model reloads
    QVERIFY(reloaded.wait(60000));
    QVERIFY(!w.modelInfo().plainText);
    QVERIFY2(w.modelInfo().chatTemplate.contains(QStringLiteral("Gemma")), qPrintable(w.modelInfo().chatTemplate));
    QVERIFY2(w.findChild<QPlainTextEdit*>(QStringLiteral("input"))->placeholderText().contains(QStringLiteral("Plain text lets it continue")),
             qPrintable(w.findChild<QPlainTextEdit*>(QStringLiteral("input"))->placeholderText()));
    s.chatTemplate = QStringLiteral("model");
    w.applySettings(s);
    QVERIFY(reloaded.wait(60000));
  }
};

QTEST_MAIN(TestModelInfo)
#include "test_model_info.moc"
