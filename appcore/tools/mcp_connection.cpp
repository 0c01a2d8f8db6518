// McpConnection: a job queue for one worker thread that owns the MCP client; answers cross back
// to the owner's thread through queued calls.
#include "appcore/tools/mcp_connection.h"

#include <QMetaObject>
#include <QPointer>

#include <algorithm>

#include "mcp/http_transport.h"
#include "mcp/mcp_client.h"
#include "mcp/stdio_transport.h"

using namespace pagedchat;

McpConnection::McpConnection(mcp::ServerConfig config, QObject* parent)
    : QObject(parent), m_config(std::move(config)), m_worker([this] { work(); }) {}

McpConnection::~McpConnection() {
  {
    std::lock_guard lock(m_mutex);
    m_quit = true;
    m_jobs.clear();
    if (m_transport) m_transport->close();  // a start or a call waiting on the server returns now
  }
  m_stopRunning = true;  // a call in flight returns within 100 ms
  m_wake.notify_all();
  m_worker.join();
}

bool McpConnection::hasTool(const QString& tool) const {
  const std::string t = tool.toStdString();
  return std::any_of(m_tools.begin(), m_tools.end(), [&](const mcp::Tool& x) { return x.name == t; });
}

void McpConnection::post(std::function<void()> job) {
  {
    std::lock_guard lock(m_mutex);
    m_jobs.push_back(std::move(job));
  }
  m_wake.notify_all();
}

void McpConnection::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(m_mutex);
      m_wake.wait(lock, [&] { return m_quit || !m_jobs.empty(); });
      if (m_quit) break;
      job = std::move(m_jobs.front());
      m_jobs.pop_front();
    }
    job();
  }
  if (m_client) m_client->close();  // the server's process ends here, on the thread that used it
  setClient(nullptr, nullptr);
}

void McpConnection::setClient(std::unique_ptr<mcp::Client> client, mcp::Transport* transport) {
  std::lock_guard lock(m_mutex);
  m_client = std::move(client);
  m_transport = transport;
}

void McpConnection::publish(State state, QString failure, std::vector<mcp::Tool> tools) {
  // From the worker: the owner's thread takes it (a deleted connection takes nothing).
  QPointer<McpConnection> self(this);
  QMetaObject::invokeMethod(
      this,
      [self, state, failure = std::move(failure), tools = std::move(tools)]() mutable {
        if (!self) return;
        self->m_state = state;
        self->m_failure = std::move(failure);
        self->m_tools = std::move(tools);
        emit self->stateChanged();
      },
      Qt::QueuedConnection);
}

void McpConnection::start() {
  if (m_config.disabled) {
    m_state = State::Off;
    emit stateChanged();
    return;
  }
  m_state = State::Starting;
  m_failure.clear();
  emit stateChanged();
  post([this] { startOnWorker(); });
}

void McpConnection::startOnWorker() {
  if (m_client) m_client->close();
  setClient(nullptr, nullptr);
  mcp::Limits limits;
  std::unique_ptr<mcp::Transport> transport;
  if (m_config.is_http()) {
    mcp::HttpEndpoint e;
    e.url = m_config.url;
    e.headers = m_config.headers;
    transport = std::make_unique<mcp::HttpTransport>(m_config.name, e, limits);
  } else {
    transport = std::make_unique<mcp::StdioTransport>(m_config.name, m_config.stdio, limits);
  }
  mcp::Transport* raw = transport.get();
  setClient(std::make_unique<mcp::Client>(m_config.name, std::move(transport), limits), raw);
  {
    std::lock_guard lock(m_mutex);
    if (m_quit) m_transport->close();  // deleted while this started: end at once
  }
  std::vector<mcp::Tool> tools;
  mcp::Error e = m_client->start();
  if (e.ok()) e = m_client->list_tools(&tools);
  if (!e.ok()) {
    m_client->close();
    setClient(nullptr, nullptr);
    return publish(State::Failed, QString::fromStdString(e.sentence), {});
  }
  publish(State::Ready, {}, std::move(tools));
}

int McpConnection::call(const QString& tool, const QString& argumentsJson) {
  const int id = m_nextCall++;
  post([this, id, t = tool.toStdString(), a = argumentsJson.toStdString()] { callOnWorker(id, t, a); });
  return id;
}

void McpConnection::stopCall(int id) {
  std::lock_guard lock(m_mutex);
  if (m_running == id) m_stopRunning = true;
  else m_stopped.push_back(id);
}

void McpConnection::callOnWorker(int id, const std::string& tool, const std::string& arguments) {
  QPointer<McpConnection> self(this);
  auto answer = [&](std::function<void(McpConnection*)> f) {
    QMetaObject::invokeMethod(
        this, [self, f = std::move(f)] { if (self) f(self); }, Qt::QueuedConnection);
  };
  {
    std::lock_guard lock(m_mutex);
    if (const auto it = std::find(m_stopped.begin(), m_stopped.end(), id); it != m_stopped.end()) {
      m_stopped.erase(it);
      answer([id](McpConnection* c) { emit c->callFailed(id, tr("The call was stopped before it started.")); });
      return;
    }
    m_running = id;
    m_stopRunning = false;
  }
  if (!m_client) {
    const QString why = tr("The MCP server '%1' is not running.").arg(QString::fromStdString(m_config.name));
    answer([id, why](McpConnection* c) { emit c->callFailed(id, why); });
  } else {
    mcp::Client::CallOptions options;
    options.stop = &m_stopRunning;
    options.on_progress = [&](double done, double total, const std::string& message) {
      answer([id, done, total, m = QString::fromStdString(message)](McpConnection* c) {
        emit c->callProgress(id, done, total, m);
      });
    };
    mcp::ToolResult result;
    const mcp::Error e = m_client->call_tool(tool, arguments, &result, options);
    if (e.ok()) {
      answer([id, text = QString::fromStdString(result.text), isError = result.is_error,
              cut = result.truncated](McpConnection* c) { emit c->callFinished(id, text, isError, cut); });
    } else {
      answer([id, s = QString::fromStdString(e.sentence)](McpConnection* c) { emit c->callFailed(id, s); });
    }
    // A server that says its tools changed gets them listed again; one that died is Failed.
    if (e.ok() && m_client->tools_changed()) {
      std::vector<mcp::Tool> tools;
      if (m_client->list_tools(&tools).ok()) publish(State::Ready, {}, std::move(tools));
    } else if (e.kind == mcp::ErrorKind::exited || e.kind == mcp::ErrorKind::protocol || e.kind == mcp::ErrorKind::http) {
      m_client->close();
      setClient(nullptr, nullptr);
      publish(State::Failed, QString::fromStdString(e.sentence), {});
    }
  }
  std::lock_guard lock(m_mutex);
  m_running = 0;
}
