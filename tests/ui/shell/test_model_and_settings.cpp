// Opening models and changing settings in the app, on the real engine: a load shows its
// progress in the status bar, whose Cancel keeps the model in use; a broken file opens an error box that
// names the problem; loaded files are listed under Open recent, also after a restart; the
// settings dialog reads back what it was given; applying engine settings reloads the model
// with the new KV block size and pool budget, and sampling defaults persist.

#include <QtTest>

#include <QTextBrowser>

#include <QDir>

#include <QAction>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStandardItemModel>
#include <QStandardPaths>

#include <QTemporaryDir>

#include "support/gguf_rewrite.h"
#include "support/test_env.h"
#include "support/window_driver.h"
#include "appcore/chat/chat_database.h"
#include "appcore/session/pool_control.h"
#include "ui/chat/chat_panel.h"
#include "ui/shell/main_window.h"
#include "ui/dialogs/settings_dialog.h"

class TestModelAndSettings : public QObject {
  Q_OBJECT
  QString m_model;
  QString m_data;

  void loaded(MainWindow& w) { pagedchat::test::loadAndWait(w, m_model); }
  void sendAndWait(MainWindow& w, const QString& text) {
    pagedchat::test::sendAndWait(w, text);
    if (QTest::currentTestFailed()) return;
    const ChatRecord* chat = w.chat(w.currentChat());
    QVERIFY(chat && !chat->messages.isEmpty() && !chat->messages.last().content.isEmpty());
  }


 private slots:
  void initTestCase() {
    pagedchat::test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    m_model = QString::fromStdString(model);
    m_data = QString::fromStdString(data);
  }

  void aCancelledLoadKeepsTheModelInUse() {
    AppServices services;
    MainWindow w(services);
    w.show();
    loaded(w);
    QSignalSpy ready(&w, &MainWindow::modelReady);
    w.loadModel(m_model);
    // While it loads, the status bar shows its progress and nothing can be sent.
    auto* progress = w.findChild<QWidget*>(QStringLiteral("loadProgress"));
    QVERIFY(progress && progress->isVisible());
    QVERIFY(!w.findChild<QPlainTextEdit*>(QStringLiteral("input"))->isEnabled());
    // Its Cancel button: the engine thread stops at its next progress report.
    w.findChild<QPushButton*>(QStringLiteral("cancelLoad"))->click();
    auto* status = w.findChild<QLabel*>(QStringLiteral("status"));
    QTRY_COMPARE_WITH_TIMEOUT(status->text(), tr("Loading cancelled; the model in use stays."), 30000);
    QTRY_VERIFY_WITH_TIMEOUT(!progress->isVisible(), 5000);
    QCOMPARE(ready.size(), 0);
    QVERIFY(!w.findChild<QMessageBox*>(QStringLiteral("loadError")));  // a cancel is no error
    sendAndWait(w, QStringLiteral("Still there?"));
  }

  void aBrokenFileOpensAnErrorBoxAndTheModelStays() {
    AppServices services;
    MainWindow w(services);
    w.show();
    loaded(w);
    const QString broken = m_data + QStringLiteral("/gguf_broken/tensor_past_end.bin");
    w.loadModel(broken);
    QMessageBox* box = nullptr;
    QTRY_VERIFY_WITH_TIMEOUT((box = w.findChild<QMessageBox*>(QStringLiteral("loadError"))) != nullptr, 30000);
    QVERIFY2(box->text().contains(QStringLiteral("tensor_past_end.bin")), qPrintable(box->text()));
    // A plain sentence says what is wrong; the engine's reason (the tensor, where the file ends)
    // is behind Show Details.
    QVERIFY2(box->informativeText().contains(QStringLiteral("incomplete or damaged")), qPrintable(box->informativeText()));
    QVERIFY2(box->detailedText().contains(QStringLiteral("tensor")), qPrintable(box->detailedText()));
    box->accept();
    QVERIFY(QTest::qWaitForWindowActive(&w));  // the window is the user's again
    sendAndWait(w, QStringLiteral("Hello?"));
    QVERIFY(!w.findChild<QMenu*>(QStringLiteral("recentModels"))->actions().isEmpty());
    for (QAction* a : w.findChild<QMenu*>(QStringLiteral("recentModels"))->actions())
      QVERIFY(a->toolTip() != QFileInfo(broken).absoluteFilePath());  // only files that loaded
  }

  void loadedModelsAreListedUnderOpenRecent() {
    {
      AppServices services;
      MainWindow w(services);
      loaded(w);
      QCOMPARE(w.windowTitle(), tr("PagedChat — %1").arg(QFileInfo(m_model).completeBaseName()));
      loaded(w);  // twice: listed once
    }
    AppServices servicesAgain;
    MainWindow again(servicesAgain);
    const QList<QAction*> recent = again.findChild<QMenu*>(QStringLiteral("recentModels"))->actions();
    QCOMPARE(recent.size(), 1);
    QCOMPARE(recent[0]->text(), QFileInfo(m_model).fileName());
    QCOMPARE(recent[0]->toolTip(), QFileInfo(m_model).absoluteFilePath());
    QSignalSpy ready(&again, &MainWindow::modelReady);
    recent[0]->trigger();  // opens it
    QVERIFY(ready.wait(60000));
  }

  void theDialogReadsBackWhatItWasGiven() {
    AppSettings s;
    s.sampling.temperature = 0.3;
    s.sampling.topK = 7;
    s.sampling.seed = 42;
    s.blockSize = 4;
    s.kvMemoryMiB = 64;
    s.maxBatchedTokens = 96;
    s.threads = 1;
    s.maxContext = 1024;
    SettingsDialog dialog(s, false);
    const AppSettings back = dialog.settings();
    QCOMPARE(back.sampling.temperature, 0.3);
    QCOMPARE(back.sampling.topK, 7);
    QCOMPARE(back.sampling.seed, quint64{42});
    QVERIFY(back.sameEngine(s));
    auto* note = dialog.findChild<QLabel*>(QStringLiteral("settingsNote"));
    QVERIFY(note->text().isEmpty());
    auto* blockSize = dialog.findChild<QComboBox*>(QStringLiteral("blockSize"));
    blockSize->setCurrentIndex(blockSize->findData(16));
    QCOMPARE(dialog.settings().blockSize, 16);
    QVERIFY(note->text().contains(tr("reloads the model")));
    // Without CUDA the choice is listed but cannot be picked.
    auto* backend = dialog.findChild<QComboBox*>(QStringLiteral("backend"));
    QCOMPARE(backend->itemData(1).toString(), QStringLiteral("cuda"));
    QVERIFY(!qobject_cast<QStandardItemModel*>(backend->model())->item(1)->isEnabled());
    // The KV type: f16 unless chosen, and a change reloads.
    auto* kvType = dialog.findChild<QComboBox*>(QStringLiteral("kvType"));
    QCOMPARE(kvType->currentData().toString(), QStringLiteral("f16"));
    blockSize->setCurrentIndex(blockSize->findData(4));
    QVERIFY(note->text().isEmpty());
    kvType->setCurrentIndex(kvType->findData(QStringLiteral("q8_0")));
    QCOMPARE(dialog.settings().kvType, QStringLiteral("q8_0"));
    QVERIFY(!dialog.settings().sameEngine(s));
  }

  // Speculative decoding is an engine setting: chosen in the dialog (the draft model's file only
  // with "Draft model"), it reloads the model; a copy-heavy reply is the same text as without
  // it, and its footer says how many drafts were kept and how many tokens a step gave.
  void speculationKeepsTheReplyAndShowsItsDrafts() {
    AppSettings initial;
    SettingsDialog dialog(initial, false);
    auto* speculation = dialog.findChild<QComboBox*>(QStringLiteral("speculation"));
    auto* draftModel = dialog.findChild<QLineEdit*>(QStringLiteral("draftModel"));
    QVERIFY(speculation && draftModel);
    QCOMPARE(speculation->currentData().toString(), QStringLiteral("off"));
    QVERIFY(!draftModel->isEnabled());
    speculation->setCurrentIndex(speculation->findData(QStringLiteral("draft")));
    QVERIFY(draftModel->isEnabled());
    speculation->setCurrentIndex(speculation->findData(QStringLiteral("ngram")));
    QVERIFY(!draftModel->isEnabled());
    QVERIFY(!dialog.settings().sameEngine(initial));

    AppServices services;
    MainWindow w(services);
    w.show();
    loaded(w);
    AppSettings s = w.settings();
    s.sampling.temperature = 0.0;
    s.sampling.maxTokens = 48;
    s.speculation = QStringLiteral("off");
    QSignalSpy ready(&w, &MainWindow::modelReady);
    w.applySettings(s);
    QCOMPARE(ready.count(), 0);  // sampling settings only: no reload
    const QString ask = QStringLiteral("Repeat this exactly: the cat sat on the mat, and the dog sat on the log by the door.");
    w.newChat();
    sendAndWait(w, ask);
    const MessageRecord plain = w.chat(w.currentChat())->messages.last();
    QCOMPARE(plain.metrics.numDrafted, qint64(0));
    QVERIFY(!plain.metrics.summary().contains(QStringLiteral("drafts")));

    ready.clear();
    s.speculation = QStringLiteral("ngram");
    w.applySettings(s);
    QVERIFY(ready.wait(60000));
    w.newChat();
    sendAndWait(w, ask);
    const MessageRecord spec = w.chat(w.currentChat())->messages.last();
    QCOMPARE(spec.content, plain.content);
    QVERIFY(spec.metrics.numDrafted > 0);
    QVERIFY(spec.metrics.numAccepted > 0);
    QVERIFY2(spec.metrics.summary().contains(QStringLiteral("% kept, ")) && spec.metrics.summary().contains(QStringLiteral("tokens a step")),
             qPrintable(spec.metrics.summary()));
    {
      // What the next start reads (a second AppServices would be refused: this one holds the folder).
      ChatDatabase saved(ChatDatabase::defaultPath());
      QCOMPARE(AppSettings::load(saved).speculation, QStringLiteral("ngram"));
    }
    // Back to the default for the suites after this one.
    s.speculation = QStringLiteral("off");
    ready.clear();
    w.applySettings(s);
    QVERIFY(ready.wait(60000));
  }

  // A model whose own template refuses the chat (Gemma 2's has no system role) fails the turn
  // with the template's words and the way out; choosing Settings > Chat format > Built-in
  // reloads the model and the same chat gets its reply. The choice persists.
  void aRefusingTemplateOffersTheBuiltinFormat() {
    QTemporaryDir dir;
    QFile gemma2(m_data + "/chat_templates/templates/gemma-2-2b-it.jinja");
    QVERIFY(gemma2.open(QIODevice::ReadOnly));
    const QString model = dir.filePath("smollm2-with-gemma2-template.gguf");
    QVERIFY(pagedchat::test::write_with_chat_template(m_model.toStdString(), model, gemma2.readAll().toStdString()));

    AppServices services;
    MainWindow w(services);
    w.show();
    pagedchat::test::loadAndWait(w, model);
    auto* shared = w.findChild<QPlainTextEdit*>(QStringLiteral("sharedSystemPrompt"));
    auto* status = w.findChild<QLabel*>(QStringLiteral("status"));
    QVERIFY(shared && status);
    shared->setPlainText(QStringLiteral("Be brief."));
    w.newChat();
    pagedchat::test::sendAndWait(w, QStringLiteral("Hi"));
    // Said in the chat, in the engine's own sentence (written for the user: the reason and the way out).
    const QString said = w.findChild<QTextBrowser*>(QStringLiteral("transcript"))->toPlainText();
    QVERIFY2(said.contains(QStringLiteral("refuses this conversation: System role not supported")), qPrintable(said));
    QVERIFY2(said.contains(QStringLiteral("Settings > Chat format > Built-in uses the built-in Gemma format instead")), qPrintable(said));
    QCOMPARE(w.chat(w.currentChat())->messages.last().role, QStringLiteral("user"));  // no empty reply left behind

    SettingsDialog dialog(w.settings(), false);
    auto* format = dialog.findChild<QComboBox*>(QStringLiteral("chatTemplate"));
    QVERIFY(format);
    QCOMPARE(format->currentData().toString(), QStringLiteral("model"));
    format->setCurrentIndex(format->findData(QStringLiteral("builtin")));
    AppSettings s = dialog.settings();
    QVERIFY(!s.sameEngine(w.settings()));
    s.sampling.maxTokens = 8;
    QSignalSpy ready(&w, &MainWindow::modelReady);
    w.applySettings(s);
    QVERIFY(ready.wait(60000));
    QSignalSpy done(&w, &MainWindow::turnDone);
    w.chatPanel()->regenerate();
    QVERIFY(done.wait(120000));
    QVERIFY2(!status->text().startsWith(QStringLiteral("Error")), qPrintable(status->text()));
    QCOMPARE(w.chat(w.currentChat())->messages.last().role, QStringLiteral("assistant"));
    {
      ChatDatabase saved(ChatDatabase::defaultPath());
      QCOMPARE(AppSettings::load(saved).chatTemplate, QStringLiteral("builtin"));
    }
    s.chatTemplate = QStringLiteral("model");
    shared->setPlainText(QString());
    ready.clear();
    w.applySettings(s);
    QVERIFY(ready.wait(60000));
  }

  // The app's default context policy: chosen in the dialog, saved, read back.
  void theDefaultContextPolicyIsASetting() {
    AppSettings s;
    QCOMPARE(s.contextPolicy, ContextPolicy::dropOldest);
    SettingsDialog dialog(s, false);
    auto* policy = dialog.findChild<QComboBox*>(QStringLiteral("defaultContextPolicy"));
    QCOMPARE(dialog.settings().contextPolicy, ContextPolicy::dropOldest);
    policy->setCurrentIndex(policy->findData(static_cast<int>(ContextPolicy::stopAndAsk)));
    const AppSettings chosen = dialog.settings();
    QCOMPARE(chosen.contextPolicy, ContextPolicy::stopAndAsk);
    QVERIFY(chosen.sameEngine(s));  // no reload for it
    ChatDatabase db(QDir::temp().filePath(QStringLiteral("pagedchat-policy-test.sqlite")));
    chosen.save(db);
    QCOMPARE(AppSettings::load(db).contextPolicy, ContextPolicy::stopAndAsk);
    s.save(db);
    QCOMPARE(AppSettings::load(db).contextPolicy, ContextPolicy::dropOldest);
  }

  void engineSettingsReloadTheModelAndEverythingPersists() {
    AppServices services;
    MainWindow w(services);
    w.show();
    loaded(w);
    PoolFrame last;
    connect(&w.session().pool(), &PoolControl::localFrame, this, [&](const PoolFrame& f) { last = f; });
    AppSettings s = w.settings();
    s.blockSize = 4;
    s.kvMemoryMiB = 16;
    s.maxBatchedTokens = 64;
    s.sampling.temperature = 0.0;
    s.sampling.maxTokens = 12;
    QSignalSpy ready(&w, &MainWindow::modelReady);
    w.applySettings(s);
    QVERIFY(ready.wait(60000));
    // SmolLM2-135M: 30 layers, 3 KV heads of 64; f16 K and V of 4 tokens = 92,160 bytes.
    QTRY_COMPARE_WITH_TIMEOUT(last.stats.kv.block_size, 4, 5000);
    QCOMPARE(last.stats.kv.num_blocks, (16 << 20) / 92160);
    sendAndWait(w, QStringLiteral("Name a color."));
    QVERIFY(w.chat(w.currentChat())->messages.last().metrics.numTokens <= 12);
    // Sampling-only changes do not reload.
    s.sampling.temperature = 0.5;
    w.applySettings(s);
    QTest::qWait(300);
    QCOMPARE(ready.size(), 1);
    ready.clear();

    // The teaching preset: 128 blocks of 4 tokens, 32 tokens a step; off again, the settings
    // above come back.
    auto* teaching = w.findChild<QAction*>(QStringLiteral("teachingPreset"));
    teaching->setChecked(true);
    QVERIFY(ready.wait(60000));
    QTRY_COMPARE_WITH_TIMEOUT(last.stats.kv.num_blocks, 128, 5000);
    QCOMPARE(last.stats.kv.block_size, 4);
    teaching->setChecked(false);
    QVERIFY(ready.wait(60000));
    QTRY_COMPARE_WITH_TIMEOUT(last.stats.kv.num_blocks, (16 << 20) / 92160, 5000);
    // q8_0 KV: 68 bytes a row (2 blocks of 32 with a scale), so 48,960 bytes a block: more blocks
    // in the same memory, and the pool view's bytes follow.
    ready.clear();
    s.kvType = QStringLiteral("q8_0");
    w.applySettings(s);
    QVERIFY(ready.wait(60000));
    QTRY_COMPARE_WITH_TIMEOUT(last.stats.kv.num_blocks, (16 << 20) / 48960, 5000);
    sendAndWait(w, QStringLiteral("Name a fruit."));
    QVERIFY(!w.chat(w.currentChat())->messages.last().content.isEmpty());

    // What the next start reads (a second AppServices would be refused: this one holds the folder).
    ChatDatabase saved(ChatDatabase::defaultPath());
    const AppSettings again = AppSettings::load(saved);
    QCOMPARE(again.blockSize, 4);
    QCOMPARE(again.kvMemoryMiB, 16);
    QCOMPARE(again.kvType, QStringLiteral("q8_0"));
    QCOMPARE(again.maxBatchedTokens, 64);
    QCOMPARE(again.sampling.temperature, 0.5);
    QCOMPARE(again.sampling.maxTokens, 12);
  }
};

QTEST_MAIN(TestModelAndSettings)
#include "test_model_and_settings.moc"
