// The dock that draws the pool shown.
#include "ui/pool_panel/kv_dock.h"

#include <QVBoxLayout>

#include "appcore/session/app_session.h"
#include "appcore/session/pool_control.h"
#include "ui/pool_panel/engine_tool_bar.h"
#include "ui/pool_panel/kv_pool_panel.h"
#include "ui/pool_panel/kv_roofline_chart.h"
#include "ui/pool_view/kv_pool_view.h"

KvDock::KvDock(AppSession& session, QWidget* parent) : QDockWidget(tr("KV blocks"), parent) {
  setObjectName(QStringLiteral("kvBlocksDock"));
  auto* inside = new QWidget(this);
  auto* v = new QVBoxLayout(inside);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(0);
  m_toolBar = new EngineToolBar(session, inside);
  v->addWidget(m_toolBar);
  m_panel = new KvPoolPanel(inside);
  m_panel->setObjectName(QStringLiteral("kvPoolPanel"));
  m_panel->setMinimumWidth(280);
  v->addWidget(m_panel, 1);
  setWidget(inside);
  PoolControl& pool = session.pool();
  connect(&pool, &PoolControl::shownChanged, this, &KvDock::showPoolOf);
  connect(&pool, &PoolControl::pausedChanged, this, [this](bool paused) { m_panel->poolView()->setFlashesHeld(paused); });
  connect(&pool, &PoolControl::localFrame, m_panel, [this](const PoolFrame& f) {
    if (m_showsLocalPool) m_panel->setFrame(f);
  });
  connect(&pool, &PoolControl::remoteFrame, m_panel, &KvPoolPanel::setFrame);
  connect(&pool, &PoolControl::vllmFrame, m_panel, &KvPoolPanel::setFrame);
  // The roofline is this machine's for the model loaded: measured when its tab asks, dropped
  // when another model loads.
  connect(&pool, &PoolControl::rooflineMeasured, m_panel->rooflineChart(), &KvRooflineChart::setCeilings);
  connect(m_panel, &KvPoolPanel::rooflineWanted, &pool, [this, &pool] {
    if (m_showsLocalPool) pool.measureRoofline();
  });
  connect(&session, &AppSession::modelReady, m_panel->rooflineChart(), [this] { m_panel->rooflineChart()->setCeilings({}); });
}

void KvDock::showPoolOf(const QString& title) {
  m_showsLocalPool = title.isEmpty();
  m_panel->selectSequence(-1);  // a sequence of the other pool means nothing in this one
  // Nothing of the other pool stays drawn: an empty pool until this machine's next frame
  // (none comes while no model is loaded).
  if (title.isEmpty()) m_panel->setFrame(PoolFrame{});
  setWindowTitle(title.isEmpty() ? tr("KV blocks") : title);
}
