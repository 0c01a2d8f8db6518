#pragma once
// Who may drive the local API: the checks a request passes before any route runs, so that a web
// page the user visits cannot (issue: DNS rebinding, cross-origin "simple" POSTs). As Ollama does:
// - Host: an IP literal or localhost, or a name the user allowed (--allowed-hosts). A rebinding
//   page reaches us under its own host name, which is refused; a request by IP cannot be rebound.
// - Origin: a browser's cross-origin request carries one; none is allowed unless the user says
//   so (--allow-origin ORIGIN, or *), and then CORS preflights are answered. Clients that are not
//   browsers send no Origin and pass.
// - Content-Type: a POST must say application/json (a form or text/plain POST is what a page
//   can send without a preflight).
// Each check returns the error to answer, or nothing.

#include <QByteArray>
#include <QStringList>

#include <optional>

#include "server/api/api_error.h"

struct AdmissionPolicy {
  QStringList allowedHosts;    // host names besides localhost and IP literals; "*": any
  QStringList allowedOrigins;  // e.g. "http://localhost:3000"; "*": any
};

// hostHeader: the Host header as sent ("127.0.0.1:8080", "[::1]:8080", "evil.example"); empty
// when the request had none (HTTP/1.1 requires it).
std::optional<ApiError> checkHost(const QByteArray& hostHeader, const AdmissionPolicy& policy);
// origin: the Origin header, empty when absent (then the request passes).
std::optional<ApiError> checkOrigin(const QByteArray& origin, const AdmissionPolicy& policy);
std::optional<ApiError> checkJsonContentType(const QByteArray& contentType);

// The headers of an answer to an allowed cross-origin request (and to its preflight).
QList<QPair<QByteArray, QByteArray>> corsHeaders(const QByteArray& origin, bool preflight);
