#pragma once
// Writing HTTP/1.1 responses straight to the connection: a whole response with its
// Content-Length, or a chunked one (server-sent events) written piece by piece as tokens come.
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

void writeHttpResponse(QTcpSocket* socket, int status, const QByteArray& contentType, const QByteArray& body,
                       const HttpHeaders& extra = {});
void writeChunkedHead(QTcpSocket* socket, int status, const QByteArray& contentType);
void writeChunk(QTcpSocket* socket, const QByteArray& data);  // empty data writes nothing
void writeLastChunk(QTcpSocket* socket);
