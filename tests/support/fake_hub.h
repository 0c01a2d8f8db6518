#pragma once
// A fake Hugging Face hub (and plain file host) on loopback, for the model downloader's tests.
// It answers from a thread of its own, so a test's main thread can run a blocking download
// (libcurl, or a QProcess it waits on) while the hub serves it. Plain HTTP/1.1, one request per
// connection (Connection: close), one connection at a time, enough of the hub's behaviour for a
// downloader to meet the cases it must handle: redirects to a CDN, quoted ETags, ranges,
// dropped bodies, errors. Works with or without a QCoreApplication.
//
// Paths given to it are matched against the request's path %-decoded, without its query.

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <memory>

class QThread;

namespace pagedchat::test {

class FakeHub {
 public:
  FakeHub();   // listens on 127.0.0.1, any port; returns once it is listening
  ~FakeHub();  // stops the hub's thread and closes every connection
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  QString endpoint() const;  // "http://127.0.0.1:<port>"

  // A file of a model repository. HEAD or GET of /{repo}/resolve/{revision}/{file} answers
  // 302 Found, Location: /cdn/{sha256}/{file} (relative, as the real hub often gives), with
  // X-Repo-Commit (sha1 of "repo@revision"), X-Linked-Etag and ETag ("\"{sha256}\""),
  // X-Linked-Size. The same answer is given for /{repo}/resolve/{that commit}/{file}, as a
  // downloader that pins the commit it was told would ask. The CDN path serves the bytes.
  void addRepoFile(const QString& repo, const QString& file, const QByteArray& bytes,
                   const QString& revision = "main");
  // The hub advertises a wrong sha256 for that file (X-Linked-Etag, ETag, and the CDN's ETag)
  // while serving the same bytes. Call it after addRepoFile.
  void advertiseWrongHash(const QString& repo, const QString& file);
  // Any other path (a PyPI wheel at /packages/xx/yy/name.whl), served directly.
  void addRawFile(const QString& path, const QByteArray& bytes);
  // Files are served 200 whole, or 206 for "Range: bytes=N-", "N-M" or "-N", 416 for a range
  // past the end. The next `times` GET bodies longer than `afterBytes` are cut after that many
  // bytes and the connection closed, as a dropped one; HEAD, redirects and shorter bodies pass.
  void dropBodiesAfter(qint64 afterBytes, int times);
  // This exact path answers `status` with an empty body (404 adds X-Error-Code: EntryNotFound),
  // whatever else is there; 0 undoes it.
  void setStatus(const QString& path, int status);
  // Serve every file whole (200) whatever the Range asks, as servers without range support do.
  void ignoreRanges(bool ignore);
  // Redirects point at another host ("http://127.0.0.1:P"; a second FakeHub as the storage
  // host, holding the bytes at cdnPath()), as the real hub's point at its CDN.
  void redirectFilesTo(const QString& cdnBase);
  QString cdnPath(const QString& repo, const QString& file) const;  // "/cdn/{sha256}/{file}"

  // Every request so far, in order: "GET /cdn/ab../f.gguf" (method and target as sent), and
  // beside it its Range header ("bytes=1000-", or empty).
  QStringList requests() const;
  QStringList ranges() const;
  QStringList authorizations() const;  // each request's Authorization header, or empty

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::unique_ptr<QThread> thread_;
};

}  // namespace pagedchat::test
