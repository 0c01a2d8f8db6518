#pragma once
// Reading a request's head (request line and headers) ahead of Qt's HTTP parser, to refuse the
// framings that let a request be read two ways or hold the server (RFC 9112, section 6.3):
// - Content-Length given twice with different values, or not a number: 400.
// - Content-Length and Transfer-Encoding together (request smuggling): 400.
// - a declared body over the limit: 413 at once, instead of holding the connection open for it.
// - Expect: 100-continue is answered "100 Continue" (a client waits for it before its body);
//   any other expectation gets 417.
// And what the response must do for the client: close the connection after it (Connection:
// close, HTTP/1.0), and not be chunked (HTTP/1.0).
// Qt 6.4's parser takes the first of two Content-Lengths and ignores Expect.

#include <QByteArray>
#include <QByteArrayView>

#include <optional>

#include "server/api/api_error.h"

struct RequestHead {
  qint64 contentLength = 0;     // 0 when absent
  bool chunked = false;         // Transfer-Encoding given: the body's length is known at its end only
  bool expectContinue = false;  // answer "HTTP/1.1 100 Continue" before the body comes
  bool http10 = false;          // an HTTP/1.0 client: no chunked replies (it cannot read them)
  // The connection ends with this request's response: "Connection: close", or HTTP/1.0
  // without "Connection: keep-alive" (RFC 9112, section 9.3).
  bool closeAfter = false;
};

// Where the head in `bytes` ends (just past its blank line), or -1 while it is incomplete.
qsizetype headEnd(QByteArrayView bytes);

// head: the request line and headers, up to their blank line. Returns the error to answer, or
// sets `out`.
std::optional<ApiError> checkRequestHead(QByteArrayView head, qint64 maxBodyBytes, RequestHead& out);
