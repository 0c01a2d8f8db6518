// The local API's admission checks (see request_admission.h).
#include "server/http/request_admission.h"

#include <QHostAddress>

namespace {

ApiError forbidden(const QString& message, const QString& code) {
  return ApiError(403, message, QStringLiteral("invalid_request_error"), {}, code);
}

// "host:port", "[v6]:port" or "host" -> the host alone, lower-cased.
QString hostName(const QByteArray& header) {
  QString h = QString::fromLatin1(header).trimmed().toLower();
  if (h.startsWith(QLatin1Char('['))) {
    const qsizetype end = h.indexOf(QLatin1Char(']'));
    return end < 0 ? h : h.mid(1, end - 1);
  }
  const qsizetype colon = h.lastIndexOf(QLatin1Char(':'));
  if (colon >= 0 && h.indexOf(QLatin1Char(':')) == colon) h.truncate(colon);  // one colon: a port
  return h;
}

// Whether value is in a user's allow-list (case aside), or the list allows any ("*").
bool listed(const QStringList& allowed, const QString& value) {
  for (const QString& a : allowed)
    if (a == QLatin1String("*") || a.compare(value, Qt::CaseInsensitive) == 0) return true;
  return false;
}

}  // namespace

std::optional<ApiError> checkHost(const QByteArray& hostHeader, const AdmissionPolicy& policy) {
  if (hostHeader.trimmed().isEmpty())
    return ApiError(400, QStringLiteral("the request has no Host header (HTTP/1.1 requires one)"), QStringLiteral("invalid_request_error"),
                    {}, QStringLiteral("missing_host"));
  const QString host = hostName(hostHeader);
  if (host == QLatin1String("localhost") || host.endsWith(QLatin1String(".localhost"))) return std::nullopt;
  if (!QHostAddress(host).isNull()) return std::nullopt;  // an IP literal cannot be rebound
  if (listed(policy.allowedHosts, host)) return std::nullopt;
  return forbidden(QStringLiteral("the host name '%1' is not allowed (a web page may be reaching this server through "
                                  "DNS rebinding); start the server with --allowed-hosts %1 to allow it")
                       .arg(host),
                   QStringLiteral("host_not_allowed"));
}

std::optional<ApiError> checkOrigin(const QByteArray& origin, const AdmissionPolicy& policy) {
  if (origin.isEmpty()) return std::nullopt;
  const QString o = QString::fromLatin1(origin).trimmed();
  if (listed(policy.allowedOrigins, o)) return std::nullopt;
  return forbidden(QStringLiteral("requests from the web page at '%1' are not allowed; start the server with "
                                  "--allow-origin %1 to allow them")
                       .arg(o),
                   QStringLiteral("origin_not_allowed"));
}

std::optional<ApiError> checkJsonContentType(const QByteArray& contentType) {
  const QByteArray type = contentType.split(';').value(0).trimmed().toLower();
  if (type == "application/json") return std::nullopt;
  return ApiError(415,
                  QStringLiteral("the body must be JSON with 'Content-Type: application/json' (it was '%1')")
                      .arg(QString::fromLatin1(contentType.isEmpty() ? QByteArray("none") : contentType)),
                  QStringLiteral("invalid_request_error"), {}, QStringLiteral("unsupported_media_type"));
}

QList<QPair<QByteArray, QByteArray>> corsHeaders(const QByteArray& origin, bool preflight) {
  QList<QPair<QByteArray, QByteArray>> h = {{"Access-Control-Allow-Origin", origin.trimmed()}, {"Vary", "Origin"}};
  if (preflight) {
    h.emplaceBack("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    h.emplaceBack("Access-Control-Allow-Headers", "Authorization, Content-Type");
    h.emplaceBack("Access-Control-Max-Age", "600");
  }
  return h;
}
