// HTTP/1.1 response framing.
#include "server/http/http_reply.h"

#include <QTcpSocket>
#include <QVariantList>

#include "server/http/connection_guard.h"

namespace {

QByteArray reasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 415: return "Unsupported Media Type";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
  }
  return "Status";
}

QByteArray statusLine(int status) { return "HTTP/1.1 " + QByteArray::number(status) + ' ' + reasonPhrase(status) + "\r\n"; }

QByteArray corsLines(QTcpSocket* socket) {
  const QByteArray origin = socket->property(kCorsOriginProperty).toByteArray();
  return origin.isEmpty() ? QByteArray() : "Access-Control-Allow-Origin: " + origin + "\r\nVary: Origin\r\n";
}

constexpr const char* kNeedsProperty = "pagedchat_response_needs";  // a QVariantList of Need bits, oldest first
enum Need { kCloseAfter = 1, kHttp10 = 2 };

// The needs of the request being answered now (the oldest whose response is not written).
int needs(QTcpSocket* socket) {
  const QVariantList queue = socket->property(kNeedsProperty).toList();
  return queue.isEmpty() ? 0 : queue.front().toInt();
}
bool closeAfter(QTcpSocket* socket) { return needs(socket) & kCloseAfter; }
bool unchunked(QTcpSocket* socket) { return needs(socket) & kHttp10; }

// The response is written: its request's needs go, and the connection ends when it asked for
// that, once its bytes are out (disconnectFromHost writes what is pending first).
void endIfAsked(QTcpSocket* socket) {
  const bool close = closeAfter(socket);
  QVariantList queue = socket->property(kNeedsProperty).toList();
  if (!queue.isEmpty()) queue.pop_front();
  socket->setProperty(kNeedsProperty, queue);
  if (close) socket->disconnectFromHost();
}

}  // namespace

void queueResponseNeeds(QTcpSocket* socket, bool closeAfter, bool http10) {
  QVariantList queue = socket->property(kNeedsProperty).toList();
  // An HTTP/1.0 stream has no other end than the connection's close.
  queue.append((closeAfter || http10 ? kCloseAfter : 0) | (http10 ? kHttp10 : 0));
  socket->setProperty(kNeedsProperty, queue);
}

void writeHttpResponse(QTcpSocket* socket, int status, const QByteArray& contentType, const QByteArray& body,
                       const HttpHeaders& extra) {
  QByteArray out = statusLine(status);
  out += "Content-Type: " + contentType + "\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n";
  bool corsGiven = false, connectionGiven = false;
  for (const auto& [key, value] : extra) {
    out += key + ": " + value + "\r\n";
    corsGiven |= key == "Access-Control-Allow-Origin";
    connectionGiven |= key == "Connection";
  }
  if (!corsGiven) out += corsLines(socket);
  if (!connectionGiven && closeAfter(socket)) out += "Connection: close\r\n";
  out += "\r\n";
  out += body;
  socket->write(out);
  socket->setProperty(kResponseStatusProperty, status);
  ConnectionGuard::responseWritten(socket);
  endIfAsked(socket);
}

void writeChunkedHead(QTcpSocket* socket, int status, const QByteArray& contentType) {
  socket->setProperty(kResponseStatusProperty, status);
  socket->write(statusLine(status) + "Content-Type: " + contentType + "\r\nCache-Control: no-cache\r\n" + corsLines(socket) +
                (closeAfter(socket) ? "Connection: close\r\n" : "") + (unchunked(socket) ? "" : "Transfer-Encoding: chunked\r\n") +
                "\r\n");
}

void writeChunk(QTcpSocket* socket, const QByteArray& data) {
  if (data.isEmpty()) return;  // a zero-length chunk would end the body
  if (unchunked(socket)) return void(socket->write(data));
  socket->write(QByteArray::number(data.size(), 16) + "\r\n" + data + "\r\n");
}

void writeLastChunk(QTcpSocket* socket) {
  if (!unchunked(socket)) socket->write("0\r\n\r\n");
  ConnectionGuard::responseWritten(socket);
  endIfAsked(socket);
}
