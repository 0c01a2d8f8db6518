#include "tests/support/fake_hub.h"

#include <QCryptographicHash>
#include <QHash>
#include <QList>
#include <QMutex>
#include <QPair>
#include <QSemaphore>
#include <QTcpServer>
#include <QTcpSocket>
#include <QThread>
#include <QUrl>

#include <atomic>

namespace pagedchat::test {
namespace {

constexpr qsizetype kMaxHead = 64 * 1024;  // a client past this is broken, not slow
constexpr int kIoTimeoutMs = 10000;       // a client this silent has gone, or hangs the test

QByteArray sha256Hex(const QByteArray& bytes) {
  return QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex();
}

QByteArray quoted(const QByteArray& s) { return '"' + s + '"'; }

struct Blob {
  QByteArray bytes;
  QByteArray etag;  // the hash advertised, unquoted: not always the true one
};

struct RepoFile {
  QString repo, file, cdnPath;
  QByteArray commit, advertised;
  qint64 size = 0;
};

struct Response {
  int status = 200;
  QList<QPair<QByteArray, QByteArray>> headers;
  QByteArray body;       // HEAD sends only its Content-Length
  qint64 cutAfter = -1;  // >= 0: drop the connection after this many body bytes
};

QByteArray reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 206: return "Partial Content";
    case 302: return "Found";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 416: return "Range Not Satisfiable";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

Response withStatus(int status) {
  Response r;
  r.status = status;
  if (status == 404) r.headers.emplaceBack("X-Error-Code", "EntryNotFound");
  return r;
}

// One range at most; a Range header we can't read is ignored and the whole file served, as
// RFC 9110 lets a server do, so a downloader sending an odd one sees a 200 and must cope.
Response ranged(const Blob& blob, const QByteArray& range) {
  const qint64 total = blob.bytes.size();
  Response r;
  r.headers = {{"ETag", quoted(blob.etag)},
               {"Accept-Ranges", "bytes"},
               {"Content-Type", "application/octet-stream"}};
  r.body = blob.bytes;
  if (!range.startsWith("bytes=") || range.contains(',')) return r;
  const QByteArray spec = range.mid(6).trimmed();
  const qsizetype dash = spec.indexOf('-');
  if (dash < 0) return r;
  const QByteArray first = spec.left(dash).trimmed(), last = spec.mid(dash + 1).trimmed();
  bool okFirst = true, okLast = true;
  qint64 start = 0, end = total - 1;
  if (first.isEmpty()) {  // "-N": the last N bytes
    const qint64 n = last.toLongLong(&okLast);
    if (!okLast || n < 0) return r;
    start = n == 0 ? total : qMax<qint64>(0, total - n);
  } else {
    start = first.toLongLong(&okFirst);
    const qint64 asked = last.isEmpty() ? total - 1 : last.toLongLong(&okLast);
    if (!okFirst || !okLast || start < 0 || (!last.isEmpty() && asked < start)) return r;
    end = qMin(asked, total - 1);
  }
  if (start >= total) {
    Response bad = withStatus(416);
    bad.headers.emplaceBack("Content-Range", "bytes */" + QByteArray::number(total));
    return bad;
  }
  r.status = 206;
  r.headers.emplaceBack("Content-Range", "bytes " + QByteArray::number(start) + '-' +
                                             QByteArray::number(end) + '/' +
                                             QByteArray::number(total));
  r.body = blob.bytes.mid(start, end - start + 1);
  return r;
}

}  // namespace

// Everything the test thread and the hub thread share sits behind `mutex`; the sockets belong
// to the hub thread alone.
struct FakeHub::State {
  mutable QMutex mutex;
  QHash<QString, RepoFile> resolve;  // by "/{repo}/resolve/{revision}/{file}"
  QHash<QString, Blob> blobs;        // by path: the CDN's copies and the raw files
  QHash<QString, int> statuses;
  qint64 dropAfter = 0;
  int dropTimes = 0;
  bool ignoreRanges = false;
  QString cdnBase;  // empty: Location is a path on this hub
  QStringList requests, ranges, authorizations;

  QSemaphore listening;  // here, not on the constructor's stack: release() outlives acquire()
  quint16 port = 0;
  std::atomic<bool> stopping = false;

  void serve(QTcpSocket& socket);
  Response answer(const QByteArray& method, const QByteArray& target, const QByteArray& range,
                  const QByteArray& authorization);
};

// One request per connection, answered with blocking calls: without a QCoreApplication a
// thread's event loop delivers no socket events, and the engine suites run app-less.
void FakeHub::State::serve(QTcpSocket& socket) {
  QByteArray head;
  qsizetype end;
  while ((end = head.indexOf("\r\n\r\n")) < 0) {
    if (head.size() > kMaxHead || !socket.waitForReadyRead(kIoTimeoutMs)) return;
    head += socket.readAll();
  }
  const QList<QByteArray> lines = head.left(end).split('\n');
  const QList<QByteArray> requestLine = lines.value(0).trimmed().split(' ');
  const QByteArray method = requestLine.value(0), target = requestLine.value(1);
  QByteArray range, authorization;
  for (qsizetype i = 1; i < lines.size(); ++i) {
    const qsizetype colon = lines[i].indexOf(':');
    if (colon <= 0) continue;
    const QByteArray name = lines[i].left(colon).trimmed().toLower();
    if (name == "range") range = lines[i].mid(colon + 1).trimmed();
    if (name == "authorization") authorization = lines[i].mid(colon + 1).trimmed();
  }
  const Response r = answer(method, target, range, authorization);

  QByteArray out = "HTTP/1.1 " + QByteArray::number(r.status) + ' ' + reason(r.status) + "\r\n";
  for (const auto& [name, value] : r.headers) out += name + ": " + value + "\r\n";
  out += "Content-Length: " + QByteArray::number(r.body.size()) + "\r\n";
  out += "Connection: close\r\n\r\n";
  socket.write(out);
  if (method != "HEAD") socket.write(r.cutAfter < 0 ? r.body : r.body.left(r.cutAfter));
  // Everything must reach the kernel before the close, which would discard what Qt still
  // buffers; the client then reads the whole answer, or exactly cutAfter body bytes.
  while (socket.bytesToWrite() > 0 && socket.waitForBytesWritten(kIoTimeoutMs)) {
  }
  socket.readAll();  // a request body left unread would turn the close into a reset
  if (r.cutAfter >= 0)
    socket.abort();
  else
    socket.disconnectFromHost();
}

Response FakeHub::State::answer(const QByteArray& method, const QByteArray& target,
                                const QByteArray& range, const QByteArray& authorization) {
  QMutexLocker lock(&mutex);
  requests.append(QString::fromUtf8(method + ' ' + target));
  ranges.append(QString::fromUtf8(range));
  authorizations.append(QString::fromUtf8(authorization));
  const QString path = QUrl::fromPercentEncoding(target.split('?').value(0));

  if (method != "GET" && method != "HEAD") {
    Response r = withStatus(405);
    r.headers.emplaceBack("Allow", "GET, HEAD");
    return r;
  }
  if (const auto it = statuses.constFind(path); it != statuses.cend()) return withStatus(*it);
  if (const auto it = resolve.constFind(path); it != resolve.cend()) {
    Response r = withStatus(302);
    r.headers = {{"Location", cdnBase.toUtf8() + QUrl::toPercentEncoding(it->cdnPath, "/")},
                 {"X-Repo-Commit", it->commit},
                 {"X-Linked-Etag", quoted(it->advertised)},
                 {"X-Linked-Size", QByteArray::number(it->size)},
                 {"ETag", quoted(it->advertised)}};
    return r;
  }
  if (const auto it = blobs.constFind(path); it != blobs.cend()) {
    Response r = ranged(*it, ignoreRanges ? QByteArray() : range);
    if (method == "GET" && dropTimes > 0 && r.body.size() > dropAfter) {
      r.cutAfter = dropAfter;
      --dropTimes;
    }
    return r;
  }
  Response r = withStatus(404);
  r.headers.emplaceBack("Content-Type", "text/plain");
  r.body = "Entry not found";
  return r;
}

FakeHub::FakeHub() : state_(std::make_unique<State>()) {
  // The server is made on the hub thread, so it and its sockets are that thread's: the test
  // thread may block as long as it likes.
  thread_.reset(QThread::create([s = state_.get()] {
    QTcpServer server;
    if (!server.listen(QHostAddress::LocalHost, 0))
      qFatal("FakeHub: cannot listen on 127.0.0.1: %s", qPrintable(server.errorString()));
    s->port = server.serverPort();
    s->listening.release();
    while (!s->stopping) {  // the timeout only bounds how long ~FakeHub waits
      if (!server.waitForNewConnection(50)) continue;
      while (QTcpSocket* socket = server.nextPendingConnection()) {
        s->serve(*socket);
        delete socket;
      }
    }
  }));
  thread_->setObjectName("FakeHub");
  thread_->start();
  state_->listening.acquire();
}

FakeHub::~FakeHub() {
  state_->stopping = true;
  thread_->wait();
}

QString FakeHub::endpoint() const {
  return QStringLiteral("http://127.0.0.1:%1").arg(state_->port);
}

void FakeHub::addRepoFile(const QString& repo, const QString& file, const QByteArray& bytes,
                          const QString& revision) {
  const QByteArray sha = sha256Hex(bytes);
  RepoFile rf;
  rf.repo = repo;
  rf.file = file;
  rf.cdnPath = "/cdn/" + QString::fromLatin1(sha) + '/' + file;
  rf.commit = QCryptographicHash::hash((repo + '@' + revision).toUtf8(),
                                       QCryptographicHash::Sha1).toHex();
  rf.advertised = sha;
  rf.size = bytes.size();
  QMutexLocker lock(&state_->mutex);
  state_->resolve.insert('/' + repo + "/resolve/" + revision + '/' + file, rf);
  state_->resolve.insert('/' + repo + "/resolve/" + QString::fromLatin1(rf.commit) + '/' + file,
                         rf);
  state_->blobs.insert(rf.cdnPath, Blob{bytes, sha});
}

void FakeHub::advertiseWrongHash(const QString& repo, const QString& file) {
  QMutexLocker lock(&state_->mutex);
  for (RepoFile& rf : state_->resolve) {
    if (rf.repo != repo || rf.file != file) continue;
    Blob& blob = state_->blobs[rf.cdnPath];
    rf.advertised = blob.etag = sha256Hex("not " + sha256Hex(blob.bytes));
  }
}

void FakeHub::addRawFile(const QString& path, const QByteArray& bytes) {
  QMutexLocker lock(&state_->mutex);
  state_->blobs.insert(path, Blob{bytes, sha256Hex(bytes)});
}

void FakeHub::dropBodiesAfter(qint64 afterBytes, int times) {
  QMutexLocker lock(&state_->mutex);
  state_->dropAfter = afterBytes;
  state_->dropTimes = times;
}

void FakeHub::setStatus(const QString& path, int status) {
  QMutexLocker lock(&state_->mutex);
  if (status == 0)
    state_->statuses.remove(path);
  else
    state_->statuses.insert(path, status);
}

void FakeHub::ignoreRanges(bool ignore) {
  QMutexLocker lock(&state_->mutex);
  state_->ignoreRanges = ignore;
}

void FakeHub::redirectFilesTo(const QString& cdnBase) {
  QMutexLocker lock(&state_->mutex);
  state_->cdnBase = cdnBase;
}

QString FakeHub::cdnPath(const QString& repo, const QString& file) const {
  QMutexLocker lock(&state_->mutex);
  for (const RepoFile& rf : state_->resolve)
    if (rf.repo == repo && rf.file == file) return rf.cdnPath;
  return {};
}

QStringList FakeHub::authorizations() const {
  QMutexLocker lock(&state_->mutex);
  return state_->authorizations;
}

QStringList FakeHub::requests() const {
  QMutexLocker lock(&state_->mutex);
  return state_->requests;
}

QStringList FakeHub::ranges() const {
  QMutexLocker lock(&state_->mutex);
  return state_->ranges;
}

}  // namespace pagedchat::test
