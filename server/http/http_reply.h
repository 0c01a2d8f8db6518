#pragma once
// Writing HTTP/1.1 responses straight to the connection: a whole response with its
// Content-Length, or a chunked one (server-sent events) written piece by piece as tokens come;
// to an HTTP/1.0 client a stream goes unchunked, its end the connection's close. A request that
// asked for it (Connection: close, HTTP/1.0) has its connection closed after its response.
// Qt 6.4's QHttpServerResponder cannot stream chunked bodies, so the server writes the bytes.

#include <QByteArray>
#include <QList>
#include <QPair>

class QTcpSocket;

using HttpHeaders = QList<QPair<QByteArray, QByteArray>>;

// The socket property holding the Origin of an allowed cross-origin request: every response
// written on that socket then carries Access-Control-Allow-Origin (request_admission.h).
inline constexpr const char* kCorsOriginProperty = "pagedchat_cors_origin";
// The socket property holding the status of the response written last on it (the request log's).
inline constexpr const char* kResponseStatusProperty = "pagedchat_status";
// What each request on a connection asked of its response, from its head (request_framing.h),
// in order (pipelined requests are answered in order): close the connection once it is
// written; it is read by an HTTP/1.0 client (a stream then goes unchunked, ended by the close).
void queueResponseNeeds(QTcpSocket* socket, bool closeAfter, bool http10);

void writeHttpResponse(QTcpSocket* socket, int status, const QByteArray& contentType, const QByteArray& body,
                       const HttpHeaders& extra = {});
void writeChunkedHead(QTcpSocket* socket, int status, const QByteArray& contentType);
void writeChunk(QTcpSocket* socket, const QByteArray& data);  // empty data writes nothing
void writeLastChunk(QTcpSocket* socket);
