// The request-head checks made before Qt's parser sees a request.
#include "server/http/request_framing.h"

#include <QList>

namespace {

ApiError framingError(int status, const QString& message, const QString& code) {
  return ApiError(status, message, QStringLiteral("invalid_request_error"), {}, code);
}

}  // namespace

qsizetype headEnd(QByteArrayView bytes) {
  const qsizetype at = bytes.indexOf(QByteArrayView("\r\n\r\n"));
  return at < 0 ? -1 : at + 4;
}

std::optional<ApiError> checkRequestHead(QByteArrayView head, qint64 maxBodyBytes, RequestHead& out) {
  out = {};
  std::optional<qint64> length;
  bool transferEncoding = false;
  const QList<QByteArray> lines = QByteArray(head.data(), head.size()).split('\n');
  out.http10 = !lines.isEmpty() && lines[0].trimmed().endsWith("HTTP/1.0");
  bool keepAlive = false, close = false;
  for (qsizetype i = 1; i < lines.size(); ++i) {  // line 0 is the request line
    const QByteArray line = lines[i].trimmed();
    const qsizetype colon = line.indexOf(':');
    if (colon <= 0) continue;
    const QByteArray name = line.left(colon).trimmed().toLower();
    const QByteArray value = line.mid(colon + 1).trimmed();
    if (name == "content-length") {
      bool ok = !value.isEmpty();
      for (char c : value) ok = ok && c >= '0' && c <= '9';
      const qint64 n = ok && value.size() <= 18 ? value.toLongLong(&ok) : -1;
      if (!ok || n < 0)
        return framingError(400, QStringLiteral("Content-Length '%1' is not a length").arg(QString::fromLatin1(value.left(40))),
                            QStringLiteral("bad_content_length"));
      if (length && *length != n)
        return framingError(400, QStringLiteral("two Content-Length headers disagree (%1 and %2)").arg(*length).arg(n),
                            QStringLiteral("bad_content_length"));
      length = n;
    } else if (name == "transfer-encoding") {
      transferEncoding = true;
    } else if (name == "connection") {
      for (const QByteArray& token : value.toLower().split(',')) {
        close = close || token.trimmed() == "close";
        keepAlive = keepAlive || token.trimmed() == "keep-alive";
      }
    } else if (name == "expect") {
      if (value.toLower() != "100-continue")
        return framingError(417, QStringLiteral("Expect: '%1' is not supported (only 100-continue)").arg(QString::fromLatin1(value.left(40))),
                            QStringLiteral("expectation_failed"));
      out.expectContinue = true;
    }
  }
  if (length && transferEncoding)
    return framingError(400, QStringLiteral("a request may not have both Content-Length and Transfer-Encoding"),
                        QStringLiteral("bad_framing"));
  if (length && *length > maxBodyBytes)
    return framingError(413, QStringLiteral("the request body has %1 bytes; the limit is %2").arg(*length).arg(maxBodyBytes),
                        QStringLiteral("request_too_large"));
  out.contentLength = length.value_or(0);
  out.chunked = transferEncoding;
  out.closeAfter = close || (out.http10 && !keepAlive);
  return std::nullopt;
}
