#pragma once
// A chat message's Markdown as rich text, read by Qt's own Markdown reader (md4c) with raw HTML
// off, so a reply's <script> or <img> shows as text: headings, emphasis, inline and fenced code,
// lists, block quotes, links, rules, tables. What it adds to Qt's import:
// - code blocks under a header naming their language (with a "copy" link where the view acts
//   on links), highlighted (code_highlighter.h), in a shaded fixed-pitch block whose long lines
//   wrap inside it instead of widening the transcript; inline code shaded;
// - LaTeX math ($...$, \(...\), $$...$$, \[...\]) as readable Unicode text (latex_text.h),
//   italic, display math on a centred line of its own;
// - images show as their alt text and are never loaded; only http(s) and mailto links stay
//   links, any other (fork:, copy:, file:, javascript:) becomes plain text, so a reply cannot
//   carry a link that triggers one of the transcript's own actions.
// Colours come from the application palette's TextColors (ui/theme/app_theme.h).

#include <QStringList>
#include <QTextDocument>

class QUrl;

// Replaces what `doc` holds with `markdown`, tidied as above. With `keepLinks` false no link
// stays a link (for a view that would navigate to it). With a `codeLinkPrefix` (and keepLinks),
// each code block's header has a "copy" link to codeLinkPrefix + k, k its index among the
// message's code blocks ("copycode:3:" + k in the transcript, which names the message).
void setMessageMarkdown(QTextDocument& doc, const QString& markdown, bool keepLinks = true, const QString& codeLinkPrefix = {});

// The text of each code block of `markdown`, in order: what the k-th block's "copy" copies.
QStringList messageCodeBlocks(const QString& markdown);

// The links a reply may keep: http, https, mailto.
bool isOpenableLink(const QUrl& url);
