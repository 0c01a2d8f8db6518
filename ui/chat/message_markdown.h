#pragma once
// A chat message's Markdown as rich text, read by Qt's own Markdown reader (md4c) with raw HTML
// off, so a reply's <script> or <img> shows as text: headings, emphasis, inline and fenced code,
// lists, block quotes, links, rules, tables. What it adds to Qt's import: code is shaded and
// fixed-pitch; images show as their alt text and are never loaded; only http(s) and mailto links
// stay links, any other (fork:, copy:, file:, javascript:) becomes plain text, so a reply cannot
// carry a link that triggers one of the transcript's own actions.

#include <QTextDocument>

class QUrl;

// Replaces what `doc` holds with `markdown`, tidied as above. With `keepLinks` false no link
// stays a link (for a view that would navigate to it).
void setMessageMarkdown(QTextDocument& doc, const QString& markdown, bool keepLinks = true);

// The links a reply may keep: http, https, mailto.
bool isOpenableLink(const QUrl& url);
