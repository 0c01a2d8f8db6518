// `pagedchat-cli models` as a user runs it: info on the real model, list over a home laid out
// as other tools lay theirs, pull from a fake hub (resumed after a dropped connection) and the
// hub's refusals, and the missing-model error naming the command that fetches it.
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/support/fake_hub.h"
#include "tests/support/model_fixtures.h"
#include "tests/support/test_env.h"

using namespace pagedchat;

namespace {

struct Result {
  int exit_code = -1;
  bool crashed = false;
  QString out, err;
};

// The hub answers from its own thread, so waiting on the process here blocks nothing.
Result run_cli(const QStringList& args, const QString& home, const QStringList& env = {}) {
  QProcess p;
  QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
  e.insert("HOME", home);
  for (const char* v : {"XDG_CACHE_HOME", "XDG_DATA_HOME", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE", "OLLAMA_MODELS",
                        "PAGEDCHAT_MODEL", "HF_TOKEN"})
    e.remove(v);
  for (const QString& kv : env) e.insert(kv.section('=', 0, 0), kv.section('=', 1));
  p.setProcessEnvironment(e);
  p.start(QString::fromStdString(pagedchat::test::env_path("PAGEDCHAT_CLI")), args);
  if (!p.waitForFinished(120000)) {
    p.kill();
    p.waitForFinished();
  }
  return {p.exitCode(), p.exitStatus() == QProcess::CrashExit, QString::fromUtf8(p.readAllStandardOutput()),
          QString::fromUtf8(p.readAllStandardError())};
}

}  // namespace

class CliModelsTest : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { PC_REQUIRE_ENV(cli, "PAGEDCHAT_CLI"); }

  void infoOfTheDefaultModel() {
    PC_REQUIRE_ENV(model, "PAGEDCHAT_TEST_MODEL");
    QTemporaryDir home;
    Result r = run_cli({"models", "info", QString::fromStdString(model), "--json"}, home.path());
    QCOMPARE(r.exit_code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out.toUtf8()).object();
    QCOMPARE(o["architecture"].toString(), QString("llama"));
    QCOMPARE(o["quantization"].toString(), QString("Q4_1"));
    QCOMPARE(o["parameters"].toInteger(), 134515008);
    QCOMPARE(o["context_length"].toInteger(), 8192);
    QCOMPARE(o["supported"].toBool(), true);
    QCOMPARE(o["chat_template"].toBool(), true);
    r = run_cli({"models", "info", QString::fromStdString(model)}, home.path());
    QVERIFY2(r.out.contains("parameters     135M (134515008)") && r.out.contains("runs here      yes"), qPrintable(r.out));
  }

  void infoOfWhatDoesNotRun() {
    PC_REQUIRE_ENV(gemma, "PAGEDCHAT_TEST_GEMMA");
    QTemporaryDir home;
    Result r = run_cli({"models", "info", QString::fromStdString(gemma)}, home.path());
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.contains("runs here      yes"), qPrintable(r.out));  // Gemma 3 runs now
    test::FixtureModel falcon;
    falcon.architecture = "falcon";
    test::write_fixture(home.filePath("falcon.gguf"), test::fixture_gguf(falcon));
    r = run_cli({"models", "info", home.filePath("falcon.gguf")}, home.path());
    QCOMPARE(r.exit_code, 0);
    QVERIFY2(r.out.contains("runs here      no: architecture 'falcon' is not supported"), qPrintable(r.out));
    r = run_cli({"models", "info", home.filePath("none.gguf")}, home.path());
    QCOMPARE(r.exit_code, 1);
    QVERIFY(!r.crashed);
    QVERIFY2(r.err.contains("no such file"), qPrintable(r.err));
  }

  void listOverOtherToolsFolders() {
    QTemporaryDir home;
    test::FixtureModel phi;
    phi.architecture = "phi3";
    phi.long_rope = true;
    test::write_fixture(home.filePath(".cache/huggingface/hub/models--a--Phi-GGUF/snapshots/r1/phi.gguf"), test::fixture_gguf(phi));
    test::write_fixture(home.filePath(".lmstudio/models/p/r/llama.gguf"), test::fixture_gguf({}));
    test::write_fixture(home.filePath("mine/x.gguf"), test::fixture_gguf({}));
    Result r = run_cli({"models", "list", "--json", "--folder", home.filePath("mine")}, home.path());
    QCOMPARE(r.exit_code, 0);
    QMap<QString, QJsonObject> byLabel;
    for (const QString& line : r.out.split('\n', Qt::SkipEmptyParts)) {
      const QJsonObject o = QJsonDocument::fromJson(line.toUtf8()).object();
      byLabel[o["label"].toString()] = o;
    }
    QCOMPARE(byLabel.keys(), (QStringList{"a/Phi-GGUF/phi.gguf", "llama.gguf", "x.gguf"}));
    QCOMPARE(byLabel["a/Phi-GGUF/phi.gguf"]["source"].toString(), QString("Hugging Face"));
    QCOMPARE(byLabel["a/Phi-GGUF/phi.gguf"]["supported"].toBool(), false);
    QCOMPARE(byLabel["a/Phi-GGUF/phi.gguf"]["problem"].toString(),
             QString("long-context RoPE needs both rope_factors_long and rope_factors_short"));
    QCOMPARE(byLabel["llama.gguf"]["source"].toString(), QString("LM Studio"));
    QCOMPARE(byLabel["x.gguf"]["source"].toString(), QString("Folder"));
    QCOMPARE(byLabel["x.gguf"]["supported"].toBool(), true);
    // The table form says the same.
    r = run_cli({"models", "list"}, home.path());
    QVERIFY2(r.out.contains("no: long-context RoPE"), qPrintable(r.out));
    QTemporaryDir empty;
    r = run_cli({"models", "list"}, empty.path());
    QVERIFY2(r.out.contains("pagedchat-cli models pull default"), qPrintable(r.out));
  }

  void pullFromTheHub() {
    test::FakeHub hub;
    const QByteArray model = test::fixture_gguf({}) + QByteArray(3 << 20, 'm');
    hub.addRepoFile("owner/Tiny-GGUF", "tiny.Q4_1.gguf", model);
    hub.dropBodiesAfter(1 << 20, 1);
    QTemporaryDir home;
    Result r = run_cli({"models", "pull", "owner/Tiny-GGUF", "tiny.Q4_1.gguf"}, home.path(), {"HF_ENDPOINT=" + hub.endpoint()});
    QCOMPARE(r.exit_code, 0);
    const QString expected = home.filePath(".cache/pagedchat/models/hf/owner/Tiny-GGUF/tiny.Q4_1.gguf");
    QCOMPARE(r.out.trimmed(), expected);
    QFile f(expected);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), model);
    QVERIFY2(r.err.contains("100%"), qPrintable(r.err));
    QVERIFY(hub.ranges().contains("bytes=1048576-"));
    // And it is listed, labelled by its repository.
    r = run_cli({"models", "list", "--json"}, home.path());
    QVERIFY2(r.out.contains("\"label\":\"owner/Tiny-GGUF/tiny.Q4_1.gguf\""), qPrintable(r.out));
  }

  void pullRefusals() {
    test::FakeHub hub;
    hub.addRepoFile("owner/Tiny-GGUF", "t.gguf", QByteArray(1000, 'x'));
    hub.advertiseWrongHash("owner/Tiny-GGUF", "t.gguf");
    QTemporaryDir home;
    const QStringList env = {"HF_ENDPOINT=" + hub.endpoint()};
    Result r = run_cli({"models", "pull", "owner/Tiny-GGUF", "t.gguf"}, home.path(), env);
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("sha256") && r.err.contains("deleted"), qPrintable(r.err));
    QVERIFY(!QFileInfo::exists(home.filePath(".cache/pagedchat/models/hf/owner/Tiny-GGUF/t.gguf")));
    QVERIFY(!QFileInfo::exists(home.filePath(".cache/pagedchat/models/hf/owner/Tiny-GGUF/t.gguf.part")));
    r = run_cli({"models", "pull", "owner/Tiny-GGUF", "nope.gguf"}, home.path(), env);
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("'owner/Tiny-GGUF' has no file 'nope.gguf'"), qPrintable(r.err));
    r = run_cli({"models", "pull"}, home.path(), env);
    QCOMPARE(r.exit_code, 2);
    QVERIFY(r.err.contains("usage: pagedchat-cli models"));
    r = run_cli({"models", "frobnicate"}, home.path(), env);
    QCOMPARE(r.exit_code, 2);
  }

  void aMissingDefaultModelNamesTheCommandThatFetchesIt() {
    QTemporaryDir home;
    Result r = run_cli({"generate", "--prompt", "hi"}, home.path());
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains("run `pagedchat-cli models pull default`"), qPrintable(r.err));
  }
};

QTEST_GUILESS_MAIN(CliModelsTest)
#include "test_cli_models.moc"
