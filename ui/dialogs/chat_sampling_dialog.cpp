// The two choices and the form; the form starts from the app's defaults when the chat has none.
#include "ui/dialogs/chat_sampling_dialog.h"

#include <QDialogButtonBox>
#include <QPushButton>
#include <QLabel>
#include <QRadioButton>
#include <QVBoxLayout>

#include "ui/dialogs/sampling_form.h"

ChatSamplingDialog::ChatSamplingDialog(const QString& chatTitle, const std::optional<TurnSettings>& own,
                                       const TurnSettings& appDefaults, QWidget* parent)
    : QDialog(parent) {
  setObjectName(QStringLiteral("chatSamplingDialog"));
  setWindowTitle(tr("Sampling for “%1”").arg(chatTitle));
  auto* v = new QVBoxLayout(this);
  m_useApp = new QRadioButton(tr("The app's defaults (Settings)"), this);
  m_useApp->setObjectName(QStringLiteral("useAppSampling"));
  auto* appLine = new QLabel(describeChatSampling(appDefaults), this);
  appLine->setWordWrap(true);
  appLine->setIndent(24);
  m_useOwn = new QRadioButton(tr("This chat's own:"), this);
  m_useOwn->setObjectName(QStringLiteral("useOwnSampling"));
  m_form = new SamplingForm(own.value_or(appDefaults), this);
  v->addWidget(m_useApp);
  v->addWidget(appLine);
  v->addWidget(m_useOwn);
  v->addWidget(m_form);
  auto* note = new QLabel(tr("Used from the chat's next reply on; its forks start with the same settings."), this);
  note->setWordWrap(true);
  v->addWidget(note);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  // A schema the engine cannot hold replies to is said under it, and cannot be saved.
  auto checkOk = [this, buttons] { buttons->button(QDialogButtonBox::Ok)->setEnabled(!m_useOwn->isChecked() || m_form->problem().isEmpty()); };
  connect(m_form, &SamplingForm::edited, this, checkOk);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  v->addWidget(buttons);
  (own ? m_useOwn : m_useApp)->setChecked(true);
  m_form->setEnabled(own.has_value());
  connect(m_useOwn, &QRadioButton::toggled, m_form, &QWidget::setEnabled);
  // Editing a value is choosing the chat's own settings.
  connect(m_form, &SamplingForm::edited, this, [this] { m_useOwn->setChecked(true); });
  connect(m_useOwn, &QRadioButton::toggled, this, checkOk);
  checkOk();
}

std::optional<TurnSettings> ChatSamplingDialog::ownSampling() const {
  if (!m_useOwn->isChecked()) return std::nullopt;
  return m_form->sampling();
}
