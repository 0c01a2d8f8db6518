// Finding GGUFs laid out as each tool lays them out: Hugging Face's cache (snapshots linking
// blobs), llama.cpp's cache, LM Studio (both layouts), GPT4All, Ollama (manifests naming
// blobs), our own folder with its hf/ downloads, and a user's folder; each file once.
#include <QTemporaryDir>
#include <QtTest>

#include <map>

#include "models/model_scan.h"
#include "models/model_summary.h"
#include "tests/support/model_fixtures.h"

using namespace pagedchat;
using namespace pagedchat::models;

class ModelScanTest : public QObject {
  Q_OBJECT
 private:
  QTemporaryDir m_home;
  QString home(const QString& rel) const { return m_home.filePath(rel); }

 private slots:
  void initTestCase() {
    // Only the fixture home is searched: the tools' own variables would point elsewhere.
    qputenv("HOME", m_home.path().toLocal8Bit());
    for (const char* v : {"XDG_CACHE_HOME", "XDG_DATA_HOME", "HF_HOME", "HF_HUB_CACHE", "LLAMA_CACHE", "OLLAMA_MODELS", "PAGEDCHAT_MODEL"})
      qunsetenv(v);
    test::FixtureModel llama;
    test::FixtureModel phi;
    phi.architecture = "phi3";
    phi.long_rope = true;  // long factors without the short ones: refused
    const QByteArray ok = test::fixture_gguf(llama), unsupported = test::fixture_gguf(phi);

    // Ours, and a hub download of ours.
    test::write_fixture(home(".cache/pagedchat/models/mine.gguf"), ok);
    test::write_fixture(home(".cache/pagedchat/models/hf/owner/Repo-GGUF/repo-q4.gguf"), ok);
    test::write_fixture(home(".cache/pagedchat/models/half.gguf.part"), ok.left(10));  // a download in progress
    // Hugging Face: one blob, linked from two snapshots; a second repo; a non-model repo.
    const QString hf = home(".cache/huggingface/hub/models--bartowski--Phi-GGUF");
    test::write_fixture(hf + "/blobs/0123abcd", unsupported);
    for (const char* rev : {"aaaa1111", "bbbb2222"}) {
      QDir().mkpath(hf + "/snapshots/" + rev);
      QVERIFY(QFile::link("../../blobs/0123abcd", hf + "/snapshots/" + rev + "/Phi-Q4_K_M.gguf"));
    }
    test::write_fixture(home(".cache/huggingface/hub/models--Qwen--Qwen2-GGUF/snapshots/cccc/sub/qwen2-q8_0.gguf"), ok);
    test::write_fixture(home(".cache/huggingface/hub/datasets--x--y/snapshots/d/data.gguf"), ok);
    // llama.cpp's cache: flat files named after the repository.
    test::write_fixture(home(".cache/llama.cpp/ggml-org_gemma-3-1b-it-GGUF_gemma-3-1b-it-Q4_K_M.gguf"), ok);
    // LM Studio, now and before 0.3.
    test::write_fixture(home(".lmstudio/models/lmstudio-community/Llama-3.2-1B-GGUF/Llama-3.2-1B-Q4_K_M.gguf"), ok);
    test::write_fixture(home(".cache/lm-studio/models/TheBloke/Old-GGUF/old.Q4_0.gguf"), ok);
    // GPT4All.
    test::write_fixture(home(".local/share/nomic.ai/GPT4All/Meta-Llama-3-8B-Instruct.Q4_0.gguf"), ok);
    // Ollama: a manifest per model:tag naming its model blob (and a template layer, not a model).
    const QString ollama = home(".ollama/models");
    test::write_fixture(ollama + "/blobs/sha256-" + QString(64, 'a'), ok);
    test::write_fixture(ollama + "/blobs/sha256-" + QString(64, 'b'), "{{ .Prompt }}");
    const QString manifest = QString(R"({"schemaVersion":2,"layers":[
        {"mediaType":"application/vnd.ollama.image.model","digest":"sha256:%1","size":%3},
        {"mediaType":"application/vnd.ollama.image.template","digest":"sha256:%2","size":13}]})")
                                 .arg(QString(64, 'a'), QString(64, 'b'))
                                 .arg(ok.size());
    test::write_fixture(ollama + "/manifests/registry.ollama.ai/library/smollm2/135m", manifest.toUtf8());
    test::write_fixture(ollama + "/blobs/sha256-" + QString(64, 'c'), ok);
    test::write_fixture(ollama + "/manifests/registry.ollama.ai/someone/tiny/latest",
                        QString(manifest).replace(QString(64, 'a'), QString(64, 'c')).toUtf8());
    test::write_fixture(ollama + "/manifests/registry.ollama.ai/library/broken/latest", "{not json");
    // A user's folder, nested, with a hidden folder that is not searched and a non-GGUF.
    test::write_fixture(home("models/a/b/deep.gguf"), ok);
    test::write_fixture(home("models/.trash/gone.gguf"), ok);
    test::write_fixture(home("models/notes.txt"), "x");
  }

  void findsEachToolsLayout() {
    const auto found = scan_places(standard_places({home("models").toStdString()}));
    std::map<std::string, std::string> sourceOf;  // label -> source
    for (const auto& m : found) sourceOf[m.label] = m.source;
    const std::map<std::string, std::string> expected = {
        {"mine.gguf", "PagedChat"},
        {"owner/Repo-GGUF/repo-q4.gguf", "PagedChat"},
        {"bartowski/Phi-GGUF/Phi-Q4_K_M.gguf", "Hugging Face"},
        {"Qwen/Qwen2-GGUF/qwen2-q8_0.gguf", "Hugging Face"},
        {"ggml-org_gemma-3-1b-it-GGUF_gemma-3-1b-it-Q4_K_M.gguf", "llama.cpp"},
        {"Llama-3.2-1B-Q4_K_M.gguf", "LM Studio"},
        {"old.Q4_0.gguf", "LM Studio"},
        {"Meta-Llama-3-8B-Instruct.Q4_0.gguf", "GPT4All"},
        {"smollm2:135m", "Ollama"},
        {"someone/tiny:latest", "Ollama"},
        {"deep.gguf", "Folder"},
    };
    QCOMPARE(sourceOf, expected);
    // Two snapshots link one blob: it is listed once.
    QCOMPARE(found.size(), expected.size());
  }

  void verdictsOfWhatWasFound() {
    const auto found = scan_places(standard_places());
    QCOMPARE(found.size(), size_t(10));  // all but the user's folder, not given here
    for (const auto& m : found) {
      const ModelSummary s = summarize_model(m.path);
      QCOMPARE(s.supported, s.architecture != "phi3");
      if (m.label == "bartowski/Phi-GGUF/Phi-Q4_K_M.gguf") QCOMPARE(s.architecture, std::string("phi3"));
    }
  }

  void environmentVariablesMoveThePlaces() {
    qputenv("HF_HUB_CACHE", home("elsewhere/hub").toLocal8Bit());
    qputenv("OLLAMA_MODELS", home("elsewhere/ollama").toLocal8Bit());
    test::write_fixture(home("elsewhere/hub/models--a--b/snapshots/r/x.gguf"), test::fixture_gguf({}));
    const auto places = standard_places();
    qunsetenv("HF_HUB_CACHE");
    qunsetenv("OLLAMA_MODELS");
    bool sawHub = false;
    for (const auto& p : places) {
      if (p.source == "Hugging Face") {
        QCOMPARE(QString::fromStdString(p.dir), home("elsewhere/hub"));
        sawHub = true;
      }
      if (p.source == "Ollama" && p.dir.find("/usr/share") == std::string::npos)
        QCOMPARE(QString::fromStdString(p.dir), home("elsewhere/ollama"));
    }
    QVERIFY(sawHub);
    bool found = false;
    for (const auto& m : scan_places(places)) found |= m.label == "a/b/x.gguf";
    QVERIFY(found);
  }

  void missingPlacesAreSkipped() {
    const std::vector<ScanPlace> places = {{"Folder", home("does/not/exist").toStdString(), PlaceLayout::kFolder},
                                           {"Ollama", home("nothing").toStdString(), PlaceLayout::kOllama},
                                           {"Hugging Face", home("none").toStdString(), PlaceLayout::kHuggingFace}};
    QCOMPARE(scan_places(places).size(), size_t(0));
  }
};

QTEST_APPLESS_MAIN(ModelScanTest)
#include "test_model_scan.moc"
